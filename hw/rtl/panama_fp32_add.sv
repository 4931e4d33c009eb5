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
//   S1  raw-field magnitude compare, exponent differences and the near-path
//       distance flags (effective exponent difference 0 or 1), swap into the
//       larger (x) and smaller (y) operand, alignment shift amount, far-path
//       alignment by shift[1:0] (exact: only the zero GRS bits leave), the
//       near-path difference x - y or x - y/2 on one carry chain, the
//       subnormal barrier, specials
//   S2  far path: alignment by shift[4:2] (saturating) with sticky, add or
//       subtract; near path: leading-zero count of (difference | barrier),
//       left shift by its multiple-of-8 part, exact-cancellation flag
//   S3  far path: at most one bit of normalisation (right on a carry, left
//       on a one-bit cancellation), rounding increment on the packed
//       magnitude (carries into the exponent); near path: left shift by the
//       rest of the count, exponent minus the count (exact, no rounding);
//       choice of the path, specials, overflow to infinity, exact
//       cancellation
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
`default_nettype none
module panama_fp32_add (
    input  wire logic        clk,
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic      [31:0] sum
);
  localparam logic [31:0] CANONICAL_NAN = 32'h7FC00000;

  // Leading zeros of an 8-bit group (8 when zero).
  function automatic logic [2:0] lz8(input logic [7:0] v);
    lz8 = 3'd7;
    for (int k = 0; k < 7; k++) if (v[7-k] && lz8 == 3'd7) lz8 = 3'(k);
  endfunction

  // ------------------------------------------------------------ S1
  // Kept nets: Yosys/ABC would otherwise merge the operand forward mux in
  // front of the adder (panama_datapath) into deeper shared logic.
  (* keep *) logic [31:0] a1;
  (* keep *) logic        gt1;
  logic        ea_z1, ea_z1, eb_z1, ea_ff1, eb_ff1, fa_nz1, fb_nz1;
  logic [7:0]  ea1, eb1, d_ab1, d_ab1m, d_ba1, d_ba1m;
  logic        eq1, a_p1, b_p1, ea_1, eb_1, ea_2, eb_2, d0_1, d1_1;
  logic [31:0] x1, y1;
  logic [7:0]  ex1;  // max(ex, 1)
  logic        adj1;
  logic [7:0]  shift1;
  logic [26:0] mx1, my1, my_al1, my_near1;
  logic [27:0] n1;
  logic [26:0] barrier1;
  logic        a_nan1, b_nan1, a_inf1, b_inf1;
  logic [31:0] special_value1;

  // a + 1 == b without a carry chain: bit i of b is a[i] flipped when all
  // lower bits of a are ones.
  function automatic logic plus_one(input logic [7:0] x, input logic [7:0] y);
    logic ones;
    plus_one = 1'b1;
    ones = 1'b1;
    for (int k = 0; k < 8; k++) begin
      if (y[k] != (x[k] ^ ones)) plus_one = 1'b0;
      ones = ones & x[k];
    end
  endfunction

  assign a1 = a;
  assign gt1 = a1[30:0] >= b[30:0];

  always_comb begin
    ea1 = a1[30:23];
    eb1 = b[30:23];
    ea_z1 = ea1 == 8'd0;
    eb_z1 = eb1 == 8'd0;
    ea_ff1 = ea1 == 8'hFF;
    eb_ff1 = eb1 == 8'hFF;
    fa_nz1 = a1[22:0] != 23'd0;
    fb_nz1 = b[22:0] != 23'd0;
    // Subnormals use exponent 1 without the hidden bit, so the alignment
    // shift is max(ex,1) - max(ey,1): the raw difference, or one less when
    // only the smaller operand is subnormal.
    d_ab1 = ea1 - eb1;
    d_ab1m = ea1 + ~eb1;  // a - b - 1
    d_ba1 = eb1 - ea1;
    d_ba1m = eb1 + ~ea1;  // b - a - 1
    // Effective exponent difference 0 or 1 (near-path candidates).
    eq1 = ea1 == eb1;
    a_p1 = plus_one(eb1, ea1);  // ea = eb + 1
    b_p1 = plus_one(ea1, eb1);  // eb = ea + 1
    ea_1 = ea1 == 8'd1;
    eb_1 = eb1 == 8'd1;
    ea_2 = ea1 == 8'd2;
    eb_2 = eb1 == 8'd2;
    d0_1 = eq1 || (ea_z1 && eb_1) || (eb_z1 && ea_1);
    d1_1 = (a_p1 && !eb_z1) || (b_p1 && !ea_z1) || (eb_z1 && ea_2) || (ea_z1 && eb_2);

    x1 = gt1 ? a1 : b;
    y1 = gt1 ? b : a1;
    ex1 = (gt1 ? ea_z1 : eb_z1) ? 8'd1 : x1[30:23];
    adj1 = gt1 ? (eb_z1 && !ea_z1) : (ea_z1 && !eb_z1);
    case ({gt1, adj1})
      2'b11: shift1 = d_ab1m;
      2'b10: shift1 = d_ab1;
      2'b01: shift1 = d_ba1m;
      default: shift1 = d_ba1;
    endcase
    mx1 = {!(gt1 ? ea_z1 : eb_z1), x1[22:0], 3'b000};
    my1 = {!(gt1 ? eb_z1 : ea_z1), y1[22:0], 3'b000};
    my_al1 = my1 >> shift1[1:0];  // only the zero GRS bits leave
    // Near path: x - y (difference 0) or x - y/2 (difference 1), exact.
    my_near1 = d1_1 ? (my1 >> 1) : my1;
    n1 = {1'b0, mx1} - {1'b0, my_near1};
    // Barrier at bit 26 - room = 27 - ex (none when ex > 27).
    for (int k = 0; k < 27; k++) barrier1[k] = ex1 == 8'(27 - k);

    a_nan1 = ea_ff1 && fa_nz1;
    b_nan1 = eb_ff1 && fb_nz1;
    a_inf1 = ea_ff1 && !fa_nz1;
    b_inf1 = eb_ff1 && !fb_nz1;
    if (a_nan1 || b_nan1 || (a_inf1 && b_inf1 && a1[31] != b[31])) special_value1 = CANONICAL_NAN;
    else special_value1 = a_inf1 ? a1 : b;
  end

  logic [26:0] s1_mx, s1_my, s1_n, s1_barrier;
  logic [2:0]  s1_sh;  // shift[4:2]
  logic        s1_sat, s1_y_nz;
  logic [7:0]  s1_ex;
  logic        s1_sign, s1_sub, s1_near_ok, s1_special;
  logic [31:0] s1_special_value;

  always_ff @(posedge clk) begin
    s1_mx <= mx1;
    s1_my <= my_al1;
    s1_n <= n1[26:0];
    s1_barrier <= barrier1;
    s1_sh <= shift1[4:2];
    s1_sat <= shift1[7:5] != 3'd0;  // shift >= 32: only the sticky bit is left
    s1_y_nz <= my1 != 27'd0;
    s1_ex <= ex1;
    s1_sign <= x1[31];
    s1_sub <= a1[31] ^ b[31];
    s1_near_ok <= (a1[31] ^ b[31]) && (d0_1 || d1_1);
    s1_special <= ea_ff1 || eb_ff1;
    s1_special_value <= special_value1;
  end

  // ------------------------------------------------------------ S2
  logic [26:0] my2, my_al2;
  logic        st2;
  logic [28:0] sum2;
  logic [26:0] v2, nv2;
  logic        z0_2, z1_2, z2_2;
  logic [4:0]  lz2;

  always_comb begin
    // Far path: alignment by shift[4:2]; the bits shifted out make the sticky flag.
    my2 = s1_my >> {s1_sh, 2'b00};
    st2 = (s1_my & ~(27'h7FFFFFF << {s1_sh, 2'b00})) != 27'd0;
    if (s1_sat) my_al2 = {26'd0, s1_y_nz};
    else my_al2 = {my2[26:1], my2[0] | st2};
    // {mx, 1} + {my or ~my, sub}: mx + my, or mx - my with the +1 of the
    // two's complement as the carry into bit 1.
    sum2 = {1'b0, s1_mx, 1'b1} + {s1_sub, my_al2 ^ {27{s1_sub}}, s1_sub};

    // Near path: leading zeros of (n | barrier) in 8-bit groups.
    v2 = s1_n | s1_barrier;
    z0_2 = v2[26:19] == 8'd0;
    z1_2 = v2[18:11] == 8'd0;
    z2_2 = v2[10:3] == 8'd0;
    if (!z0_2) lz2 = {2'd0, lz8(v2[26:19])};
    else if (!z1_2) lz2 = {2'd1, lz8(v2[18:11])};
    else if (!z2_2) lz2 = {2'd2, lz8(v2[10:3])};
    else lz2 = {2'd3, lz8({v2[2:0], 5'b11111})};
    nv2 = s1_n << {lz2[4:3], 3'b000};
  end

  logic [27:0] s2_s;
  logic [26:0] s2_nv;
  logic [4:0]  s2_lz;
  logic [7:0]  s2_ex, s2_ex_p1, s2_ex_m1;
  logic        s2_ex254, s2_cancel;
  logic        s2_sign, s2_sub, s2_near_ok, s2_special;
  logic [31:0] s2_special_value;

  always_ff @(posedge clk) begin
    s2_s <= sum2[28:1];
    s2_nv <= nv2;
    s2_lz <= lz2;
    s2_ex <= s1_ex;
    s2_ex_p1 <= s1_ex + 8'd1;
    s2_ex_m1 <= s1_ex - 8'd1;
    s2_ex254 <= s1_ex == 8'd254;
    s2_cancel <= s1_n == 27'd0;
    s2_sign <= s1_sign;
    s2_sub <= s1_sub;
    s2_near_ok <= s1_near_ok;
    s2_special <= s1_special;
    s2_special_value <= s1_special_value;
  end

  // ------------------------------------------------------------ S3
  logic        carry3, top3, near3;
  logic [22:0] frac3;
  logic [7:0]  expf3;
  logic        lsb3, g3, r3, st3, round_up3;
  logic [30:0] mag3;
  logic [26:0] nf3;
  logic [7:0]  ne3;
  logic [30:0] nmag3;
  logic        force3;
  logic [31:0] force_value3, result;

  always_comb begin
    carry3 = s2_s[27];  // an addition carried out: renormalise right
    top3 = s2_s[26];
    // Far path: carry (right by one), top bit set (as is), subtraction that
    // lost the top bit (left by one), addition without hidden bit (subnormal).
    if (carry3) begin
      frac3 = s2_s[26:4];
      expf3 = s2_ex_p1;
      {lsb3, g3, r3, st3} = {s2_s[4:2], s2_s[1] | s2_s[0]};
    end else if (top3 || !s2_sub) begin
      frac3 = s2_s[25:3];
      expf3 = top3 ? s2_ex : 8'd0;
      {lsb3, g3, r3, st3} = s2_s[3:0];
    end else begin
      frac3 = s2_s[24:2];
      expf3 = s2_ex_m1;
      {lsb3, g3, r3, st3} = {s2_s[2:0], 1'b0};
    end
    round_up3 = g3 && (r3 || st3 || lsb3);
    // The increment carries a full significand into the exponent (up to infinity).
    mag3 = {expf3, frac3} + {30'd0, round_up3};

    // Near path: exact.
    nf3 = s2_nv << s2_lz[2:0];
    ne3 = s2_ex - {3'd0, s2_lz};
    nmag3 = {nf3[26] ? ne3 : 8'd0, nf3[25:3]};
    near3 = s2_near_ok && !top3;

    force3 = s2_special || (near3 && s2_cancel) || (!near3 && carry3 && s2_ex254);
    if (s2_special) force_value3 = s2_special_value;
    else if (near3) force_value3 = 32'd0;  // exact cancellation gives +0
    else force_value3 = {s2_sign, 31'h7F800000};  // overflow to infinity
    if (force3) result = force_value3;
    else result = {s2_sign, near3 ? nmag3 : mag3};
  end

  always_ff @(posedge clk) sum <= result;

  logic unused;
  assign unused = ^{y1[31:23], sum2[0], n1[27], nf3[2:0]};
endmodule
`default_nettype wire
