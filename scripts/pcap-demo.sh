#!/usr/bin/env bash
# Demo: installs what is missing, builds the pcap tool, runs the bundled
# sample (samples/basic.*) through the engine model and prints a summary:
# frames in and out, aggregates, drops by reason, and whether the output is
# byte for byte the expected one. Exit status 0 only when it is.
# Usage: scripts/pcap-demo.sh   (BUILD_DIR and JOBS may be set; defaults build, 2)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-2}

./scripts/setup.sh

echo "demo: configuring $BUILD_DIR/"
mkdir -p "$BUILD_DIR"
if ! cmake -S . -B "$BUILD_DIR" -G Ninja >"$BUILD_DIR/demo-configure.log" 2>&1; then
  tail -n 30 "$BUILD_DIR/demo-configure.log" >&2
  echo "demo: cmake configure failed (full log: $BUILD_DIR/demo-configure.log)" >&2
  exit 1
fi
echo "demo: building panama-pcap"
cmake --build "$BUILD_DIR" --target panama-pcap -j "$JOBS"

out_dir="$BUILD_DIR/demo"
mkdir -p "$out_dir"
out_pcap="$out_dir/basic.out.pcap"
counters="$out_dir/counters.json"
echo "demo: running the engine model over samples/basic.pcap"
"$BUILD_DIR/sim/pcap/panama-pcap" --config samples/basic.json --in samples/basic.pcap \
  --out "$out_pcap" --json --quiet >"$counters"

if cmp -s "$out_pcap" samples/basic.expected.pcap; then match=yes; else match=no; fi

python3 - "$counters" "$match" "$out_pcap" <<'PY'
import json, sys

doc = json.load(open(sys.argv[1]))
match, out_pcap = sys.argv[2] == "yes", sys.argv[3]
g = doc["counters"]["global"]
passed = g["passthrough"] + g["results_passed"]
drops = {k[len("drop_"):]: v for k, v in g.items() if k.startswith("drop_") and v}

print()
print(f"PANAMA demo: node {doc['node']}, engine {doc['engine']}, input {doc['input']['path']}")
print(f"  frames in              {doc['input']['frames']:>5}")
print(f"  frames out             {doc['output']['frames']:>5}  "
      f"({g['emitted']} aggregates, {g['retrans_served']} re-sent for retransmissions, {passed} passed through)")
print(f"  contributions added    {g['aggregated']:>5}  "
      f"({g['ecn_marked']} carried ECN CE; duplicates ignored: {g['duplicates']})")
print(f"  dropped                {sum(drops.values()):>5}  "
      + (", ".join(f"{k} {v}" for k, v in drops.items()) if drops else ""))
for e in doc["counters"]["entries"]:
    c = e["counters"]
    print(f"  job {e['job']} tree {e['tree']} (entry {e['index']}): "
          f"{c['emitted']} aggregates from {c['aggregated']} contributions")
print()
print(f"  output: {out_pcap}")
if match:
    print("  verdict: PASS, the output matches samples/basic.expected.pcap byte for byte")
else:
    print("  verdict: FAIL, the output differs from samples/basic.expected.pcap")
PY

[ "$match" = yes ]
