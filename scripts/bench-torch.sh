#!/usr/bin/env bash
# Allreduce latency and goodput from Python through the `panama` backend,
# next to the same allreduce made straight through the C++ Communicator in
# the same processes, on the same virtual cluster (one software PSwitch,
# WORKERS ranks, 2 trees, 10 Gbit/s links): the overhead the binding adds.
# Prints a Markdown table (docs/performance.md, "PyTorch backend").
# Environment: BUILD_DIR, WORKERS (4), SIZES (4KiB,...,256MiB), ITERATIONS (5),
# DTYPE (fp32, bf16 or fp16: the tensors' type; sizes stay in bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
WORKERS=${WORKERS:-4}
SIZES=${SIZES:-4KiB,64KiB,1MiB,16MiB,64MiB,256MiB}
ITERATIONS=${ITERATIONS:-5}
DTYPE=${DTYPE:-fp32}

out=$(mktemp /tmp/panama-bench-torch-XXXXXX)
trap 'rm -f "$out"' EXIT
"$BUILD_DIR/sw/torch/panama-torchrun" --workers "$WORKERS" --no-prefix -- \
  /usr/bin/python3 -W ignore::UserWarning sw/torch/bench/bench_allreduce.py \
  --sizes "$SIZES" --iterations "$ITERATIONS" --dtype "$DTYPE" 2>/dev/null | grep '^BENCH ' | cut -c7- > "$out"
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows.setdefault(r["bytes"], {})[r["kind"]] = r
def human(b):
    for unit, m in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= m:
            return f"{b / m:g} {unit}"
    return f"{b} B"
print("| size | iterations | backend median ms | backend Gbit/s | C++ direct median ms | C++ direct Gbit/s "
      "| backend / direct time |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for b in sorted(rows):
    p, d = rows[b]["backend"], rows[b]["direct"]
    print(f"| {human(b)} | {p['iterations']} | {p['median_s'] * 1e3:.2f} | {p['gbps']:.3f} | "
          f"{d['median_s'] * 1e3:.2f} | {d['gbps']:.3f} | {p['median_s'] / d['median_s']:.2f} |")
PY
