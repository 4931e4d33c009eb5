#!/usr/bin/env bash
# Logic depth of one RTL module synthesised alone with Yosys (synth_xilinx
# -family xcup -uram -flatten -noiopad), in seconds to a few minutes instead
# of the whole engine's tens of minutes: for iterating on one module. Prints
# the deepest register-to-register paths and, apart, the deepest paths from an
# input port or to an output port (scripts/rtl_logic_depth.py counts levels
# as scripts/rtl-logic-depth.sh does). A port path is only part of a path of
# the engine: what drives the input or takes the output adds to it, so for a
# module whose outputs are combinational the engine-level report
# (scripts/rtl-logic-depth.sh) is the one that counts.
# Exit status 1 when a register-to-register path is deeper than LIMIT levels.
#
# Usage: scripts/rtl-module-depth.sh MODULE [PARAM=VALUE ...]
#   e.g. scripts/rtl-module-depth.sh panama_classifier
#        scripts/rtl-module-depth.sh panama_decision NUM_ENTRIES=8 NUM_SLOTS=16
# Env: LIMIT (default 6), TOP (paths listed, default 10), YOSYS (default yosys),
#      KEEP=DIR keeps the netlist and log in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
YOSYS=${YOSYS:-yosys}
command -v "$YOSYS" >/dev/null || { echo "rtl-module-depth: yosys not found (scripts/setup.sh installs it)" >&2; exit 2; }
[[ $# -ge 1 ]] || { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
MODULE=$1
shift
[[ "$MODULE" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "rtl-module-depth: bad module name '$MODULE'" >&2; exit 2; }
CHPARAM=""
for p in "$@"; do
  [[ "$p" =~ ^([A-Z_][A-Z0-9_]*)=([0-9]+)$ ]] || { echo "rtl-module-depth: parameters are NAME=integer, got '$p'" >&2; exit 2; }
  CHPARAM+=" -set ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
done
if [[ -n "${KEEP:-}" ]]; then OUT=$KEEP; mkdir -p "$OUT"; else OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
mapfile -t SRC < <(/usr/bin/python3 scripts/rtl-yosys-sources.py "$OUT/src")
grep -qw "module $MODULE" "${SRC[@]}" || { echo "rtl-module-depth: no module '$MODULE' in hw/rtl/sources.txt" >&2; exit 2; }
CH=""
[[ -n "$CHPARAM" ]] && CH="chparam$CHPARAM $MODULE"
echo "rtl-module-depth: $MODULE$CHPARAM, synth_xilinx -family xcup -uram -flatten -noiopad -nowidelut" >&2
if ! "$YOSYS" -q -l "$OUT/yosys.log" -p "
  read_verilog -sv ${SRC[*]}
  $CH
  synth_xilinx -family xcup -uram -flatten -noiopad -nowidelut -top $MODULE
  setattr -mod -unset keep_hierarchy
  flatten
  tee -q -o $OUT/stat.txt stat
  write_json $OUT/netlist.json
" >/dev/null 2>&1; then
  echo "rtl-module-depth: synthesis failed, see the log (KEEP=DIR keeps it)" >&2
  tail -5 "$OUT/yosys.log" >&2
  exit 1
fi
/usr/bin/python3 scripts/rtl_logic_depth.py "$OUT/netlist.json" --top "${TOP:-10}" --limit "${LIMIT:-6}"
