#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L engine]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPANAMA_WERROR=ON -DPANAMA_REQUIRE_ALL=ON
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-2}" "$@"
