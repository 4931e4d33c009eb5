// Input stage of the engine: stores every frame whole (store and forward, so
// a truncation or a MAC error found at tlast never touches a slot) and pushes
// one descriptor per frame at its tlast: the first beat, the length in bytes,
// the beat count and the MAC error flag.
//
// MAC error: s_axis_tuser[0] may be raised on any beat of a frame (a CMAC
// raises it on the tlast beat, where the FCS is checked); the frame is then
// marked bad as a whole. Beats beyond the largest frame are not stored (the
// frame is dropped as oversize by the classifier, which knows from the beat
// count). In the engine this stage sits behind the receive frame FIFO
// (panama_rx_frame_fifo), which drops bad frames itself: its tuser input is
// tied low there.
//
// Pipelined (at most 6 logic levels per stage, also from the s_axis ports,
// which come from registers: the receive FIFO's output): R registers the accepted beat and
// the population counts of tkeep's four 16-bit quarters, P adds them, L
// updates the frame and pushes the beat and, at tlast, the descriptor.
// s_axis_tready is registered and counts the beats in R and P as taken.
// Latency: a descriptor is visible on m_desc four clocks after the tlast
// beat is accepted (R, P, L, FIFO read register); the stored beats likewise
// four clocks after each is accepted.
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

  // Pipeline: R registers the accepted beat with the population count of
  // each 16 bits of tkeep, P adds them (bytes of the beat), L updates the
  // frame (length, beat count, first beat, MAC error), stores the beat and
  // at tlast pushes the descriptor.
  logic                               r_valid_reg, p_valid_reg;
  logic [511:0]                       r_data_reg, p_data_reg;
  logic                               r_last_reg, p_last_reg, r_user_reg, p_user_reg;
  logic [4:0]                         r_ones_reg[4];
  logic [6:0]                         p_bytes_reg;
  logic [15:0]                        len_reg, len_next;
  logic [15:0]                        beats_reg, beats_next;  // saturating beat count of the frame so far
  logic [511:0]                       first_reg;
  logic                               mac_error_reg, mac_error_next;
  logic                               accept, store, push_desc;
  logic                               beat_room_reg, desc_room_reg;
  logic                               beat_fifo_ready, desc_fifo_ready;
  panama_engine_pkg::frame_desc_t     desc;
  logic [$clog2(IN_FIFO_DEPTH)+1:0]   beat_count;
  logic [$clog2(DESC_FIFO_DEPTH)+1:0] desc_count;
  logic [4:0]                         ones16[4];
  logic [19:0]                        ones_all;

  // tready is registered. Beats and descriptors are counted from their
  // acceptance to their pop (the pops registered: a clock late, on the safe
  // side; beats beyond the largest frame until L drops them), and tready is
  // high in a clock when one more fits. Both outcomes of this clock's
  // accept are compared from registers; the accept only selects.
  localparam int BEAT_USED_BITS = $clog2(IN_FIFO_DEPTH) + 2;
  localparam int DESC_USED_BITS = $clog2(DESC_FIFO_DEPTH) + 2;
  logic [BEAT_USED_BITS-1:0] beat_used_reg;
  logic [DESC_USED_BITS-1:0] desc_used_reg;
  logic                      beat_pop_reg, desc_pop_reg, drop_reg;
  logic [BEAT_USED_BITS-1:0] beat_left;  // counted beats after this clock's pop and drop
  logic [DESC_USED_BITS-1:0] desc_left;
  assign beat_left = beat_used_reg - BEAT_USED_BITS'(beat_pop_reg) - BEAT_USED_BITS'(drop_reg);
  assign desc_left = desc_used_reg - DESC_USED_BITS'(desc_pop_reg);
  assign s_axis_tready = beat_room_reg && desc_room_reg;
  assign accept = s_axis_tvalid && s_axis_tready;
  always_ff @(posedge clk) begin
    if (rst) begin
      beat_used_reg <= '0;
      desc_used_reg <= '0;
      beat_pop_reg <= 1'b0;
      desc_pop_reg <= 1'b0;
      drop_reg <= 1'b0;
      beat_room_reg <= 1'b0;
      desc_room_reg <= 1'b0;
    end else begin
      beat_pop_reg <= m_beat_valid && m_beat_ready;
      desc_pop_reg <= m_desc_valid && m_desc_ready;
      drop_reg <= p_valid_reg && !store;  // a beat beyond the largest frame, not stored
      beat_used_reg <= beat_left + BEAT_USED_BITS'(accept);
      desc_used_reg <= desc_left + DESC_USED_BITS'(accept && s_axis_tlast);
      beat_room_reg <= accept ? beat_left < BEAT_USED_BITS'(IN_FIFO_DEPTH - 1) :
                                beat_left < BEAT_USED_BITS'(IN_FIFO_DEPTH);
      desc_room_reg <= (accept && s_axis_tlast) ? desc_left < DESC_USED_BITS'(DESC_FIFO_DEPTH - 1) :
                                                  desc_left < DESC_USED_BITS'(DESC_FIFO_DEPTH);
    end
  end

  // ---- R: the beat and the population count of each 16 bits of tkeep
  always_comb begin
    ones_all = panama_engine_pkg::quarter_ones(s_axis_tkeep);
    for (int q = 0; q < 4; q++) ones16[q] = ones_all[5*q+:5];
  end
  always_ff @(posedge clk) begin
    r_valid_reg <= !rst && accept;
    r_data_reg <= s_axis_tdata;
    r_last_reg <= s_axis_tlast;
    r_user_reg <= s_axis_tuser;
    for (int q = 0; q < 4; q++) r_ones_reg[q] <= ones16[q];
  end

  // ---- P: bytes of the beat
  always_ff @(posedge clk) begin
    p_valid_reg <= !rst && r_valid_reg;
    p_data_reg <= r_data_reg;
    p_last_reg <= r_last_reg;
    p_user_reg <= r_user_reg;
    p_bytes_reg <= ({2'd0, r_ones_reg[0]} + {2'd0, r_ones_reg[1]}) + ({2'd0, r_ones_reg[2]} + {2'd0, r_ones_reg[3]});
  end

  // ---- L: the frame so far; store the beat; the descriptor at tlast
  always_comb begin
    store = p_valid_reg && beats_reg < 16'(MAX_FRAME_BEATS);
    push_desc = p_valid_reg && p_last_reg;
    len_next = (len_reg > 16'(MAX_FRAME_BYTES)) ? len_reg : len_reg + {9'd0, p_bytes_reg};
    beats_next = (beats_reg == 16'hFFFF) ? beats_reg : beats_reg + 16'd1;
    mac_error_next = mac_error_reg || p_user_reg;
    desc.first_beat = (beats_reg == 16'd0) ? p_data_reg : first_reg;
    desc.len = len_next;
    desc.beats = beats_next;
    desc.mac_error = mac_error_next;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      len_reg <= 16'd0;
      beats_reg <= 16'd0;
      mac_error_reg <= 1'b0;
    end else if (p_valid_reg) begin
      len_reg <= p_last_reg ? 16'd0 : len_next;
      beats_reg <= p_last_reg ? 16'd0 : beats_next;
      mac_error_reg <= p_last_reg ? 1'b0 : mac_error_next;
    end
    if (p_valid_reg && beats_reg == 16'd0) first_reg <= p_data_reg;
  end

  panama_fifo #(
      .WIDTH(512),
      .DEPTH(IN_FIFO_DEPTH)
  ) beat_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(p_data_reg),
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
      .s_valid(push_desc),
      .s_ready(desc_fifo_ready),
      .m_data(m_desc),
      .m_valid(m_desc_valid),
      .m_ready(m_desc_ready),
      .count(desc_count)
  );

  // Empty: nothing accepted and not yet popped (or dropped), no partial
  // frame. Registered: empty in the clock before and nothing accepted in it
  // (pops only happen to what is counted).
  always_ff @(posedge clk) begin
    status_empty <= rst || (!accept && beat_used_reg == '0 && desc_used_reg == '0 && beats_reg == 16'd0);
  end
  assign status_stall_beat_fifo = !beat_room_reg;
  assign status_stall_desc_fifo = !desc_room_reg;

  // The credits above keep both FIFOs from filling: their s_ready is never
  // low on a push (checked when read by the formal flow, scripts/formal.sh).
`ifdef FORMAL
  always @(posedge clk) begin
    if (!rst) begin
      assert (!store || beat_fifo_ready);
      assert (!push_desc || desc_fifo_ready);
    end
  end
`endif
  logic unused;
  assign unused = ^{beat_fifo_ready, desc_fifo_ready, beat_count, desc_count};
endmodule
`default_nettype wire
