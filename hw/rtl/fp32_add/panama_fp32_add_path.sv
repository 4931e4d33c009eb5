// panama_fp32_add, stage S1: choices. The larger operand's fraction and
// exponent (the far path's X) and the near path's exponent; which result
// path S2 takes (far, near, or forced: special or tiny), which far-path
// alignment candidate and which near-path difference, and the sign of the
// result (x + -x = +0; NaN positive). Registered at the end of S1; the
// result mux of S2 is in panama_fp32_add.sv.
`default_nettype none
// Several parts of the adder per file (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S1: choices of the larger operand (far-path X fraction and exponent, near
// exponent).
(* keep_hierarchy *)
module panama_fp32_add_larger_sel (
    input  wire logic [30:0] a,
    input  wire logic [30:0] b,
    input  wire logic        gt,
    input  wire logic        d1ab,
    output logic      [22:0] fx,
    output logic      [7:0]  ex,
    output logic      [7:0]  e_near
);
  always_comb begin
    fx = gt ? a[22:0] : b[22:0];
    ex = gt ? a[30:23] : b[30:23];
    e_near = d1ab ? a[30:23] : b[30:23];
  end
endmodule

// S1: path choice and the forced results.
(* keep_hierarchy *)
module panama_fp32_add_path_ctl (
    input  wire logic        sa,
    input  wire logic        sb,
    input  wire logic        gt,
    input  wire logic        eq,
    input  wire logic        ea_z,
    input  wire logic        ea_le1,
    input  wire logic        ea_ff,
    input  wire logic        eb_z,
    input  wire logic        eb_le1,
    input  wire logic        eb_ff,
    input  wire logic        nan,
    input  wire logic        d0,
    input  wire logic        d1ab,
    input  wire logic        d1ba,
    input  wire logic        n1ab_top,
    input  wire logic        n1ba_top,
    output logic             use_far,
    output logic             use_near,
    output logic      [1:0]  ysel,   // far-path candidate: b, a normal, a subnormal
    output logic      [1:0]  nsel,   // near-path difference
    output logic             sign,   // sign of the result
    output logic             special
);
  logic sub, tiny, near;
  always_comb begin
    sub = sa ^ sb;
    special = ea_ff || eb_ff;
    tiny = (ea_le1 && eb_le1 && sub) || (ea_z && eb_z);
    near = sub && !ea_z && !eb_z && (d0 || (d1ab && !n1ab_top) || (d1ba && !n1ba_top));
    use_near = near && !special && !tiny;
    use_far = !near && !special && !tiny;
    ysel = gt ? 2'd0 : ea_z ? 2'd2 : 2'd1;
    nsel = d0 ? {1'b0, !gt} : d1ab ? 2'd2 : 2'd3;
    if (special) sign = !nan && (ea_ff ? sa : sb);
    else if (sub && eq) sign = 1'b0;  // x + -x = +0
    else sign = gt ? sa : sb;
  end
endmodule

/* verilator lint_on DECLFILENAME */
`default_nettype wire
