// panama_fp32_add, stage S2: far-path normalisation and rounding. The far
// path's exponent plus and minus one, normalisation of the sum by at most
// one bit, round to nearest even as an increment of the packed {exponent,
// fraction} with the round-up decision as the chain's lowest carry (it
// carries into the exponent up to infinity by itself), and the overflow of
// a carry out of exponent 254 (the result mux makes it infinity).
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S2: exponent neighbours of the far path.
(* keep_hierarchy *)
module panama_fp32_add_exp_step (
    input  wire logic [7:0] ex,
    output logic      [7:0] ex_p1,
    output logic      [7:0] ex_m1,
    output logic            ex254
);
  always_comb begin
    ex_p1 = ex + 8'd1;
    ex_m1 = ex - 8'd1;
    ex254 = ex == 8'd254;
  end
endmodule

// S2: far path, normalisation by at most one bit, rounding.
(* keep_hierarchy *)
module panama_fp32_add_norm_round (
    input  wire logic [28:0] s,
    input  wire logic [7:0]  ex,
    input  wire logic [7:0]  ex_p1,
    input  wire logic [7:0]  ex_m1,
    output logic      [30:0] mag
);
  logic [22:0] frac;
  logic [7:0] expf;
  logic lsb, g, st, round_up;
  logic [31:0] inc;
  always_comb begin
    // s[k + 1] is frame bit k, s[0] the half position below the frame.
    // Carry (right by one), top bit set (as is), subtraction that lost the
    // top bit (left by one).
    if (s[28]) begin
      frac = s[27:5];
      expf = ex_p1;
      {lsb, g, st} = {s[5], s[4], |s[3:0]};
    end else if (s[27]) begin
      frac = s[26:4];
      expf = ex;
      {lsb, g, st} = {s[4], s[3], |s[2:0]};
    end else begin
      frac = s[25:3];
      expf = ex_m1;
      {lsb, g, st} = {s[3], s[2], |s[1:0]};
    end
    round_up = g && (st || lsb);
    // The increment carries a full significand into the exponent (up to
    // infinity); the lowest position turns round_up into the chain's carry.
    inc = {expf, frac, 1'b1} + {31'd0, round_up};
    mag = inc[31:1];
  end
  logic unused;
  assign unused = inc[0];
endmodule

// S2: far-path overflow (a carry out of exponent 254).
(* keep_hierarchy *)
module panama_fp32_add_overflow (
    input  wire logic carry,
    input  wire logic ex254,
    output logic      ovf
);
  assign ovf = carry && ex254;
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
