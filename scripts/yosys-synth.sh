#!/usr/bin/env bash
# Synthesises the RTL engine with Yosys for UltraScale+ (synth_xilinx -family
# xcup -uram -flatten -noiopad) in one configuration and keeps the result in
# a cache: build/yosys/<entries>-<slots>-<words>-<hash of the sources>/
#   netlist.json  the flattened netlist (input of scripts/rtl_logic_depth.py;
#                 keep_hierarchy modules, mapped one by one, flattened after
#                 synthesis)
#   stat.txt      cell counts        yosys.log  the full log
# An existing result for the same sources and configuration is reused, so the
# estimate and the depth report share one run. Prints the cache folder.
#
# Usage: scripts/yosys-synth.sh [NUM_ENTRIES NUM_SLOTS SLOT_WORDS]  (default 8 16 16)
# Env: YOSYS (default yosys), PANAMA_YOSYS_CACHE (default build/yosys),
#      SLOT_READ_LATENCY=n: the engine's slot-memory read latency (default: the
#      engine's own default, 14, the UltraRAM matrix's read register and output
#      registers, as the Alveo kernels build it); cached apart (-rl<n>),
#      NOSHARE=1: run synth_xilinx in two segments around its "coarse" step
#      and leave out `share` (SAT-based resource sharing, which does not finish
#      on the default configuration); the result is cached apart (-noshare).
set -euo pipefail
cd "$(dirname "$0")/.."
ENTRIES=${1:-8}
SLOTS=${2:-16}
WORDS=${3:-16}
YOSYS=${YOSYS:-yosys}
command -v "$YOSYS" >/dev/null || { echo "yosys-synth: yosys not found (scripts/setup.sh installs it)" >&2; exit 2; }
for v in "$ENTRIES" "$SLOTS" "$WORDS"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "yosys-synth: parameters must be integers, got '$v'" >&2; exit 2; }
done
FLAGS="-family xcup -uram -flatten -noiopad -nowidelut"
FLOW="synth_xilinx $FLAGS -top panama_engine"
SUFFIX=""
CHPARAM_RL=""
if [[ -n "${SLOT_READ_LATENCY:-}" ]]; then
  [[ "$SLOT_READ_LATENCY" =~ ^[1-9][0-9]*$ ]] || { echo "yosys-synth: SLOT_READ_LATENCY must be a positive integer, got '$SLOT_READ_LATENCY'" >&2; exit 2; }
  CHPARAM_RL=" -set SLOT_READ_LATENCY $SLOT_READ_LATENCY"
  SUFFIX="-rl$SLOT_READ_LATENCY"
fi
if [[ "${NOSHARE:-0}" != 0 ]]; then
  # synth_xilinx's coarse step without `share` (same commands otherwise).
  FLOW="synth_xilinx $FLAGS -top panama_engine -run begin:coarse
  techmap -map +/cmp2lut.v -map +/cmp2lcu.v -D LUT_WIDTH=6
  alumacc
  opt
  memory -nomap
  opt_clean
  synth_xilinx $FLAGS -top panama_engine -run map_memory:"
  SUFFIX="$SUFFIX-noshare"
fi
hash=$( (cat hw/rtl/sources.txt; sed 's/^/hw\/rtl\//' hw/rtl/sources.txt | grep -v '^hw/rtl/#' | xargs cat; \
         cat scripts/rtl-yosys-sources.py; echo "$FLAGS") | sha256sum | cut -c1-12)
CACHE=${PANAMA_YOSYS_CACHE:-build/yosys}
OUT="$CACHE/$ENTRIES-$SLOTS-$WORDS-$hash$SUFFIX"
if [[ -s "$OUT/netlist.json" && -s "$OUT/stat.txt" ]]; then
  echo "yosys-synth: cached result in $OUT" >&2
  echo "$OUT"
  exit 0
fi
mkdir -p "$OUT/src"
mapfile -t SRC < <(/usr/bin/python3 scripts/rtl-yosys-sources.py "$OUT/src")
echo "yosys-synth: panama_engine NUM_ENTRIES=$ENTRIES NUM_SLOTS=$SLOTS SLOT_WORDS=$WORDS," \
     "synth_xilinx $FLAGS$SUFFIX (minutes for small configurations, hours for the default one)" >&2
start=$(date +%s)
if ! "$YOSYS" -q -l "$OUT/yosys.log.part" -p "
  read_verilog -sv ${SRC[*]}
  chparam -set NUM_ENTRIES $ENTRIES -set NUM_SLOTS $SLOTS -set SLOT_WORDS $WORDS$CHPARAM_RL panama_engine
  $FLOW
  setattr -mod -unset keep_hierarchy
  flatten
  tee -q -o $OUT/stat.txt.part stat
  write_json $OUT/netlist.json.part
" >/dev/null 2>&1; then
  echo "yosys-synth: synthesis failed, see $OUT/yosys.log.part" >&2
  exit 1
fi
mv "$OUT/yosys.log.part" "$OUT/yosys.log"
mv "$OUT/stat.txt.part" "$OUT/stat.txt"
mv "$OUT/netlist.json.part" "$OUT/netlist.json"
echo "$(( $(date +%s) - start ))" > "$OUT/seconds"
echo "yosys-synth: done in $(cat "$OUT/seconds") s" >&2
echo "$OUT"
