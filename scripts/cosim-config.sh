#!/usr/bin/env bash
# Co-simulation regression of the RTL engine against the HLS model in a
# chosen configuration, by default the engine's default one (64 entries,
# 512 slots, 144 words per slot bank, as the Alveo kernel). The engine and
# the model are built for that configuration in a build folder of their own
# (the CI build uses 8 / 64 / 144), then panama_cosim runs random seeds with
# tvalid gaps, tready back-pressure and MAC-error frames, and the line-rate
# benchmark (--bench). Not part of the CI test run: Verilating and compiling
# the default configuration takes several minutes.
#
# Usage: scripts/cosim-config.sh [NUM_ENTRIES NUM_SLOTS SLOT_WORDS]   (default 64 512 144)
# Env: SEEDS (default 8), FIRST_SEED (default 1), FRAMES per seed (default 3000),
#      BENCH=0 to skip the line-rate benchmark, JOBS (default 2),
#      BUILD_DIR (default build-cosim-<entries>-<slots>-<words>[-rd<latency>]),
#      SLOT_READ_LATENCY (default 12: the engine's own default, the UltraRAM
#      matrix's read latency as on the card; the CI build uses 1).
set -euo pipefail
cd "$(dirname "$0")/.."
ENTRIES=${1:-64}
SLOTS=${2:-512}
WORDS=${3:-144}
for v in "$ENTRIES" "$SLOTS" "$WORDS"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "cosim-config: parameters must be integers, got '$v'" >&2; exit 2; }
done
RD_LAT=${SLOT_READ_LATENCY:-12}
[[ "$RD_LAT" =~ ^[1-9][0-9]*$ ]] || { echo "cosim-config: SLOT_READ_LATENCY must be a positive integer" >&2; exit 2; }
SUFFIX=""
[[ "$RD_LAT" == 1 ]] || SUFFIX="-rd$RD_LAT"
BUILD_DIR=${BUILD_DIR:-build-cosim-$ENTRIES-$SLOTS-$WORDS$SUFFIX}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPANAMA_COSIM_NUM_ENTRIES="$ENTRIES" -DPANAMA_COSIM_NUM_SLOTS="$SLOTS" -DPANAMA_COSIM_SLOT_WORDS="$WORDS" \
    -DPANAMA_COSIM_SLOT_READ_LATENCY="$RD_LAT"
fi
cmake --build "$BUILD_DIR" --target panama_cosim_cli -j "${JOBS:-2}"
COSIM="$BUILD_DIR/sim/cosim/panama_cosim"
echo "cosim-config: NUM_ENTRIES=$ENTRIES NUM_SLOTS=$SLOTS SLOT_WORDS=$WORDS SLOT_READ_LATENCY=$RD_LAT," \
     "${SEEDS:-8} seeds from ${FIRST_SEED:-1}"
"$COSIM" --seed "${FIRST_SEED:-1}" --seeds "${SEEDS:-8}" --frames "${FRAMES:-3000}" --max-elems 300 \
  --gap 0.2 --stall 0.2 --fail-dir "$BUILD_DIR"
if [[ "${BENCH:-1}" != 0 ]]; then
  "$COSIM" --bench --bench-frames 2000 --fail-dir "$BUILD_DIR"
fi
