#!/usr/bin/env bash
# A short libFuzzer run: the seed corpus, then mutations of it, for a fixed
# number of executions (not a time limit). New inputs go to a scratch
# directory, never into the repository's corpus; a crash is saved in
# <work>/artifacts and fails the run. PANAMA_TEST_SEED fixes libFuzzer's seed
# (otherwise it picks one and prints it as "INFO: Seed:").
# Usage: smoke.sh <fuzzer> <seed corpus dir> <work dir> <runs>
set -euo pipefail
fuzzer=$1 corpus=$2 work=$3 runs=$4
rm -rf "$work"
mkdir -p "$work/new" "$work/artifacts"
exec "$fuzzer" -runs="$runs" -seed="${PANAMA_TEST_SEED:-0}" -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/new" "$corpus"
