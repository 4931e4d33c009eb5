// The adder's `b` operand of one 512-bit beat, as 32 fp32 lanes (one slot
// memory row of 32 accumulators): for an fp32 beat (and any beat that is
// not a 16-bit payload beat: a header, a passed beat) the beat twice,
// {beat, beat}, so that its 16 elements meet the accumulators of whichever
// half row the beat adds into; for a bf16 or fp16 payload beat its 32
// elements widened to binary32, 16-bit lane i into fp32 lane i
// (docs/protocol.md §7: exact; bf16 is the high half of a binary32; an
// fp16 subnormal becomes a normal binary32; an fp16 NaN becomes a binary32
// NaN with its payload, which is never observable: every sum with a NaN is
// the canonical NaN and every emitted NaN is canonical). The bit-exact
// reference is fp16_to_fp32 in hw/hls/include/panama/elem16.hpp.
//
// Combinational, at most 5 LUT levels (the fp16 subnormal's normalisation:
// the leading one of the 10-bit fraction and the shift by it, then the
// choice of the type); panama_datapath registers it in the stage in front
// of the adders.
`default_nettype none
module panama_elem16_widen (
    input  wire logic [511:0]  beat,
    // The beat is a bf16 or fp16 payload beat (else: {beat, beat}).
    input  wire logic          wide,
    // fp16 (else bf16), when wide.
    input  wire logic          fp16,
    output logic      [1023:0] out
);
  function automatic logic [31:0] fp16_to_fp32(input logic [15:0] h);
    logic [4:0]  e;
    logic [9:0]  m;
    logic [7:0]  sub_exp;
    logic [9:0]  sub_frac;
    e = h[14:10];
    m = h[9:0];
    // Subnormal: the leading one at bit p gives 2^(p - 24) * 1.f, biased
    // exponent p + 103, fraction the bits below the leading one.
    sub_exp = 8'd0;
    sub_frac = 10'd0;
    for (int p = 0; p < 10; p++) begin
      if (m[p]) begin
        sub_exp = 8'(103 + p);
        sub_frac = 10'(m << (10 - p));
      end
    end
    if (e == 5'h1F) fp16_to_fp32 = {h[15], 8'hFF, m, 13'd0};  // infinity, or a NaN (fraction kept)
    else if (e != 5'd0) fp16_to_fp32 = {h[15], {3'd0, e} + 8'd112, m, 13'd0};
    else fp16_to_fp32 = {h[15], sub_exp, sub_frac, 13'd0};  // zero (m == 0) or subnormal
  endfunction

  always_comb begin
    for (int i = 0; i < 32; i++) begin
      if (!wide) out[32*i+:32] = beat[32*(i%16)+:32];
      else if (fp16) out[32*i+:32] = fp16_to_fp32(beat[16*i+:16]);
      else out[32*i+:32] = {beat[16*i+:16], 16'd0};
    end
  end
endmodule
`default_nettype wire
