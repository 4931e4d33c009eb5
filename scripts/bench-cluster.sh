#!/usr/bin/env bash
# Benchmark (not a test): allreduce goodput of the virtual cluster against the
# emulated link rate, for 2/4/8 workers and 1/2/4 trees, on one software
# PSwitch, and of a host ring allreduce over the same links (rows "ring"). Prints a Markdown table with the date, the machine and the exact
# commands. Environment: BUILD_DIR (build), SIZE (32MiB), ITERATIONS (3),
# RATES ("1 10", Gbit/s), WORKERS ("2 4 8"), TREES ("1 2 4").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
SIZE=${SIZE:-32MiB}
ITERATIONS=${ITERATIONS:-3}
RATES=${RATES:-"1 10"}
WORKERS=${WORKERS:-"2 4 8"}
TREES=${TREES:-"1 2 4"}
EXE="$BUILD_DIR/sw/runtime/cluster/panama-cluster"
if [ ! -x "$EXE" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" --target panama-cluster -j "${JOBS:-2}" >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "## Virtual-cluster goodput ($(date -u +%Y-%m-%d), $(nproc) CPUs, $(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
echo
echo "Command per row: \`$EXE --workers W --trees T --link-rate R --size $SIZE --iterations $ITERATIONS --no-progress\`"
echo "(ring rows: the same with \`--baseline ring\`)."
echo
echo "| link Gbit/s | workers | trees | goodput Gbit/s (mean) | best | % of link | retransmissions | CE results (rank 0) | result |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for rate in $RATES; do
  for w in $WORKERS; do
    for t in $TREES ring; do
      echo "bench: rate $rate workers $w trees $t" >&2
      rm -f "$tmp/s.json"
      if [ "$t" = ring ]; then extra=(--baseline ring); else extra=(--trees "$t"); fi
      "$EXE" --workers "$w" "${extra[@]}" --link-rate "$rate" --size "$SIZE" --iterations "$ITERATIONS" \
        --no-progress --summary-json "$tmp/s.json" >"$tmp/out" 2>&1 || true
      python3 - "$tmp/s.json" "$rate" "$w" "$t" <<'PY'
import json, sys
path, rate, w, t = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
try:
    s = json.load(open(path))
except Exception:
    print(f"| {rate:g} | {w} | {t} | - | - | - | - | - | failed |")
    sys.exit(0)
times = [0.0] * s["iterations"]
retrans = 0
ce = 0
for r in s["workers"]:
    for i, x in enumerate(r.get("seconds", [])):
        times[i] = max(times[i], x)
    retrans += r.get("retransmissions", 0)
    if r.get("rank") == 0:
        ce = sum(tr.get("results_ce", 0) for tr in r.get("trees", []))
bits = s["bytes"] * 8
mean = bits * len(times) / sum(times) / 1e9 if all(times) else 0
best = max(bits / x / 1e9 for x in times) if all(times) else 0
ok = "exact" if s.get("ok") else "FAILED"
print(f"| {rate:g} | {w} | {t} | {mean:.3f} | {best:.3f} | {100*mean/rate:.1f} | {retrans} | {ce} | {ok} |")
PY
    done
  done
done
