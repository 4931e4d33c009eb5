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
`default_nettype none
// The parts are declared in this file with the adder they belong to.
/* verilator lint_off DECLFILENAME */

// S1: magnitude compare and equality (carry chain, LUT tree).
(* keep_hierarchy *)
module panama_fp32_add_cmp (
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
module panama_fp32_add_dexp (
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
module panama_fp32_add_dist (
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
module panama_fp32_add_dec (
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

// S1: b's far-path significand frame before alignment: {1, fb, 000} or,
// subnormal, {fb, 0000} (shifted by ea - eb instead of ea - 1).
(* keep_hierarchy *)
module panama_fp32_add_frame_b (
    input  wire logic [30:0] b,
    output logic      [26:0] y
);
  assign y = b[30:23] == 8'd0 ? {b[22:0], 4'b0000} : {1'b1, b[22:0], 3'b000};
endmodule

// S1: an alignment candidate inverted for an effective subtraction.
(* keep_hierarchy *)
module panama_fp32_add_inv #(
    parameter int WIDTH = 27
) (
    input  wire logic [WIDTH-1:0] x,
    input  wire logic             sa,
    input  wire logic             sb,
    output logic      [WIDTH-1:0] y,
    output logic                  sub
);
  assign sub = sa ^ sb;
  assign y = x ^ {WIDTH{sa ^ sb}};
endmodule

// S1: low-zero flags of a fraction f, first LUT level: zero flags of the
// 6-bit blocks of f, and for each k whether the bits of k's block below k
// are zero. (Each LUT level of the flags is its own module so that the
// mapper cannot merge them into a deeper shape.)
(* keep_hierarchy *)
module panama_fp32_add_zlow1 (
    input  wire logic [22:0] f,
    output logic      [3:0]  blk,   // f[6m+5:6m] == 0
    output logic      [23:0] part   // f[k-1:6*(k/6)] == 0
);
  always_comb begin
    for (int m = 0; m < 4; m++) begin
      blk[m] = 1'b1;
      for (int i = 6 * m; i < 6 * m + 6 && i < 23; i++) if (f[i]) blk[m] = 1'b0;
    end
    for (int k = 0; k < 24; k++) begin
      part[k] = 1'b1;
      for (int i = 6 * (k / 6); i < k; i++) if (f[i]) part[k] = 1'b0;
    end
  end
endmodule

// S1: low-zero flags of f in the two frames {1, f, 000} and {f, 0000}, second
// LUT level: bit j is set when frame bits j-1..0 are all zero (bits 27 and
// up: the whole frame is zero), for the sticky bit of a shift by j.
(* keep_hierarchy *)
module panama_fp32_add_zlow2 (
    input  wire logic [3:0]  blk,
    input  wire logic [23:0] part,
    output logic      [31:0] z_n,   // frame {1, f, 000}
    output logic      [31:0] z_s,   // frame {f, 0000}
    output logic             nz_s   // frame {f, 0000} != 0
);
  logic [23:0] lz;  // f[k-1:0] == 0
  always_comb begin
    for (int k = 0; k < 24; k++) begin
      lz[k] = part[k];
      for (int m = 0; m < 4; m++) if (6 * m + 6 <= k && !blk[m]) lz[k] = 1'b0;
    end
    for (int j = 0; j < 32; j++) begin
      z_n[j] = j <= 3 ? 1'b1 : j <= 26 ? lz[(j+21)%24] : 1'b0;
      z_s[j] = j <= 4 ? 1'b1 : lz[j <= 27 ? (j+20)%24 : 23];
    end
    nz_s = !(&blk);
  end
  logic unused;
  assign unused = part[23];
endmodule

// S1: low-zero flags of b's frame (panama_fp32_add_frame_b) from those of its
// two forms.
(* keep_hierarchy *)
module panama_fp32_add_zlow_b (
    input  wire logic        eb_z,
    input  wire logic [31:0] z_n,
    input  wire logic [31:0] z_s,
    input  wire logic        nz_s,
    output logic      [31:0] z,
    output logic             nz
);
  assign z = eb_z ? z_s : z_n;
  assign nz = !eb_z || nz_s;
endmodule

// S1: sticky bit of an alignment (a frame bit set below the shifted-out
// boundary): the low-zero flag at the shift, a mux tree of the same depth as
// the shifter, one module per LUT level: 4:1 by d[1:0] (and the saturation
// flag), 4:1 by d[3:2], then 2:1 by d[4] with the saturation.
(* keep_hierarchy *)
module panama_fp32_add_sticky1 (
    input  wire logic [31:0] z,     // low-zero flags of the frame
    input  wire logic [1:0]  d,     // shift[1:0]
    input  wire logic [2:0]  d_hi,  // shift[7:5]
    output logic      [7:0]  m,
    output logic             sat
);
  logic [3:0] q;
  always_comb begin
    for (int i = 0; i < 8; i++) begin
      q = z[4*i+:4];
      m[i] = q[d];
    end
    sat = d_hi != 3'd0;
  end
endmodule

(* keep_hierarchy *)
module panama_fp32_add_sticky2 (
    input  wire logic [7:0] m1,
    input  wire logic [1:0] d,  // shift[3:2]
    output logic      [1:0] m
);
  logic [3:0] q;
  always_comb begin
    for (int i = 0; i < 2; i++) begin
      q = m1[4*i+:4];
      m[i] = q[d];
    end
  end
endmodule

(* keep_hierarchy *)
module panama_fp32_add_sticky3 (
    input  wire logic [1:0] m2,
    input  wire logic       d4,   // shift[4]
    input  wire logic       sat,  // shift >= 32
    input  wire logic       nz,   // frame != 0
    output logic            st
);
  assign st = sat ? nz : !(d4 ? m2[1] : m2[0]);
endmodule

// S1: sticky bit of an alignment.
module panama_fp32_add_sticky (
    input  wire logic [31:0] z,   // low-zero flags of the frame
    input  wire logic        nz,  // frame != 0
    input  wire logic [7:0]  d,   // shift
    output logic             st
);
  logic [7:0] m1;
  logic [1:0] m2;
  logic sat;
  panama_fp32_add_sticky1 u_l1 (.z(z), .d(d[1:0]), .d_hi(d[7:5]), .m(m1), .sat(sat));
  panama_fp32_add_sticky2 u_l2 (.m1(m1), .d(d[3:2]), .m(m2));
  panama_fp32_add_sticky3 u_l3 (.m2(m2), .d4(d[4]), .sat(sat), .nz(nz), .st(st));
endmodule

// S1: 27-bit right shift in three mux levels, shifted-in bits `fill`,
// saturating (all `fill`) for shifts of 32 or more.
(* keep_hierarchy *)
module panama_fp32_add_shr (
    input  wire logic [26:0] x,
    input  wire logic [7:0]  d,
    input  wire logic        fill,
    output logic      [26:0] y
);
  logic [29:0] l1;
  logic [26:0] l2;
  logic [41:0] w1;
  logic [38:0] w2;
  always_comb begin
    w1 = {{15{fill}}, x};
    for (int i = 0; i < 27; i++) begin
      case (d[1:0])
        2'd0: l1[i] = w1[i];
        2'd1: l1[i] = w1[i+1];
        2'd2: l1[i] = w1[i+2];
        default: l1[i] = w1[i+3];
      endcase
    end
    l1[29:27] = {3{fill}};
    w2 = {{9{fill}}, l1};
    for (int i = 0; i < 27; i++) begin
      case (d[3:2])
        2'd0: l2[i] = w2[i];
        2'd1: l2[i] = w2[i+4];
        2'd2: l2[i] = w2[i+8];
        default: l2[i] = w2[i+12];
      endcase
    end
    for (int i = 0; i < 27; i++) begin
      if (d[7:5] != 3'd0) y[i] = fill;
      else if (d[4]) y[i] = i + 16 < 27 ? l2[(i+16)%27] : fill;
      else y[i] = l2[i];
    end
  end
  logic unused;
  assign unused = ^{w1[41:30], w2[38:30]};
endmodule

// S1: near-path differences of two normal operands (25-bit frames
// {1, f, 0}): equal exponents, and exponents one apart.
(* keep_hierarchy *)
module panama_fp32_add_near1 (
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
module panama_fp32_add_bar (
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

// S1: leading zeros of (n | barrier) as three base-3 digits, count =
// 9 * dig2 + 3 * dig1 + dig0 (0 to 24; 26 when both are 0): groups of three
// bits, three groups, three super-groups, one LUT level (module) each; the
// OR with the barrier fits the first level.
//
// Index of the first set bit from the top of three (2 when only the last or
// none is set): the top two bits decide.
`define PANAMA_FP32_ADD_FIRST3(hi, mid) ((hi) ? 2'd0 : (mid) ? 2'd1 : 2'd2)

(* keep_hierarchy *)
module panama_fp32_add_lzc1 (
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
module panama_fp32_add_lzc2 (
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
module panama_fp32_add_lzc3 (
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

module panama_fp32_add_lzc (
    input  wire logic [24:0] n,
    input  wire logic [24:0] bar,
    output logic      [5:0]  dig   // {dig2, dig1, dig0}
);
  logic [8:0] nz;
  logic [17:0] dg;
  logic [1:0] nzs;
  logic [5:0] d1s, d0s;
  panama_fp32_add_lzc1 u_l1 (.n(n), .bar(bar), .nz(nz), .dg(dg));
  panama_fp32_add_lzc2 u_l2 (.nz(nz), .dg(dg), .nzs(nzs), .d1s(d1s), .d0s(d0s));
  panama_fp32_add_lzc3 u_l3 (.nzs(nzs), .d1s(d1s), .d0s(d0s), .dig(dig));
endmodule

// S1: tiny path, sums and differences of the low 24 bits of the encodings
// (carry chains).
(* keep_hierarchy *)
module panama_fp32_add_tiny1 (
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

// S1: choices of the larger operand (far-path X fraction and exponent, near
// exponent).
(* keep_hierarchy *)
module panama_fp32_add_swap (
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
module panama_fp32_add_ctl1 (
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

// S1: magnitude of a forced result (special value or tiny path).
(* keep_hierarchy *)
module panama_fp32_add_misc1 (
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
module panama_fp32_add_nan (
    input  wire logic sub,
    input  wire logic ea_ff,
    input  wire logic fa_nz,
    input  wire logic eb_ff,
    input  wire logic fb_nz,
    output logic      nan
);
  assign nan = (ea_ff && fa_nz) || (eb_ff && fb_nz) || (ea_ff && eb_ff && sub);
endmodule

// S2: far path, choice of the alignment candidate, add or subtract.
(* keep_hierarchy *)
module panama_fp32_add_far2 (
    input  wire logic [22:0] fx,
    input  wire logic [26:0] yb,
    input  wire logic [26:0] yan,
    input  wire logic [26:0] yas,
    input  wire logic        stb,
    input  wire logic        stan,
    input  wire logic        stas,
    input  wire logic [1:0]  ysel,
    input  wire logic        sub,
    output logic      [28:0] s      // {carry, frame[26:0], half}
);
  logic [26:0] y;
  logic st;
  logic [29:0] sum;
  always_comb begin
    case (ysel)
      2'd0: begin
        y = yb;
        st = stb;
      end
      2'd1: begin
        y = yan;
        st = stan;
      end
      default: begin
        y = yas;
        st = stas;
      end
    endcase
    // {0, X, 0, 1} + {sub, Y or ~Y, sticky or ~sticky, sub}: the lowest
    // position turns `sub` into the carry of the two's complement.
    sum = {2'b01, fx, 3'b000, 2'b01} + {sub, y, st ^ sub, sub};
    s = sum[29:1];
  end
  logic unused;
  assign unused = sum[0];
endmodule

// S2: exponent neighbours of the far path.
(* keep_hierarchy *)
module panama_fp32_add_exp2 (
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
module panama_fp32_add_round2 (
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
module panama_fp32_add_ovf2 (
    input  wire logic carry,
    input  wire logic ex254,
    output logic      ovf
);
  assign ovf = carry && ex254;
endmodule

// S2: near path, choice of the difference and its leading-zero digits.
(* keep_hierarchy *)
module panama_fp32_add_nsel2 (
    input  wire logic [24:0] n0ab,
    input  wire logic [24:0] n0ba,
    input  wire logic [24:0] n1ab,
    input  wire logic [24:0] n1ba,
    input  wire logic [5:0]  lz0ab,
    input  wire logic [5:0]  lz0ba,
    input  wire logic [5:0]  lz1ab,
    input  wire logic [5:0]  lz1ba,
    input  wire logic [1:0]  nsel,
    output logic      [24:0] n,
    output logic      [5:0]  lz     // {dig2, dig1, dig0}
);
  always_comb begin
    case (nsel)
      2'd0: {n, lz} = {n0ab, lz0ab};
      2'd1: {n, lz} = {n0ba, lz0ba};
      2'd2: {n, lz} = {n1ab, lz1ab};
      default: {n, lz} = {n1ba, lz1ba};
    endcase
  end
endmodule

// S2: near path, left shift by 9 * dig2 + 3 * dig1 + dig0 in three 3:1 mux
// levels.
(* keep_hierarchy *)
module panama_fp32_add_shl (
    input  wire logic [24:0] x,
    input  wire logic [5:0]  lz,
    output logic      [24:0] y
);
  // One level: shift left by d * step (d = 0, 1, 2), zeros in.
  function automatic logic [24:0] shl_digit(input logic [24:0] v, input logic [1:0] d, input int step);
    for (int i = 0; i < 25; i++) begin
      case (d)
        2'd0: shl_digit[i] = v[i];
        2'd1: shl_digit[i] = i >= step ? v[(i+25-step)%25] : 1'b0;
        default: shl_digit[i] = i >= 2 * step ? v[(i+25-2*step)%25] : 1'b0;
      endcase
    end
  endfunction
  assign y = shl_digit(shl_digit(shl_digit(x, lz[1:0], 1), lz[3:2], 3), lz[5:4], 9);
endmodule

// S2: near-path count in binary (one LUT level: six inputs per bit).
(* keep_hierarchy *)
module panama_fp32_add_lzbin (
    input  wire logic [5:0] lz,  // {dig2, dig1, dig0}
    output logic      [4:0] cnt
);
  always_comb begin
    cnt = 5'd0;
    for (int i = 0; i < 64; i++) if (lz == 6'(i)) cnt = 5'((i / 16) * 9 + (i / 4 % 4) * 3 + i % 4);
  end
endmodule

// S2: near-path exponent, e minus the count (carry chain).
(* keep_hierarchy *)
module panama_fp32_add_nexp2 (
    input  wire logic [7:0] e,
    input  wire logic [4:0] lz,
    output logic      [7:0] ne
);
  assign ne = e - {3'd0, lz};
endmodule

// S2: near-path magnitude: a result that the barrier stopped (top bit clear)
// is subnormal, exponent field 0.
(* keep_hierarchy *)
module panama_fp32_add_nmag2 (
    input  wire logic [24:0] nf,
    input  wire logic [7:0]  ne,
    output logic      [30:0] nmag
);
  assign nmag = {nf[24] ? ne : 8'd0, nf[23:1]};
  logic unused;
  assign unused = nf[0];
endmodule

// S2: the result magnitude of the chosen path.
(* keep_hierarchy *)
module panama_fp32_add_out2 (
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

  panama_fp32_add_cmp u_cmp (.a(a[30:0]), .b(b[30:0]), .gt(gt1), .eq(eq1));
  panama_fp32_add_dexp u_dexp (.ea(a[30:23]), .eb(b[30:23]), .d_ab(d_ab1), .d_ba(d_ba1));
  panama_fp32_add_dist u_dist (.ea(a[30:23]), .eb(b[30:23]), .d0(d0_1), .d1ab(d1ab1), .d1ba(d1ba1));
  panama_fp32_add_dec u_deca (.x(a[30:0]), .e_z(ea_z1), .e_le1(ea_le1_1), .e_ff(ea_ff1), .f_nz(fa_nz1));
  panama_fp32_add_dec u_decb (.x(b[30:0]), .e_z(eb_z1), .e_le1(eb_le1_1), .e_ff(eb_ff1), .f_nz(fb_nz1));

  // Far path: alignment candidates and their sticky bits.
  panama_fp32_add_frame_b u_frame_b (.b(b[30:0]), .y(frame_b1));
  panama_fp32_add_inv u_inv_b (.x(frame_b1), .sa(a[31]), .sb(b[31]), .y(pb1), .sub(sub1));
  panama_fp32_add_inv u_inv_an (.x({1'b1, a[22:0], 3'b000}), .sa(a[31]), .sb(b[31]), .y(pan1), .sub(sub_an1));
  panama_fp32_add_inv u_inv_as (.x({a[22:0], 4'b0000}), .sa(a[31]), .sb(b[31]), .y(pas1), .sub(sub_as1));
  panama_fp32_add_shr u_shr_b (.x(pb1), .d(d_ab1), .fill(sub1), .y(yb1));
  panama_fp32_add_shr u_shr_an (.x(pan1), .d(d_ba1), .fill(sub_an1), .y(yan1));
  panama_fp32_add_shr u_shr_as (.x(pas1), .d(d_ba1), .fill(sub_as1), .y(yas1));
  panama_fp32_add_zlow1 u_zlow1_fb (.f(b[22:0]), .blk(blk_b1), .part(part_b1));
  panama_fp32_add_zlow2 u_zlow2_fb (.blk(blk_b1), .part(part_b1), .z_n(z_bn1), .z_s(z_bs1), .nz_s(nz_bs1));
  panama_fp32_add_zlow_b u_zlow_b (.eb_z(eb_z1), .z_n(z_bn1), .z_s(z_bs1), .nz_s(nz_bs1), .z(z_b1), .nz(nz_b1));
  panama_fp32_add_zlow1 u_zlow1_fa (.f(a[22:0]), .blk(blk_a1), .part(part_a1));
  panama_fp32_add_zlow2 u_zlow2_fa (.blk(blk_a1), .part(part_a1), .z_n(z_an1), .z_s(z_as1), .nz_s(nz_as1));
  panama_fp32_add_sticky u_st_b (.z(z_b1), .nz(nz_b1), .d(d_ab1), .st(stb1));
  panama_fp32_add_sticky u_st_an (.z(z_an1), .nz(1'b1), .d(d_ba1), .st(stan1));
  panama_fp32_add_sticky u_st_as (.z(z_as1), .nz(nz_as1), .d(d_ba1), .st(stas1));

  // Near path: differences and their leading zeros.
  panama_fp32_add_near1 u_near1 (.fa(a[22:0]), .fb(b[22:0]), .n0ab(n0ab1), .n0ba(n0ba1), .n1ab(n1ab1), .n1ba(n1ba1));
  panama_fp32_add_bar u_bar (.eb(b[30:23]), .bar_e(bar_e1), .bar_e1(bar_e1p));
  panama_fp32_add_lzc u_lz0ab (.n(n0ab1), .bar(bar_e1), .dig(lz0ab1));
  panama_fp32_add_lzc u_lz0ba (.n(n0ba1), .bar(bar_e1), .dig(lz0ba1));
  panama_fp32_add_lzc u_lz1ab (.n(n1ab1), .bar(bar_e1p), .dig(lz1ab1));
  panama_fp32_add_lzc u_lz1ba (.n(n1ba1), .bar(bar_e1), .dig(lz1ba1));

  // Tiny path, choices, forced results.
  panama_fp32_add_tiny1 u_tiny1 (.a(a[23:0]), .b(b[23:0]), .t_add(t_add1), .t_ab(t_ab1), .t_ba(t_ba1));
  panama_fp32_add_swap u_swap (.a(a[30:0]), .b(b[30:0]), .gt(gt1), .d1ab(d1ab1), .fx(fx1), .ex(ex1), .e_near(e_near1));
  panama_fp32_add_ctl1 u_ctl1 (
      .sa(a[31]), .sb(b[31]), .gt(gt1), .eq(eq1), .ea_z(ea_z1), .ea_le1(ea_le1_1), .ea_ff(ea_ff1), .eb_z(eb_z1),
      .eb_le1(eb_le1_1), .eb_ff(eb_ff1), .nan(nan1), .d0(d0_1), .d1ab(d1ab1), .d1ba(d1ba1),
      .n1ab_top(n1ab1[24]), .n1ba_top(n1ba1[24]), .use_far(use_far1), .use_near(use_near1), .ysel(ysel1),
      .nsel(nsel1), .sign(sign1), .special(special1)
  );
  panama_fp32_add_nan u_nan (.sub(sub1), .ea_ff(ea_ff1), .fa_nz(fa_nz1), .eb_ff(eb_ff1), .fb_nz(fb_nz1), .nan(nan1));
  panama_fp32_add_misc1 u_misc1 (
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

  panama_fp32_add_far2 u_far2 (
      .fx(s1_fx), .yb(s1_yb), .yan(s1_yan), .yas(s1_yas), .stb(s1_stb), .stan(s1_stan), .stas(s1_stas),
      .ysel(s1_ysel), .sub(s1_sub), .s(s2w)
  );
  panama_fp32_add_exp2 u_exp2 (.ex(s1_ex), .ex_p1(ex_p1_2), .ex_m1(ex_m1_2), .ex254(ex254_2));
  panama_fp32_add_round2 u_round2 (.s(s2w), .ex(s1_ex), .ex_p1(ex_p1_2), .ex_m1(ex_m1_2), .mag(mag2));
  panama_fp32_add_ovf2 u_ovf2 (.carry(s2w[28]), .ex254(ex254_2), .ovf(ovf2));
  panama_fp32_add_nsel2 u_nsel2 (
      .n0ab(s1_n0ab), .n0ba(s1_n0ba), .n1ab(s1_n1ab), .n1ba(s1_n1ba), .lz0ab(s1_lz0ab), .lz0ba(s1_lz0ba),
      .lz1ab(s1_lz1ab), .lz1ba(s1_lz1ba), .nsel(s1_nsel), .n(n2), .lz(lz2)
  );
  panama_fp32_add_shl u_shl2 (.x(n2), .lz(lz2), .y(nf2));
  panama_fp32_add_lzbin u_lzbin2 (.lz(lz2), .cnt(cnt2));
  panama_fp32_add_nexp2 u_nexp2 (.e(s1_e_near), .lz(cnt2), .ne(ne2));
  panama_fp32_add_nmag2 u_nmag2 (.nf(nf2), .ne(ne2), .nmag(nmag2));
  panama_fp32_add_out2 u_out2 (
      .use_far(s1_use_far), .use_near(s1_use_near), .ovf(ovf2), .mag(mag2), .nmag(nmag2), .misc(s1_misc),
      .result(result2)
  );

  always_ff @(posedge clk) sum <= {s1_sign, result2};
endmodule
`default_nettype wire
