// panama_fp32_add, stage S1: tiny path. Where both exponent fields are at
// most 1 with an effective subtraction, or both operands are subnormal, the
// magnitude fields are linear in the value: the result is the integer sum or
// difference of the low 24 bits of the encodings (exact; a carry into bit 23
// is exponent 1). All three on carry chains; the forced-result magnitude
// (panama_fp32_add_special.sv) picks one, registered at the end of S1.
`default_nettype none
// A part of the adder named for what it computes, not for this file.
/* verilator lint_off DECLFILENAME */

// S1: tiny path, sums and differences of the low 24 bits of the encodings
// (carry chains).
(* keep_hierarchy *)
module panama_fp32_add_tiny_addsub (
    input  wire logic [23:0] a,
    input  wire logic [23:0] b,
    output logic      [23:0] t_add,
    output logic      [23:0] t_ab,
    output logic      [23:0] t_ba
);
  always_comb begin
    t_add = a + b;
    t_ab = a - b;
    t_ba = b - a;
  end
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
