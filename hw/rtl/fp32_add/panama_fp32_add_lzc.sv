// panama_fp32_add, stage S1: near-path leading-zero count. The leading zeros
// of a near-path difference OR-ed with its barrier bits
// (panama_fp32_add_near_diff.sv) as three base-3 digits, one LUT level
// (module) each: first set bit of each group of three bits, first nonzero
// group of each super-group of three groups, first nonzero super-group.
// Registered at the end of S1; S2 shifts by the digits and converts them to
// binary (panama_fp32_add_near_norm.sv).
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S1: leading zeros of (n | barrier) as three base-3 digits, count =
// 9 * dig2 + 3 * dig1 + dig0 (0 to 24; 26 when both are 0): groups of three
// bits, three groups, three super-groups, one LUT level (module) each; the
// OR with the barrier fits the first level.
//
// Index of the first set bit from the top of three (2 when only the last or
// none is set): the top two bits decide.
`define PANAMA_FP32_ADD_FIRST3(hi, mid) ((hi) ? 2'd0 : (mid) ? 2'd1 : 2'd2)

(* keep_hierarchy *)
module panama_fp32_add_lzc_bits (
    input  wire logic [24:0] n,
    input  wire logic [24:0] bar,
    output logic      [8:0]  nz,   // group g (bits 26-3g..24-3g of {v, 00}) != 0
    output logic      [17:0] dg    // first set bit in group g
);
  logic [26:0] v;
  always_comb begin
    v = {n | bar, 2'b00};
    for (int g = 0; g < 9; g++) begin
      nz[g] = |v[26-3*g-:3];
      dg[2*g+:2] = `PANAMA_FP32_ADD_FIRST3(v[26-3*g], v[25-3*g]);
    end
  end
endmodule

(* keep_hierarchy *)
module panama_fp32_add_lzc_groups (
    input  wire logic [8:0]  nz,
    input  wire logic [17:0] dg,
    output logic      [1:0]  nzs,  // super-groups 0 and 1 != 0
    output logic      [5:0]  d1s,  // first nonzero group in super-group s
    output logic      [5:0]  d0s   // its first set bit
);
  always_comb begin
    nzs[0] = |nz[2:0];
    nzs[1] = |nz[5:3];
    for (int s = 0; s < 3; s++) begin
      d1s[2*s+:2] = `PANAMA_FP32_ADD_FIRST3(nz[3*s], nz[3*s+1]);
      d0s[2*s+:2] = nz[3*s] ? dg[6*s+:2] : nz[3*s+1] ? dg[6*s+2+:2] : dg[6*s+4+:2];
    end
  end
  logic unused;
  assign unused = nz[8];
endmodule

(* keep_hierarchy *)
module panama_fp32_add_lzc_supergroups (
    input  wire logic [1:0] nzs,
    input  wire logic [5:0] d1s,
    input  wire logic [5:0] d0s,
    output logic      [5:0] dig   // {dig2, dig1, dig0}
);
  always_comb begin
    dig[5:4] = `PANAMA_FP32_ADD_FIRST3(nzs[0], nzs[1]);
    dig[3:2] = nzs[0] ? d1s[1:0] : nzs[1] ? d1s[3:2] : d1s[5:4];
    dig[1:0] = nzs[0] ? d0s[1:0] : nzs[1] ? d0s[3:2] : d0s[5:4];
  end
endmodule
`undef PANAMA_FP32_ADD_FIRST3

/* verilator lint_on DECLFILENAME */

// S1: leading zeros of (n | barrier) as {dig2, dig1, dig0}.
module panama_fp32_add_lzc (
    input  wire logic [24:0] n,
    input  wire logic [24:0] bar,
    output logic      [5:0]  dig   // {dig2, dig1, dig0}
);
  logic [8:0] nz;
  logic [17:0] dg;
  logic [1:0] nzs;
  logic [5:0] d1s, d0s;
  panama_fp32_add_lzc_bits u_l1 (.n(n), .bar(bar), .nz(nz), .dg(dg));
  panama_fp32_add_lzc_groups u_l2 (.nz(nz), .dg(dg), .nzs(nzs), .d1s(d1s), .d0s(d0s));
  panama_fp32_add_lzc_supergroups u_l3 (.nzs(nzs), .d1s(d1s), .d0s(d0s), .dig(dig));
endmodule
`default_nettype wire
