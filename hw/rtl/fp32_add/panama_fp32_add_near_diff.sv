// panama_fp32_add, stage S1: near-path differences. The four differences of
// the 25-bit frames {1, f, 0} of two normal operands (equal exponents a - b
// and b - a; ea = eb + 1 a - b/2; eb = ea + 1 b - a/2) on carry chains, and
// the one-hot barrier bits from b's exponent that stop the leading-zero count
// (panama_fp32_add_lzc.sv) where the result's exponent would reach 1.
// Registered at the end of S1; S2 chooses one (panama_fp32_add_near_norm.sv).
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S1: near-path differences of two normal operands (25-bit frames
// {1, f, 0}): equal exponents, and exponents one apart.
(* keep_hierarchy *)
module panama_fp32_add_near_diff (
    input  wire logic [22:0] fa,
    input  wire logic [22:0] fb,
    output logic      [24:0] n0ab,  // a - b
    output logic      [24:0] n0ba,  // b - a
    output logic      [24:0] n1ab,  // a - b/2
    output logic      [24:0] n1ba   // b - a/2
);
  always_comb begin
    n0ab = {1'b1, fa, 1'b0} - {1'b1, fb, 1'b0};
    n0ba = {1'b1, fb, 1'b0} - {1'b1, fa, 1'b0};
    n1ab = {1'b1, fa, 1'b0} - {2'b01, fb};
    n1ba = {1'b1, fb, 1'b0} - {2'b01, fa};
  end
endmodule

// S1: near-path barrier bits from b's exponent field (1 <= eb): one-hot at
// bit 24 - room where room = e - 1 is how far the result can be shifted left
// before its exponent reaches 1; e = eb or eb + 1.
(* keep_hierarchy *)
module panama_fp32_add_near_barrier (
    input  wire logic [7:0]  eb,
    output logic      [24:0] bar_e,   // e = eb
    output logic      [24:0] bar_e1   // e = eb + 1
);
  always_comb begin
    for (int k = 0; k < 25; k++) begin
      bar_e[k] = eb == 8'(25 - k);
      bar_e1[k] = eb == 8'(24 - k);
    end
  end
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
