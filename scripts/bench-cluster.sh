#!/usr/bin/env bash
# Benchmark (not a test): allreduce goodput of the virtual cluster against the
# emulated link rate, for 2/4/8 workers and 1/2/4 trees, on one software
# PSwitch, and of a host ring allreduce over the same links (rows "ring"),
# each against its own ideal: PANAMA moves the tensor once up and once down
# each link (ideal goodput = link rate), a ring moves 2(N-1)/N of it (ideal
# goodput = link rate x N / (2(N-1))). Prints a Markdown table with the date,
# the machine and the exact commands.
# Environment: BUILD_DIR (build), SIZE (32MiB), ITERATIONS (3), RATES ("1 10",
# Gbit/s), WORKERS ("2 4 8"), TREES ("1 2 4"), RING (1: add ring rows),
# GLOO (1: add Gloo rows, with EXTRA="--nodes netns" only), EXTRA (more
# panama-cluster arguments, e.g. "--nodes threads" or "--nodes netns"), EXE
# (the binary). scripts/bench-netns.py compares the three schemes over
# network namespaces by time, with the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
SIZE=${SIZE:-32MiB}
ITERATIONS=${ITERATIONS:-3}
RATES=${RATES:-"1 10"}
WORKERS=${WORKERS:-"2 4 8"}
TREES=${TREES:-"1 2 4"}
RING=${RING:-1}
GLOO=${GLOO:-0}
EXTRA=${EXTRA:-}
EXE=${EXE:-"$BUILD_DIR/sw/cluster/panama-cluster"}
if [ ! -x "$EXE" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" --target panama-cluster -j "${JOBS:-2}" >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "## Virtual-cluster goodput ($(date -u +%Y-%m-%d), $(nproc) CPUs, $(git rev-parse --short HEAD 2>/dev/null || echo unknown), load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "Command per row: \`$EXE --workers W --trees T --link-rate R --size $SIZE --iterations $ITERATIONS --no-progress $EXTRA\`"
echo "(ring and gloo rows: the same with \`--baseline ring\` or \`--baseline gloo\` instead of \`--trees\`)."
echo
echo "| link Gbit/s | workers | scheme | goodput Gbit/s (mean) | best | ideal | % of own ideal (mean) | retransmissions | result |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for rate in $RATES; do
  for w in $WORKERS; do
    schemes="$TREES"
    if [ "$RING" = 1 ]; then schemes="$schemes ring"; fi
    if [ "$GLOO" = 1 ]; then schemes="$schemes gloo"; fi
    for t in $schemes; do
      echo "bench: rate $rate workers $w trees $t" >&2
      rm -f "$tmp/s.json"
      case "$t" in
        ring | gloo) extra=(--baseline "$t") ;;
        *) extra=(--trees "$t") ;;
      esac
      # shellcheck disable=SC2086
      "$EXE" --workers "$w" "${extra[@]}" --link-rate "$rate" --size "$SIZE" --iterations "$ITERATIONS" \
        --no-progress --summary-json "$tmp/s.json" $EXTRA >"$tmp/out" 2>&1 || true
      /usr/bin/python3 - "$tmp/s.json" "$rate" "$w" "$t" <<'PY'
import json, sys
path, rate, w, t = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
scheme = t if t in ("ring", "gloo") else f"PANAMA, {t} tree(s)"
ideal = rate * w / (2 * (w - 1)) if t in ("ring", "gloo") and w > 1 else rate
try:
    s = json.load(open(path))
except Exception:
    print(f"| {rate:g} | {w} | {scheme} | - | - | {ideal:.3g} | - | - | failed |")
    sys.exit(0)
times = [0.0] * s["iterations"]
retrans = 0
for r in s["workers"]:
    for i, x in enumerate(r.get("seconds", [])):
        times[i] = max(times[i], x)
    retrans += r.get("retransmissions", 0)
bits = s["bytes"] * 8
mean = bits * len(times) / sum(times) / 1e9 if all(times) else 0
best = max(bits / x / 1e9 for x in times) if all(times) else 0
ok = "exact" if s.get("ok") else "FAILED"
print(f"| {rate:g} | {w} | {scheme} | {mean:.3f} | {best:.3f} | {ideal:.3g} | {100*mean/ideal:.1f} | {retrans} | {ok} |")
PY
    done
  done
done
