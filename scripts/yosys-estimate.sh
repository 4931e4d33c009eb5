#!/usr/bin/env bash
# Resource estimate of the RTL engine with Yosys: synth_xilinx -family xcup
# -uram (UltraScale+; scripts/yosys-synth.sh, cached per configuration),
# printed as LUT / FF / CARRY / DSP / BRAM / URAM / LUT RAM counts and as a
# share of an Alveo U280 and U55C. These are Yosys estimates, not Vivado
# results: Vivado packs, retimes and optimises differently.
#
# Usage: scripts/yosys-estimate.sh [NUM_ENTRIES NUM_SLOTS SLOT_WORDS]
#   defaults 8 16 16 (minutes); 64 512 144 is the default configuration (hours).
# Also prints the UltraRAM count Vivado's mapping of the slot memory implies
# (two arrays of 512-bit half rows, ceil(SLOT_WORDS / 2) rows per slot bank,
# ram_style "ultra", URAM288 as 4K x 72: 8 columns of 72 bits for a 512-bit
# half row, one URAM per 4,096 rows deep, per array; Yosys packs bits across
# the 72-bit columns and reports fewer) and the read latency that matrix
# wants (UG901 "Pipelining the RAM": rows + columns of the matrix, cascades
# of at most 8, Vivado's default CASCADE_HEIGHT, plus the read register).
set -euo pipefail
cd "$(dirname "$0")/.."
# RESULT_DIR: use an existing scripts/yosys-synth.sh result folder instead.
OUT=${RESULT_DIR:-$(scripts/yosys-synth.sh "$@")}
echo "yosys-estimate: $(head -c 200 "$OUT/seconds" 2>/dev/null || echo '?') s of synthesis; netlist in $OUT"

# Device totals of the XCU280 and XCU55C (the two cards share the device
# size): Alveo U280 and U55C product data sheets.
awk '
  $1 ~ /^LUT[1-6]$/ || $1 == "LUT6_2" || $1 == "INV" { lut += $2 }
  $1 ~ /^FD[CPRS]E?$/ { ff += $2 }
  $1 ~ /^MUXF[789]$/ { muxf += $2 }
  $1 ~ /^CARRY(4|8)$/ { carry += $2 }
  $1 ~ /^DSP48E2$/ { dsp += $2 }
  $1 ~ /^RAMB36E2$/ { bram36 += $2 }
  $1 ~ /^RAMB18E2$/ { bram18 += $2 }
  $1 ~ /^URAM288/ { uram += $2 }
  $1 ~ /^RAM(32|64|128|256|512)[XM]/ { lutram += $2 }
  $1 ~ /^SRL/ { srl += $2 }
  END {
    dev_lut = 1303680; dev_ff = 2607360; dev_bram = 2016; dev_uram = 960; dev_dsp = 9024
    bram = bram36 + bram18 / 2
    printf "%-28s %12s %14s\n", "resource", "count", "% of U280/U55C"
    printf "%-28s %12d %13.2f%%\n", "LUT (LUT1-6, INV)", lut, 100 * lut / dev_lut
    printf "%-28s %12d %13.2f%%\n", "FF", ff, 100 * ff / dev_ff
    printf "%-28s %12s %13.2f%%\n", "BRAM (RAMB36 equivalents)", sprintf("%.1f", bram), 100 * bram / dev_bram
    printf "%-28s %12s\n", "  RAMB36E2 / RAMB18E2", bram36 + 0 " / " bram18 + 0
    printf "%-28s %12d %13.2f%%\n", "URAM288", uram, 100 * uram / dev_uram
    printf "%-28s %12d %13.2f%%\n", "DSP48E2", dsp, 100 * dsp / dev_dsp
    printf "%-28s %12d\n", "LUT RAM cells", lutram
    printf "%-28s %12d\n", "SRL cells", srl
    printf "%-28s %12d\n", "CARRY4/CARRY8 cells", carry
    printf "%-28s %12d\n", "MUXF7/8/9 cells", muxf
  }' "$OUT/stat.txt"
SLOTS=${2:-16}
WORDS=${3:-16}
rows=$((SLOTS * 2 * ((WORDS + 1) / 2)))
deep=$(( (rows + 4095) / 4096 ))
cascade=$(( deep < 8 ? deep : 8 ))
columns=$(( (deep + 7) / 8 ))
printf "%-28s %12d %13.2f%%   (2 arrays of %d rows of 512 bits: 2 x 8 x %d URAM288)\n" "URAM288 as Vivado maps it" \
  $((16 * deep)) "$(awk -v u=$((16 * deep)) 'BEGIN { printf "%.2f", 100 * u / 960 }')" "$rows" "$deep"
echo "slot-memory matrix (each array): $deep deep = $columns column(s) of at most $cascade; read latency 1 + $cascade + $columns = $((1 + cascade + columns))"
