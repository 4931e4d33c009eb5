#!/usr/bin/env bash
# Loss soak (a benchmark, not a test): 10^5 small allreduces on a
# single-PSwitch and on a two-tier fabric, in one process, through the real
# protocol core and engine-model PSwitches under 1% loss, duplication and
# reordering per PSwitch port and direction; prints completed / wrong /
# failed and the faults injected. Progress lines go to stderr.
# Usage: scripts/soak.sh [panama-bench-soak options, e.g. --allreduces 1000 --loss 0.1 --seed 7]
# Environment: BUILD_DIR (default build). docs/performance.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD_DIR" --target panama-bench-soak
exec "$BUILD_DIR/bench/soak/panama-bench-soak" "$@"
