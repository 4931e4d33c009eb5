// Formal harness: the engine's output stage (panama_fifo, whose m side is
// m_axis of the engine through panama_datapath's output FIFO). The short run
// uses a narrow, shallow FIFO; scripts/formal.sh --deep sets the engine's
// own WIDTH (512 + 64 + 1) and DEPTH (16). Proves, for any input and any
// tready pattern:
//   - AXI4-Stream: once m_valid is high it stays high, with the same data
//     (tdata, tkeep, tlast), until m_ready;
//   - accounting: beats pushed - beats sent == beats held, never more than
//     the FIFO holds, and s_ready is low exactly when the memory is full.
`default_nettype none
module formal_out_fifo #(
    parameter int WIDTH = 8,
    parameter int DEPTH = 4
) (
    input wire logic             clk,
    input wire logic             rst,
    input wire logic [WIDTH-1:0] s_data,
    input wire logic             s_valid,
    input wire logic             m_ready
);
  logic             s_ready, m_valid;
  logic [WIDTH-1:0] m_data;
  logic [$clog2(DEPTH)+1:0] count;

  panama_fifo #(
      .WIDTH(WIDTH),
      .DEPTH(DEPTH)
  ) dut (
      .clk(clk),
      .rst(rst),
      .s_data(s_data),
      .s_valid(s_valid),
      .s_ready(s_ready),
      .m_data(m_data),
      .m_valid(m_valid),
      .m_ready(m_ready),
      .count(count)
  );

`ifdef FORMAL
  logic f_past_valid = 1'b0;
  always @(posedge clk) f_past_valid <= 1'b1;
  always @(*) if (!f_past_valid) assume (rst);

  logic [15:0] f_in = 16'd0, f_out = 16'd0;
  always @(posedge clk) begin
    if (rst) begin
      f_in <= 16'd0;
      f_out <= 16'd0;
    end else begin
      if (s_valid && s_ready) f_in <= f_in + 16'd1;
      if (m_valid && m_ready) f_out <= f_out + 16'd1;
    end
  end

  always @(posedge clk) begin
    if (f_past_valid && !$past(rst)) begin
      if ($past(m_valid && !m_ready)) begin
        assert (m_valid);
        assert (m_data == $past(m_data));
      end
      assert (f_in - f_out == 16'(count));
      assert (count <= ($clog2(DEPTH) + 2)'(DEPTH + 1));
    end
  end
`endif
endmodule
`default_nettype wire
