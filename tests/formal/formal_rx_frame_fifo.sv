// Formal harness: the receive frame FIFO (panama_rx_frame_fifo), in a small
// configuration (2-byte beats, 4 beats deep, so that it fills within a few
// clocks). The input is free (valid, tlast, tuser, tkeep any sequence; there
// is no tready) except its data, which the harness sets to {frame number,
// beat number} so that the output can be traced back; the output's tready
// is free. Reset only at the start. Proves, within the bound:
//   - AXI4-Stream at the output: once tvalid is high it stays high, with the
//     same tdata/tkeep/tlast, until tready;
//   - nothing partial and nothing invented: every output frame is one input
//     frame, all its beats in order with its own tlast and tkeep, and only
//     after its tlast arrived;
//   - the MAC's flag: a frame with tuser on any beat never leaves, and the
//     FIFO reports it dropped as bad;
//   - order and accounting: one status pulse per input frame, two clocks
//     after its tlast; the frames out are, in order, exactly those reported
//     kept (every frame between two output frames was reported dropped).
`default_nettype none
module formal_rx_frame_fifo #(
    parameter int DEPTH = 4
) (
    input wire logic       clk,
    input wire logic       rst,
    input wire logic [1:0] s_tkeep,
    input wire logic       s_tvalid,
    input wire logic       s_tlast,
    input wire logic       s_tuser,
    input wire logic       m_tready
);
  localparam int AB = $clog2(DEPTH);
  logic [15:0] s_tdata, m_tdata;
  logic [1:0]  m_tkeep;
  logic        m_tvalid, m_tlast;
  logic        st_frame, st_overflow, st_bad, st_empty;
  logic [AB:0] st_free;

  // Input numbering: frame number (mod 256) and beat number in the frame.
  logic [7:0] in_f = 8'd0, in_b = 8'd0;
  assign s_tdata = {in_f, in_b};

  panama_rx_frame_fifo #(
      .DEPTH(DEPTH),
      .DATA_BYTES(2)
  ) dut (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata(s_tdata),
      .s_axis_tkeep(s_tkeep),
      .s_axis_tvalid(s_tvalid),
      .s_axis_tlast(s_tlast),
      .s_axis_tuser(s_tuser),
      .m_axis_tdata(m_tdata),
      .m_axis_tkeep(m_tkeep),
      .m_axis_tvalid(m_tvalid),
      .m_axis_tready(m_tready),
      .m_axis_tlast(m_tlast),
      .status_frame(st_frame),
      .status_drop_overflow(st_overflow),
      .status_drop_bad(st_bad),
      .status_free(st_free),
      .status_empty(st_empty)
  );

`ifdef FORMAL
  logic f_past_valid = 1'b0;
  always @(posedge clk) f_past_valid <= 1'b1;
  always @(*) if (!f_past_valid) assume (rst);
  always @(*) if (f_past_valid) assume (!rst);
  always @(*) if (rst) assume (!s_tvalid);

  // Shadow of the input: per frame (number mod 16) its length, the tkeep of
  // its last beat, whether the MAC marked it bad; frames ended so far.
  // Vectors, not arrays: Yosys' memories here made z3 stall.
  logic [127:0] len_of = 128'd0;  // frame f in [8f +: 8]
  logic [31:0]  keep_of = 32'd0;  // frame f in [2f +: 2]
  logic [15:0] bad_of = 16'd0;
  logic        bad_acc = 1'b0;
  logic [7:0]  in_done = 8'd0;
  logic [7:0]  in_done_d1 = 8'd0;
  always @(posedge clk) begin
    if (!rst && s_tvalid) begin
      if (s_tlast) begin
        len_of[8*in_f[3:0]+:8] <= in_b + 8'd1;
        keep_of[2*in_f[3:0]+:2] <= s_tkeep;
        bad_of[in_f[3:0]] <= bad_acc || s_tuser;
        bad_acc <= 1'b0;
        in_f <= in_f + 8'd1;
        in_b <= 8'd0;
        in_done <= in_done + 8'd1;
      end else begin
        bad_acc <= bad_acc || s_tuser;
        in_b <= in_b + 8'd1;
      end
    end
    in_done_d1 <= in_done;
  end
  // The input never sends a beat that is not the last with a partial tkeep
  // (the engine's rule); any tkeep on a last beat.
  always @(*) if (s_tvalid && !s_tlast) assume (s_tkeep == 2'b11);

  // Status pulses: one per frame in order; the verdict of frame v.
  logic [7:0]  st_count = 8'd0;
  logic [15:0] dropped_of = 16'd0;
  always @(posedge clk) begin
    if (!rst && st_frame) begin
      st_count <= st_count + 8'd1;
      dropped_of[st_count[3:0]] <= st_overflow || st_bad;
    end
  end
  always @(posedge clk) begin
    if (f_past_valid && !rst) begin
      assert (!(st_overflow && st_bad));
      assert (!st_overflow || st_frame);
      assert (!st_bad || st_frame);
      // Two clocks after the tlast: the pulses seen so far (st_count, plus
      // this clock's) equal the frames whose tlast arrived two clocks ago
      // or earlier (in_done_d1: in_done a clock late, itself a clock after
      // the tlast).
      assert (st_count + {7'd0, st_frame} == in_done_d1);
      // A bad frame is reported bad.
      if (st_frame) assert (st_bad == bad_of[st_count[3:0]]);
    end
  end

  // The output: the frame shown and the beat expected next.
  logic       out_in_frame = 1'b0;
  logic [7:0] out_f = 8'd0, out_b = 8'd0;
  logic [7:0] next_f = 8'd0;  // no frame below it may leave any more
  always @(posedge clk) begin
    if (!rst && m_tvalid && m_tready) begin
      out_in_frame <= !m_tlast;
      out_f <= m_tdata[15:8];
      out_b <= m_tdata[7:0] + 8'd1;
      if (m_tlast) next_f <= m_tdata[15:8] + 8'd1;
    end
  end
  // Frames numbered next_f .. (the frame shown) - 1, by number mod 16.
  logic [15:0] between;
  always @(*) begin
    between = 16'd0;
    for (int g = 0; g < 16; g++) between[g] = 8'(g) >= next_f && 8'(g) < m_tdata[15:8];
  end
  always @(posedge clk) begin
    if (f_past_valid && !$past(rst)) begin
      // AXI4-Stream.
      if ($past(m_tvalid && !m_tready)) begin
        assert (m_tvalid);
        assert (m_tdata == $past(m_tdata) && m_tkeep == $past(m_tkeep) && m_tlast == $past(m_tlast));
      end
    end
    if (f_past_valid && !rst && m_tvalid) begin
      if (out_in_frame) begin
        // The next beat of the same frame.
        assert (m_tdata == {out_f, out_b});
      end else begin
        // A new frame: its first beat, a frame whose tlast arrived and
        // whose verdict was "kept", and every frame between the last one out
        // and it was dropped.
        assert (m_tdata[7:0] == 8'd0);
        assert (m_tdata[15:8] >= next_f);
        assert (m_tdata[15:8] < st_count);
        assert (!dropped_of[m_tdata[11:8]]);
        assert (!bad_of[m_tdata[11:8]]);
        assert ((between & ~dropped_of) == 16'd0);
      end
      // Its own tlast and tkeep.
      assert (m_tlast == (m_tdata[7:0] + 8'd1 == len_of[8*m_tdata[11:8]+:8]));
      assert (!m_tlast || m_tkeep == keep_of[2*m_tdata[11:8]+:2]);
      assert (m_tlast || m_tkeep == 2'b11);
    end
  end
`endif
  logic unused;
  assign unused = ^{st_free, st_empty};
endmodule
`default_nettype wire
