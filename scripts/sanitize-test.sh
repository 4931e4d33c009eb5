#!/usr/bin/env bash
# Builds the whole project and test suite with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC, -fsanitize=address,undefined) in
# build-asan and runs the tests there. Any sanitizer report fails its test.
# Usage: scripts/sanitize-test.sh [extra ctest arguments, e.g. -L engine]
# Environment: BUILD_DIR (default build-asan), JOBS (default 2).
# docs/testing.md lists what is excluded here and why.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
# shift-base is recoverable only so that scripts/sanitize-ubsan.supp can
# silence it in Verilator's generated code; elsewhere halt_on_error stops.
# GCC 12 reports false maybe-uninitialized warnings inside std::regex and
# std::function when instrumented; they stay warnings here, other warnings
# stay errors.
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize-recover=shift-base -fno-omit-frame-pointer -Wno-error=maybe-uninitialized"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPANAMA_WERROR=ON -DPANAMA_REQUIRE_ALL=ON \
  -DPANAMA_FUZZ=OFF -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
cmake --build "$BUILD_DIR" -j "${JOBS:-2}"

# Reports stop the program with a stack; leaks are reported at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$PWD/scripts/sanitize-ubsan.supp}
# Not run here (docs/testing.md, "Sanitizers"): the fuzzers are their own
# ASan+UBSan build; the torch tests load the instrumented extension into an
# uninstrumented Python, which ASan refuses without LD_PRELOAD of its
# runtime; clang-format does not depend on the build.
EXCLUDE='^(clang_format)$'
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${JOBS:-2}" -LE "fuzz|torch" -E "$EXCLUDE" "$@"
