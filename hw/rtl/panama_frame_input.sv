// Input stage of the engine: stores every frame whole (store and forward, so
// a truncation or a MAC error found at tlast never touches a slot) and pushes
// one descriptor per frame at its tlast: the first beat, the length in bytes,
// the beat count and the MAC error flag.
//
// MAC error: s_axis_tuser[0] may be raised on any beat of a frame (a CMAC
// raises it on the tlast beat, where the FCS is checked); the frame is then
// marked bad as a whole. Beats beyond the largest frame are not stored (the
// frame is dropped as oversize by the classifier, which knows from the beat
// count).
//
// Latency: a descriptor is visible on m_desc two clocks after the tlast beat
// is accepted; the stored beats likewise two clocks after each is accepted.
`default_nettype none
module panama_frame_input #(
    // Beat FIFO depth (a power of two; holds two largest frames).
    parameter int IN_FIFO_DEPTH = 512,
    // Descriptor FIFO depth (a power of two).
    parameter int DESC_FIFO_DEPTH = 64,
    // Largest frame in beats; later beats of a longer frame are not stored.
    parameter int MAX_FRAME_BEATS = 144,
    // Largest frame in bytes; the byte count saturates above it.
    parameter int MAX_FRAME_BYTES = 9216
) (
    input  wire logic                          clk,
    input  wire logic                          rst,

    input  wire logic                  [511:0] s_axis_tdata,
    input  wire logic                  [63:0]  s_axis_tkeep,
    input  wire logic                          s_axis_tvalid,
    output logic                               s_axis_tready,
    input  wire logic                          s_axis_tlast,
    input  wire logic                          s_axis_tuser,

    // Stored beats, in order.
    output logic                       [511:0] m_beat_data,
    output logic                               m_beat_valid,
    input  wire logic                          m_beat_ready,

    // One descriptor per frame.
    output panama_engine_pkg::frame_desc_t     m_desc,
    output logic                               m_desc_valid,
    input  wire logic                          m_desc_ready,

    // Nothing held (no partial frame, no stored beat, no descriptor).
    output logic                               status_empty,
    output logic                               status_stall_beat_fifo,
    output logic                               status_stall_desc_fifo
);
  initial begin
    if (IN_FIFO_DEPTH < 2 * MAX_FRAME_BEATS) $error("%m: IN_FIFO_DEPTH must hold two largest frames");
  end

  logic [15:0] len_reg, len_next;
  logic [15:0] beats_reg, beats_next;  // saturating beat count of the frame so far
  logic [511:0] first_reg;
  logic         mac_error_reg, mac_error_next;
  logic         beat_fifo_ready, desc_fifo_ready;
  logic         accept, store;
  logic [6:0]   keep_bytes;
  panama_engine_pkg::frame_desc_t desc;
  logic [$clog2(IN_FIFO_DEPTH)+1:0] beat_count;
  logic [$clog2(DESC_FIFO_DEPTH)+1:0] desc_count;

  always_comb begin
    keep_bytes = 7'd0;
    for (int i = 0; i < 64; i++) keep_bytes = keep_bytes + {6'd0, s_axis_tkeep[i]};
    s_axis_tready = beat_fifo_ready && desc_fifo_ready;
    accept = s_axis_tvalid && s_axis_tready;
    store = accept && beats_reg < 16'(MAX_FRAME_BEATS);
    len_next = (len_reg > 16'(MAX_FRAME_BYTES)) ? len_reg : len_reg + {9'd0, keep_bytes};
    beats_next = (beats_reg == 16'hFFFF) ? beats_reg : beats_reg + 16'd1;
    mac_error_next = mac_error_reg || s_axis_tuser;
    desc.first_beat = (beats_reg == 16'd0) ? s_axis_tdata : first_reg;
    desc.len = len_next;
    desc.beats = beats_next;
    desc.mac_error = mac_error_next;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      len_reg <= 16'd0;
      beats_reg <= 16'd0;
      mac_error_reg <= 1'b0;
    end else if (accept) begin
      len_reg <= s_axis_tlast ? 16'd0 : len_next;
      beats_reg <= s_axis_tlast ? 16'd0 : beats_next;
      mac_error_reg <= s_axis_tlast ? 1'b0 : mac_error_next;
    end
    if (accept && beats_reg == 16'd0) first_reg <= s_axis_tdata;
  end

  panama_fifo #(
      .WIDTH(512),
      .DEPTH(IN_FIFO_DEPTH)
  ) beat_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(s_axis_tdata),
      .s_valid(store),
      .s_ready(beat_fifo_ready),
      .m_data(m_beat_data),
      .m_valid(m_beat_valid),
      .m_ready(m_beat_ready),
      .count(beat_count)
  );

  panama_fifo #(
      .WIDTH($bits(desc)),
      .DEPTH(DESC_FIFO_DEPTH)
  ) desc_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(desc),
      .s_valid(accept && s_axis_tlast),
      .s_ready(desc_fifo_ready),
      .m_data(m_desc),
      .m_valid(m_desc_valid),
      .m_ready(m_desc_ready),
      .count(desc_count)
  );

  assign status_empty = beats_reg == 16'd0 && beat_count == '0 && desc_count == '0;
  assign status_stall_beat_fifo = !beat_fifo_ready;
  assign status_stall_desc_fifo = !desc_fifo_ready;
endmodule
`default_nettype wire
