// panama_fp32_add, stage S1: operand compare and exponent fields. The
// magnitude order and equality of the operands, both exponent differences
// (the far-path alignment shifts), the exponent-distance flags of the near
// path, and the decoded exponent and fraction fields of each operand. Used
// within S1 by the alignment, path-choice and forced-result parts (none is
// registered directly).
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S1: magnitude compare and equality (carry chain, LUT tree).
(* keep_hierarchy *)
module panama_fp32_add_mag_cmp (
    input  wire logic [30:0] a,
    input  wire logic [30:0] b,
    output logic             gt,  // |a| >= |b|
    output logic             eq   // |a| == |b|
);
  assign gt = a >= b;
  assign eq = a == b;
endmodule

// S1: raw exponent differences (carry chains).
(* keep_hierarchy *)
module panama_fp32_add_exp_diff (
    input  wire logic [7:0] ea,
    input  wire logic [7:0] eb,
    output logic      [7:0] d_ab,
    output logic      [7:0] d_ba
);
  assign d_ab = ea - eb;
  assign d_ba = eb - ea;
endmodule

// S1: exponent distance flags for the near path.
(* keep_hierarchy *)
module panama_fp32_add_exp_dist (
    input  wire logic [7:0] ea,
    input  wire logic [7:0] eb,
    output logic            d0,    // ea == eb
    output logic            d1ab,  // ea == eb + 1
    output logic            d1ba   // eb == ea + 1
);
  // x == y + 1 without a carry chain: bit k of x is y[k] flipped when all
  // lower bits of y are ones.
  function automatic logic plus_one(input logic [7:0] x, input logic [7:0] y);
    logic ones;
    plus_one = 1'b1;
    ones = 1'b1;
    for (int k = 0; k < 8; k++) begin
      if (x[k] != (y[k] ^ ones)) plus_one = 1'b0;
      ones = ones & y[k];
    end
  endfunction

  always_comb begin
    d0 = ea == eb;
    d1ab = plus_one(ea, eb);
    d1ba = plus_one(eb, ea);
  end
endmodule

// S1: decoded exponent and fraction fields of one operand.
(* keep_hierarchy *)
module panama_fp32_add_field_dec (
    input  wire logic [30:0] x,
    output logic             e_z,    // exponent field 0 (zero or subnormal)
    output logic             e_le1,  // exponent field <= 1
    output logic             e_ff,   // exponent field 255 (infinity or NaN)
    output logic             f_nz    // fraction field != 0
);
  always_comb begin
    e_z = x[30:23] == 8'd0;
    e_le1 = x[30:24] == 7'd0;
    e_ff = x[30:23] == 8'hFF;
    f_nz = x[22:0] != 23'd0;
  end
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
