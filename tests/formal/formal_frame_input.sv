// Formal harness: the engine's input stage (panama_frame_input) with small
// FIFOs and a 2-beat frame limit. Proves that every accepted input beat is
// accounted for:
//   - stored beats come out in number, never more than were stored;
//   - each tlast gives exactly one descriptor, never more;
//   - whenever the stage is empty, every stored beat has left, every
//     descriptor has left, and the descriptors' beat counts (capped at the
//     frame limit, as the data pipeline pops them) add up to the beats that
//     left: no beat is lost or invented, and the beats beyond the limit are
//     exactly those of frames the classifier drops as oversize.
`default_nettype none
module formal_frame_input #(
    parameter int MAX_FRAME_BEATS = 2,
    parameter int IN_FIFO_DEPTH = 4,
    parameter int DESC_FIFO_DEPTH = 2
) (
    input wire logic         clk,
    input wire logic         rst,
    input wire logic [511:0] s_axis_tdata,
    input wire logic [63:0]  s_axis_tkeep,
    input wire logic         s_axis_tvalid,
    input wire logic         s_axis_tlast,
    input wire logic         s_axis_tuser,
    input wire logic         m_beat_ready,
    input wire logic         m_desc_ready
);
  logic         s_axis_tready;
  logic [511:0] m_beat_data;
  logic         m_beat_valid;
  panama_engine_pkg::frame_desc_t m_desc;
  logic         m_desc_valid;
  logic         status_empty, stall_beat, stall_desc;

  panama_frame_input #(
      .IN_FIFO_DEPTH(IN_FIFO_DEPTH),
      .DESC_FIFO_DEPTH(DESC_FIFO_DEPTH),
      .MAX_FRAME_BEATS(MAX_FRAME_BEATS),
      .MAX_FRAME_BYTES(64 * MAX_FRAME_BEATS)
  ) dut (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata(s_axis_tdata),
      .s_axis_tkeep(s_axis_tkeep),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tready(s_axis_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_axis_tuser(s_axis_tuser),
      .m_beat_data(m_beat_data),
      .m_beat_valid(m_beat_valid),
      .m_beat_ready(m_beat_ready),
      .m_desc(m_desc),
      .m_desc_valid(m_desc_valid),
      .m_desc_ready(m_desc_ready),
      .status_empty(status_empty),
      .status_stall_beat_fifo(stall_beat),
      .status_stall_desc_fifo(stall_desc)
  );

`ifdef FORMAL
  logic f_past_valid = 1'b0;
  always @(posedge clk) f_past_valid <= 1'b1;
  always @(*) if (!f_past_valid) assume (rst);

  // Beats of the frame in progress, as the harness counts them.
  logic [15:0] f_frame_beats = 16'd0;
  logic [15:0] f_accepted = 16'd0, f_stored = 16'd0, f_popped = 16'd0;
  logic [15:0] f_tlasts = 16'd0, f_descs = 16'd0, f_desc_beats = 16'd0;
  logic        accept;
  assign accept = s_axis_tvalid && s_axis_tready;

  always @(posedge clk) begin
    if (rst) begin
      f_frame_beats <= 16'd0;
      f_accepted <= 16'd0;
      f_stored <= 16'd0;
      f_popped <= 16'd0;
      f_tlasts <= 16'd0;
      f_descs <= 16'd0;
      f_desc_beats <= 16'd0;
    end else begin
      if (accept) begin
        f_accepted <= f_accepted + 16'd1;
        if (f_frame_beats < 16'(MAX_FRAME_BEATS)) f_stored <= f_stored + 16'd1;
        f_frame_beats <= s_axis_tlast ? 16'd0 : f_frame_beats + 16'd1;
        if (s_axis_tlast) f_tlasts <= f_tlasts + 16'd1;
      end
      if (m_beat_valid && m_beat_ready) f_popped <= f_popped + 16'd1;
      if (m_desc_valid && m_desc_ready) begin
        f_descs <= f_descs + 16'd1;
        f_desc_beats <= f_desc_beats +
            (m_desc.beats > 16'(MAX_FRAME_BEATS) ? 16'(MAX_FRAME_BEATS) : m_desc.beats);
      end
    end
  end

  always @(posedge clk) begin
    if (f_past_valid && !$past(rst)) begin
      assert (f_popped <= f_stored);
      assert (f_descs <= f_tlasts);
      assert (f_stored <= f_accepted);
      if (status_empty) begin
        assert (f_frame_beats == 16'd0);
        assert (f_popped == f_stored);
        assert (f_descs == f_tlasts);
        assert (f_desc_beats == f_popped);
      end
    end
  end
  // Short counters: keep the run below their wrap.
  always @(*) assume (f_accepted < 16'hFF00);
`endif
endmodule
`default_nettype wire
