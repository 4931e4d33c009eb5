#!/usr/bin/env bash
# Logic depth of one fp32 adder lane inside the slot-word read-add-write loop:
# panama_fp32_add with the data pipeline's 4:1 operand forward mux (registered
# select, sources: memory data, the lane's own sum, two registers) in front,
# synthesised alone with Yosys (synth_xilinx -family xcup -flatten -noiopad,
# seconds instead of the whole engine's tens of minutes; the adder's
# keep_hierarchy parts are mapped one by one, then flattened). Prints the deepest
# register-to-register paths (scripts/rtl_logic_depth.py, same counting as
# scripts/rtl-logic-depth.sh) and the deepest path into each adder stage's
# registers (S1 registers s1_*, S2 the output `s`; operand `a` arrives one LUT
# level after the mux, so stage 1 has five levels left on the `a` side).
# Exit status 1 when a path is deeper than LIMIT levels.
#
# Usage: scripts/rtl-adder-depth.sh     Env: LIMIT (default 6), YOSYS (default yosys).
set -euo pipefail
cd "$(dirname "$0")/.."
YOSYS=${YOSYS:-yosys}
command -v "$YOSYS" >/dev/null || { echo "rtl-adder-depth: yosys not found" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
cat > "$OUT/loop.sv" <<'SV'
module adder_loop (
    input logic clk,
    input logic [31:0] mem_in, b_in, c_in,
    input logic [1:0] sel_in,
    output logic [31:0] s
);
  logic [31:0] mem_r, b_r, c_r, s_d, a;
  logic [1:0] sel_r;
  always_ff @(posedge clk) begin
    mem_r <= mem_in;
    b_r <= b_in;
    c_r <= c_in;
    sel_r <= sel_in;
    s_d <= s;
  end
  always_comb
    case (sel_r)
      2'd0: a = mem_r;
      2'd1: a = s;
      2'd2: a = c_r;
      default: a = s_d;
    endcase
  panama_fp32_add u (.clk(clk), .a(a), .b(b_r), .sum(s));
endmodule
SV
# The lane's files: hw/rtl/fp32_add/ in hw/rtl/sources.txt order.
mapfile -t SRC < <(sed -n 's|^\(fp32_add/.*\.sv\)$|hw/rtl/\1|p' hw/rtl/sources.txt)
[[ ${#SRC[@]} -gt 0 ]] || { echo "rtl-adder-depth: no fp32_add/ files in hw/rtl/sources.txt" >&2; exit 2; }
"$YOSYS" -q -l "$OUT/yosys.log" -p "
  read_verilog -sv ${SRC[*]} $OUT/loop.sv
  synth_xilinx -family xcup -flatten -noiopad -nowidelut -top adder_loop
  setattr -mod -unset keep_hierarchy
  flatten
  write_json $OUT/netlist.json
" >/dev/null
rc=0
/usr/bin/python3 scripts/rtl_logic_depth.py "$OUT/netlist.json" --top 5 --limit "${LIMIT:-6}" || rc=$?
/usr/bin/python3 scripts/rtl_logic_depth.py "$OUT/netlist.json" --top 100000 | /usr/bin/python3 -c '
import re, sys
best = {}
for line in sys.stdin:
    m = re.match(r"\s+(\d+)\s+\S+: \S+ -> .*\(register (?:u\.)?(s\d|s)[_\[]", line)
    if m:
        stage = "S2 (sum)" if m.group(2) == "s" else "S" + m.group(2)[1:]
        best[stage] = max(best.get(stage, 0), int(m.group(1)))
print("deepest path into each stage: " + ", ".join("%s %d" % kv for kv in sorted(best.items())))
'
exit $rc
