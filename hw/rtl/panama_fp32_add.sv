// IEEE-754 binary32 adder, one lane, pipelined in LATENCY = 3 stages (the
// sum of operands presented at clock t is on `sum` after the edge ending
// clock t + 2). Numeric contract of docs/protocol.md, identical to
// hw/hls/include/panama/fp32_add.hpp: round to nearest even, subnormals kept,
// every NaN result is the canonical quiet NaN 32'h7FC00000 (inf + -inf too),
// -0 + -0 = -0 and x + -x = +0.
//
// The slot-memory loop of panama_datapath runs through all stages, so their
// number is the loop length D the issuer keeps between two contributions to
// one word. A dual-path design keeps each stage at a few LUT levels
// (docs/rtl.md, "Timing"). Significands are 27-bit frames {hidden, fraction,
// guard, round, sticky}; a subnormal has hidden bit 0 and exponent 1.
//   S1  raw-field magnitude compare and the four exponent differences (with
//       and without the subnormal correction) on carry chains, zero
//       exponents, near-path distance flags (effective exponent difference
//       0 or 1), swap into the larger (x) and smaller (y) operand, alignment
//       shift amount, far-path alignment by shift[1:0] (exact: only the zero
//       GRS bits leave), the near-path difference x - y or x - y/2 on one
//       carry chain, the subnormal barrier, special-operand flags
//   S2  far path: alignment by shift[4:2] (saturating) with sticky, add or
//       subtract; near path: leading-zero count of (difference | barrier) in
//       8-bit groups, left shift by its multiple-of-8 part, exact
//       cancellation; exponent + 1 and - 1; special value
//   S3  far path: at most one bit of normalisation (right on a carry, left
//       on a one-bit cancellation), rounding increment on the packed
//       magnitude (carries into the exponent up to infinity); near path: left
//       shift by the rest of the count, exponent minus the count (exact, no
//       rounding); choice of the path, specials, overflow to infinity, +0 on
//       exact cancellation
//
// The near path is used for an effective subtraction with exponent
// difference 0 or 1 whose far-path difference lost its top bit (at least one
// bit of cancellation): then the result is exact in 24 bits. Otherwise (no
// cancellation, or a difference of 2 or more: at most one bit lost) the far
// path rounds.
//
// Near-path left normalisation shifts by min(leading zeros, room) where
// room = e - 1 is how far the exponent can fall before the subnormal
// exponent: a one-hot "barrier" bit at position 26 - room is OR-ed into the
// value whose leading zeros are counted, so the count stops there.
//
// The combinational parts are small modules kept as hierarchy during
// synthesis (keep_hierarchy): Yosys' ABC maps one netlist with a single
// depth target and, for area, deepens every shorter cone up to the deepest
// one (e.g. the LUTs in front of the compare carry chain up to the depth of
// the leading-zero count); per module it only deepens cones up to that
// module's own depth. scripts/rtl-adder-depth.sh flattens after synthesis
// and counts levels on the flat netlist.
`default_nettype none
// The parts are declared in this file with the adder they belong to.
/* verilator lint_off DECLFILENAME */

// S1: magnitude compare |a| >= |b| and exponent differences (carry chains).
(* keep_hierarchy *)
module panama_fp32_add_cmp (
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic             gt,
    output logic      [7:0]  d_ab,
    output logic      [7:0]  d_ab1,
    output logic      [7:0]  d_ba,
    output logic      [7:0]  d_ba1
);
  assign gt = a[30:0] >= b[30:0];
  assign d_ab = a[30:23] - b[30:23];
  assign d_ab1 = a[30:23] + ~b[30:23];  // a - b - 1
  assign d_ba = b[30:23] - a[30:23];
  assign d_ba1 = b[30:23] + ~a[30:23];  // b - a - 1
  logic unused;
  assign unused = ^{a[31], a[22:0], b[31], b[22:0]};
endmodule

// S1: zero exponent fields.
(* keep_hierarchy *)
module panama_fp32_add_zero (
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic             ea_z,
    output logic             eb_z
);
  assign ea_z = a[30:23] == 8'd0;
  assign eb_z = b[30:23] == 8'd0;
  logic unused;
  assign unused = ^{a[31], a[22:0], b[31], b[22:0]};
endmodule

// S1: near-path distance flags (effective exponent difference 0 or 1).
(* keep_hierarchy *)
module panama_fp32_add_dist (
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic             d1,      // effective exponent difference 1
    output logic             near_ok  // effective subtraction, difference 0 or 1
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

  logic [7:0] ea, eb;
  logic ea_z, eb_z, d0;
  always_comb begin
    ea = a[30:23];
    eb = b[30:23];
    ea_z = ea == 8'd0;
    eb_z = eb == 8'd0;
    d0 = ea == eb || (ea_z && eb == 8'd1) || (eb_z && ea == 8'd1);
    d1 = (plus_one(ea, eb) && !eb_z) || (plus_one(eb, ea) && !ea_z) || (eb_z && ea == 8'd2) || (ea_z && eb == 8'd2);
    near_ok = (a[31] ^ b[31]) && (d0 || d1);
  end
  logic unused;
  assign unused = ^{a[22:0], b[22:0]};
endmodule

// S1: flags from the raw operands.
(* keep_hierarchy *)
module panama_fp32_add_dec (
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic      [26:0] bar_a,    // bit k: max(ea, 1) == 27 - k
    output logic      [26:0] bar_b,
    output logic             a_nz,     // |a| != 0
    output logic             b_nz,
    output logic             ea_ff,
    output logic             eb_ff,
    output logic             fa_nz,
    output logic             fb_nz
);
  logic [7:0] ea, eb;
  always_comb begin
    ea = a[30:23];
    eb = b[30:23];
    for (int k = 0; k < 27; k++) begin
      bar_a[k] = k == 26 ? ea <= 8'd1 : ea == 8'(27 - k);
      bar_b[k] = k == 26 ? eb <= 8'd1 : eb == 8'(27 - k);
    end
    a_nz = a[30:0] != 31'd0;
    b_nz = b[30:0] != 31'd0;
    ea_ff = ea == 8'hFF;
    eb_ff = eb == 8'hFF;
    fa_nz = a[22:0] != 23'd0;
    fb_nz = b[22:0] != 23'd0;
  end
  logic unused;
  assign unused = a[31] ^ b[31];
endmodule

// S1: near-path differences x - y (difference 0) and x - y/2 (difference 1).
(* keep_hierarchy *)
module panama_fp32_add_near1 (
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    input  wire logic        gt,
    input  wire logic        ea_z,
    input  wire logic        eb_z,
    output logic      [26:0] n0,
    output logic      [26:0] n1
);
  logic [26:0] mx, my;
  logic [27:0] diff0, diff1;
  always_comb begin
    mx = gt ? {!ea_z, a[22:0], 3'b000} : {!eb_z, b[22:0], 3'b000};
    my = gt ? {!eb_z, b[22:0], 3'b000} : {!ea_z, a[22:0], 3'b000};
    diff0 = {1'b0, mx} - {1'b0, my};
    diff1 = {1'b0, mx} - {2'b0, my[26:1]};
    n0 = diff0[26:0];
    n1 = diff1[26:0];
  end
  logic unused;
  assign unused = ^{a[31:23], b[31:23], diff0[27], diff1[27], my[0]};
endmodule

// S1: swap, alignment shift amount, alignment by shift[1:0], barrier.
(* keep_hierarchy *)
module panama_fp32_add_sel1 (
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    input  wire logic        gt,
    input  wire logic        ea_z,
    input  wire logic        eb_z,
    input  wire logic [7:0]  d_ab,
    input  wire logic [7:0]  d_ab1,
    input  wire logic [7:0]  d_ba,
    input  wire logic [7:0]  d_ba1,
    input  wire logic [26:0] bar_a,
    input  wire logic [26:0] bar_b,
    input  wire logic        a_nz,
    input  wire logic        b_nz,
    output logic      [26:0] mx,
    output logic      [26:0] my_al,
    output logic      [2:0]  sh,     // shift[4:2]
    output logic             sat,    // shift >= 32
    output logic             y_nz,
    output logic      [7:0]  ex,     // max(ex, 1)
    output logic             sign,
    output logic      [26:0] barrier
);
  logic [7:0] sh_ab, sh_ba, shift;
  logic [26:0] my;
  always_comb begin
    // Subnormals use exponent 1 without the hidden bit, so the alignment
    // shift is max(ex,1) - max(ey,1): the raw difference, or one less when
    // only the smaller operand is subnormal.
    sh_ab = (eb_z && !ea_z) ? d_ab1 : d_ab;
    sh_ba = (ea_z && !eb_z) ? d_ba1 : d_ba;
    shift = gt ? sh_ab : sh_ba;
    mx = gt ? {!ea_z, a[22:0], 3'b000} : {!eb_z, b[22:0], 3'b000};
    my = gt ? {!eb_z, b[22:0], 3'b000} : {!ea_z, a[22:0], 3'b000};
    my_al = my >> shift[1:0];  // only the zero GRS bits leave
    sh = shift[4:2];
    sat = shift[7:5] != 3'd0;
    y_nz = gt ? b_nz : a_nz;
    ex = gt ? (ea_z ? 8'd1 : a[30:23]) : (eb_z ? 8'd1 : b[30:23]);
    sign = gt ? a[31] : b[31];
    barrier = gt ? bar_a : bar_b;
  end
endmodule

// S2: far path, alignment by shift[4:2] with sticky, add or subtract.
(* keep_hierarchy *)
module panama_fp32_add_far2 (
    input  wire logic [26:0] mx,
    input  wire logic [26:0] my,
    input  wire logic [2:0]  sh,
    input  wire logic        sat,
    input  wire logic        y_nz,
    input  wire logic        sub,
    output logic      [27:0] s
);
  logic [26:0] my2, my_al;
  logic st;
  logic [28:0] sum;
  always_comb begin
    my2 = my >> {sh, 2'b00};
    st = (my & ~(27'h7FFFFFF << {sh, 2'b00})) != 27'd0;
    if (sat) my_al = {26'd0, y_nz};
    else my_al = {my2[26:1], my2[0] | st};
    // {mx, 1} + {my or ~my, sub}: mx + my, or mx - my with the +1 of the
    // two's complement as the carry into bit 1.
    sum = {1'b0, mx, 1'b1} + {sub, my_al ^ {27{sub}}, sub};
    s = sum[28:1];
  end
  logic unused;
  assign unused = sum[0];
endmodule

// S2: near path, the difference for distance 0 or 1, leading zeros of (n | barrier) and the shift by their
// multiple-of-8 part.
(* keep_hierarchy *)
module panama_fp32_add_near2 (
    input  wire logic [26:0] n0,
    input  wire logic [26:0] n1,
    input  wire logic        d1,
    input  wire logic [26:0] barrier,
    output logic      [26:0] nv,
    output logic      [4:0]  lz,
    output logic             cancel
);
  // Leading zeros of an 8-bit group (7 when only bit 0 is set or none).
  function automatic logic [2:0] lz8(input logic [7:0] v);
    lz8 = 3'd7;
    for (int k = 6; k >= 0; k--) if (v[7-k]) lz8 = 3'(k);
  endfunction

  logic [26:0] n, v;
  always_comb begin
    n = d1 ? n1 : n0;
    v = n | barrier;
    if (v[26:19] != 8'd0) lz = {2'd0, lz8(v[26:19])};
    else if (v[18:11] != 8'd0) lz = {2'd1, lz8(v[18:11])};
    else if (v[10:3] != 8'd0) lz = {2'd2, lz8(v[10:3])};
    else lz = {2'd3, lz8({v[2:0], 5'b11111})};
    nv = n << {lz[4:3], 3'b000};
    cancel = n == 27'd0;
  end
endmodule

// S2: exponent neighbours and the special-operand result.
(* keep_hierarchy *)
module panama_fp32_add_exp2 (
    input  wire logic [7:0] ex,
    input  wire logic       ea_ff,
    input  wire logic       eb_ff,
    input  wire logic       fa_nz,
    input  wire logic       fb_nz,
    input  wire logic       sa,
    input  wire logic       sb,
    output logic      [7:0] ex_p1,
    output logic      [7:0] ex_m1,
    output logic            ex254,
    output logic            special,
    output logic     [31:0] special_value
);
  logic a_nan, b_nan, a_inf, b_inf;
  always_comb begin
    ex_p1 = ex + 8'd1;
    ex_m1 = ex - 8'd1;
    ex254 = ex == 8'd254;
    a_nan = ea_ff && fa_nz;
    b_nan = eb_ff && fb_nz;
    a_inf = ea_ff && !fa_nz;
    b_inf = eb_ff && !fb_nz;
    special = ea_ff || eb_ff;
    if (a_nan || b_nan || (a_inf && b_inf && sa != sb)) special_value = 32'h7FC00000;
    else special_value = {a_inf ? sa : sb, 31'h7F800000};
  end
endmodule

// S3: far path, normalisation by at most one bit, rounding.
(* keep_hierarchy *)
module panama_fp32_add_far3 (
    input  wire logic [27:0] s,
    input  wire logic        sub,
    input  wire logic [7:0]  ex,
    input  wire logic [7:0]  ex_p1,
    input  wire logic [7:0]  ex_m1,
    output logic      [30:0] mag
);
  logic [22:0] frac;
  logic [7:0] expf;
  logic lsb, g, r, st, round_up;
  always_comb begin
    // Carry (right by one), top bit set (as is), subtraction that lost the
    // top bit (left by one), addition without hidden bit (subnormal).
    if (s[27]) begin
      frac = s[26:4];
      expf = ex_p1;
      {lsb, g, r, st} = {s[4:2], s[1] | s[0]};
    end else if (s[26] || !sub) begin
      frac = s[25:3];
      expf = s[26] ? ex : 8'd0;
      {lsb, g, r, st} = s[3:0];
    end else begin
      frac = s[24:2];
      expf = ex_m1;
      {lsb, g, r, st} = {s[2:0], 1'b0};
    end
    round_up = g && (r || st || lsb);
    // The increment carries a full significand into the exponent (up to infinity).
    mag = {expf, frac} + {30'd0, round_up};
  end
endmodule

// S3: near path, shift by the rest of the count, exponent (exact).
(* keep_hierarchy *)
module panama_fp32_add_near3 (
    input  wire logic [26:0] nv,
    input  wire logic [4:0]  lz,
    input  wire logic [7:0]  ex,
    output logic      [30:0] nmag
);
  logic [26:0] nf;
  logic [7:0] ne;
  always_comb begin
    nf = nv << lz[2:0];
    ne = ex - {3'd0, lz};
    // A subnormal result (the barrier stopped the shift) has exponent field 0.
    nmag = {nf[26] ? ne : 8'd0, nf[25:3]};
  end
  logic unused;
  assign unused = ^nf[2:0];
endmodule

// S3: path choice and forced results.
(* keep_hierarchy *)
module panama_fp32_add_ctl3 (
    input  wire logic        carry,
    input  wire logic        top,
    input  wire logic        near_ok,
    input  wire logic        cancel,
    input  wire logic        ex254,
    input  wire logic        sign,
    input  wire logic        special,
    input  wire logic [31:0] special_value,
    output logic             near,
    output logic             force_it,
    output logic      [31:0] force_value
);
  always_comb begin
    near = near_ok && !top;
    force_it = special || (near && cancel) || (!near && carry && ex254);
    if (special) force_value = special_value;
    else if (near) force_value = 32'd0;  // exact cancellation gives +0
    else force_value = {sign, 31'h7F800000};  // overflow to infinity
  end
endmodule

// S3: the result.
(* keep_hierarchy *)
module panama_fp32_add_out3 (
    input  wire logic        near,
    input  wire logic        force_it,
    input  wire logic [31:0] force_value,
    input  wire logic        sign,
    input  wire logic [30:0] nmag,
    input  wire logic [30:0] mag,
    output logic      [31:0] result
);
  assign result = force_it ? force_value : {sign, near ? nmag : mag};
endmodule

/* verilator lint_on DECLFILENAME */

module panama_fp32_add (
    input  wire logic        clk,
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic      [31:0] sum
);
  // ------------------------------------------------------------ S1
  logic        gt1, ea_z1, eb_z1, d1_1, near_ok1, a_nz1, b_nz1;
  logic        ea_ff1, eb_ff1, fa_nz1, fb_nz1, sat1, y_nz1, sign1;
  logic [7:0]  d_ab1, d_ab1m, d_ba1, d_ba1m, ex1;
  logic [26:0] bar_a1, bar_b1, n0_1, n1_1, mx1, my_al1, barrier1;
  logic [2:0]  sh1;

  panama_fp32_add_cmp u_cmp (.a(a), .b(b), .gt(gt1), .d_ab(d_ab1), .d_ab1(d_ab1m), .d_ba(d_ba1), .d_ba1(d_ba1m));
  panama_fp32_add_zero u_zero (.a(a), .b(b), .ea_z(ea_z1), .eb_z(eb_z1));
  panama_fp32_add_dist u_dist (.a(a), .b(b), .d1(d1_1), .near_ok(near_ok1));
  panama_fp32_add_dec u_dec (
      .a(a), .b(b), .bar_a(bar_a1), .bar_b(bar_b1), .a_nz(a_nz1), .b_nz(b_nz1),
      .ea_ff(ea_ff1), .eb_ff(eb_ff1), .fa_nz(fa_nz1), .fb_nz(fb_nz1)
  );
  panama_fp32_add_near1 u_near1 (.a(a), .b(b), .gt(gt1), .ea_z(ea_z1), .eb_z(eb_z1), .n0(n0_1), .n1(n1_1));
  panama_fp32_add_sel1 u_sel1 (
      .a(a), .b(b), .gt(gt1), .ea_z(ea_z1), .eb_z(eb_z1), .d_ab(d_ab1), .d_ab1(d_ab1m), .d_ba(d_ba1), .d_ba1(d_ba1m),
      .bar_a(bar_a1), .bar_b(bar_b1), .a_nz(a_nz1), .b_nz(b_nz1), .mx(mx1), .my_al(my_al1), .sh(sh1), .sat(sat1),
      .y_nz(y_nz1), .ex(ex1), .sign(sign1), .barrier(barrier1)
  );

  logic [26:0] s1_mx, s1_my, s1_n0, s1_n1, s1_barrier;
  logic [2:0]  s1_sh;
  logic        s1_sat, s1_y_nz;
  logic [7:0]  s1_ex;
  logic        s1_sign, s1_sa, s1_sb, s1_near_ok, s1_d1;
  logic        s1_ea_ff, s1_eb_ff, s1_fa_nz, s1_fb_nz;

  always_ff @(posedge clk) begin
    s1_mx <= mx1;
    s1_my <= my_al1;
    s1_n0 <= n0_1;
    s1_n1 <= n1_1;
    s1_d1 <= d1_1;
    s1_barrier <= barrier1;
    s1_sh <= sh1;
    s1_sat <= sat1;
    s1_y_nz <= y_nz1;
    s1_ex <= ex1;
    s1_sign <= sign1;
    s1_sa <= a[31];
    s1_sb <= b[31];
    s1_near_ok <= near_ok1;
    s1_ea_ff <= ea_ff1;
    s1_eb_ff <= eb_ff1;
    s1_fa_nz <= fa_nz1;
    s1_fb_nz <= fb_nz1;
  end

  // ------------------------------------------------------------ S2
  logic        sub2;
  logic [27:0] s2w;
  logic [26:0] nv2;
  logic [4:0]  lz2;
  logic        cancel2, ex254_2, special2;
  logic [7:0]  ex_p1_2, ex_m1_2;
  logic [31:0] special_value2;

  assign sub2 = s1_sa ^ s1_sb;
  panama_fp32_add_far2 u_far2 (
      .mx(s1_mx), .my(s1_my), .sh(s1_sh), .sat(s1_sat), .y_nz(s1_y_nz), .sub(sub2), .s(s2w)
  );
  panama_fp32_add_near2 u_near2 (.n0(s1_n0), .n1(s1_n1), .d1(s1_d1), .barrier(s1_barrier), .nv(nv2), .lz(lz2), .cancel(cancel2));
  panama_fp32_add_exp2 u_exp2 (
      .ex(s1_ex), .ea_ff(s1_ea_ff), .eb_ff(s1_eb_ff), .fa_nz(s1_fa_nz), .fb_nz(s1_fb_nz), .sa(s1_sa), .sb(s1_sb),
      .ex_p1(ex_p1_2), .ex_m1(ex_m1_2), .ex254(ex254_2), .special(special2), .special_value(special_value2)
  );

  logic [27:0] s2_s;
  logic [26:0] s2_nv;
  logic [4:0]  s2_lz;
  logic [7:0]  s2_ex, s2_ex_p1, s2_ex_m1;
  logic        s2_ex254, s2_cancel;
  logic        s2_sign, s2_sub, s2_near_ok, s2_special;
  logic [31:0] s2_special_value;

  always_ff @(posedge clk) begin
    s2_s <= s2w;
    s2_nv <= nv2;
    s2_lz <= lz2;
    s2_ex <= s1_ex;
    s2_ex_p1 <= ex_p1_2;
    s2_ex_m1 <= ex_m1_2;
    s2_ex254 <= ex254_2;
    s2_cancel <= cancel2;
    s2_sign <= s1_sign;
    s2_sub <= sub2;
    s2_near_ok <= s1_near_ok;
    s2_special <= special2;
    s2_special_value <= special_value2;
  end

  // ------------------------------------------------------------ S3
  logic [30:0] mag3, nmag3;
  logic        near3, force3;
  logic [31:0] force_value3, result;

  panama_fp32_add_far3 u_far3 (.s(s2_s), .sub(s2_sub), .ex(s2_ex), .ex_p1(s2_ex_p1), .ex_m1(s2_ex_m1), .mag(mag3));
  panama_fp32_add_near3 u_near3 (.nv(s2_nv), .lz(s2_lz), .ex(s2_ex), .nmag(nmag3));
  panama_fp32_add_ctl3 u_ctl3 (
      .carry(s2_s[27]), .top(s2_s[26]), .near_ok(s2_near_ok), .cancel(s2_cancel), .ex254(s2_ex254), .sign(s2_sign),
      .special(s2_special), .special_value(s2_special_value), .near(near3), .force_it(force3),
      .force_value(force_value3)
  );
  panama_fp32_add_out3 u_out3 (
      .near(near3), .force_it(force3), .force_value(force_value3), .sign(s2_sign), .nmag(nmag3), .mag(mag3),
      .result(result)
  );

  always_ff @(posedge clk) sum <= result;
endmodule
`default_nettype wire
