// IEEE-754 binary32 adder, one lane, two pipeline stages (result two clocks
// after the operands). Numeric contract of docs/protocol.md, identical to
// hw/hls/include/panama/fp32_add.hpp: round to nearest even, subnormals kept,
// every NaN result is the canonical quiet NaN 32'h7FC00000 (inf + -inf too),
// -0 + -0 = -0 and x + -x = +0.
//
// Stage 1: specials, magnitude ordering, alignment with sticky bit, add or
// subtract. Stage 2: normalisation, rounding, packing. Two stages is the most
// the engine allows: back-to-back contributions to the same slot word are two
// clocks apart on the shortest frames (see docs/rtl.md).
`default_nettype none
module panama_fp32_add (
    input  wire logic        clk,
    input  wire logic [31:0] a,
    input  wire logic [31:0] b,
    output logic      [31:0] sum
);
  localparam logic [31:0] CANONICAL_NAN = 32'h7FC00000;
  localparam logic [30:0] INF_MAG = 31'h7F800000;

  // ------------------------------------------------------------ stage 1
  logic [30:0] abs_a, abs_b;
  logic        special;
  logic [31:0] special_value;
  logic [31:0] x, y;
  logic        sign, subtract;
  logic [7:0] ex_field, ey_field, ex, ey, shift;
  logic [26:0] mx, my, my_aligned;
  logic [53:0] my_wide;
  logic [27:0] m1;

  always_comb begin
    abs_a = a[30:0];
    abs_b = b[30:0];
    special = 1'b0;
    special_value = 32'd0;
    if (abs_a > INF_MAG || abs_b > INF_MAG) begin
      special = 1'b1;
      special_value = CANONICAL_NAN;
    end else if (abs_a == INF_MAG || abs_b == INF_MAG) begin
      special = 1'b1;
      if (abs_a == INF_MAG && abs_b == INF_MAG && a != b) special_value = CANONICAL_NAN;
      else special_value = (abs_a == INF_MAG) ? a : b;
    end
    x = (abs_a >= abs_b) ? a : b;
    y = (abs_a >= abs_b) ? b : a;
    sign = x[31];
    subtract = x[31] ^ y[31];
    ex_field = x[30:23];
    ey_field = y[30:23];
    // Subnormals use exponent 1 without the hidden bit.
    ex = (ex_field == 8'd0) ? 8'd1 : ex_field;
    ey = (ey_field == 8'd0) ? 8'd1 : ey_field;
    mx = {(ex_field != 8'd0), x[22:0], 3'b000};
    my = {(ey_field != 8'd0), y[22:0], 3'b000};
    shift = ex - ey;
    // Shift right through a double-width window: the low half collects the
    // bits shifted out, which become the sticky bit.
    my_wide = {my, 27'd0} >> shift;
    if (shift >= 8'd27) my_aligned = {26'd0, (my != 27'd0)};
    else my_aligned = my_wide[53:27] | {26'd0, (my_wide[26:0] != 27'd0)};
    m1 = subtract ? ({1'b0, mx} - {1'b0, my_aligned}) : ({1'b0, mx} + {1'b0, my_aligned});
  end

  logic        special_reg;
  logic [31:0] special_value_reg;
  logic        sign_reg, subtract_reg;
  logic [7:0]  e_reg;
  logic [27:0] m_reg;

  always_ff @(posedge clk) begin
    special_reg <= special;
    special_value_reg <= special_value;
    sign_reg <= sign;
    subtract_reg <= subtract;
    e_reg <= ex;
    m_reg <= m1;
  end

  // Left normalisation by min(leading zeros, room) in five steps of 16, 8,
  // 4, 2 and 1 bits, each taken when the top bits are zero and the exponent
  // still has room: the count and the shift in one log-depth network instead
  // of a 27-long priority chain followed by a barrel shifter. Greedy steps
  // give exactly min(leading zeros, room) for a non-zero significand (at most
  // 26); a zero significand is an exact cancellation, decided elsewhere.
  // Returns {shift, shifted significand}.
  function automatic [31:0] normalize_left(input [26:0] m, input [8:0] room);
    reg [26:0] v;
    reg [8:0] r;
    reg [4:0] n;
    v = m;
    r = room;
    n = 5'd0;
    if (v[26:11] == 16'd0 && r >= 9'd16) begin
      v = v << 16;
      r = r - 9'd16;
      n = n + 5'd16;
    end
    if (v[26:19] == 8'd0 && r >= 9'd8) begin
      v = v << 8;
      r = r - 9'd8;
      n = n + 5'd8;
    end
    if (v[26:23] == 4'd0 && r >= 9'd4) begin
      v = v << 4;
      r = r - 9'd4;
      n = n + 5'd4;
    end
    if (v[26:25] == 2'd0 && r >= 9'd2) begin
      v = v << 2;
      r = r - 9'd2;
      n = n + 5'd2;
    end
    if (!v[26] && r >= 9'd1) begin
      v = v << 1;
      n = n + 5'd1;
    end
    normalize_left = {n, v};
  endfunction

  // ------------------------------------------------------------ stage 2
  logic [8:0]  e2;
  logic [26:0] m2;
  logic [4:0]  lz;
  logic [8:0]  room;
  logic [2:0]  grs;
  logic [24:0] sig;
  logic [31:0] mag;
  logic [31:0] result;

  always_comb begin
    e2 = {1'b0, e_reg};
    m2 = m_reg[26:0];
    lz = 5'd0;
    room = 9'd0;
    if (!subtract_reg) begin
      if (m_reg[27]) begin  // carry out: renormalise right, keep the sticky bit
        m2 = m_reg[27:1] | {26'd0, m_reg[0]};
        e2 = e2 + 9'd1;
      end
    end else begin
      // Renormalise left, but not below the subnormal exponent.
      room = e2 - 9'd1;
      {lz, m2} = normalize_left(m_reg[26:0], room);
      e2 = e2 - {4'd0, lz};
    end
    grs = m2[2:0];
    sig = {1'b0, m2[26:3]};
    if (grs > 3'd4 || (grs == 3'd4 && sig[0])) sig = sig + 25'd1;
    mag = (m2[26] ? ({23'd0, e2 - 9'd1} << 23) : 32'd0) + {7'd0, sig};
    if (mag >= 32'h7F800000) mag = 32'h7F800000;  // overflow to infinity
    if (special_reg) result = special_value_reg;
    else if (subtract_reg && m_reg == 28'd0) result = 32'd0;  // exact cancellation gives +0
    else result = {sign_reg, mag[30:0]};
  end

  always_ff @(posedge clk) sum <= result;
endmodule
`default_nettype wire
