#!/usr/bin/env bash
# Long co-simulation soak (not part of the CI test run): the RTL engine
# against the HLS model over many seeds for hours, then the fp32 adder over
# 10^9 random pairs. A failure prints its seed and leaves the failing traffic
# as a pcap in FAIL_DIR.
#
# Usage: scripts/cosim-soak.sh [hours]        (default 4)
# Env:   BUILD_DIR (default build), FIRST_SEED (default: from the clock),
#        FRAMES per seed (default 5000), FAIL_DIR (default BUILD_DIR/cosim-failures),
#        FP32_PAIRS (default 1000000000), GAP / STALL probabilities (default 0.2).
set -euo pipefail
cd "$(dirname "$0")/.."
HOURS=${1:-4}
BUILD_DIR=${BUILD_DIR:-build}
FIRST_SEED=${FIRST_SEED:-$(date +%s)}
FRAMES=${FRAMES:-5000}
FP32_PAIRS=${FP32_PAIRS:-1000000000}
FAIL_DIR=${FAIL_DIR:-$BUILD_DIR/cosim-failures}
mkdir -p "$FAIL_DIR"

if [[ ! -f "$BUILD_DIR/build.ninja" && ! -f "$BUILD_DIR/Makefile" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" --target panama_cosim_cli test_rtl_fp32_adder -j "${JOBS:-2}"

echo "cosim soak: ${HOURS} h, seeds from ${FIRST_SEED}, ${FRAMES} frames per seed, failures in ${FAIL_DIR}"
"$BUILD_DIR/sim/cosim/panama_cosim" --hours "$HOURS" --seed "$FIRST_SEED" --frames "$FRAMES" \
  --max-elems 300 --gap "${GAP:-0.2}" --stall "${STALL:-0.2}" --fail-dir "$FAIL_DIR"

echo "fp32 adder soak: ${FP32_PAIRS} random pairs"
PANAMA_FP32_PAIRS=$FP32_PAIRS PANAMA_TEST_SEED=$FIRST_SEED "$BUILD_DIR/tests/rtl/test_rtl_fp32_adder"
echo "soak passed"
