// IEEE-754 binary32 adder, one lane, pipelined in LATENCY = 7 stages (the
// sum of operands presented at clock t is on `sum` after the edge ending
// clock t + 6). Numeric contract of docs/protocol.md, identical to
// hw/hls/include/panama/fp32_add.hpp: round to nearest even, subnormals kept,
// every NaN result is the canonical quiet NaN 32'h7FC00000 (inf + -inf too),
// -0 + -0 = -0 and x + -x = +0.
//
// Each stage is a few LUT levels (docs/rtl.md, "Timing"): the slot-memory
// loop of panama_datapath runs through all of them, so their number is the
// loop length D the issuer keeps between two contributions to one word.
//   S1  raw-field magnitude compare, the four exponent differences (with and
//       without the subnormal correction), zero / all-ones exponent flags
//   S2  swap into larger (x) and smaller (y), alignment shift amount,
//       specials, alignment by shift[3:0] with sticky
//   S3  alignment by shift[7:4] (saturating) with sticky, add or subtract
//       (one carry chain with the two's complement carry-in), barrier for
//       the subnormal limit of the left normalisation
//   S4  left normalisation by 16 and by 8
//   S5  left normalisation by 4, 2 and 1
//   S6  exponent minus the normalisation, rounding decision, pre-round
//       overflow
//   S7  rounding increment on the packed magnitude (carries into the
//       exponent), overflow to infinity, specials and exact cancellation
//
// Left normalisation shifts by min(leading zeros, room) where room = e - 1 is
// how far the exponent can fall before the subnormal exponent: a one-hot
// "barrier" bit at position 26 - room is shifted along with the significand
// and stops the steps there, so each step is only a zero test of the top
// bits of (significand | barrier).
`default_nettype none
module panama_fp32_add (
    input  wire logic        clk,
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic      [31:0] sum
);
  localparam logic [31:0] CANONICAL_NAN = 32'h7FC00000;

  // ------------------------------------------------------------ S1
  logic [31:0] s1_a, s1_b;
  logic        s1_gt;  // |a| >= |b|
  logic [7:0]  s1_d_ab, s1_d_ab1, s1_d_ba, s1_d_ba1;
  logic        s1_adjust;  // use the difference minus one
  logic        s1_ea_z, s1_eb_z, s1_ea_ff, s1_eb_ff, s1_fa_nz, s1_fb_nz;
  logic        gt1, ea_z1, eb_z1;

  // Subnormals use exponent 1 without the hidden bit, so the alignment shift
  // is max(ex,1) - max(ey,1): the raw difference, or one less when only the
  // smaller operand is subnormal. All four differences are computed while
  // the magnitudes are compared.
  always_comb begin
    gt1 = a[30:0] >= b[30:0];
    ea_z1 = a[30:23] == 8'd0;
    eb_z1 = b[30:23] == 8'd0;
  end

  always_ff @(posedge clk) begin
    s1_a <= a;
    s1_b <= b;
    s1_gt <= gt1;
    s1_d_ab <= a[30:23] - b[30:23];
    s1_d_ab1 <= a[30:23] + ~b[30:23];  // a - b - 1
    s1_d_ba <= b[30:23] - a[30:23];
    s1_d_ba1 <= b[30:23] + ~a[30:23];  // b - a - 1
    s1_adjust <= gt1 ? (eb_z1 && !ea_z1) : (ea_z1 && !eb_z1);
    s1_ea_z <= ea_z1;
    s1_eb_z <= eb_z1;
    s1_ea_ff <= a[30:23] == 8'hFF;
    s1_eb_ff <= b[30:23] == 8'hFF;
    s1_fa_nz <= a[22:0] != 23'd0;
    s1_fb_nz <= b[22:0] != 23'd0;
  end

  // ------------------------------------------------------------ S2
  logic [31:0] x2, y2;
  logic        ex_z2, ey_z2;
  logic [7:0]  shift2;
  logic [26:0] my2, my2a, my2b;
  logic        st2a, st2b;
  logic        a_nan2, b_nan2, a_inf2, b_inf2;
  logic        special2;
  logic [31:0] special_value2;

  always_comb begin
    x2 = s1_gt ? s1_a : s1_b;
    y2 = s1_gt ? s1_b : s1_a;
    ex_z2 = s1_gt ? s1_ea_z : s1_eb_z;
    ey_z2 = s1_gt ? s1_eb_z : s1_ea_z;
    case ({s1_gt, s1_adjust})
      2'b11: shift2 = s1_d_ab1;
      2'b10: shift2 = s1_d_ab;
      2'b01: shift2 = s1_d_ba1;
      default: shift2 = s1_d_ba;
    endcase
    my2 = {!ey_z2, y2[22:0], 3'b000};
    // Alignment by shift[3:0] (two 4:1 steps); the bits shifted out (the low
    // shift[3:0] bits) make the sticky flag.
    my2a = my2 >> shift2[1:0];
    my2b = my2a >> {shift2[3:2], 2'b00};
    st2a = (my2 & ~(27'h7FFFFFF << shift2[3:0])) != 27'd0;
    st2b = 1'b0;
    a_nan2 = s1_ea_ff && s1_fa_nz;
    b_nan2 = s1_eb_ff && s1_fb_nz;
    a_inf2 = s1_ea_ff && !s1_fa_nz;
    b_inf2 = s1_eb_ff && !s1_fb_nz;
    special2 = s1_ea_ff || s1_eb_ff;
    if (a_nan2 || b_nan2 || (a_inf2 && b_inf2 && s1_a[31] != s1_b[31])) special_value2 = CANONICAL_NAN;
    else special_value2 = a_inf2 ? s1_a : s1_b;
  end

  logic [26:0] s2_mx, s2_my;
  logic [7:0]  s2_ex;  // max(ex, 1)
  logic [3:0]  s2_shift_hi;
  logic        s2_sticky, s2_y_nz;
  logic        s2_sign, s2_sub, s2_special;
  logic [31:0] s2_special_value;

  always_ff @(posedge clk) begin
    s2_mx <= {!ex_z2, x2[22:0], 3'b000};
    s2_my <= my2b;
    s2_ex <= ex_z2 ? 8'd1 : x2[30:23];
    s2_shift_hi <= shift2[7:4];
    s2_sticky <= st2a || st2b;
    s2_y_nz <= !ey_z2 || y2[22:0] != 23'd0;
    s2_sign <= x2[31];
    s2_sub <= s1_a[31] ^ s1_b[31];
    s2_special <= special2;
    s2_special_value <= special_value2;
  end

  // ------------------------------------------------------------ S3
  logic [26:0] my3;
  logic        st3, sat3;
  logic [26:0] my_aligned3;
  logic [28:0] sum3;
  logic [26:0] barrier3;

  always_comb begin
    // shift >= 32: everything is shifted out (sticky = y != 0).
    sat3 = s2_shift_hi[3:1] != 3'd0;
    my3 = s2_shift_hi[0] ? (s2_my >> 16) : s2_my;
    st3 = s2_shift_hi[0] && s2_my[15:0] != 16'd0;
    if (sat3) my_aligned3 = {26'd0, s2_y_nz};
    else my_aligned3 = {my3[26:1], my3[0] | st3 | s2_sticky};
    // {mx, 1} + {my or ~my, sub}: mx + my, or mx - my with the +1 of the
    // two's complement as the carry into bit 1.
    sum3 = {1'b0, s2_mx, 1'b1} + {s2_sub, my_aligned3 ^ {27{s2_sub}}, s2_sub};
    // Left normalisation may shift by at most room = e - 1; an addition
    // never shifts left (barrier at the top).
    // The barrier sits at bit 26 - room = 27 - e (a decode of e).
    for (int k = 0; k < 27; k++) barrier3[k] = s2_sub ? (s2_ex == 8'(27 - k)) : (k == 26);
  end

  logic [27:0] s3_m;
  logic [26:0] s3_barrier;
  logic        s3_r16;  // subtraction with room >= 16
  logic [7:0]  s3_ex, s3_ex1;
  logic        s3_sign, s3_sub, s3_special;
  logic [31:0] s3_special_value;

  always_ff @(posedge clk) begin
    s3_m <= sum3[28:1];
    s3_barrier <= barrier3;
    s3_r16 <= s2_sub && s2_ex >= 8'd17;
    s3_ex <= s2_ex;
    s3_ex1 <= s2_ex + 8'd1;
    s3_sign <= s2_sign;
    s3_sub <= s2_sub;
    s3_special <= s2_special;
    s3_special_value <= s2_special_value;
  end

  // ------------------------------------------------------------ S4
  logic [26:0] v4, g4;
  logic        n16, n8;

  always_comb begin
    // Both candidates of the step by 8 are tested while the step by 16 is
    // decided; then one 4:1 selection shifts by 0, 8, 16 or 24.
    n16 = s3_r16 && s3_m[26:11] == 16'd0;
    n8 = n16 ? ((s3_m[10:3] | s3_barrier[10:3]) == 8'd0) : ((s3_m[26:19] | s3_barrier[26:19]) == 8'd0);
    case ({n16, n8})
      2'b00: begin v4 = s3_m[26:0]; g4 = s3_barrier; end
      2'b01: begin v4 = s3_m[26:0] << 8; g4 = s3_barrier << 8; end
      2'b10: begin v4 = s3_m[26:0] << 16; g4 = s3_barrier << 16; end
      default: begin v4 = s3_m[26:0] << 24; g4 = s3_barrier << 24; end
    endcase
  end

  logic [26:0] s4_v, s4_g;
  logic        s4_n16, s4_n8, s4_carry, s4_cancel;
  logic [7:0]  s4_ex, s4_ex1;
  logic        s4_sign, s4_special;
  logic [31:0] s4_special_value;

  always_ff @(posedge clk) begin
    s4_v <= v4;
    s4_g <= g4;
    s4_n16 <= n16;
    s4_n8 <= n8;
    s4_carry <= s3_m[27];  // an addition carried out: renormalise right
    s4_cancel <= s3_sub && s3_m == 28'd0;  // exact cancellation gives +0
    s4_ex <= s3_ex;
    s4_ex1 <= s3_ex1;
    s4_sign <= s3_sign;
    s4_special <= s3_special;
    s4_special_value <= s3_special_value;
  end

  // ------------------------------------------------------------ S5
  logic [26:0] v5b, g5b, v5;
  logic        n4, n2, n1;

  always_comb begin
    n4 = (s4_v[26:23] | s4_g[26:23]) == 4'd0;
    n2 = n4 ? ((s4_v[22:21] | s4_g[22:21]) == 2'd0) : ((s4_v[26:25] | s4_g[26:25]) == 2'd0);
    case ({n4, n2})
      2'b00: begin v5b = s4_v; g5b = s4_g; end
      2'b01: begin v5b = s4_v << 2; g5b = s4_g << 2; end
      2'b10: begin v5b = s4_v << 4; g5b = s4_g << 4; end
      default: begin v5b = s4_v << 6; g5b = s4_g << 6; end
    endcase
    n1 = !(v5b[26] | g5b[26]);
    v5 = n1 ? (v5b << 1) : v5b;
  end

  logic [26:0] s5_v;
  logic [4:0]  s5_n;
  logic        s5_carry, s5_cancel;
  logic [7:0]  s5_e;
  logic        s5_sign, s5_special;
  logic [31:0] s5_special_value;

  always_ff @(posedge clk) begin
    s5_v <= v5;
    s5_n <= {s4_n16, s4_n8, n4, n2, n1};
    s5_carry <= s4_carry;
    s5_cancel <= s4_cancel;
    s5_e <= s4_carry ? s4_ex1 : s4_ex;
    s5_sign <= s4_sign;
    s5_special <= s4_special;
    s5_special_value <= s4_special_value;
  end

  // ------------------------------------------------------------ S6
  logic [8:0]  e6;
  logic        hidden6, g6, r6, st6, round_up6;
  logic [22:0] frac6;
  logic [7:0]  exp_field6;

  always_comb begin
    // The carry case is {1, v} shifted right by one with v[0] kept as sticky.
    e6 = {1'b0, s5_e} - {4'd0, s5_n};
    if (s5_carry) begin
      hidden6 = 1'b1;
      frac6 = s5_v[26:4];
      g6 = s5_v[3];
      r6 = s5_v[2];
      st6 = s5_v[1] | s5_v[0];
    end else begin
      hidden6 = s5_v[26];
      frac6 = s5_v[25:3];
      g6 = s5_v[2];
      r6 = s5_v[1];
      st6 = s5_v[0];
    end
    round_up6 = g6 && (r6 || st6 || frac6[0]);
    // A subnormal result (no hidden bit) has exponent field 0.
    exp_field6 = hidden6 ? e6[7:0] : 8'd0;
  end

  logic [30:0] s6_mag;
  logic        s6_round_up, s6_ovf, s6_cancel;
  logic        s6_sign, s6_special;
  logic [31:0] s6_special_value;

  always_ff @(posedge clk) begin
    s6_mag <= {exp_field6, frac6};
    s6_round_up <= round_up6;
    s6_ovf <= hidden6 && e6 >= 9'd255;
    s6_cancel <= s5_cancel;
    s6_sign <= s5_sign;
    s6_special <= s5_special;
    s6_special_value <= s5_special_value;
  end

  // ------------------------------------------------------------ S7
  logic [30:0] mag7;
  logic [31:0] result;

  always_comb begin
    // The increment carries a full significand into the exponent.
    mag7 = s6_mag + {30'd0, s6_round_up};
    if (s6_special) result = s6_special_value;
    else if (s6_cancel) result = 32'd0;
    else if (s6_ovf || mag7[30:23] == 8'hFF) result = {s6_sign, 31'h7F800000};  // overflow to infinity
    else result = {s6_sign, mag7};
  end

  always_ff @(posedge clk) sum <= result;

  // y's exponent is used through the flags of S1; the add's low bit is the
  // carry-in position; only the barrier's top bit is tested after S5's shift.
  logic unused;
  assign unused = ^{y2[31:23], sum3[0], g5b[25:0]};
endmodule
`default_nettype wire
