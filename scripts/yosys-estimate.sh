#!/usr/bin/env bash
# Resource estimate of the RTL engine with Yosys: synth_xilinx -family xcup
# (UltraScale+), printing LUT / FF / CARRY / DSP / BRAM / URAM counts.
# These are Yosys estimates, not Vivado results.
#
# Usage: scripts/yosys-estimate.sh [NUM_ENTRIES NUM_SLOTS SLOT_WORDS]
#   defaults 8 16 16: a modest configuration that completes in minutes here.
# Env: YOSYS (default yosys), KEEP_DIR (keep the work directory there).
set -euo pipefail
cd "$(dirname "$0")/.."
ENTRIES=${1:-8}
SLOTS=${2:-16}
WORDS=${3:-16}
YOSYS=${YOSYS:-yosys}
command -v "$YOSYS" >/dev/null || { echo "yosys-estimate: yosys not found (scripts/setup.sh installs it)" >&2; exit 2; }
for v in "$ENTRIES" "$SLOTS" "$WORDS"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "yosys-estimate: parameters must be integers, got '$v'" >&2; exit 2; }
done
WORK=${KEEP_DIR:-$(mktemp -d)}
mkdir -p "$WORK"
[[ -n "${KEEP_DIR:-}" ]] || trap 'rm -rf "$WORK"' EXIT
RTL=hw/rtl

# Yosys 0.23 reads packages but not `import pkg::*`: inline the package
# constants where the engine imports them.
inline_pkg() { grep -E '^\s*localparam' "$RTL/$1.sv"; }
awk -v regmap="$(inline_pkg panama_regmap_pkg)" -v wire="$(inline_pkg panama_wire_pkg)" '
  /^[ \t]*import panama_regmap_pkg::/ { print regmap; next }
  /^[ \t]*import panama_wire_pkg::/ { print wire; next }
  { print }' "$RTL/panama_engine.sv" > "$WORK/panama_engine_flat.sv"

echo "yosys-estimate: panama_engine NUM_ENTRIES=$ENTRIES NUM_SLOTS=$SLOTS SLOT_WORDS=$WORDS," \
     "synth_xilinx -family xcup (this takes a few minutes)"
start=$(date +%s)
"$YOSYS" -q -l "$WORK/yosys.log" -p "
  read_verilog -sv $RTL/panama_fifo.sv $RTL/panama_divider.sv $RTL/panama_fp32_add.sv \
                   $RTL/panama_fp32_add16.sv $WORK/panama_engine_flat.sv
  chparam -set NUM_ENTRIES $ENTRIES -set NUM_SLOTS $SLOTS -set SLOT_WORDS $WORDS panama_engine
  synth_xilinx -family xcup -top panama_engine -flatten
  tee -o $WORK/stat.txt stat
" 2>&1 | grep -v -E "Replacing memory|Resizing cell port" || true
[[ -s "$WORK/stat.txt" ]] || { echo "yosys-estimate: synthesis failed, see $WORK/yosys.log" >&2; exit 1; }
echo "yosys-estimate: done in $(( $(date +%s) - start )) s"

# Sum the cell counts by resource class.
awk '
  $1 ~ /^LUT[1-6]$/ || $1 == "LUT6_2" || $1 == "INV" { lut += $2 }
  $1 ~ /^FD[CPRS]E?$/ { ff += $2 }
  $1 ~ /^MUXF[789]$/ { muxf += $2 }
  $1 ~ /^CARRY(4|8)$/ { carry += $2 }
  $1 ~ /^DSP48E2$/ { dsp += $2 }
  $1 ~ /^RAMB36E2$/ { bram36 += $2 }
  $1 ~ /^RAMB18E2$/ { bram18 += $2 }
  $1 ~ /^URAM288/ { uram += $2 }
  $1 ~ /^RAM(32|64|128|256)[XM]/ { lutram += $2 }
  $1 ~ /^SRL/ { srl += $2 }
  END {
    printf "LUT      %d\n", lut
    printf "FF       %d\n", ff
    printf "CARRY    %d (CARRY4/CARRY8 cells as Yosys maps them)\n", carry
    printf "DSP48E2  %d\n", dsp
    printf "RAMB36   %d\n", bram36
    printf "RAMB18   %d\n", bram18
    printf "URAM288  %d\n", uram
    printf "LUTRAM   %d cells\n", lutram
    printf "SRL      %d cells\n", srl
    printf "MUXF7-9  %d\n", muxf
  }' "$WORK/stat.txt"
