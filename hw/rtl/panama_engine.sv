// PANAMA aggregation engine, RTL: the hand-written counterpart of the HLS
// model hw/hls/include/panama/engine.hpp, with the same behaviour, counters
// and register map (panama_regmap_pkg, generated from hw/regmap).
//
// 512-bit AXI4-Stream in and out (one packet per tlast, tkeep all ones except
// on the last beat), AXI4-Lite control. One beat per clock in and out.
//
// Pipeline (docs/rtl.md has the diagram):
//   input     frames are stored whole in the input FIFO (store and forward:
//             truncation found at tlast must not touch any slot); a
//             descriptor (first beat, length, beats) is pushed at tlast.
//   control   one descriptor per clock: classify -> table lookup (CAM) ->
//             32-stage divider (slot = seq % Q, generation = seq / Q) ->
//             decision (slot metadata read-modify-write in one clock, so
//             back-to-back frames of one slot see each other's updates) ->
//             action FIFO (with the emitted header already built).
//   data      the beat issuer replays each frame from the input FIFO with
//             its action: slot memory read -> 16 fp32 adders (2 clocks) ->
//             slot memory write; the result of the two beats in front is
//             forwarded to the adder input, which resolves every
//             read-after-write hazard between back-to-back frames.
//   output    a small FIFO; the issuer only issues beats the output FIFO can
//             take, so back-pressure stalls the pipeline without loss.
`default_nettype none
module panama_engine #(
    // (job, tree) table entries (the CAM size).
    parameter int NUM_ENTRIES = 64,
    // Packet-memory slots shared by all entries.
    parameter int NUM_SLOTS = 512,
    // 512-bit words per slot bank (16 fp32 each).
    parameter int SLOT_WORDS = 144,
    // Input FIFO depth in beats (a power of two; holds two jumbo frames).
    parameter int IN_FIFO_DEPTH = 512,
    // Frame descriptors waiting for the control pipeline (a power of two).
    parameter int DESC_FIFO_DEPTH = 64,
    // Decided actions waiting for the data pipeline (a power of two, more
    // than the control pipeline holds).
    parameter int ACT_FIFO_DEPTH = 64,
    // Output FIFO depth in beats (a power of two).
    parameter int OUT_FIFO_DEPTH = 16,
    // Derived widths.
    parameter int ENTRY_BITS = NUM_ENTRIES > 1 ? $clog2(NUM_ENTRIES) : 1,
    parameter int SLOT_BITS = NUM_SLOTS > 1 ? $clog2(NUM_SLOTS) : 1,
    parameter int DATA_WORDS = NUM_SLOTS * 2 * SLOT_WORDS,
    parameter int DADDR_BITS = $clog2(DATA_WORDS)
) (
    input  wire logic         clk,
    input  wire logic         rst,

    input  wire logic [511:0] s_axis_tdata,
    input  wire logic [63:0]  s_axis_tkeep,
    input  wire logic         s_axis_tvalid,
    output logic              s_axis_tready,
    input  wire logic         s_axis_tlast,

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
    output logic      [7:0]   status_decision_entry
);
  // One import per line: scripts/yosys-estimate.sh inlines the packages for
  // Yosys 0.23, which reads packages but not import statements.
  import panama_regmap_pkg::*;
  import panama_wire_pkg::*;
  localparam int SLOT_CAPACITY = SLOT_WORDS * LANES;
  localparam int MAX_FAN_IN = 64;
  localparam int NUM_STAGED = 16;  // E_KEY .. E_IP_TTL_DSCP

  initial begin
    if (NUM_ENTRIES < 1 || NUM_ENTRIES > 256) $error("%m: NUM_ENTRIES must be 1..256");
    if (NUM_SLOTS < 1 || NUM_SLOTS > 65535) $error("%m: NUM_SLOTS must be 1..65535");
    if (SLOT_WORDS < 1 || SLOT_CAPACITY > 65535) $error("%m: SLOT_WORDS * 16 must fit 16 bits");
    if (SLOT_WORDS > MAX_FRAME_BEATS) $error("%m: SLOT_WORDS larger than a frame can fill");
    if (IN_FIFO_DEPTH < 2 * MAX_FRAME_BEATS) $error("%m: IN_FIFO_DEPTH must hold two largest frames");
    if (ACT_FIFO_DEPTH < 64) $error("%m: ACT_FIFO_DEPTH must be at least 64 (control pipeline depth)");
  end

  // Action kinds of the data pipeline.
  localparam logic [2:0] K_PASS = 3'd0, K_DROP = 3'd1, K_FIRST = 3'd2, K_ADD = 3'd3, K_READ = 3'd4;
  // Classification verdicts.
  localparam logic [1:0] V_PASS = 2'd0, V_DROP = 2'd1, V_PANAMA = 2'd2;
  // EngineAction codes (engine.hpp).
  localparam logic [2:0] A_PASSED = 3'd0, A_AGGREGATED = 3'd1, A_EMITTED = 3'd2, A_REEMITTED = 3'd3,
      A_DROPPED = 3'd4;
  // Bank states.
  localparam logic [1:0] S_EMPTY = 2'd0, S_ACC = 2'd1, S_DONE = 2'd2;

  // Functions in Verilog-2005 form (return by name): Yosys 0.23 reads these.
  function automatic [7:0] byte_at(input [511:0] beat, input integer k);
    byte_at = beat[8*k+:8];
  endfunction
  function automatic [15:0] be16_at(input [511:0] beat, input integer k);
    be16_at = {beat[8*k+:8], beat[8*(k+1)+:8]};
  endfunction
  function automatic [31:0] be32_at(input [511:0] beat, input integer k);
    be32_at = {beat[8*k+:8], beat[8*(k+1)+:8], beat[8*(k+2)+:8], beat[8*(k+3)+:8]};
  endfunction
  // RFC 1071 sum of the IPv4 header words, folded as wire.hpp folds it.
  function automatic [15:0] ip_sum(input [511:0] beat);
    reg [31:0] s;
    integer i;
    s = 32'd0;
    for (i = 0; i < 10; i = i + 1) s = s + {16'd0, be16_at(beat, IP_OFFSET + 2 * i)};
    s = {16'd0, s[15:0]} + {16'd0, s[31:16]};
    s = {16'd0, s[15:0]} + {16'd0, s[31:16]};
    ip_sum = s[15:0];
  endfunction
  function automatic [6:0] popcount64(input [63:0] v);
    integer i;
    popcount64 = 7'd0;
    for (i = 0; i < 64; i = i + 1) popcount64 = popcount64 + {6'd0, v[i]};
  endfunction

  // ================================================================ registers
  // Control state, table, counters, slot metadata. Everything that a
  // register command changes is changed only while the control pipeline is
  // empty, so frames see a consistent configuration.
  logic        enabled_reg;
  logic [15:0] udp_port_reg;
  logic [31:0] entry_index_reg;
  logic [31:0] entry_status_reg;
  logic [31:0] staged_reg[NUM_STAGED];
  logic        latched_valid_reg;
  logic [13:0] latched_addr_reg;
  logic [31:0] latched_hi_reg;

  logic        ent_enabled[NUM_ENTRIES];
  logic        ent_root[NUM_ENTRIES];
  logic [15:0] ent_job[NUM_ENTRIES];
  logic [7:0]  ent_tree[NUM_ENTRIES];
  logic [7:0]  ent_fan_in[NUM_ENTRIES];
  logic [63:0] ent_mask[NUM_ENTRIES];
  logic [31:0] ent_base[NUM_ENTRIES];
  logic [31:0] ent_count[NUM_ENTRIES];
  logic [15:0] ent_out_child[NUM_ENTRIES];
  logic [47:0] ent_eth_dst[NUM_ENTRIES];
  logic [47:0] ent_eth_src[NUM_ENTRIES];
  logic [31:0] ent_ip_src[NUM_ENTRIES];
  logic [31:0] ent_ip_dst[NUM_ENTRIES];
  logic [15:0] ent_udp_src[NUM_ENTRIES];
  logic [15:0] ent_udp_dst[NUM_ENTRIES];
  logic [7:0]  ent_ttl[NUM_ENTRIES];
  logic [5:0]  ent_dscp[NUM_ENTRIES];

  logic [63:0] gctr[NUM_GLOBAL_COUNTERS];
  logic [63:0] ectr[NUM_ENTRIES][NUM_ENTRY_COUNTERS];

  // Slot metadata: newest generation and per-bank state live in flip-flops
  // (a command clears ranges of them); the other bank fields in memories
  // with one read and one write per clock.
  logic [31:0] slot_top[NUM_SLOTS];
  logic [1:0]  bank_state[NUM_SLOTS][2];
  logic [6:0]  bank_count[2][NUM_SLOTS];
  logic [1:0]  bank_ecn[2][NUM_SLOTS];
  logic [15:0] bank_cwnd[2][NUM_SLOTS];
  logic [15:0] bank_elems[2][NUM_SLOTS];
  logic [31:0] bank_seq[2][NUM_SLOTS];
  logic [63:0] bank_children[2][NUM_SLOTS];

  // ================================================================ input
  logic         in_fifo_s_ready, in_fifo_m_valid, in_fifo_m_ready;
  logic [511:0] in_fifo_m_data;
  logic         desc_s_ready, desc_m_valid, desc_m_ready;
  logic [$clog2(DESC_FIFO_DEPTH)+1:0] desc_count;
  logic [$clog2(IN_FIFO_DEPTH)+1:0]   in_fifo_count;
  logic [15:0]  in_len_reg;
  logic [15:0]  in_beats_reg;  // saturating beat count of the frame so far
  logic [511:0] in_hdr_reg;
  logic         in_accept, in_store;
  logic [15:0]  in_len_next;
  logic [15:0]  in_beats_next;
  logic [6:0]   keep_bytes;
  logic [511:0] desc_hdr;
  localparam int DESC_WIDTH = 512 + 16 + 16;
  logic [DESC_WIDTH-1:0] desc_s_data, desc_m_data;
  logic         reg_write_pending;

  always_comb begin
    keep_bytes = popcount64(s_axis_tkeep);
    s_axis_tready = in_fifo_s_ready && desc_s_ready;
    in_accept = s_axis_tvalid && s_axis_tready;
    in_store = in_accept && in_beats_reg < 16'(MAX_FRAME_BEATS);
    in_len_next = (in_len_reg > 16'hFF00) ? in_len_reg : in_len_reg + {9'd0, keep_bytes};
    in_beats_next = (in_beats_reg == 16'hFFFF) ? in_beats_reg : in_beats_reg + 16'd1;
    desc_hdr = (in_beats_reg == 16'd0) ? s_axis_tdata : in_hdr_reg;
    desc_s_data = {desc_hdr, in_len_next, in_beats_next};
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      in_len_reg <= 16'd0;
      in_beats_reg <= 16'd0;
    end else if (in_accept) begin
      in_len_reg <= s_axis_tlast ? 16'd0 : in_len_next;
      in_beats_reg <= s_axis_tlast ? 16'd0 : in_beats_next;
    end
    if (in_accept && in_beats_reg == 16'd0) in_hdr_reg <= s_axis_tdata;
  end

  panama_fifo #(
      .WIDTH(512),
      .DEPTH(IN_FIFO_DEPTH)
  ) in_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(s_axis_tdata),
      .s_valid(in_store),
      .s_ready(in_fifo_s_ready),
      .m_data(in_fifo_m_data),
      .m_valid(in_fifo_m_valid),
      .m_ready(in_fifo_m_ready),
      .count(in_fifo_count)
  );

  panama_fifo #(
      .WIDTH(DESC_WIDTH),
      .DEPTH(DESC_FIFO_DEPTH)
  ) desc_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(desc_s_data),
      .s_valid(in_accept && s_axis_tlast),
      .s_ready(desc_s_ready),
      .m_data(desc_m_data),
      .m_valid(desc_m_valid),
      .m_ready(desc_m_ready),
      .count(desc_count)
  );

  // ================================================================ control
  logic [$clog2(ACT_FIFO_DEPTH)+1:0] act_count;
  logic [7:0] ctrl_inflight_reg;  // descriptors admitted, action not yet pushed
  logic       act_push;

  assign desc_m_ready = desc_m_valid && !reg_write_pending &&
      16'(ctrl_inflight_reg) + 16'(act_count) < 16'(ACT_FIFO_DEPTH);

  always_ff @(posedge clk) begin
    if (rst) ctrl_inflight_reg <= 8'd0;
    else ctrl_inflight_reg <= ctrl_inflight_reg + {7'd0, desc_m_ready} - {7'd0, act_push};
  end

  // ---- C1: descriptor registered
  logic         c1_valid;
  logic [511:0] c1_hdr;
  logic [15:0]  c1_len, c1_beats;
  always_ff @(posedge clk) begin
    c1_valid <= rst ? 1'b0 : desc_m_ready;
    {c1_hdr, c1_len, c1_beats} <= desc_m_data;
  end

  // ---- classify (wire.hpp classify_frame, engine.hpp checks before lookup)
  logic [1:0]  cl_verdict;
  logic [4:0]  cl_counter;
  logic        cl_retrans;
  logic [15:0] cl_elems;
  logic [15:0] ip_flags;
  logic [7:0]  cl_type;
  always_comb begin
    cl_verdict = V_PANAMA;
    cl_counter = 5'd0;
    ip_flags = be16_at(c1_hdr, IP_FLAGS_FRAG);
    cl_type = byte_at(c1_hdr, PANAMA_TYPE);
    cl_elems = be16_at(c1_hdr, PANAMA_ELEM_COUNT);
    cl_retrans = cl_type == 8'(TYPE_RETRANSMISSION);
    if (c1_len > 16'(MAX_FRAME_BYTES) || c1_beats > 16'(MAX_FRAME_BEATS)) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_OVERSIZE);
    end else if (!enabled_reg) begin
      cl_verdict = V_PASS;
      cl_counter = 5'(GC_PASSTHROUGH);
    end else if (c1_len < 16'(UDP_DST_PORT + 2) || be16_at(c1_hdr, ETH_TYPE) != 16'(ETHERTYPE_IPV4) ||
                 byte_at(c1_hdr, IP_VER_IHL) != 8'h45 || byte_at(c1_hdr, IP_PROTO) != 8'(IP_PROTO_UDP) ||
                 ip_flags[12:0] != 13'd0 || be16_at(c1_hdr, UDP_DST_PORT) != udp_port_reg) begin
      cl_verdict = V_PASS;
      cl_counter = 5'(GC_PASSTHROUGH);
    end else if (c1_len < 16'(PAYLOAD_OFFSET)) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_TRUNCATED);
    end else if (ip_sum(c1_hdr) != 16'hFFFF || ip_flags[13]) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_IP_HEADER);
    end else if (byte_at(c1_hdr, PANAMA_VERSION) != 8'(VERSION)) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_VERSION);
    end else if (cl_type != 8'(TYPE_AGGREGATE_UP) && cl_type != 8'(TYPE_RESULT_DOWN) &&
                 cl_type != 8'(TYPE_RETRANSMISSION)) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_TYPE);
    end else if (cl_type == 8'(TYPE_RESULT_DOWN)) begin
      cl_verdict = V_PASS;
      cl_counter = 5'(GC_RESULTS_PASSED);
    end else if (byte_at(c1_hdr, PANAMA_ELEM_TYPE) != 8'(ELEM_TYPE_FLOAT32)) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_ELEM_TYPE);
    end else if (cl_elems == 16'd0) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_ELEM_COUNT);
    end else if ({16'd0, be16_at(c1_hdr, IP_TOTAL_LEN)} != 32'(IP_FIXED_BYTES) + 32'd4 * {16'd0, cl_elems} ||
                 {16'd0, be16_at(c1_hdr, UDP_LENGTH)} != 32'(UDP_FIXED_BYTES) + 32'd4 * {16'd0, cl_elems}) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_LENGTH);
    end else if ({16'd0, c1_len} < 32'(PAYLOAD_OFFSET) + 32'd4 * {16'd0, cl_elems}) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_TRUNCATED);
    end else if ({16'd0, cl_elems} > 32'(SLOT_CAPACITY)) begin
      cl_verdict = V_DROP;
      cl_counter = 5'(GC_DROP_BAD_ELEM_COUNT);
    end
  end

  // The frame fields the rest of the control pipeline needs.
  localparam int FIELDS_WIDTH = 2 + 5 + 1 + 16 + 8 + 16 + 32 + 16 + 16 + 2 + 16 + 8;
  logic [FIELDS_WIDTH-1:0] cl_fields;
  assign cl_fields = {
    cl_verdict,
    cl_counter,
    cl_retrans,
    be16_at(c1_hdr, PANAMA_JOB_ID),
    byte_at(c1_hdr, PANAMA_TREE_ID),
    be16_at(c1_hdr, PANAMA_CHILD_ID),
    be32_at(c1_hdr, PANAMA_SEQ),
    be16_at(c1_hdr, PANAMA_CWND_CAP),
    cl_elems,
    c1_hdr[8*IP_TOS+:2],
    c1_len,
    c1_beats > 16'(MAX_FRAME_BEATS) ? 8'(MAX_FRAME_BEATS) : c1_beats[7:0]  // beats stored
  };

  // ---- C2: classified; table lookup
  logic                    c2_valid;
  logic [FIELDS_WIDTH-1:0] c2_fields;
  always_ff @(posedge clk) begin
    c2_valid  <= rst ? 1'b0 : c1_valid;
    c2_fields <= cl_fields;
  end

  logic [15:0] c2_job;
  logic [7:0]  c2_tree;
  assign c2_job  = c2_fields[FIELDS_WIDTH-9-:16];
  assign c2_tree = c2_fields[FIELDS_WIDTH-25-:8];

  logic       lk_hit;
  logic [7:0] lk_idx;
  always_comb begin
    lk_hit = 1'b0;
    lk_idx = 8'd0;
    for (int i = NUM_ENTRIES - 1; i >= 0; i--) begin
      if (ent_enabled[i] && ent_job[i] == c2_job && ent_tree[i] == c2_tree) begin
        lk_hit = 1'b1;
        lk_idx = 8'(i);
      end
    end
  end

  // ---- C3: looked up; divider input
  logic                    c3_valid;
  logic [FIELDS_WIDTH-1:0] c3_fields;
  logic                    c3_hit;
  logic [7:0]              c3_idx;
  always_ff @(posedge clk) begin
    c3_valid  <= rst ? 1'b0 : c2_valid;
    c3_fields <= c2_fields;
    c3_hit    <= lk_hit;
    c3_idx    <= lk_idx;
  end

  localparam int SIDE_WIDTH = FIELDS_WIDTH + 1 + 8;
  logic                    dv_valid;
  logic [31:0]             dv_quotient;
  logic [15:0]             dv_remainder;
  logic [SIDE_WIDTH-1:0]   dv_side;
  logic [ENTRY_BITS-1:0]   c3_entry;
  assign c3_entry = c3_idx[ENTRY_BITS-1:0];

  panama_divider #(
      .SIDE_WIDTH(SIDE_WIDTH)
  ) divider (
      .clk(clk),
      .rst(rst),
      .in_valid(c3_valid),
      .in_dividend(c3_fields[FIELDS_WIDTH-49-:32]),
      .in_divisor(ent_count[c3_entry][15:0]),
      .in_side({c3_fields, c3_hit, c3_idx}),
      .out_valid(dv_valid),
      .out_quotient(dv_quotient),
      .out_remainder(dv_remainder),
      .out_side(dv_side)
  );

  // ---- decision: slot metadata read-modify-write, counters
  logic [1:0]  d_verdict;
  logic [4:0]  d_counter;
  logic        d_retrans;
  logic [15:0] d_job, d_child, d_cwnd, d_elems, d_len;
  logic [7:0]  d_tree, d_beats, d_idx;
  logic [31:0] d_seq;
  logic [1:0]  d_ecn;
  logic        d_hit;
  assign {d_verdict, d_counter, d_retrans, d_job, d_tree, d_child, d_seq, d_cwnd, d_elems, d_ecn, d_len,
          d_beats, d_hit, d_idx} = dv_side;

  logic [ENTRY_BITS-1:0] d_entry;
  logic [SLOT_BITS-1:0]  d_slot;
  logic                  d_bank;
  logic [31:0]           d_gen;
  assign d_entry = d_idx[ENTRY_BITS-1:0];
  assign d_gen = dv_quotient;
  assign d_bank = dv_quotient[0];
  assign d_slot = SLOT_BITS'(ent_base[d_entry] + {16'd0, dv_remainder});

  // Current metadata of the addressed slot and bank.
  logic [31:0] m_top;
  logic [1:0]  m_state;
  logic [6:0]  m_count;
  logic [1:0]  m_ecn;
  logic [15:0] m_cwnd, m_elems;
  logic [31:0] m_seq;
  logic [63:0] m_children;
  always_comb begin
    m_top = slot_top[d_slot];
    m_state = bank_state[d_slot][d_bank];
    m_count = bank_count[d_bank][d_slot];
    m_ecn = bank_ecn[d_bank][d_slot];
    m_cwnd = bank_cwnd[d_bank][d_slot];
    m_elems = bank_elems[d_bank][d_slot];
    m_seq = bank_seq[d_bank][d_slot];
    m_children = bank_children[d_bank][d_slot];
  end

  logic [2:0]                     dc_kind;
  logic                           dc_emit;
  logic [2:0]                     dc_action;
  logic [4:0]                     dc_drop_counter;
  logic [NUM_GLOBAL_COUNTERS-1:0] gc_inc;
  logic [NUM_ENTRY_COUNTERS-1:0]  ec_inc;
  logic                           dc_meta_write;  // write bank fields below
  logic                           dc_top_write;
  logic [1:0]                     n_state;
  logic [6:0]                     n_count;
  logic [1:0]                     n_ecn;
  logic [15:0]                    n_cwnd, n_elems;
  logic [31:0]                    n_seq;
  logic [63:0]                    n_children;
  logic [63:0]                    child_bit;
  logic                           win_ok, advance;

  always_comb begin
    dc_kind = K_DROP;
    dc_emit = 1'b0;
    dc_action = A_DROPPED;
    dc_drop_counter = 5'd0;
    gc_inc = '0;
    ec_inc = '0;
    dc_meta_write = 1'b0;
    dc_top_write = 1'b0;
    n_state = m_state;
    n_count = m_count;
    n_ecn = m_ecn;
    n_cwnd = m_cwnd;
    n_elems = m_elems;
    n_seq = m_seq;
    n_children = m_children;
    child_bit = 64'd1 << d_child[5:0];
    win_ok = 1'b0;
    advance = 1'b0;
    gc_inc[GC_FRAMES_IN] = 1'b1;
    if (d_verdict == V_PASS) begin
      dc_kind = K_PASS;
      dc_action = A_PASSED;
      gc_inc[d_counter] = 1'b1;
    end else if (d_verdict == V_DROP) begin
      dc_drop_counter = d_counter;
      gc_inc[d_counter] = 1'b1;
    end else begin
      gc_inc[GC_PANAMA_IN] = 1'b1;
      if (d_retrans) gc_inc[GC_RETRANS_IN] = 1'b1;
      if (!d_hit) begin
        dc_drop_counter = 5'(GC_DROP_UNKNOWN_ENTRY);
        gc_inc[GC_DROP_UNKNOWN_ENTRY] = 1'b1;
      end else begin
        if (d_retrans) ec_inc[EC_RETRANS_IN] = 1'b1;
        if (d_child >= 16'(MAX_FAN_IN) || !ent_mask[d_entry][d_child[5:0]]) begin
          ec_inc[EC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          gc_inc[GC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          dc_drop_counter = 5'(GC_DROP_CHILD_NOT_ALLOWED);
        end else begin
          // Generation window.
          if (d_gen == m_top + 32'd1) begin
            win_ok = m_state != S_ACC;  // else the older generation is still open
            advance = 1'b1;
          end else if (d_gen == m_top) begin
            win_ok = m_state == S_EMPTY || m_seq == d_seq;
          end else if (m_top >= 32'd1 && d_gen == m_top - 32'd1) begin
            win_ok = m_state != S_EMPTY && m_seq == d_seq;
          end
          if (!win_ok) begin
            ec_inc[EC_DROP_SEQ_WINDOW] = 1'b1;
            gc_inc[GC_DROP_SEQ_WINDOW] = 1'b1;
            dc_drop_counter = 5'(GC_DROP_SEQ_WINDOW);
          end else if (advance || m_state == S_EMPTY) begin
            // First contribution of this generation: stored as it arrives.
            dc_top_write = advance;
            dc_meta_write = 1'b1;
            dc_kind = K_FIRST;
            n_state = S_ACC;
            n_seq = d_seq;
            n_children = child_bit;
            n_count = 7'd1;
            n_ecn = d_ecn;
            n_cwnd = d_cwnd;
            n_elems = d_elems;
          end else if (m_state == S_DONE) begin
            if (d_retrans) begin
              gc_inc[GC_RETRANS_SERVED] = 1'b1;
              ec_inc[EC_RETRANS_SERVED] = 1'b1;
              dc_kind = K_READ;
              dc_emit = 1'b1;
              dc_action = A_REEMITTED;
            end else begin
              ec_inc[EC_DUPLICATES] = 1'b1;
              gc_inc[GC_DUPLICATES] = 1'b1;
              dc_drop_counter = 5'(GC_DUPLICATES);
            end
          end else if ((m_children & child_bit) != 64'd0) begin
            ec_inc[EC_DUPLICATES] = 1'b1;
            gc_inc[GC_DUPLICATES] = 1'b1;
            dc_drop_counter = 5'(GC_DUPLICATES);
          end else if (d_elems != m_elems) begin
            ec_inc[EC_DROP_COUNT_MISMATCH] = 1'b1;
            gc_inc[GC_DROP_COUNT_MISMATCH] = 1'b1;
            dc_drop_counter = 5'(GC_DROP_COUNT_MISMATCH);
          end else begin
            dc_meta_write = 1'b1;
            dc_kind = K_ADD;
            n_children = m_children | child_bit;
            n_count = m_count + 7'd1;
            n_ecn = m_ecn | d_ecn;
            if (d_cwnd < m_cwnd) n_cwnd = d_cwnd;
          end
          if (dc_kind == K_FIRST || dc_kind == K_ADD) begin
            gc_inc[GC_AGGREGATED] = 1'b1;
            ec_inc[EC_AGGREGATED] = 1'b1;
            if (d_ecn == 2'(ECN_CE)) begin
              gc_inc[GC_ECN_MARKED] = 1'b1;
              ec_inc[EC_ECN_MARKED] = 1'b1;
            end
            dc_action = A_AGGREGATED;
            if ({1'b0, n_count} >= ent_fan_in[d_entry]) begin
              n_state = S_DONE;
              gc_inc[GC_EMITTED] = 1'b1;
              ec_inc[EC_EMITTED] = 1'b1;
              dc_emit = 1'b1;
              dc_action = A_EMITTED;
            end
          end
        end
      end
    end
  end

  // ---- A: decided action, registered; the header is built from it
  logic                   a_valid;
  logic [2:0]             a_kind;
  logic                   a_emit, a_retrans;
  logic [7:0]             a_beats;
  logic [15:0]            a_len;
  logic [ENTRY_BITS-1:0]  a_entry;
  logic [DADDR_BITS-1:0]  a_base;
  logic [1:0]             a_ecn;
  logic [15:0]            a_cwnd, a_elems;
  logic [31:0]            a_seq;

  always_ff @(posedge clk) begin
    a_valid <= rst ? 1'b0 : dv_valid;
    a_kind <= dc_kind;
    a_emit <= dc_emit;
    a_retrans <= dc_kind == K_READ;
    a_beats <= d_beats;
    a_len <= d_len;
    a_entry <= d_entry;
    a_base <= DADDR_BITS'(({{(32 - SLOT_BITS) {1'b0}}, d_slot} * 2 + {31'd0, d_bank}) * SLOT_WORDS);
    a_ecn <= n_ecn;
    a_cwnd <= n_cwnd;
    a_elems <= n_elems;
    a_seq <= n_seq;
  end
  assign act_push = a_valid;

  assign status_decision_valid = dv_valid;
  assign status_decision_action = dc_action;
  assign status_decision_counter = dc_drop_counter;
  assign status_decision_entry = (d_verdict == V_PANAMA && d_hit) ? d_idx : 8'hFF;

  // Emitted header (wire.hpp write_headers with engine.hpp emit's fields).
  logic [511:0] hb;
  logic [15:0]  share, out_cwnd;
  logic [15:0]  hb_sum, ip_len, udp_len;
  logic [31:0]  hb_acc;
  always_comb begin
    share = ent_count[a_entry] > 32'hFFFF ? 16'hFFFF : ent_count[a_entry][15:0];
    out_cwnd = a_cwnd < share ? a_cwnd : share;
    hb = '0;
    for (int k = 0; k < 6; k++) begin
      hb[8*(ETH_DST+k)+:8] = ent_eth_dst[a_entry][8*(5-k)+:8];
      hb[8*(ETH_SRC+k)+:8] = ent_eth_src[a_entry][8*(5-k)+:8];
    end
    hb[8*ETH_TYPE+:16] = {8'h00, 8'h08};
    hb[8*IP_VER_IHL+:8] = 8'h45;
    hb[8*IP_TOS+:8] = {ent_dscp[a_entry], a_ecn};
    ip_len = 16'(IP_FIXED_BYTES) + 16'd4 * a_elems;
    hb[8*IP_TOTAL_LEN+:16] = {ip_len[7:0], ip_len[15:8]};  // network order
    hb[8*IP_FLAGS_FRAG+:16] = {8'h00, 8'h40};
    hb[8*IP_TTL+:8] = ent_ttl[a_entry];
    hb[8*IP_PROTO+:8] = 8'(IP_PROTO_UDP);
    for (int k = 0; k < 4; k++) begin
      hb[8*(IP_SRC+k)+:8] = ent_ip_src[a_entry][8*(3-k)+:8];
      hb[8*(IP_DST+k)+:8] = ent_ip_dst[a_entry][8*(3-k)+:8];
    end
    hb_acc = 32'd0;
    for (int i = 0; i < 10; i++) hb_acc = hb_acc + {16'd0, be16_at(hb, IP_OFFSET + 2 * i)};
    hb_acc = {16'd0, hb_acc[15:0]} + {16'd0, hb_acc[31:16]};
    hb_acc = {16'd0, hb_acc[15:0]} + {16'd0, hb_acc[31:16]};
    hb_sum = ~hb_acc[15:0];
    hb[8*IP_CHECKSUM+:16] = {hb_sum[7:0], hb_sum[15:8]};
    hb[8*UDP_SRC_PORT+:16] = {ent_udp_src[a_entry][7:0], ent_udp_src[a_entry][15:8]};
    hb[8*UDP_DST_PORT+:16] = {ent_udp_dst[a_entry][7:0], ent_udp_dst[a_entry][15:8]};
    udp_len = 16'(UDP_FIXED_BYTES) + 16'd4 * a_elems;
    hb[8*UDP_LENGTH+:16] = {udp_len[7:0], udp_len[15:8]};
    hb[8*PANAMA_VERSION+:8] = 8'(VERSION);
    hb[8*PANAMA_TYPE+:8] = ent_root[a_entry] ? 8'(TYPE_RESULT_DOWN) :
        (a_retrans ? 8'(TYPE_RETRANSMISSION) : 8'(TYPE_AGGREGATE_UP));
    hb[8*PANAMA_JOB_ID+:16] = {ent_job[a_entry][7:0], ent_job[a_entry][15:8]};
    hb[8*PANAMA_TREE_ID+:8] = ent_tree[a_entry];
    hb[8*PANAMA_ELEM_TYPE+:8] = 8'(ELEM_TYPE_FLOAT32);
    hb[8*PANAMA_CHILD_ID+:16] = {ent_out_child[a_entry][7:0], ent_out_child[a_entry][15:8]};
    hb[8*PANAMA_SEQ+:32] = {a_seq[7:0], a_seq[15:8], a_seq[23:16], a_seq[31:24]};
    hb[8*PANAMA_CWND_CAP+:16] = {out_cwnd[7:0], out_cwnd[15:8]};
    hb[8*PANAMA_ELEM_COUNT+:16] = {a_elems[7:0], a_elems[15:8]};
  end

  // Action record for the data pipeline.
  logic [7:0]  a_words;       // slot words the frame reads or writes
  logic [7:0]  a_out_beats;
  logic [7:0]  a_issue;       // beats the issuer runs for this frame
  logic [15:0] a_out_len;     // bytes of the frame sent, 0 when none
  always_comb begin
    a_words = 8'((a_elems + 16'd15) >> 4);
    a_out_beats = 8'd0;
    a_out_len = 16'd0;
    if (a_kind == K_PASS) begin
      a_out_beats = a_beats;
      a_out_len = a_len;
    end else if (a_emit) begin
      a_out_beats = a_words + 8'd1;
      a_out_len = 16'(PAYLOAD_OFFSET) + 16'd4 * a_elems;
    end
    a_issue = a_out_beats > a_beats ? a_out_beats : a_beats;
  end

  localparam int ACT_WIDTH = 3 + 1 + 8 + 8 + 8 + 8 + 16 + DADDR_BITS + 512;
  logic [ACT_WIDTH-1:0] act_s_data, act_m_data;
  logic                 act_m_valid, act_m_ready, act_s_ready;
  assign act_s_data = {a_kind, a_emit, a_beats, a_words, a_out_beats, a_issue, a_out_len, a_base, hb};

  panama_fifo #(
      .WIDTH(ACT_WIDTH),
      .DEPTH(ACT_FIFO_DEPTH)
  ) act_fifo (
      .clk(clk),
      .rst(rst),
      .s_data(act_s_data),
      .s_valid(act_push),
      .s_ready(act_s_ready),
      .m_data(act_m_data),
      .m_valid(act_m_valid),
      .m_ready(act_m_ready),
      .count(act_count)
  );

  // ================================================================ data path
  logic [2:0]            i_kind;
  logic                  i_emit;
  logic [7:0]            i_in_beats, i_words, i_out_beats, i_issue;
  logic [15:0]           i_out_len;
  logic [DADDR_BITS-1:0] i_base;
  logic [511:0]          i_hdr;
  assign {i_kind, i_emit, i_in_beats, i_words, i_out_beats, i_issue, i_out_len, i_base, i_hdr} = act_m_data;

  logic [7:0] beat_reg;  // beat of the head frame being issued
  logic [$clog2(OUT_FIFO_DEPTH)+1:0] out_count;
  logic [2:0] out_inflight;
  logic       issue, issue_pop, issue_mem, issue_out, issue_last_out;
  logic [63:0] issue_keep;
  logic [15:0] last_bytes;

  always_comb begin
    issue_pop = beat_reg < i_in_beats;
    issue = act_m_valid && (!issue_pop || in_fifo_m_valid) &&
        16'(out_count) + 16'(out_inflight) < 16'(OUT_FIFO_DEPTH);
    issue_mem = (i_kind == K_FIRST || i_kind == K_ADD || i_kind == K_READ) && beat_reg >= 8'd1 &&
        beat_reg <= i_words;
    issue_out = beat_reg < i_out_beats;
    issue_last_out = beat_reg == i_out_beats - 8'd1;
    last_bytes = i_out_len - {2'd0, i_out_beats - 8'd1, 6'd0};
    issue_keep = issue_last_out ? (64'hFFFFFFFFFFFFFFFF >> (7'd64 - last_bytes[6:0])) : '1;
  end
  assign in_fifo_m_ready = issue && issue_pop;
  assign act_m_ready = issue && beat_reg == i_issue - 8'd1;

  always_ff @(posedge clk) begin
    if (rst) beat_reg <= 8'd0;
    else if (issue) beat_reg <= act_m_ready ? 8'd0 : beat_reg + 8'd1;
  end

  // Pipeline tokens p1 (memory read) .. p4 (memory write, output).
  localparam logic [1:0] OP_NONE = 2'd0, OP_FIRST = 2'd1, OP_ADD = 2'd2, OP_READ = 2'd3;
  logic                  p1_valid, p2_valid, p3_valid, p4_valid, p5_valid;
  logic [1:0]            p1_op, p2_op, p3_op, p4_op;
  logic [DADDR_BITS-1:0] p1_addr, p2_addr, p3_addr, p4_addr, p5_addr;
  logic [511:0]          p1_b, p2_b, p3_b, p4_b, p3_a, p4_a, p5_data;
  logic                  p1_out, p2_out, p3_out, p4_out;
  logic                  p1_last, p2_last, p3_last, p4_last;
  logic [63:0]           p1_keep, p2_keep, p3_keep, p4_keep;
  logic [511:0]          mem_rdata;
  logic [511:0]          p2_a, p4_result, sum;
  logic                  p4_we, p5_we;

  logic [511:0] dmem[DATA_WORDS];

  always_ff @(posedge clk) begin
    p1_valid <= rst ? 1'b0 : issue;
    p1_op <= !issue_mem ? OP_NONE : (i_kind == K_FIRST ? OP_FIRST : (i_kind == K_ADD ? OP_ADD : OP_READ));
    p1_addr <= i_base + DADDR_BITS'(beat_reg) - DADDR_BITS'(1);
    p1_b <= (beat_reg == 8'd0 && i_emit) ? i_hdr : in_fifo_m_data;
    p1_out <= issue_out;
    p1_last <= issue_last_out;
    p1_keep <= issue_keep;
  end

  always_ff @(posedge clk) mem_rdata <= dmem[p1_addr];
  always_ff @(posedge clk) if (p4_we) dmem[p4_addr] <= p4_result;

  // Forwarding: the beat in p4 is written at the end of this clock, the one
  // in p5 was written at the clock edge where p2's memory read happened.
  always_comb begin
    if (p4_we && p4_addr == p2_addr) p2_a = p4_result;
    else if (p5_we && p5_addr == p2_addr) p2_a = p5_data;
    else p2_a = mem_rdata;
  end

  panama_fp32_add16 adders (
      .clk(clk),
      .a  (p2_a),
      .b  (p2_b),
      .sum(sum)
  );

  always_ff @(posedge clk) begin
    p2_valid <= rst ? 1'b0 : p1_valid;
    p3_valid <= rst ? 1'b0 : p2_valid;
    p4_valid <= rst ? 1'b0 : p3_valid;
    p5_valid <= rst ? 1'b0 : p4_valid;
    {p2_op, p2_addr, p2_b, p2_out, p2_last, p2_keep} <= {p1_op, p1_addr, p1_b, p1_out, p1_last, p1_keep};
    {p3_op, p3_addr, p3_b, p3_out, p3_last, p3_keep} <= {p2_op, p2_addr, p2_b, p2_out, p2_last, p2_keep};
    {p4_op, p4_addr, p4_b, p4_out, p4_last, p4_keep} <= {p3_op, p3_addr, p3_b, p3_out, p3_last, p3_keep};
    p3_a <= p2_a;
    p4_a <= p3_a;
    p5_we <= p4_we;
    p5_addr <= p4_addr;
    p5_data <= p4_result;
  end

  always_comb begin
    case (p4_op)
      OP_ADD: p4_result = sum;
      OP_READ: p4_result = p4_a;
      default: p4_result = p4_b;
    endcase
    p4_we = p4_valid && (p4_op == OP_FIRST || p4_op == OP_ADD);
  end

  assign out_inflight = 3'(p1_valid && p1_out) + 3'(p2_valid && p2_out) + 3'(p3_valid && p3_out) +
      3'(p4_valid && p4_out);

  logic out_s_ready;
  panama_fifo #(
      .WIDTH(512 + 64 + 1),
      .DEPTH(OUT_FIFO_DEPTH)
  ) out_fifo (
      .clk(clk),
      .rst(rst),
      .s_data({p4_result, p4_keep, p4_last}),
      .s_valid(p4_valid && p4_out),
      .s_ready(out_s_ready),
      .m_data({m_axis_tdata, m_axis_tkeep, m_axis_tlast}),
      .m_valid(m_axis_tvalid),
      .m_ready(m_axis_tready),
      .count(out_count)
  );

  // ================================================================ AXI4-Lite
  logic [13:0] wa, ra;
  logic        do_write;
  assign wa = {s_axil_awaddr[13:2], 2'b00};
  assign ra = {s_axil_araddr[13:2], 2'b00};
  // Writes wait until every admitted frame has been decided, and hold off
  // new frames meanwhile, so each frame sees one consistent configuration.
  assign reg_write_pending = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
  assign do_write = reg_write_pending && ctrl_inflight_reg == 8'd0 && !c1_valid;
  assign s_axil_awready = do_write;
  assign s_axil_wready = do_write;
  assign s_axil_bresp = 2'b00;
  assign s_axil_rresp = 2'b00;
  assign s_axil_arready = !s_axil_rvalid;

  // Decoded staged entry (engine.hpp decode_staged).
  logic        n_en, n_root;
  logic [15:0] n_job;
  logic [7:0]  n_tree, n_fan_in;
  logic [63:0] n_mask;
  logic [31:0] n_base, n_cnt;
  logic [31:0] st_status;
  logic        st_found;
  logic [31:0] wcmd;
  logic [ENTRY_BITS-1:0] cmd_entry;
  always_comb begin
    n_job = staged_reg[0][15:0];
    n_tree = staged_reg[0][23:16];
    n_en = staged_reg[1][0];
    n_root = staged_reg[1][1];
    n_fan_in = staged_reg[2] > 32'd255 ? 8'd255 : staged_reg[2][7:0];
    n_mask = {staged_reg[4], staged_reg[3]};
    n_base = staged_reg[5];
    n_cnt = staged_reg[6];
    wcmd = s_axil_wdata;
    cmd_entry = entry_index_reg[ENTRY_BITS-1:0];
    st_status = STATUS_OK;
    st_found = 1'b0;
    if (n_fan_in == 8'd0 || n_fan_in > 8'(MAX_FAN_IN) || {1'b0, n_fan_in} > {2'b0, popcount64(n_mask)}) begin
      st_status = STATUS_BAD_FAN_IN;
    end else if (n_cnt == 32'd0 || n_cnt > 32'hFFFF || n_base >= 32'(NUM_SLOTS) ||
                 n_cnt > 32'(NUM_SLOTS) - n_base) begin
      st_status = STATUS_BAD_SLOT_RANGE;
    end else if (n_en) begin
      for (int i = 0; i < NUM_ENTRIES; i++) begin
        if (!st_found && 32'(i) != entry_index_reg && ent_enabled[i]) begin
          if (n_base < ent_base[i] + ent_count[i] && ent_base[i] < n_base + n_cnt) begin
            st_status = STATUS_SLOT_OVERLAP;
            st_found = 1'b1;
          end else if (ent_job[i] == n_job && ent_tree[i] == n_tree) begin
            st_status = STATUS_DUPLICATE_KEY;
            st_found = 1'b1;
          end
        end
      end
    end
  end

  logic do_reset, do_clear, do_commit, do_load, do_disable;
  always_comb begin
    do_reset = 1'b0;
    do_clear = 1'b0;
    do_commit = 1'b0;
    do_load = 1'b0;
    do_disable = 1'b0;
    if (do_write && wa == REG_CONTROL) begin
      do_reset = wcmd[2];
      do_clear = !wcmd[2] && wcmd[1];
    end
    if (do_write && wa == REG_ENTRY_CMD && (wcmd == CMD_COMMIT || wcmd == CMD_LOAD || wcmd == CMD_DISABLE) &&
        entry_index_reg < 32'(NUM_ENTRIES)) begin
      do_commit = wcmd == CMD_COMMIT && st_status == STATUS_OK;
      do_load = wcmd == CMD_LOAD;
      do_disable = wcmd == CMD_DISABLE;
    end
  end

  // Control registers and the table.
  always_ff @(posedge clk) begin
    if (rst || do_reset) begin
      enabled_reg <= rst ? 1'b1 : wcmd[0];
      udp_port_reg <= 16'(DEFAULT_UDP_PORT);
      entry_index_reg <= 32'd0;
      entry_status_reg <= STATUS_OK;
      for (int i = 0; i < NUM_STAGED; i++) staged_reg[i] <= 32'd0;
      for (int e = 0; e < NUM_ENTRIES; e++) begin
        ent_enabled[e] <= 1'b0;
        ent_root[e] <= 1'b0;
        ent_job[e] <= 16'd0;
        ent_tree[e] <= 8'd0;
        ent_fan_in[e] <= 8'd0;
        ent_mask[e] <= 64'd0;
        ent_base[e] <= 32'd0;
        ent_count[e] <= 32'd0;
        ent_out_child[e] <= 16'd0;
        ent_eth_dst[e] <= 48'd0;
        ent_eth_src[e] <= 48'd0;
        ent_ip_src[e] <= 32'd0;
        ent_ip_dst[e] <= 32'd0;
        ent_udp_src[e] <= 16'd0;
        ent_udp_dst[e] <= 16'd0;
        ent_ttl[e] <= 8'd0;
        ent_dscp[e] <= 6'd0;
      end
    end else if (do_write) begin
      case (wa)
        REG_CONTROL: enabled_reg <= wcmd[0];
        REG_UDP_PORT: udp_port_reg <= wcmd[15:0];
        REG_ENTRY_INDEX: entry_index_reg <= wcmd;
        REG_ENTRY_CMD: begin
          if (wcmd != CMD_COMMIT && wcmd != CMD_LOAD && wcmd != CMD_DISABLE) entry_status_reg <= STATUS_BAD_COMMAND;
          else if (entry_index_reg >= 32'(NUM_ENTRIES)) entry_status_reg <= STATUS_BAD_INDEX;
          else if (wcmd == CMD_COMMIT) entry_status_reg <= st_status;
          else entry_status_reg <= STATUS_OK;
        end
        default: begin
          if (wa >= REG_E_KEY && wa <= REG_E_IP_TTL_DSCP) staged_reg[4'((wa - REG_E_KEY) >> 2)] <= wcmd;
        end
      endcase
      if (do_disable) ent_enabled[cmd_entry] <= 1'b0;
      if (do_commit) begin
        ent_enabled[cmd_entry] <= n_en;
        ent_root[cmd_entry] <= n_root;
        ent_job[cmd_entry] <= n_job;
        ent_tree[cmd_entry] <= n_tree;
        ent_fan_in[cmd_entry] <= n_fan_in;
        ent_mask[cmd_entry] <= n_mask;
        ent_base[cmd_entry] <= n_base;
        ent_count[cmd_entry] <= n_cnt;
        ent_out_child[cmd_entry] <= staged_reg[7][15:0];
        ent_eth_dst[cmd_entry] <= {staged_reg[9][15:0], staged_reg[8]};
        ent_eth_src[cmd_entry] <= {staged_reg[11][15:0], staged_reg[10]};
        ent_ip_src[cmd_entry] <= staged_reg[12];
        ent_ip_dst[cmd_entry] <= staged_reg[13];
        ent_udp_src[cmd_entry] <= staged_reg[14][15:0];
        ent_udp_dst[cmd_entry] <= staged_reg[14][31:16];
        ent_ttl[cmd_entry] <= staged_reg[15][7:0];
        ent_dscp[cmd_entry] <= staged_reg[15][13:8];
      end
      if (do_load) begin
        staged_reg[0] <= {8'd0, ent_tree[cmd_entry], ent_job[cmd_entry]};
        staged_reg[1] <= {30'd0, ent_root[cmd_entry], ent_enabled[cmd_entry]};
        staged_reg[2] <= {24'd0, ent_fan_in[cmd_entry]};
        staged_reg[3] <= ent_mask[cmd_entry][31:0];
        staged_reg[4] <= ent_mask[cmd_entry][63:32];
        staged_reg[5] <= ent_base[cmd_entry];
        staged_reg[6] <= ent_count[cmd_entry];
        staged_reg[7] <= {16'd0, ent_out_child[cmd_entry]};
        staged_reg[8] <= ent_eth_dst[cmd_entry][31:0];
        staged_reg[9] <= {16'd0, ent_eth_dst[cmd_entry][47:32]};
        staged_reg[10] <= ent_eth_src[cmd_entry][31:0];
        staged_reg[11] <= {16'd0, ent_eth_src[cmd_entry][47:32]};
        staged_reg[12] <= ent_ip_src[cmd_entry];
        staged_reg[13] <= ent_ip_dst[cmd_entry];
        staged_reg[14] <= {ent_udp_dst[cmd_entry], ent_udp_src[cmd_entry]};
        staged_reg[15] <= {18'd0, ent_dscp[cmd_entry], ent_ttl[cmd_entry]};
      end
    end
  end

  // Slot metadata: decision-stage writes; a commit clears its slot range,
  // a reset clears all.
  for (genvar s = 0; s < NUM_SLOTS; s++) begin : g_slot_meta
    logic clear_slot;
    assign clear_slot = rst || do_reset || (do_commit && 32'(s) >= n_base && 32'(s) < n_base + n_cnt);
    always_ff @(posedge clk) begin
      if (clear_slot) begin
        slot_top[s] <= 32'd0;
        bank_state[s][0] <= S_EMPTY;
        bank_state[s][1] <= S_EMPTY;
      end else if (dv_valid && d_slot == SLOT_BITS'(s)) begin
        if (dc_top_write) slot_top[s] <= d_gen;
        if (dc_meta_write) bank_state[s][d_bank] <= n_state;
      end
    end
  end
  always_ff @(posedge clk) begin
    if (dv_valid && dc_meta_write) begin
      bank_count[d_bank][d_slot] <= n_count;
      bank_ecn[d_bank][d_slot] <= n_ecn;
      bank_cwnd[d_bank][d_slot] <= n_cwnd;
      bank_elems[d_bank][d_slot] <= n_elems;
      bank_seq[d_bank][d_slot] <= n_seq;
      bank_children[d_bank][d_slot] <= n_children;
    end
  end

  // Counters.
  for (genvar c = 0; c < NUM_GLOBAL_COUNTERS; c++) begin : g_gctr
    always_ff @(posedge clk) begin
      if (rst || do_reset || do_clear) gctr[c] <= 64'd0;
      else if (dv_valid && gc_inc[c]) gctr[c] <= gctr[c] + 64'd1;
    end
  end
  for (genvar e = 0; e < NUM_ENTRIES; e++) begin : g_ectr
    for (genvar c = 0; c < NUM_ENTRY_COUNTERS; c++) begin : g_c
      always_ff @(posedge clk) begin
        if (rst || do_reset || do_clear || (do_commit && ENTRY_BITS'(e) == cmd_entry)) ectr[e][c] <= 64'd0;
        else if (dv_valid && d_verdict == V_PANAMA && d_hit && d_entry == ENTRY_BITS'(e) && ec_inc[c])
          ectr[e][c] <= ectr[e][c] + 64'd1;
      end
    end
  end

  // Register reads; reading a counter's low word latches its high word.
  logic [31:0] rd_value;
  logic [63:0] rd_counter;
  logic        rd_is_counter;
  logic [13:0] rd_off;
  logic [7:0]  rd_e;
  logic [3:0]  rd_c;
  always_comb begin
    rd_value = 32'd0;
    rd_counter = 64'd0;
    rd_is_counter = 1'b0;
    rd_off = 14'd0;
    rd_e = 8'd0;
    rd_c = 4'd0;
    if (ra >= GLOBAL_COUNTER_BASE && ra < GLOBAL_COUNTER_BASE + 14'(8 * NUM_GLOBAL_COUNTERS)) begin
      rd_off = ra - GLOBAL_COUNTER_BASE;
      rd_is_counter = 1'b1;
      rd_counter = gctr[5'(rd_off >> 3)];
    end else if (ra >= ENTRY_COUNTER_BASE && {18'd0, ra} < {18'd0, ENTRY_COUNTER_BASE} +
                 32'(ENTRY_COUNTER_STRIDE) * 32'(NUM_ENTRIES)) begin
      rd_off = ra - ENTRY_COUNTER_BASE;
      rd_e = 8'(rd_off / 14'(ENTRY_COUNTER_STRIDE));
      rd_c = 4'((rd_off % 14'(ENTRY_COUNTER_STRIDE)) >> 3);
      if (rd_c < 4'(NUM_ENTRY_COUNTERS)) begin
        rd_is_counter = 1'b1;
        rd_counter = ectr[rd_e[ENTRY_BITS-1:0]][rd_c];
      end
    end else begin
      case (ra)
        REG_ID: rd_value = ID_VALUE;
        REG_VERSION: rd_value = VERSION_VALUE;
        REG_NUM_ENTRIES: rd_value = 32'(NUM_ENTRIES);
        REG_NUM_SLOTS: rd_value = 32'(NUM_SLOTS);
        REG_SLOT_ELEMS: rd_value = 32'(SLOT_CAPACITY);
        REG_CONTROL: rd_value = {31'd0, enabled_reg};
        REG_UDP_PORT: rd_value = {16'd0, udp_port_reg};
        REG_ENTRY_INDEX: rd_value = entry_index_reg;
        REG_ENTRY_STATUS: rd_value = entry_status_reg;
        default: begin
          if (ra >= REG_E_KEY && ra <= REG_E_IP_TTL_DSCP) rd_value = staged_reg[4'((ra - REG_E_KEY) >> 2)];
        end
      endcase
    end
    if (rd_is_counter) begin
      if (!ra[2]) rd_value = rd_counter[31:0];
      else if (latched_valid_reg && ra == latched_addr_reg) rd_value = latched_hi_reg;
      else rd_value = rd_counter[63:32];
    end
  end

  always_ff @(posedge clk) begin
    if (rst || do_reset) latched_valid_reg <= 1'b0;
    if (rst) begin
      s_axil_rvalid <= 1'b0;
    end else if (s_axil_arvalid && s_axil_arready) begin
      s_axil_rvalid <= 1'b1;
      s_axil_rdata <= rd_value;
      if (rd_is_counter && !ra[2] && !do_reset) begin
        latched_valid_reg <= 1'b1;
        latched_addr_reg <= ra + 14'd4;
        latched_hi_reg <= rd_counter[63:32];
      end
    end else if (s_axil_rready) begin
      s_axil_rvalid <= 1'b0;
    end
    if (rst) s_axil_bvalid <= 1'b0;
    else if (do_write) s_axil_bvalid <= 1'b1;
    else if (s_axil_bready) s_axil_bvalid <= 1'b0;
  end

  // ================================================================ status
  assign status_idle = in_beats_reg == 16'd0 && desc_count == '0 && in_fifo_count == '0 &&
      ctrl_inflight_reg == 8'd0 && !c1_valid && !act_m_valid && act_count == '0 && !p1_valid && !p2_valid &&
      !p3_valid && !p4_valid && out_count == '0;
  assign status_stall_in_fifo = !in_fifo_s_ready;
  assign status_stall_desc_fifo = !desc_s_ready;
  assign status_stall_reg_write = reg_write_pending;

  // Unused: byte strobes (registers are written whole, as in the model),
  // protection bits, the spare FIFO ready flags (credits guarantee room).
  logic unused;
  assign unused = ^{s_axil_wstrb, s_axil_awaddr[1:0], s_axil_araddr[1:0], act_s_ready, out_s_ready, p5_valid,
                    ip_flags[15:14], d_job, d_tree, last_bytes[15:7], rd_e};
endmodule
`default_nettype wire
