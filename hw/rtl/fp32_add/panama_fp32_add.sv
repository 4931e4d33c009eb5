// IEEE-754 binary32 adder, one lane, pipelined in LATENCY = 2 stages (the
// sum of operands presented at clock t is on `sum` after the edge ending
// clock t + 1; `sum` is a register). Numeric contract of docs/protocol.md,
// identical to hw/hls/include/panama/fp32_add.hpp: round to nearest even,
// subnormals kept (inputs and outputs), every NaN result is the canonical
// quiet NaN 32'h7FC00000 (inf + -inf too), -0 + -0 = -0, x + -x = +0,
// overflow to infinity.
//
// The slot-memory loop of panama_datapath runs through both stages, so their
// number is the loop length D the issuer keeps between two contributions to
// one word. In that loop operand `a` comes through a 4:1 forward mux (one LUT
// level), operand `b` straight from a register; every stage is at most six
// LUT levels (a run of carry cells counting as one), so stage 1 has five
// levels after the mux on the `a` side (scripts/rtl-adder-depth.sh).
//
// Three result paths, chosen at the end of stage 2:
//   far   the sum, or a difference that loses at most one leading bit
//         (exponent difference 2 or more, or 1 with a subnormal smaller
//         operand, or no cancellation), rounded;
//   near  an effective subtraction of two normal operands with exponent
//         difference 0 or 1 that cancels at least one leading bit (then the
//         difference is exact in 24 bits: no rounding);
//   tiny  both exponent fields <= 1 with an effective subtraction, or both
//         operands subnormal: the magnitude fields are linear in the value
//         there, so the result is the integer sum or difference of the low 24
//         bits of the encodings (exact; a carry into bit 23 is exponent 1).
// Specials (an operand with exponent field 255) and x + -x are forced
// results. Far-path significands are 27-bit frames {hidden, fraction, guard,
// round, sticky-position} plus a half-position bit below for the sticky.
//
//   S1  |a| >= |b| and |a| == |b| (carry chains); exponent differences
//       d_ab = ea - eb and d_ba = eb - ea (carry chains); the three far-path
//       alignment candidates, each inverted for an effective subtraction
//       before a 27-bit right shift in three mux levels (4:1, 4:1, 2:1 with
//       saturation; shifted-in bits are the subtraction flag):
//         b by d_ab, with b's significand {1, fb} or, subnormal, {fb, 0}
//           (= {0, fb} shifted one less: max(eb, 1) = eb + 1);
//         a by d_ba as {1, fa} and as {fa, 0} (whether a is subnormal costs
//           two LUT levels after the mux, too late for the shift: stage 2
//           picks);
//       their sticky bits as the frame's "bits below j are zero" flag at
//       j = shift (flags two LUT levels from the fraction, then a 32:1 mux
//       tree as deep as the shifter); the larger operand's fraction and
//       exponent; near path: the four differences of 25-bit frames
//       {1, f, 0} (equal exponents a - b and b - a, ea = eb + 1 a - b/2,
//       eb = ea + 1 b - a/2) on carry chains and the leading zeros of each,
//       as three base-3 digits in three LUT levels (groups of three bits,
//       groups, super-groups), stopped by a one-hot barrier bit OR-ed in at
//       the position where the exponent would reach 1 (the result is then
//       subnormal; the near exponent is eb or eb + 1, so the barrier comes
//       from b); tiny path |a| +- |b| on the encodings (carry chains); path
//       choice, forced value (special or tiny), sign of the result
//   S2  far path: choice of the alignment candidate folded into the LUT that
//       forms the adder's propagate bit, add or subtract (carry chain), at
//       most one bit of normalisation, rounding as an increment of the packed
//       {exponent, fraction} with the round-up decision as the chain's lowest
//       carry (it carries into the exponent up to infinity by itself),
//       overflow to infinity; near path: choice of the difference and digits,
//       left shift in three 3:1 mux levels, the count in binary (one LUT),
//       exponent minus the count (carry chain); the result of the chosen path
//
// Levels on the longest paths. S1, `a` side: forward mux 1, propagate LUT
// 2, carry chain 3 (exponent difference, near difference), then three mux
// or count levels 4-6 (shift, sticky, leading zeros). S2: propagate LUT with
// the candidate choice 1, carry chain 2, normalisation choice 3, round-up
// decision 4, increment chain 5, result mux 6; near path: choice 1, shift
// 2-4 (count 2, exponent chain 3-4), exponent field 5.
//
// The combinational parts are small modules kept as hierarchy during
// synthesis (keep_hierarchy): Yosys' ABC maps one netlist with a single
// depth target and, for area, deepens every shorter cone up to the deepest
// one; per module it only deepens cones up to that module's own depth. Parts
// whose inputs arrive at different levels (the `a` side one level after the
// `b` side) are split so that no cone is deepened past its budget.
// scripts/rtl-adder-depth.sh flattens after synthesis and counts levels on
// the flat netlist.
//
// Those parts are in the other files of hw/rtl/fp32_add/, listed before this
// one in hw/rtl/sources.txt; this file holds the result mux, the stage
// registers and the wiring:
//   panama_fp32_add_compare.sv    S1 magnitude compare, exponent differences
//                                 and distance flags, field decode
//   panama_fp32_add_align.sv      S1 far-path candidate frames, inversion for
//                                 a subtraction, sticky bits, shifter
//   panama_fp32_add_near_diff.sv  S1 near-path differences, barrier bits
//   panama_fp32_add_lzc.sv        S1 near-path leading zeros (base-3 digits)
//   panama_fp32_add_tiny.sv       S1 tiny-path sums and differences
//   panama_fp32_add_path.sv       S1 larger operand, path choice, sign
//   panama_fp32_add_special.sv    S1 forced-result magnitude, NaN flag
//   panama_fp32_add_far.sv        S2 far-path candidate choice, add/subtract
//   panama_fp32_add_round.sv      S2 far-path normalisation, rounding,
//                                 overflow
//   panama_fp32_add_near_norm.sv  S2 near-path choice, left shift, count in
//                                 binary, exponent
// Their order there (and of the parts in each file) is the order in which
// Yosys reads them; ABC's mapping depends on it, so reordering changes the
// netlist (not the logic) and can change the depth report.
`default_nettype none
// The S2 result mux is a part of its own (one module per LUT-level budget).
/* verilator lint_off DECLFILENAME */

// S2: the result magnitude of the chosen path.
(* keep_hierarchy *)
module panama_fp32_add_result_mux (
    input  wire logic        use_far,
    input  wire logic        use_near,
    input  wire logic        ovf,
    input  wire logic [30:0] mag,
    input  wire logic [30:0] nmag,
    input  wire logic [30:0] misc,
    output logic      [30:0] result
);
  always_comb begin
    if (use_far) result = ovf ? 31'h7F800000 : mag;
    else if (use_near) result = nmag;
    else result = misc;
  end
endmodule

/* verilator lint_on DECLFILENAME */

module panama_fp32_add (
    input  wire logic        clk,
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic      [31:0] sum
);
  // ------------------------------------------------------------ S1
  logic        gt1, eq1, d0_1, d1ab1, d1ba1;
  logic [7:0]  d_ab1, d_ba1;
  logic        ea_z1, ea_le1_1, ea_ff1, fa_nz1, eb_z1, eb_le1_1, eb_ff1, fb_nz1;
  logic [26:0] frame_b1, pb1, pan1, pas1, yb1, yan1, yas1;
  logic        sub1, sub_an1, sub_as1;
  logic [31:0] z_b1, z_an1, z_as1;
  logic [31:0] z_bn1, z_bs1;
  logic [3:0]  blk_a1, blk_b1;
  logic [23:0] part_a1, part_b1;
  logic        nz_b1, nz_as1, nz_bs1;
  logic        stb1, stan1, stas1;
  logic [24:0] n0ab1, n0ba1, n1ab1, n1ba1, bar_e1, bar_e1p;
  logic [5:0]  lz0ab1, lz0ba1, lz1ab1, lz1ba1;
  logic [23:0] t_add1, t_ab1, t_ba1;
  logic [22:0] fx1;
  logic [7:0]  ex1, e_near1;
  logic        use_far1, use_near1, sign1, special1, nan1;
  logic [1:0]  ysel1, nsel1;
  logic [30:0] misc1;

  panama_fp32_add_mag_cmp u_mag_cmp (.a(a[30:0]), .b(b[30:0]), .gt(gt1), .eq(eq1));
  panama_fp32_add_exp_diff u_exp_diff (.ea(a[30:23]), .eb(b[30:23]), .d_ab(d_ab1), .d_ba(d_ba1));
  panama_fp32_add_exp_dist u_exp_dist (.ea(a[30:23]), .eb(b[30:23]), .d0(d0_1), .d1ab(d1ab1), .d1ba(d1ba1));
  panama_fp32_add_field_dec u_dec_a (.x(a[30:0]), .e_z(ea_z1), .e_le1(ea_le1_1), .e_ff(ea_ff1), .f_nz(fa_nz1));
  panama_fp32_add_field_dec u_dec_b (.x(b[30:0]), .e_z(eb_z1), .e_le1(eb_le1_1), .e_ff(eb_ff1), .f_nz(fb_nz1));

  // Far path: alignment candidates and their sticky bits.
  panama_fp32_add_b_frame u_b_frame (.b(b[30:0]), .y(frame_b1));
  panama_fp32_add_sub_invert u_inv_b (.x(frame_b1), .sa(a[31]), .sb(b[31]), .y(pb1), .sub(sub1));
  panama_fp32_add_sub_invert u_inv_an (.x({1'b1, a[22:0], 3'b000}), .sa(a[31]), .sb(b[31]), .y(pan1), .sub(sub_an1));
  panama_fp32_add_sub_invert u_inv_as (.x({a[22:0], 4'b0000}), .sa(a[31]), .sb(b[31]), .y(pas1), .sub(sub_as1));
  panama_fp32_add_align_shr u_shr_b (.x(pb1), .d(d_ab1), .fill(sub1), .y(yb1));
  panama_fp32_add_align_shr u_shr_an (.x(pan1), .d(d_ba1), .fill(sub_an1), .y(yan1));
  panama_fp32_add_align_shr u_shr_as (.x(pas1), .d(d_ba1), .fill(sub_as1), .y(yas1));
  panama_fp32_add_low_zero_blk u_lowz_blk_b (.f(b[22:0]), .blk(blk_b1), .part(part_b1));
  panama_fp32_add_low_zero_frames u_lowz_frames_b (.blk(blk_b1), .part(part_b1), .z_n(z_bn1), .z_s(z_bs1), .nz_s(nz_bs1));
  panama_fp32_add_low_zero_b u_lowz_b (.eb_z(eb_z1), .z_n(z_bn1), .z_s(z_bs1), .nz_s(nz_bs1), .z(z_b1), .nz(nz_b1));
  panama_fp32_add_low_zero_blk u_lowz_blk_a (.f(a[22:0]), .blk(blk_a1), .part(part_a1));
  panama_fp32_add_low_zero_frames u_lowz_frames_a (.blk(blk_a1), .part(part_a1), .z_n(z_an1), .z_s(z_as1), .nz_s(nz_as1));
  panama_fp32_add_sticky u_st_b (.z(z_b1), .nz(nz_b1), .d(d_ab1), .st(stb1));
  panama_fp32_add_sticky u_st_an (.z(z_an1), .nz(1'b1), .d(d_ba1), .st(stan1));
  panama_fp32_add_sticky u_st_as (.z(z_as1), .nz(nz_as1), .d(d_ba1), .st(stas1));

  // Near path: differences and their leading zeros.
  panama_fp32_add_near_diff u_near_diff (.fa(a[22:0]), .fb(b[22:0]), .n0ab(n0ab1), .n0ba(n0ba1), .n1ab(n1ab1), .n1ba(n1ba1));
  panama_fp32_add_near_barrier u_near_bar (.eb(b[30:23]), .bar_e(bar_e1), .bar_e1(bar_e1p));
  panama_fp32_add_lzc u_lz0ab (.n(n0ab1), .bar(bar_e1), .dig(lz0ab1));
  panama_fp32_add_lzc u_lz0ba (.n(n0ba1), .bar(bar_e1), .dig(lz0ba1));
  panama_fp32_add_lzc u_lz1ab (.n(n1ab1), .bar(bar_e1p), .dig(lz1ab1));
  panama_fp32_add_lzc u_lz1ba (.n(n1ba1), .bar(bar_e1), .dig(lz1ba1));

  // Tiny path, choices, forced results.
  panama_fp32_add_tiny_addsub u_tiny (.a(a[23:0]), .b(b[23:0]), .t_add(t_add1), .t_ab(t_ab1), .t_ba(t_ba1));
  panama_fp32_add_larger_sel u_larger (.a(a[30:0]), .b(b[30:0]), .gt(gt1), .d1ab(d1ab1), .fx(fx1), .ex(ex1), .e_near(e_near1));
  panama_fp32_add_path_ctl u_path_ctl (
      .sa(a[31]), .sb(b[31]), .gt(gt1), .eq(eq1), .ea_z(ea_z1), .ea_le1(ea_le1_1), .ea_ff(ea_ff1), .eb_z(eb_z1),
      .eb_le1(eb_le1_1), .eb_ff(eb_ff1), .nan(nan1), .d0(d0_1), .d1ab(d1ab1), .d1ba(d1ba1),
      .n1ab_top(n1ab1[24]), .n1ba_top(n1ba1[24]), .use_far(use_far1), .use_near(use_near1), .ysel(ysel1),
      .nsel(nsel1), .sign(sign1), .special(special1)
  );
  panama_fp32_add_nan_flag u_nan (.sub(sub1), .ea_ff(ea_ff1), .fa_nz(fa_nz1), .eb_ff(eb_ff1), .fb_nz(fb_nz1), .nan(nan1));
  panama_fp32_add_forced_mag u_forced (
      .special(special1), .nan(nan1), .sub(sub1), .gt(gt1), .t_add(t_add1), .t_ab(t_ab1), .t_ba(t_ba1), .mag(misc1)
  );

  logic [22:0] s1_fx;
  logic [7:0]  s1_ex, s1_e_near;
  logic [26:0] s1_yb, s1_yan, s1_yas;
  logic        s1_stb, s1_stan, s1_stas, s1_sub;
  logic [1:0]  s1_ysel, s1_nsel;
  logic [24:0] s1_n0ab, s1_n0ba, s1_n1ab, s1_n1ba;
  logic [5:0]  s1_lz0ab, s1_lz0ba, s1_lz1ab, s1_lz1ba;
  logic        s1_use_far, s1_use_near, s1_sign;
  logic [30:0] s1_misc;

  always_ff @(posedge clk) begin
    s1_fx <= fx1;
    s1_ex <= ex1;
    s1_e_near <= e_near1;
    s1_yb <= yb1;
    s1_yan <= yan1;
    s1_yas <= yas1;
    s1_stb <= stb1;
    s1_stan <= stan1;
    s1_stas <= stas1;
    s1_sub <= sub1;
    s1_ysel <= ysel1;
    s1_nsel <= nsel1;
    s1_n0ab <= n0ab1;
    s1_n0ba <= n0ba1;
    s1_n1ab <= n1ab1;
    s1_n1ba <= n1ba1;
    s1_lz0ab <= lz0ab1;
    s1_lz0ba <= lz0ba1;
    s1_lz1ab <= lz1ab1;
    s1_lz1ba <= lz1ba1;
    s1_use_far <= use_far1;
    s1_use_near <= use_near1;
    s1_sign <= sign1;
    s1_misc <= misc1;
  end

  // ------------------------------------------------------------ S2
  logic [28:0] s2w;
  logic [7:0]  ex_p1_2, ex_m1_2, ne2;
  logic        ex254_2, ovf2;
  logic [30:0] mag2, nmag2, result2;
  logic [24:0] n2, nf2;
  logic [5:0]  lz2;
  logic [4:0]  cnt2;

  panama_fp32_add_far_addsub u_far (
      .fx(s1_fx), .yb(s1_yb), .yan(s1_yan), .yas(s1_yas), .stb(s1_stb), .stan(s1_stan), .stas(s1_stas),
      .ysel(s1_ysel), .sub(s1_sub), .s(s2w)
  );
  panama_fp32_add_exp_step u_exp_step (.ex(s1_ex), .ex_p1(ex_p1_2), .ex_m1(ex_m1_2), .ex254(ex254_2));
  panama_fp32_add_norm_round u_round (.s(s2w), .ex(s1_ex), .ex_p1(ex_p1_2), .ex_m1(ex_m1_2), .mag(mag2));
  panama_fp32_add_overflow u_ovf (.carry(s2w[28]), .ex254(ex254_2), .ovf(ovf2));
  panama_fp32_add_near_select u_near_sel (
      .n0ab(s1_n0ab), .n0ba(s1_n0ba), .n1ab(s1_n1ab), .n1ba(s1_n1ba), .lz0ab(s1_lz0ab), .lz0ba(s1_lz0ba),
      .lz1ab(s1_lz1ab), .lz1ba(s1_lz1ba), .nsel(s1_nsel), .n(n2), .lz(lz2)
  );
  panama_fp32_add_near_shl u_near_shl (.x(n2), .lz(lz2), .y(nf2));
  panama_fp32_add_lzc_binary u_lz_bin (.lz(lz2), .cnt(cnt2));
  panama_fp32_add_near_exp u_near_exp (.e(s1_e_near), .lz(cnt2), .ne(ne2));
  panama_fp32_add_near_pack u_near_pack (.nf(nf2), .ne(ne2), .nmag(nmag2));
  panama_fp32_add_result_mux u_result (
      .use_far(s1_use_far), .use_near(s1_use_near), .ovf(ovf2), .mag(mag2), .nmag(nmag2), .misc(s1_misc),
      .result(result2)
  );

  always_ff @(posedge clk) sum <= {s1_sign, result2};
endmodule
`default_nettype wire
