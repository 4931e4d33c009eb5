#!/usr/bin/env bash
# Benchmark (not a test): the demo's goodput for two variants, run in
# alternation so that both see the same state of the machine. On a shared
# VM the same binary varies by tens of percent from hour to hour, far more
# than most changes; only a ratio measured within one such run means
# something (docs/performance.md).
#
# A variant is a panama-cluster binary, optionally followed by arguments
# after a colon:
#   scripts/bench-demo-ab.sh <before>/panama-cluster build/sw/cluster/panama-cluster
#   scripts/bench-demo-ab.sh "build/sw/cluster/panama-cluster:--streaming-copy-bytes 0" \
#                            build/sw/cluster/panama-cluster
# Environment: ROUNDS (8), ARGS (arguments for both, default the demo's:
# "--nodes threads --no-progress").
# Prints one line per run (% of the link, per-allreduce times,
# retransmissions), then per variant the mean and range, the ratio B / A of
# the means and in how many rounds B beat A.
set -euo pipefail
if [ $# -ne 2 ]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
ROUNDS=${ROUNDS:-8}
ARGS=${ARGS:-"--nodes threads --no-progress"}
declare -A exe extra
for v in A B; do
  spec=$1
  shift
  exe[$v]=${spec%%:*}
  extra[$v]=""
  [[ $spec == *:* ]] && extra[$v]=${spec#*:}
  if [ ! -x "${exe[$v]}" ]; then
    echo "bench-demo-ab: ${exe[$v]}: not an executable" >&2
    exit 2
  fi
done
echo "# bench-demo-ab $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# A: ${exe[A]} ${extra[A]}"
echo "# B: ${exe[B]} ${extra[B]}"
echo "# both: $ARGS; $ROUNDS rounds"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for r in $(seq "$ROUNDS"); do
  for v in A B; do
    # shellcheck disable=SC2086  # the argument strings are split on purpose
    if ! out=$("${exe[$v]}" $ARGS ${extra[$v]} 2>&1); then
      echo "bench-demo-ab: round $r, variant $v failed:" >&2
      echo "$out" | tail -5 >&2
      exit 1
    fi
    pct=$(echo "$out" | grep -oE '\([0-9.]+% of the' | head -1 | grep -oE '[0-9.]+')
    times=$(echo "$out" | grep -E '^job 1:' | head -1)
    retx=$(echo "$out" | grep -oE 'retransmissions [0-9]+' | head -1)
    echo "round $r $v ${pct}% ($times, $retx)"
    echo "$r $v $pct" >>"$results"
  done
done
awk '
  { p[$1, $2] = $3; s[$2] += $3; n[$2]++
    if (!($2 in lo) || $3 < lo[$2]) lo[$2] = $3
    if (!($2 in hi) || $3 > hi[$2]) hi[$2] = $3
    rounds[$1] = 1 }
  END {
    split("A B", vs, " ")
    for (i = 1; i <= 2; i++) { v = vs[i]; printf "%s: mean %.1f%% of the link (%.1f-%.1f) over %d runs\n", v, s[v] / n[v], lo[v], hi[v], n[v] }
    won = 0; total = 0
    for (r in rounds) { total++; if (p[r, "B"] > p[r, "A"]) won++ }
    printf "B / A: %.2f; B better in %d of %d rounds\n", (s["B"] / n["B"]) / (s["A"] / n["A"]), won, total
  }' "$results"
