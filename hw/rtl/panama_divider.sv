// Pipelined unsigned divider: 32-bit dividend by 16-bit divisor, one quotient
// bit per stage (restoring division), a new division every clock, results
// 32 clocks later. SIDE_WIDTH bits of sideband travel alongside. The engine
// uses it for slot = seq % Q and generation = seq / Q with any share Q.
// Division by zero gives an all-ones quotient; callers never use it.
`default_nettype none
module panama_divider #(
    // Sideband bits carried with each division.
    parameter int SIDE_WIDTH = 1
) (
    input  wire logic                  clk,
    input  wire logic                  rst,
    input  wire logic                  in_valid,
    input  wire logic [31:0]           in_dividend,
    input  wire logic [15:0]           in_divisor,
    input  wire logic [SIDE_WIDTH-1:0] in_side,
    output logic                       out_valid,
    output logic      [31:0]           out_quotient,
    output logic      [15:0]           out_remainder,
    output logic      [SIDE_WIDTH-1:0] out_side
);
  localparam int STAGES = 32;

  initial begin
    if (SIDE_WIDTH < 1) $error("%m: SIDE_WIDTH must be at least 1");
  end

  // Stage k holds the partial remainder and the dividend with k quotient
  // bits shifted in at the bottom.
  logic                  valid_reg[STAGES+1];
  logic [15:0]           rem_reg[STAGES+1];
  logic [31:0]           dq_reg[STAGES+1];
  logic [15:0]           divisor_reg[STAGES+1];
  logic [SIDE_WIDTH-1:0] side_reg[STAGES+1];

  always_comb begin
    valid_reg[0] = in_valid;
    rem_reg[0] = 16'd0;
    dq_reg[0] = in_dividend;
    divisor_reg[0] = in_divisor;
    side_reg[0] = in_side;
  end

  for (genvar k = 0; k < STAGES; k++) begin : g_stage
    logic [16:0] trial;
    logic        fits;
    assign trial = {rem_reg[k], dq_reg[k][31]};
    assign fits  = trial >= {1'b0, divisor_reg[k]};
    always_ff @(posedge clk) begin
      rem_reg[k+1] <= fits ? 16'(trial - {1'b0, divisor_reg[k]}) : trial[15:0];
      dq_reg[k+1] <= {dq_reg[k][30:0], fits};
      divisor_reg[k+1] <= divisor_reg[k];
      side_reg[k+1] <= side_reg[k];
    end
    always_ff @(posedge clk) begin
      if (rst) valid_reg[k+1] <= 1'b0;
      else valid_reg[k+1] <= valid_reg[k];
    end
  end

  assign out_valid = valid_reg[STAGES];
  assign out_quotient = dq_reg[STAGES];
  assign out_remainder = rem_reg[STAGES];
  assign out_side = side_reg[STAGES];
endmodule
`default_nettype wire
