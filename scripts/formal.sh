#!/usr/bin/env bash
# Bounded formal checks of the RTL engine's interfaces with Debian's Yosys:
# read_verilog -formal, then yosys-smtbmc (z3 by default; --solver boolector also works where smtbmc can drive it).
#   formal_out_fifo      AXI4-Stream output: no tvalid drop, no tdata/tkeep/
#                        tlast change while stalled; beat accounting
#   formal_frame_input   every accepted input beat accounted for
#   formal_axil_regs     AXI4-Lite handshake rules of the register block
# Harnesses are in tests/formal. Each check is a bounded proof from reset:
# no assertion fails in the first DEPTH clocks, for every input sequence.
#
# Usage: scripts/formal.sh [--deep] [--depth N] [--solver z3|boolector] [check ...]
#   default: depth 12 with small harness parameters (the CTest entry
#   rtl_formal); --deep: depth 30 and the engine's own output FIFO size
#   (512+64+1 bits x 16), minutes to hours on this machine.
# Env: YOSYS, YOSYS_SMTBMC, KEEP_DIR (keep the work files there).
set -euo pipefail
cd "$(dirname "$0")/.."
DEPTH=
DEEP=0
SOLVER=z3
CHECKS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --depth) DEPTH=$2; shift 2 ;;
    --deep) DEEP=1; shift ;;
    --solver) SOLVER=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "formal: unknown option $1" >&2; exit 2 ;;
    *) CHECKS+=("$1"); shift ;;
  esac
done
[[ -n "$DEPTH" ]] || DEPTH=$([[ $DEEP == 1 ]] && echo 30 || echo 12)
[[ "$DEPTH" =~ ^[0-9]+$ && "$DEPTH" -ge 2 ]] || { echo "formal: --depth must be an integer >= 2" >&2; exit 2; }
[[ ${#CHECKS[@]} -gt 0 ]] || CHECKS=(formal_out_fifo formal_frame_input formal_axil_regs)
YOSYS=${YOSYS:-yosys}
SMTBMC=${YOSYS_SMTBMC:-yosys-smtbmc}
for tool in "$YOSYS" "$SMTBMC" "$SOLVER"; do
  command -v "$tool" >/dev/null || { echo "formal: $tool not found (scripts/setup.sh installs it)" >&2; exit 2; }
done
WORK=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$WORK"
[[ -n "${KEEP_DIR:-}" ]] || trap 'rm -rf "$WORK"' EXIT

failed=0
for check in "${CHECKS[@]}"; do
  harness=tests/formal/$check.sv
  [[ -f "$harness" ]] || { echo "formal: no harness $harness" >&2; exit 2; }
  dir="$WORK/$check"
  mkdir -p "$dir"
  params=""
  if [[ $DEEP == 1 && $check == formal_out_fifo ]]; then
    params="chparam -set WIDTH 577 -set DEPTH 16 $check"
  fi
  mapfile -t SRC < <(/usr/bin/python3 scripts/rtl-yosys-sources.py "$dir/src" "$harness")
  start=$(date +%s)
  if ! "$YOSYS" -q -l "$dir/yosys.log" -p "
    read_verilog -formal -sv ${SRC[*]}
    $params
    prep -top $check
    memory_map
    opt -fast
    async2sync
    dffunmap
    write_smt2 -wires $dir/model.smt2
  " >/dev/null 2>&1; then
    echo "formal: $check: Yosys failed, see $dir/yosys.log" >&2
    failed=1
    continue
  fi
  if "$SMTBMC" -s "$SOLVER" --presat -t "$DEPTH" --dump-vcd "$dir/trace.vcd" "$dir/model.smt2" > "$dir/smtbmc.log" 2>&1; then
    echo "formal: $check: PASS (bounded proof, $DEPTH clocks, $SOLVER, $(( $(date +%s) - start )) s)"
  else
    echo "formal: $check: FAIL (depth $DEPTH, $SOLVER); log $dir/smtbmc.log, trace $dir/trace.vcd" >&2
    grep -E "Assert failed|failed|Status" "$dir/smtbmc.log" | head -5 >&2 || true
    failed=1
  fi
done
exit $failed
