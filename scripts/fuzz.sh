#!/usr/bin/env bash
# Runs one libFuzzer target for a while (default 600 s), starting from its
# seed corpus (tests/fuzz/corpus/<target>, read only) and a working corpus
# kept between runs in <build>/fuzz/corpus/<target>. A crash or a violated
# invariant stops the run; the input is saved as
# <build>/fuzz/artifacts/<target>-crash-<sha1> (replay it with
# `<build>/fuzz/tests/fuzz/panama-fuzz-<target> <file>`).
# Usage: scripts/fuzz.sh <engine|node_config|allreduce_core|pcap> [seconds] [extra libFuzzer flags]
# Environment: BUILD_DIR (default build), PANAMA_TEST_SEED (libFuzzer -seed).
set -euo pipefail
cd "$(dirname "$0")/.."
targets="engine node_config allreduce_core pcap"
if [ $# -lt 1 ] || ! [[ " $targets " == *" $1 "* ]]; then
  echo "usage: $0 <$(echo $targets | tr ' ' '|')> [seconds] [libFuzzer flags...]" >&2
  exit 2
fi
target=$1
seconds=${2:-600}
shift $(( $# >= 2 ? 2 : 1 ))
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" --target panama_fuzz_build
work=$BUILD_DIR/fuzz
mkdir -p "$work/corpus/$target" "$work/artifacts"
exec "$work/tests/fuzz/panama-fuzz-$target" -max_total_time="$seconds" -seed="${PANAMA_TEST_SEED:-0}" -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/$target-" "$@" "$work/corpus/$target" "tests/fuzz/corpus/$target"
