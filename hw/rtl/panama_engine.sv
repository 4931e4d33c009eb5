// PANAMA aggregation engine, RTL: the hand-written counterpart of the HLS
// model hw/hls/include/panama/engine.hpp, with the same behaviour, counters
// and register map (panama_regmap_pkg, generated from hw/regmap). This
// module only wires the parts (docs/rtl.md has the block diagram):
//
//   panama_rx_frame_fifo   receive frame FIFO: the input is never held back;
//                          frames that do not fit or that the MAC marks bad
//                          are dropped whole (counted), whole frames leave
//   panama_frame_input     store-and-forward input, one descriptor per frame
//   panama_classifier      C1 .. C5: header checks of the first beat
//   panama_table           (job, tree) table, commands, lookup (L1 .. L3)
//   panama_divider         32 stages: slot = seq % Q, generation = seq / Q
//   panama_decision        window, duplicates, fan-in; slot metadata (block
//                          RAM, four clocks, one frame per two clocks),
//                          background clear engine
//   panama_action_builder  emitted header and the data pipeline's work
//   panama_datapath        beat issuer (read-after-write hazard stall), slot
//                          memory (rows of 32 fp32), 32 fp32 adders (2-clock
//                          loop), bf16/fp16 widening and rounding, output FIFO
//   panama_counters        statistics counters
//   panama_axil_regs       AXI4-Lite register block
//
// 512-bit AXI4-Stream in and out (one packet per tlast, tkeep all ones except
// on the last beat), AXI4-Lite control. Sums fp32, bf16 and fp16 (ELEM_TYPES
// 0xE; 16-bit elements widened to fp32, accumulated in fp32 and rounded
// once when the aggregate leaves, docs/protocol.md §7). One beat per clock
// in and out for every frame size and type, also back to back into one slot
// (the slot word's read-add-write loop is 2 clocks and a frame at least 2
// beats; docs/rtl.md).
// The input is a MAC's receive stream, which cannot be held back:
// s_axis_tready is always high, and the receive frame FIFO in front of the
// input stage drops a frame whole when it does not fit (DROP_RX_OVERFLOW) or
// when the MAC marks it bad, s_axis_tuser[0] on any beat (bad FCS;
// DROP_MAC_ERROR); both also count in FRAMES_IN. Nothing partial reaches
// the input stage.
`default_nettype none
module panama_engine #(
    // (job, tree) table entries (the CAM size).
    parameter int NUM_ENTRIES = 64,
    // Packet-memory slots shared by all entries.
    parameter int NUM_SLOTS = 512,
    // 512-bit words per slot bank (16 fp32 each): SLOT_WORDS * 16 elements
    // of any type per slot bank (SLOT_ELEMS). The slot memory holds them as
    // rows of 32 fp32 accumulators, ceil(SLOT_WORDS / 2) rows per bank.
    parameter int SLOT_WORDS = 144,
    // Receive frame FIFO in beats (a power of two, at least two largest
    // frames): 1024 beats = 64 KiB, seven 9216-byte frames (144 beats):
    // one being received while the one before leaves, and five more
    // while the engine is held back by its output; 5.2 us of a 100 Gbit/s
    // line. Block RAM: 1024 x 577 bits.
    parameter int RX_FIFO_DEPTH = 1024,
    // Input FIFO depth in beats (a power of two; holds two jumbo frames).
    parameter int IN_FIFO_DEPTH = 512,
    // Frame descriptors waiting for the control pipeline (a power of two).
    parameter int DESC_FIFO_DEPTH = 64,
    // Decided actions waiting for the data pipeline (a power of two, more
    // than the control pipeline holds).
    parameter int ACT_FIFO_DEPTH = 64,
    // Output FIFO depth in beats (a power of two, at least the data
    // pipeline's depth SLOT_READ_LATENCY + 5, plus 4).
    parameter int OUT_FIFO_DEPTH = 32,
    // Slot-memory read latency in clocks: the UltraRAM's read register and
    // SLOT_READ_LATENCY - 1 output registers, which Vivado moves into the
    // cascade. 12 = 1 + rows + columns of the default configuration's
    // UltraRAM matrices (two arrays of 73,728 x 512 bits, each 18 URAM288
    // deep, columns of 8: 8 rows, 3 columns; UG901 "Pipelining the RAM";
    // docs/rtl.md, "Memories"). 1 is enough for block RAM. The data pipeline
    // forwards over any latency, so the results and the line rate do not
    // depend on it.
    parameter int SLOT_READ_LATENCY = 12,
    // Derived widths.
    parameter int ENTRY_BITS = NUM_ENTRIES > 1 ? $clog2(NUM_ENTRIES) : 1,
    parameter int SLOT_BITS = NUM_SLOTS > 1 ? $clog2(NUM_SLOTS) : 1,
    parameter int DATA_ROWS = NUM_SLOTS * 2 * ((SLOT_WORDS + 1) / 2)
) (
    input  wire logic         clk,
    input  wire logic         rst,

    // From the MAC. tready is always high: every beat is taken, and a frame
    // that does not fit in the receive FIFO is dropped whole.
    input  wire logic [511:0] s_axis_tdata,
    input  wire logic [63:0]  s_axis_tkeep,
    input  wire logic         s_axis_tvalid,
    output logic              s_axis_tready,
    input  wire logic         s_axis_tlast,
    // Bit 0: MAC error (bad FCS), on any beat of the frame: dropped whole.
    input  wire logic [0:0]   s_axis_tuser,

    output logic      [511:0] m_axis_tdata,
    output logic      [63:0]  m_axis_tkeep,
    output logic              m_axis_tvalid,
    input  wire logic         m_axis_tready,
    output logic              m_axis_tlast,

    input  wire logic [13:0]  s_axil_awaddr,
    input  wire logic         s_axil_awvalid,
    output logic              s_axil_awready,
    input  wire logic [31:0]  s_axil_wdata,
    input  wire logic [3:0]   s_axil_wstrb,
    input  wire logic         s_axil_wvalid,
    output logic              s_axil_wready,
    output logic      [1:0]   s_axil_bresp,
    output logic              s_axil_bvalid,
    input  wire logic         s_axil_bready,
    input  wire logic [13:0]  s_axil_araddr,
    input  wire logic         s_axil_arvalid,
    output logic              s_axil_arready,
    output logic      [31:0]  s_axil_rdata,
    output logic      [1:0]   s_axil_rresp,
    output logic              s_axil_rvalid,
    input  wire logic         s_axil_rready,

    // Frames dropped by receive frame FIFOs outside the engine (the two-port
    // kernel's cage-to-cage paths), one pulse per frame, counted in
    // FWD_0TO1_DROPPED (bit 0: cage 0 to cage 1) and FWD_1TO0_DROPPED
    // (bit 1: cage 1 to cage 0). Tie low where there are none.
    input  wire logic [1:0]   fwd_drop,

    // Nothing buffered or in flight anywhere.
    output logic              status_idle,
    // Why the input is stalled (when it is): input FIFO or descriptor FIFO
    // full, or a register write waiting for the control pipeline to drain.
    output logic              status_stall_in_fifo,
    output logic              status_stall_desc_fifo,
    output logic              status_stall_reg_write,
    // One pulse per frame at the decision stage, in frame order: what the
    // engine does with it (EngineAction codes of engine.hpp), the counter of
    // a drop, and the table entry (or all ones).
    output logic              status_decision_valid,
    output logic      [2:0]   status_decision_action,
    output logic      [4:0]   status_decision_counter,
    output logic      [7:0]   status_decision_entry,
    // The receive frame FIFO: one pulse per input frame, in frame order,
    // two clocks after its tlast (status_rx_frame), with it whether the FIFO
    // dropped the frame (it did not fit; the MAC marked it bad). Frames not
    // dropped get their decision later, in order. status_rx_free: beats that
    // still fit (registered), for a source that can wait (a test bench).
    // status_in_stall: the receive FIFO has a beat that the input stage does
    // not take (status_stall_* say why).
    output logic              status_rx_frame,
    output logic              status_rx_drop_overflow,
    output logic              status_rx_drop_bad,
    output logic      [15:0]  status_rx_free,
    output logic              status_in_stall
);
  import panama_wire_pkg::*;
  import panama_regmap_pkg::*;
  import panama_engine_pkg::*;
  localparam int SLOT_CAPACITY = SLOT_WORDS * LANES;
  // Clocks from a descriptor's pop to its action's push: the classifier
  // (C1 .. C5), the table lookup (L1 .. L3), the divider, E1/E2 (the entry
  // read for the decision), the decision (four clocks, D0 .. D3), the action builder
  // (A0 .. A4, out).
  localparam int CLASSIFY_LATENCY = 5, LOOKUP_LATENCY = 3, DIVIDER_LATENCY = 32, ENTRY_READ_LATENCY = 2,
      DECISION_LATENCY = 4, BUILD_LATENCY = 6;
  localparam int CTRL_DEPTH = CLASSIFY_LATENCY + LOOKUP_LATENCY + DIVIDER_LATENCY + ENTRY_READ_LATENCY +
      DECISION_LATENCY + BUILD_LATENCY;

  initial begin
    if (NUM_ENTRIES < 1 || NUM_ENTRIES > MAX_ENTRIES) $error("%m: NUM_ENTRIES must be 1..256");
    if (NUM_SLOTS < 1 || NUM_SLOTS > 65535) $error("%m: NUM_SLOTS must be 1..65535");
    if (SLOT_WORDS < 1 || SLOT_CAPACITY > 65535) $error("%m: SLOT_WORDS * 16 must fit 16 bits");
    if (SLOT_WORDS > MAX_FRAME_BEATS) $error("%m: SLOT_WORDS larger than a frame can fill");
    // The credits below never let the action FIFO overflow; a frame per clock
    // needs room for every frame in the control pipeline and the FIFO's read latency.
    if (ACT_FIFO_DEPTH < 64 || ACT_FIFO_DEPTH < CTRL_DEPTH + 2)
      $error("%m: ACT_FIFO_DEPTH must be at least 64 and CTRL_DEPTH + 2 (control pipeline depth)");
    if (RX_FIFO_DEPTH < 2 * MAX_FRAME_BEATS || RX_FIFO_DEPTH > 32768)
      $error("%m: RX_FIFO_DEPTH must hold two largest frames (and at most 32768 beats)");
  end

  // ================================================================ receive FIFO
  logic [511:0] rx_tdata;
  logic [63:0]  rx_tkeep;
  logic         rx_tvalid, rx_tready, rx_tlast;
  logic         rx_empty;
  logic         rx_drop_overflow, rx_drop_bad;
  logic [$clog2(RX_FIFO_DEPTH):0] rx_free;

  panama_rx_frame_fifo #(
      .DEPTH(RX_FIFO_DEPTH)
  ) rx_fifo (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata(s_axis_tdata),
      .s_axis_tkeep(s_axis_tkeep),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tlast(s_axis_tlast),
      .s_axis_tuser(s_axis_tuser[0]),
      .m_axis_tdata(rx_tdata),
      .m_axis_tkeep(rx_tkeep),
      .m_axis_tvalid(rx_tvalid),
      .m_axis_tready(rx_tready),
      .m_axis_tlast(rx_tlast),
      .status_frame(status_rx_frame),
      .status_drop_overflow(rx_drop_overflow),
      .status_drop_bad(rx_drop_bad),
      .status_free(rx_free),
      .status_empty(rx_empty)
  );
  assign s_axis_tready = 1'b1;
  assign status_rx_drop_overflow = rx_drop_overflow;
  assign status_rx_drop_bad = rx_drop_bad;
  assign status_rx_free = 16'(rx_free);
  assign status_in_stall = rx_tvalid && !rx_tready;

  // ================================================================ input
  logic [511:0] beat_data;
  logic         beat_valid, beat_ready;
  frame_desc_t  desc;
  logic         desc_valid, desc_ready;
  logic         input_empty;

  panama_frame_input #(
      .IN_FIFO_DEPTH(IN_FIFO_DEPTH),
      .DESC_FIFO_DEPTH(DESC_FIFO_DEPTH),
      .MAX_FRAME_BEATS(MAX_FRAME_BEATS),
      .MAX_FRAME_BYTES(MAX_FRAME_BYTES)
  ) frame_input (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata(rx_tdata),
      .s_axis_tkeep(rx_tkeep),
      .s_axis_tvalid(rx_tvalid),
      .s_axis_tready(rx_tready),
      .s_axis_tlast(rx_tlast),
      // Bad frames never get past the receive FIFO.
      .s_axis_tuser(1'b0),
      .m_beat_data(beat_data),
      .m_beat_valid(beat_valid),
      .m_beat_ready(beat_ready),
      .m_desc(desc),
      .m_desc_valid(desc_valid),
      .m_desc_ready(desc_ready),
      .status_empty(input_empty),
      .status_stall_beat_fifo(status_stall_in_fifo),
      .status_stall_desc_fifo(status_stall_desc_fifo)
  );

  // ================================================================ control
  // A descriptor enters the control pipeline only when the action FIFO will
  // have room for its action, and not while a register write waits or the
  // table settles after one (a table write takes effect a clock after it is
  // accepted, and its slot clear starts then); at most one every two clocks
  // (the decision's slot read-modify-write loop is two clocks long; a frame
  // is at least two beats, and a 100 Gbit/s wire brings at most one frame
  // per 2.16 clocks of 322 MHz even of one beat).
  logic [$clog2(ACT_FIFO_DEPTH)+1:0] act_count;
  logic [7:0] ctrl_inflight_reg;  // descriptors admitted, action not yet pushed
  logic       act_push;
  logic       write_pending;
  logic       c1_busy;
  logic       clear_busy;  // slot-metadata clear engine running
  logic       table_ready;  // the table's commit checks have settled
  logic       act_valid, act_ready;  // action FIFO head

  logic       admitted_reg;  // a descriptor entered in the previous clock
  // Action-FIFO credits: ACT_FIFO_DEPTH minus the descriptors admitted
  // whose action has not yet left the FIFO (in the control pipeline or in
  // the FIFO), kept as a register together with its "not zero" flag, so the
  // admission decision reads one flag instead of adding the FIFO's count;
  // the flag's next value is chosen from registered compares, not from the
  // sum.
  localparam int CREDIT_BITS = $clog2(ACT_FIFO_DEPTH) + 2;
  logic [CREDIT_BITS-1:0] credits_reg, credits_next;
  logic                   credit_ok_reg;
  assign desc_ready = desc_valid && !admitted_reg && !write_pending && table_ready && !clear_busy && credit_ok_reg;
  assign credits_next = credits_reg - CREDIT_BITS'(desc_ready) + CREDIT_BITS'(act_valid && act_ready);

  always_ff @(posedge clk) begin
    admitted_reg <= !rst && desc_ready;
    if (rst) begin
      ctrl_inflight_reg <= 8'd0;
      credits_reg <= CREDIT_BITS'(ACT_FIFO_DEPTH);
      credit_ok_reg <= 1'b1;
    end else begin
      ctrl_inflight_reg <= ctrl_inflight_reg + {7'd0, desc_ready} - {7'd0, act_push};
      credits_reg <= credits_next;
      // credits_next != 0 without waiting for the sum: a pop gives one back
      // (never zero then); an admission without a pop leaves credits - 1,
      // not zero when credits >= 2; neither or both keep the flag (an
      // admission implies credits != 0).
      credit_ok_reg <= (act_valid && act_ready) || (desc_ready ? credits_reg >= CREDIT_BITS'(2) : credit_ok_reg);
    end
  end

  logic          cfg_enabled;
  logic [15:0]   cfg_udp_port;
  frame_fields_t c2_fields;
  logic          c2_valid;

  panama_classifier #(
      .SLOT_CAPACITY(SLOT_CAPACITY)
  ) classifier (
      .clk(clk),
      .rst(rst),
      .in_desc(desc),
      .in_valid(desc_ready),
      .out_fields(c2_fields),
      .out_valid(c2_valid),
      .cfg_enabled(cfg_enabled),
      .cfg_udp_port(cfg_udp_port),
      .status_busy(c1_busy)
  );

  // Table (register side wired below).
  logic                  reg_wr_valid;
  logic [13:0]           reg_wr_addr;
  logic [31:0]           reg_wr_data;
  logic                  cmd_reset, cmd_clear;
  logic [13:0]           table_rd_addr;
  logic [31:0]           table_rd_data;
  logic                  table_rd_hit;
  logic                  commit_valid;
  logic [ENTRY_BITS-1:0] commit_entry;
  logic [31:0]           commit_base, commit_end;
  logic                  lookup_hit;
  logic [ENTRY_BITS-1:0] lookup_entry;
  logic [ENTRY_BITS-1:0] d_entry;
  logic [15:0]           lookup_share;
  table_entry_t          decide_entry, header_entry;
  decided_t              decided;
  logic                  decided_valid;

  panama_table #(
      .NUM_ENTRIES(NUM_ENTRIES),
      .NUM_SLOTS(NUM_SLOTS)
  ) entry_table (
      .clk(clk),
      .rst(rst),
      .wr_valid(reg_wr_valid),
      .wr_addr(reg_wr_addr),
      .wr_data(reg_wr_data),
      .clear_all(cmd_reset),
      .ready(table_ready),
      .rd_addr(table_rd_addr),
      .rd_data(table_rd_data),
      .rd_hit(table_rd_hit),
      .commit_valid(commit_valid),
      .commit_entry(commit_entry),
      .commit_base(commit_base),
      .commit_end(commit_end),
      .lookup_job(c2_fields.job),
      .lookup_tree(c2_fields.tree),
      .lookup_hit(lookup_hit),
      .lookup_entry(lookup_entry),
      .lookup_share(lookup_share),
      .decide_idx(d_entry),
      .decide_entry(decide_entry),
      .header_idx(decided.entry[ENTRY_BITS-1:0]),
      .header_entry(header_entry)
  );

  // ---- L1 .. L3: looked up (the table's registered lookup); divider input
  logic          l1_valid_reg, l2_valid_reg, c3_valid_reg;
  frame_fields_t l1_fields_reg, l2_fields_reg, c3_fields_reg;
  always_ff @(posedge clk) begin
    l1_valid_reg <= rst ? 1'b0 : c2_valid;
    l1_fields_reg <= c2_fields;
    l2_valid_reg <= rst ? 1'b0 : l1_valid_reg;
    l2_fields_reg <= l1_fields_reg;
    c3_valid_reg <= rst ? 1'b0 : l2_valid_reg;
    c3_fields_reg <= l2_fields_reg;
  end

  localparam int SIDE_WIDTH = $bits(c3_fields_reg) + 1 + ENTRY_BITS;
  logic                  dv_valid;
  logic [31:0]           dv_quotient;
  logic [15:0]           dv_remainder;
  frame_fields_t         d_fields;
  logic                  d_hit;

  panama_divider #(
      .SIDE_WIDTH(SIDE_WIDTH)
  ) divider (
      .clk(clk),
      .rst(rst),
      .in_valid(c3_valid_reg),
      .in_dividend(c3_fields_reg.seq),
      .in_divisor(lookup_share),
      .in_side({c3_fields_reg, lookup_hit, lookup_entry}),
      .out_valid(dv_valid),
      .out_quotient(dv_quotient),
      .out_remainder(dv_remainder),
      .out_side({d_fields, d_hit, d_entry})
  );

  // ---- E1, E2: the divider's result registered while the table reads the
  // entry (two clocks)
  logic          e1_valid_reg, e1_hit_reg, e_valid_reg, e_hit_reg;
  logic [31:0]   e1_quotient_reg, e_quotient_reg;
  logic [15:0]   e1_remainder_reg, e_remainder_reg;
  frame_fields_t e1_fields_reg, e_fields_reg;
  logic [ENTRY_BITS-1:0] e1_entry_reg, e_entry_reg;
  always_ff @(posedge clk) begin
    e1_valid_reg <= rst ? 1'b0 : dv_valid;
    e1_quotient_reg <= dv_quotient;
    e1_remainder_reg <= dv_remainder;
    e1_fields_reg <= d_fields;
    e1_hit_reg <= d_hit;
    e1_entry_reg <= d_entry;
    e_valid_reg <= rst ? 1'b0 : e1_valid_reg;
    e_quotient_reg <= e1_quotient_reg;
    e_remainder_reg <= e1_remainder_reg;
    e_fields_reg <= e1_fields_reg;
    e_hit_reg <= e1_hit_reg;
    e_entry_reg <= e1_entry_reg;
  end

  logic [NUM_GLOBAL_COUNTERS-1:0] global_inc;
  logic [NUM_GLOBAL_COUNTERS-1:0] ext_inc_reg;  // increments from outside the decision
  logic [NUM_ENTRY_COUNTERS-1:0]  entry_inc;
  logic                           entry_inc_valid;
  logic                           inc_valid;
  logic [ENTRY_BITS-1:0]          inc_entry;

  panama_decision #(
      .NUM_ENTRIES(NUM_ENTRIES),
      .NUM_SLOTS(NUM_SLOTS),
      .SLOT_WORDS(SLOT_WORDS)
  ) decision (
      .clk(clk),
      .rst(rst),
      .in_valid(e_valid_reg),
      .in_fields(e_fields_reg),
      .in_hit(e_hit_reg),
      .in_entry(e_entry_reg),
      .in_generation(e_quotient_reg),
      .in_slot_offset(e_remainder_reg),
      .entry(decide_entry),
      .clear_all(cmd_reset),
      .clear_range_valid(commit_valid),
      .clear_range_base(commit_base),
      .clear_range_end(commit_end),
      .status_clear_busy(clear_busy),
      .inc_valid(inc_valid),
      .inc_entry(inc_entry),
      .global_inc(global_inc),
      .entry_inc(entry_inc),
      .entry_inc_valid(entry_inc_valid),
      .out_decided(decided),
      .out_valid(decided_valid),
      .status_decision_valid(status_decision_valid),
      .status_decision_action(status_decision_action),
      .status_decision_counter(status_decision_counter),
      .status_decision_entry(status_decision_entry)
  );

  // ---- A0 .. A4, out: header and action, into the action FIFO
  action_t act_in, act_out;
  logic    act_s_ready;

  panama_action_builder action_builder (
      .clk(clk),
      .rst(rst),
      .in_decided(decided),
      .in_valid(decided_valid),
      .in_entry(header_entry),
      .out_action(act_in),
      .out_valid(act_push)
  );

  panama_fifo #(
      .WIDTH($bits(act_in)),
      .DEPTH(ACT_FIFO_DEPTH)
  ) act_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(act_in),
      .s_valid(act_push),
      .s_ready(act_s_ready),
      .m_data(act_out),
      .m_valid(act_valid),
      .m_ready(act_ready),
      .count(act_count)
  );

  // ================================================================ data
  logic data_empty;
  panama_datapath #(
      .DATA_ROWS(DATA_ROWS),
      .OUT_FIFO_DEPTH(OUT_FIFO_DEPTH),
      .RD_LAT(SLOT_READ_LATENCY)
  ) datapath (
      .clk(clk),
      .rst(rst),
      .s_act(act_out),
      .s_act_valid(act_valid),
      .s_act_ready(act_ready),
      .s_beat_data(beat_data),
      .s_beat_valid(beat_valid),
      .s_beat_ready(beat_ready),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tkeep(m_axis_tkeep),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast),
      .status_empty(data_empty)
  );

  // ================================================================ registers
  logic                  ctr_rd_entry_counter;
  logic [ENTRY_BITS-1:0] ctr_rd_entry;
  logic [4:0]            ctr_rd_counter;
  logic [63:0]           ctr_rd_value;

  panama_axil_regs #(
      .NUM_ENTRIES(NUM_ENTRIES),
      .NUM_SLOTS(NUM_SLOTS),
      .SLOT_CAPACITY(SLOT_CAPACITY)
  ) regs (
      .clk(clk),
      .rst(rst),
      .s_axil_awaddr(s_axil_awaddr),
      .s_axil_awvalid(s_axil_awvalid),
      .s_axil_awready(s_axil_awready),
      .s_axil_wdata(s_axil_wdata),
      .s_axil_wstrb(s_axil_wstrb),
      .s_axil_wvalid(s_axil_wvalid),
      .s_axil_wready(s_axil_wready),
      .s_axil_bresp(s_axil_bresp),
      .s_axil_bvalid(s_axil_bvalid),
      .s_axil_bready(s_axil_bready),
      .s_axil_araddr(s_axil_araddr),
      .s_axil_arvalid(s_axil_arvalid),
      .s_axil_arready(s_axil_arready),
      .s_axil_rdata(s_axil_rdata),
      .s_axil_rresp(s_axil_rresp),
      .s_axil_rvalid(s_axil_rvalid),
      .s_axil_rready(s_axil_rready),
      .ctrl_empty(ctrl_inflight_reg == 8'd0 && !c1_busy && table_ready && !clear_busy),
      .write_pending(write_pending),
      .wr_valid(reg_wr_valid),
      .wr_addr(reg_wr_addr),
      .wr_data(reg_wr_data),
      .cmd_reset(cmd_reset),
      .cmd_clear(cmd_clear),
      .cfg_enabled(cfg_enabled),
      .cfg_udp_port(cfg_udp_port),
      .table_rd_addr(table_rd_addr),
      .table_rd_data(table_rd_data),
      .table_rd_hit(table_rd_hit),
      .ctr_rd_entry_counter(ctr_rd_entry_counter),
      .ctr_rd_entry(ctr_rd_entry),
      .ctr_rd_counter(ctr_rd_counter),
      .ctr_rd_value(ctr_rd_value)
  );

  panama_counters #(
      .NUM_ENTRIES(NUM_ENTRIES)
  ) counters (
      .clk(clk),
      .rst(rst),
      .inc_valid(inc_valid),
      .global_inc(global_inc),
      .ext_inc(ext_inc_reg),
      .entry_inc_valid(entry_inc_valid),
      .entry_inc_entry(inc_entry),
      .entry_inc(entry_inc),
      .clear_all(cmd_reset || cmd_clear),
      .clear_entry_valid(commit_valid),
      .clear_entry(commit_entry),
      .rd_entry_counter(ctr_rd_entry_counter),
      .rd_entry(ctr_rd_entry),
      .rd_counter(ctr_rd_counter),
      .rd_value(ctr_rd_value)
  );

  // Frames dropped in front of the decision: by the receive FIFO (FRAMES_IN
  // and the reason, as the model counts a frame dropped before it is looked
  // at) and by the two-port kernel's cage-to-cage FIFOs. Registered; they
  // add to the decision's increments of the same clock.
  always_ff @(posedge clk) begin
    ext_inc_reg <= '0;
    if (!rst) begin
      ext_inc_reg[GC_FRAMES_IN] <= rx_drop_overflow || rx_drop_bad;
      ext_inc_reg[GC_DROP_RX_OVERFLOW] <= rx_drop_overflow;
      ext_inc_reg[GC_DROP_MAC_ERROR] <= rx_drop_bad;
      ext_inc_reg[GC_FWD_0TO1_DROPPED] <= fwd_drop[0];
      ext_inc_reg[GC_FWD_1TO0_DROPPED] <= fwd_drop[1];
    end
  end

  // ================================================================ status
  assign status_idle = rx_empty && input_empty && ctrl_inflight_reg == 8'd0 && !c1_busy && !act_valid && act_count == '0 &&
      data_empty && !clear_busy;
  assign status_stall_reg_write = write_pending;

  // The control pipeline's credit check guarantees room in the action FIFO.
  logic unused;
  assign unused = ^{act_s_ready, decided.entry, CTRL_DEPTH, SLOT_BITS};
endmodule
`default_nettype wire
