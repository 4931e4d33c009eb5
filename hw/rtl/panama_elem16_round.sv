// The output beat of one slot-memory row (32 fp32 lanes) in the data
// pipeline: for an fp32 beat the half row it stands for; for a bf16 or fp16
// payload beat of an emitted aggregate the 32 accumulators rounded once to
// the type (docs/protocol.md §7): round to nearest, ties to even; a value
// at or beyond the largest finite value plus half a step becomes the
// infinity of its sign; subnormal results kept (fp16), a value below half
// the smallest fp16 subnormal a zero of its sign; every NaN the type's
// canonical quiet NaN (bf16 0x7FC0, fp16 0x7E00, sign clear); infinities
// and -0 kept. The bit-exact reference is fp32_to_bf16 and fp32_to_fp16 in
// hw/hls/include/panama/elem16.hpp.
//
// Pipelined, LATENCY = 2: `in_*` at clock t, `out` during clock t + 2
// (combinational from the second stage's registers: a carry chain and a
// multiplexer, meant to feed a FIFO's write port). Per lane, with
// x = {s, e[7:0], f[22:0]}:
//   R1  the classes (NaN; fp16: |x| >= 2^16, below half the smallest
//       subnormal, normal range e >= 113, else subnormal with the right
//       shift t = 113 - e in 1..11 of the 11-bit significand {1, f[22:13]},
//       and t - 1);
//       normal-range and bf16 candidates {exponent, fraction} with their
//       round-up bits; the sticky flags "f[j:0] != 0" for j = 12..22; for
//       fp32 the half row, registered
//   R2  fp16 subnormal: the shift by t (two 4:1 levels), its round and
//       sticky bits (a mux of the flags) and the round-up decision; the
//       candidate and round-up bit of the lane's type; the special value
//       (NaN, infinity, zero; an fp32 lane's 16 bits), registered
//   out the candidate plus the round-up bit (a carry chain: it carries into
//       the exponent, up to infinity by itself), or the special value
`default_nettype none
module panama_elem16_round (
    input  wire logic          clk,
    // The row (32 fp32 lanes).
    input  wire logic [1023:0] in_x,
    // Round to a 16-bit type (else: the half row in_hi chooses).
    input  wire logic          in_round,
    // fp16 (else bf16), when in_round.
    input  wire logic          in_fp16,
    // The upper half row (fp32).
    input  wire logic          in_hi,
    output logic      [511:0]  out
);
  localparam int LATENCY = 2;

  // ---- R1, shared
  logic [511:0] r1_half;
  logic         r1_round, r1_fp16;
  always_ff @(posedge clk) begin
    r1_half <= in_hi ? in_x[1023:512] : in_x[511:0];
    r1_round <= in_round;
    r1_fp16 <= in_fp16;
  end

  for (genvar i = 0; i < 32; i++) begin : g_lane
    logic [7:0]  e;
    logic [22:0] f;
    assign e = in_x[32*i+23+:8];
    assign f = in_x[32*i+:23];

    // ---- R1
    logic        r1_sign, r1_nan, r1_big, r1_zero, r1_normal, r1_rnd_n, r1_rnd_bf;
    logic [3:0]  r1_t, r1_tm1;
    logic [14:0] r1_base_n, r1_base_bf;
    logic [15:0] r1_sig;  // {1, f[22:13]}, zero-extended
    logic [15:0] r1_nz;   // r1_nz[k] = f[12+k:0] != 0, k = 0..10
    always_ff @(posedge clk) begin
      r1_sign <= in_x[32*i+31];
      r1_nan <= e == 8'hFF && f != 23'd0;
      r1_big <= e >= 8'd143;     // |x| >= 2^16 (fp16: 65520 and above round to infinity)
      r1_zero <= e <= 8'd101;    // below 2^-25: +-0 (binary32 subnormals included)
      r1_normal <= e >= 8'd113;  // fp16 normal range, |x| >= 2^-14
      r1_t <= 4'd1 - e[3:0];     // 113 - e for e = 102 .. 112 (112 = 0 mod 16)
      r1_tm1 <= 4'd0 - e[3:0];   // t - 1
      // fp16 normal: biased exponent e - 112 (1..30) = {~e[4], e[3:0]} there
      r1_base_n <= {~e[4], e[3:0], f[22:13]};
      r1_rnd_n <= f[12] && (f[13] || f[11:0] != 12'd0);
      r1_base_bf <= in_x[32*i+16+:15];
      r1_rnd_bf <= in_x[32*i+15] && (in_x[32*i+16] || in_x[32*i+:15] != 15'd0);
      r1_sig <= {5'd0, 1'b1, f[22:13]};
      for (int k = 0; k <= 10; k++) r1_nz[k] <= (f & 23'((24'd1 << (13 + k)) - 24'd1)) != 23'd0;
      r1_nz[15:11] <= 5'd0;
    end

    // ---- R2. fp16 subnormal (t = 1..11; for other exponents the value is
    // not used): q = sig >> t, round bit sig[t - 1], sticky f[11 + t:0].
    logic [9:0]  q_sub;
    logic        rnd_sub;
    assign q_sub = 10'(r1_sig >> r1_t);
    assign rnd_sub = r1_sig[r1_tm1] && (r1_nz[r1_tm1] || r1_sig[r1_t]);
    logic        r2_spec, r2_rnd, r2_sign;
    logic [15:0] r2_spec_val;
    logic [14:0] r2_base;
    always_ff @(posedge clk) begin
      if (!r1_fp16) begin
        r2_base <= r1_base_bf;
        r2_rnd <= r1_rnd_bf;
      end else if (r1_normal) begin
        r2_base <= r1_base_n;
        r2_rnd <= r1_rnd_n;
      end else begin
        r2_base <= {5'd0, q_sub};
        r2_rnd <= rnd_sub;
      end
      r2_sign <= r1_sign;
      r2_spec <= !r1_round || r1_nan || (r1_fp16 && (r1_big || r1_zero));
      if (!r1_round) r2_spec_val <= r1_half[16*i+:16];
      else if (r1_nan) r2_spec_val <= r1_fp16 ? 16'h7E00 : 16'h7FC0;
      else if (r1_big) r2_spec_val <= {r1_sign, 15'h7C00};
      else r2_spec_val <= {r1_sign, 15'd0};
    end

    // ---- out
    assign out[16*i+:16] = r2_spec ? r2_spec_val : {r2_sign, r2_base + {14'd0, r2_rnd}};
  end

  logic unused;
  assign unused = ^{LATENCY};
endmodule
`default_nettype wire
