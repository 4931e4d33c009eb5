#!/usr/bin/env bash
# Logic depth of the RTL engine: synthesises it with Yosys (synth_xilinx
# -family xcup, scripts/yosys-synth.sh, cached per configuration) and reports
# the deepest register-to-register paths of the netlist with their start and
# end registers (scripts/rtl_logic_depth.py says how LUT, MUXF and carry
# cells are counted). Exit status 1 when a path is deeper than LIMIT levels.
#
# Usage: scripts/rtl-logic-depth.sh [NUM_ENTRIES NUM_SLOTS SLOT_WORDS]   (default 8 16 16)
# Env: LIMIT (default 6), TOP (paths listed, default 15).
set -euo pipefail
cd "$(dirname "$0")/.."
# RESULT_DIR: use an existing scripts/yosys-synth.sh result folder instead.
OUT=${RESULT_DIR:-$(scripts/yosys-synth.sh "$@")}
/usr/bin/python3 scripts/rtl_logic_depth.py "$OUT/netlist.json" --top "${TOP:-15}" --limit "${LIMIT:-6}"
