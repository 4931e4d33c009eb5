// Sixteen fp32 adder lanes: one 512-bit beat (16 little-endian binary32
// values) per clock, result LATENCY clocks later (panama_fp32_add). Lane i
// is tdata[32i+31:32i].
`default_nettype none
module panama_fp32_add16 #(
    // Number of fp32 lanes (the 512-bit datapath has 16).
    parameter int LANES = 16
) (
    input  wire logic                  clk,
    input  wire logic [32*LANES-1:0] a,
    input  wire logic [32*LANES-1:0] b,
    output logic      [32*LANES-1:0] sum
);
  initial begin
    if (LANES < 1) $error("%m: LANES must be at least 1");
  end

  for (genvar i = 0; i < LANES; i++) begin : g_lane
    panama_fp32_add lane (
        .clk(clk),
        .a  (a[32*i+:32]),
        .b  (b[32*i+:32]),
        .sum(sum[32*i+:32])
    );
  end
endmodule
`default_nettype wire
