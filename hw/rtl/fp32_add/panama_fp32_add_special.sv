// panama_fp32_add, stage S1: special values and forced results. The NaN
// flag (a NaN operand, or inf + -inf: the result is the canonical quiet NaN
// 32'h7FC00000) and the magnitude of a forced result: infinity or NaN when an
// operand has exponent field 255, else the tiny path's sum or difference
// (panama_fp32_add_tiny.sv). The magnitude is registered at the end of S1;
// the result mux of S2 (panama_fp32_add.sv) takes it when neither far nor
// near applies.
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S1: magnitude of a forced result (special value or tiny path).
(* keep_hierarchy *)
module panama_fp32_add_forced_mag (
    input  wire logic        special,
    input  wire logic        nan,
    input  wire logic        sub,
    input  wire logic        gt,
    input  wire logic [23:0] t_add,
    input  wire logic [23:0] t_ab,
    input  wire logic [23:0] t_ba,
    output logic      [30:0] mag
);
  always_comb begin
    if (special) mag = {8'hFF, nan, 22'd0};
    else if (!sub) mag = {7'd0, t_add};
    else mag = {7'd0, gt ? t_ab : t_ba};
  end
endmodule

// S1: NaN result flag.
(* keep_hierarchy *)
module panama_fp32_add_nan_flag (
    input  wire logic sub,
    input  wire logic ea_ff,
    input  wire logic fa_nz,
    input  wire logic eb_ff,
    input  wire logic fb_nz,
    output logic      nan
);
  assign nan = (ea_ff && fa_nz) || (eb_ff && fb_nz) || (ea_ff && eb_ff && sub);
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
