// Receive frame FIFO: the end of a MAC's receive stream, which cannot be
// held back, in front of a consumer that can (the engine's input stage, or a
// transmit side). The input has no tready: every beat is taken, one per
// clock. The output is AXI4-Stream with back-pressure and only ever shows
// whole frames. Frames are written speculatively and committed at their
// tlast; the reader sees committed beats only, so nothing partial leaves.
// A frame is dropped whole (its beats already written given back, the rest
// of it discarded up to its tlast) when
//   - one of its beats does not fit (overflow: the consumer fell behind for
//     longer than DEPTH beats, or the frame is longer than DEPTH beats), or
//   - the MAC marks it bad: s_axis_tuser on any beat (a CMAC raises it on
//     the tlast beat for a bad FCS or a PHY error).
// A frame that is both is dropped as bad (the MAC's verdict first, as in the
// engine's checks). Corundum ends its MAC receive paths the same way
// (mqnic_port_rx.v: axis_async_fifo_adapter with FRAME_FIFO, DROP_BAD_FRAME,
// DROP_WHEN_FULL).
//
// After a reset the FIFO does not know whether the stream is inside a frame:
// a flag that reset does not clear follows the input's frames (set by a
// beat, cleared by a tlast), and beats up to the tlast of a frame cut by the
// reset are discarded, so a frame's tail never becomes a frame of its own.
//
// One status pulse per frame at its end (registered, in frame order) says
// whether it was kept or dropped, and why; the engine counts the drops.
//
// Timing: W registers the input beat (the s_axis inputs come from the MAC's
// registers); in W the beat is written (registered write: address, data and
// enable from W and the pointers) and at tlast the frame committed or given
// back. The read side reads a committed beat per clock into R1 (the
// memory's read register), R2 (its output register, the block RAM's DOB
// register) and O (the output register, fabric flip-flops: m_axis); the
// three stages advance together whenever O is empty or taken, so the output
// sustains one beat per clock and holds while tready is low. A frame's first
// beat leaves 5 clocks after its tlast arrives (W, commit, R1, R2, O): at one
// beat per clock in and out a frame of n beats is delayed by n + 4 clocks.
// Every path is a few gates between registers (the overflow check: the
// pointers' equality; the pointer updates; tready to the stages' enables).
//
// Memory: DEPTH x 577 bits ({tlast, tkeep, tdata} of 64-byte beats), block RAM
// (ram_style = "block"), one write and one read port, read in R1 with its
// output register in R2 (Vivado's simple dual-port template with the output
// register; UG901 "RAM HDL Coding Guidelines"). A read never hits the
// address written in the same clock: the reader reads committed beats only,
// below the write pointer, and a write to a full FIFO is refused.
`default_nettype none
module panama_rx_frame_fifo #(
    // Beats held (a power of two, at least 4): frames being received and
    // frames waiting for the consumer together.
    parameter int DEPTH = 1024,
    // Bytes per beat (64: the engine's 512-bit streams; smaller for the
    // formal harness).
    parameter int DATA_BYTES = 64,
    // Address bits (derived).
    parameter int ADDR_BITS = $clog2(DEPTH)
) (
    input  wire logic                 clk,
    input  wire logic                 rst,

    // From the MAC: every beat is taken (there is no tready).
    input  wire logic [8*DATA_BYTES-1:0] s_axis_tdata,
    input  wire logic [DATA_BYTES-1:0]   s_axis_tkeep,
    input  wire logic                 s_axis_tvalid,
    input  wire logic                 s_axis_tlast,
    // The MAC marks the frame bad (on any beat).
    input  wire logic                 s_axis_tuser,

    // Whole frames, in order, AXI4-Stream (every output a register).
    output logic      [8*DATA_BYTES-1:0] m_axis_tdata,
    output logic      [DATA_BYTES-1:0]   m_axis_tkeep,
    output logic                      m_axis_tvalid,
    input  wire logic                 m_axis_tready,
    output logic                      m_axis_tlast,

    // One pulse per frame, two clocks after its tlast arrives: the frame
    // ended; with it, at most one of: dropped because a beat did not fit,
    // dropped because the MAC marked it bad.
    output logic                      status_frame,
    output logic                      status_drop_overflow,
    output logic                      status_drop_bad,
    // Beats that still fit (registered; beats of the frame being received
    // count as used).
    output logic      [ADDR_BITS:0]   status_free,
    // Nothing held, no frame half received (registered).
    output logic                      status_empty
);
  localparam int WIDTH = 1 + DATA_BYTES + 8 * DATA_BYTES;  // {tlast, tkeep, tdata}

  initial begin
    if (DEPTH < 4 || (1 << ADDR_BITS) != DEPTH) $error("%m: DEPTH must be a power of two >= 4");
  end

  // ---- The input's frames across reset. in_frame: the last beat seen was
  // not a tlast; reset does not clear it (its initial value is the state at
  // configuration, before any beat). skip: discard up to the next tlast.
  logic in_frame_reg = 1'b0;
  logic skip_reg = 1'b0;
  always_ff @(posedge clk) begin
    if (s_axis_tvalid) in_frame_reg <= !s_axis_tlast;
    if (rst) skip_reg <= s_axis_tvalid ? !s_axis_tlast : in_frame_reg;
    else if (s_axis_tvalid && s_axis_tlast) skip_reg <= 1'b0;
  end

  // ---- W: the beat
  logic         w_valid_reg, w_last_reg, w_user_reg;
  logic [8*DATA_BYTES-1:0] w_data_reg;
  logic [DATA_BYTES-1:0]   w_keep_reg;
  always_ff @(posedge clk) begin
    w_valid_reg <= !rst && s_axis_tvalid && !skip_reg;
    w_data_reg <= s_axis_tdata;
    w_keep_reg <= s_axis_tkeep;
    w_last_reg <= s_axis_tlast;
    w_user_reg <= s_axis_tuser;
  end

  // Pointers (one bit more than the address): wr the next beat's place
  // (beats of the frame being received included), commit the end of the
  // committed frames, rd the next beat to read. rd <= commit <= wr <= rd + DEPTH.
  logic [ADDR_BITS:0] wr_ptr_reg, commit_ptr_reg, rd_ptr_reg;
  logic               drop_reg;  // the frame being received is dropped: discard up to its tlast
  logic               bad_reg;   // ... because the MAC marked one of its beats bad
  logic               full, write, bad_now;
  always_comb begin
    full = wr_ptr_reg[ADDR_BITS] != rd_ptr_reg[ADDR_BITS] &&
        wr_ptr_reg[ADDR_BITS-1:0] == rd_ptr_reg[ADDR_BITS-1:0];
    bad_now = bad_reg || w_user_reg;
    // A beat is written when its frame is still kept, the MAC has not marked
    // it bad and it fits. A kept frame's tlast beat written commits it.
    write = w_valid_reg && !drop_reg && !w_user_reg && !full;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      wr_ptr_reg <= '0;
      commit_ptr_reg <= '0;
      drop_reg <= 1'b0;
      bad_reg <= 1'b0;
    end else if (w_valid_reg) begin
      // Written: one more; otherwise the frame is dropped and its beats
      // given back (already so when it was being dropped).
      wr_ptr_reg <= write ? wr_ptr_reg + 1'b1 : commit_ptr_reg;
      if (write && w_last_reg) commit_ptr_reg <= wr_ptr_reg + 1'b1;
      drop_reg <= !w_last_reg && !write;
      bad_reg <= !w_last_reg && bad_now;
    end
  end

  (* ram_style = "block" *) logic [WIDTH-1:0] mem[DEPTH];
  always_ff @(posedge clk) begin
    if (write) mem[wr_ptr_reg[ADDR_BITS-1:0]] <= {w_last_reg, w_keep_reg, w_data_reg};
  end

  always_ff @(posedge clk) begin
    status_frame <= !rst && w_valid_reg && w_last_reg;
    status_drop_bad <= !rst && w_valid_reg && w_last_reg && bad_now;
    status_drop_overflow <= !rst && w_valid_reg && w_last_reg && !bad_now && !write;
  end

  // ---- Read side: R1 (the memory's read register), R2 (its output
  // register), O (the output register, m_axis). The three advance together
  // whenever O is empty or taken (en), so the output runs at one beat per
  // clock with nothing between the stages; while O waits for tready,
  // everything holds (AXI4-Stream: tvalid and tdata stay).
  logic             en, issue;
  logic             r1_valid_reg, r2_valid_reg, o_valid_reg;
  logic [WIDTH-1:0] r1_data_reg, r2_data_reg, o_data_reg;
  assign en = !o_valid_reg || m_axis_tready;
  assign issue = en && commit_ptr_reg != rd_ptr_reg;

  always_ff @(posedge clk) begin
    if (issue) r1_data_reg <= mem[rd_ptr_reg[ADDR_BITS-1:0]];
    if (en) r2_data_reg <= r1_data_reg;
    if (en) o_data_reg <= r2_data_reg;
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      rd_ptr_reg <= '0;
      r1_valid_reg <= 1'b0;
      r2_valid_reg <= 1'b0;
      o_valid_reg <= 1'b0;
    end else if (en) begin
      if (issue) rd_ptr_reg <= rd_ptr_reg + 1'b1;
      r1_valid_reg <= issue;
      r2_valid_reg <= r1_valid_reg;
      o_valid_reg <= r2_valid_reg;
    end
  end
  assign m_axis_tvalid = o_valid_reg;
  assign {m_axis_tlast, m_axis_tkeep, m_axis_tdata} = o_data_reg;

  // ---- Status
  always_ff @(posedge clk) begin
    // rd - wr with the top bit flipped = DEPTH - (wr - rd).
    status_free <= (rd_ptr_reg - wr_ptr_reg) ^ {1'b1, {ADDR_BITS{1'b0}}};
    status_empty <= rst || (!s_axis_tvalid && !skip_reg && !w_valid_reg && !drop_reg && wr_ptr_reg == rd_ptr_reg &&
                            !r1_valid_reg && !r2_valid_reg && !o_valid_reg);
  end

`ifdef FORMAL
  always @(posedge clk) begin
    if (!rst) begin
      assert (commit_ptr_reg - rd_ptr_reg <= (ADDR_BITS + 1)'(DEPTH));
      assert (wr_ptr_reg - rd_ptr_reg <= (ADDR_BITS + 1)'(DEPTH));
      assert (commit_ptr_reg - rd_ptr_reg <= wr_ptr_reg - rd_ptr_reg);
    end
  end
`endif
endmodule
`default_nettype wire
