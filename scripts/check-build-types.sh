#!/usr/bin/env bash
# Builds the project in every CMake build type with warnings as errors
# (Debug, Release, RelWithDebInfo, MinSizeRel), each in its own folder
# (build-types/<type>), and runs the fast tests of each. The optimisers of
# the build types see different code (-O0, -O3, -O2, -Os) and so warn about
# different things; CI builds RelWithDebInfo, this command checks the rest.
# The clang-14 fuzz sub-build is left out (-DPANAMA_FUZZ=OFF): it has its own
# build type and does not change with these.
# Slow (a full build per type); not part of the test command.
# Usage: scripts/check-build-types.sh [type ...]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
types=("$@")
[ ${#types[@]} -eq 0 ] && types=(Debug Release RelWithDebInfo MinSizeRel)
for t in "${types[@]}"; do
  dir="build-types/$t"
  echo "== $t ($dir)"
  cmake -DPANAMA_FUZZ=OFF -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$t" -DPANAMA_WERROR=ON -DPANAMA_REQUIRE_ALL=ON >/dev/null
  cmake --build "$dir" -j "${JOBS:-2}"
  # The engine, wire, config and runtime-core tests: quick at any optimisation level.
  ctest --test-dir "$dir" --output-on-failure -j "${JOBS:-2}" -L "wire|engine|config|runtime" -E "counter64|dpdk"
done
echo "all build types build without warnings"
