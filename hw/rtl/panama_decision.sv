// Decision: per frame, after the divider has split its sequence number into
// slot (base + seq % Q) and generation (seq / Q), the generation window,
// child and duplicate checks and the fan-in count of engine.hpp, with the
// slot's metadata read, updated and written back in the same clock (so
// back-to-back frames of one slot see each other's updates). Counter
// increments and the decision status leave combinationally; the decided
// action is registered (latency 1) for the header and action builder.
//
// Slot metadata: the newest generation and the state of both banks (the
// live generation and its shadow) per slot. A successful commit clears its
// slot range, CONTROL.RESET and rst clear all.
`default_nettype none
module panama_decision #(
    // Table entries.
    parameter int NUM_ENTRIES = 64,
    // Packet-memory slots.
    parameter int NUM_SLOTS = 512,
    // 512-bit words per slot bank.
    parameter int SLOT_WORDS = 144,
    // Derived widths.
    parameter int ENTRY_BITS = NUM_ENTRIES > 1 ? $clog2(NUM_ENTRIES) : 1,
    parameter int SLOT_BITS = NUM_SLOTS > 1 ? $clog2(NUM_SLOTS) : 1
) (
    input  wire logic                                   clk,
    input  wire logic                                   rst,

    // Divider output: the frame, its table entry, seq / Q and seq % Q.
    input  wire logic                                   in_valid,
    input  wire panama_engine_pkg::frame_fields_t       in_fields,
    input  wire logic                                   in_hit,
    input  wire logic                  [ENTRY_BITS-1:0] in_entry,
    input  wire logic                           [31:0]  in_generation,
    input  wire logic                           [15:0]  in_slot_offset,

    // The frame's table entry (read port of panama_table, indexed by in_entry).
    input  wire panama_engine_pkg::table_entry_t        entry,

    // Slot clearing: everything, or a committed entry's slot range [base, end).
    input  wire logic                                   clear_all,
    input  wire logic                                   clear_range_valid,
    input  wire logic                           [31:0]  clear_range_base,
    input  wire logic                           [31:0]  clear_range_end,

    // Counter increments of this frame (valid with in_valid).
    output logic   [panama_regmap_pkg::NUM_GLOBAL_COUNTERS-1:0] global_inc,
    output logic   [panama_regmap_pkg::NUM_ENTRY_COUNTERS-1:0]  entry_inc,
    output logic                                   entry_inc_valid,

    // Decided action, one clock later.
    output panama_engine_pkg::decided_t             out_decided,
    output logic                                    out_valid,

    // One pulse per frame: EngineAction, drop counter, entry (0xFF: none).
    output logic                                    status_decision_valid,
    output logic                            [2:0]   status_decision_action,
    output logic                            [4:0]   status_decision_counter,
    output logic                            [7:0]   status_decision_entry
);
  import panama_wire_pkg::*;
  import panama_regmap_pkg::*;
  import panama_engine_pkg::*;

  initial begin
    if (NUM_SLOTS < 1 || NUM_SLOTS > 65535) $error("%m: NUM_SLOTS must be 1..65535");
  end

  logic [31:0] slot_top[NUM_SLOTS];
  logic [1:0]  bank_state[NUM_SLOTS][2];
  logic [6:0]  bank_count[2][NUM_SLOTS];
  logic [1:0]  bank_ecn[2][NUM_SLOTS];
  logic [15:0] bank_cwnd[2][NUM_SLOTS];
  logic [15:0] bank_elems[2][NUM_SLOTS];
  logic [31:0] bank_seq[2][NUM_SLOTS];
  logic [63:0] bank_children[2][NUM_SLOTS];

  frame_fields_t        d;
  logic [SLOT_BITS-1:0] slot;
  logic                 bank;
  assign d = in_fields;
  assign bank = in_generation[0];
  assign slot = SLOT_BITS'(entry.base + {16'd0, in_slot_offset});

  // Current metadata of the addressed slot and bank.
  logic [31:0] m_top;
  logic [1:0]  m_state;
  logic [6:0]  m_count;
  logic [1:0]  m_ecn;
  logic [15:0] m_cwnd, m_elems;
  logic [31:0] m_seq;
  logic [63:0] m_children;
  always_comb begin
    m_top = slot_top[slot];
    m_state = bank_state[slot][bank];
    m_count = bank_count[bank][slot];
    m_ecn = bank_ecn[bank][slot];
    m_cwnd = bank_cwnd[bank][slot];
    m_elems = bank_elems[bank][slot];
    m_seq = bank_seq[bank][slot];
    m_children = bank_children[bank][slot];
  end

  logic [2:0]  kind;
  logic        emit;
  logic [2:0]  action;
  logic [4:0]  drop_counter;
  logic        meta_write, top_write;
  logic [1:0]  n_state;
  logic [6:0]  n_count;
  logic [1:0]  n_ecn;
  logic [15:0] n_cwnd, n_elems;
  logic [31:0] n_seq;
  logic [63:0] n_children;
  logic [63:0] child_bit;
  logic        win_ok, advance;

  always_comb begin
    kind = K_DROP;
    emit = 1'b0;
    action = A_DROPPED;
    drop_counter = 5'd0;
    global_inc = '0;
    entry_inc = '0;
    meta_write = 1'b0;
    top_write = 1'b0;
    n_state = m_state;
    n_count = m_count;
    n_ecn = m_ecn;
    n_cwnd = m_cwnd;
    n_elems = m_elems;
    n_seq = m_seq;
    n_children = m_children;
    child_bit = 64'd1 << d.child[5:0];
    win_ok = 1'b0;
    advance = 1'b0;
    global_inc[GC_FRAMES_IN] = 1'b1;
    if (d.verdict == V_PASS) begin
      kind = K_PASS;
      action = A_PASSED;
      global_inc[d.counter] = 1'b1;
    end else if (d.verdict == V_DROP) begin
      drop_counter = d.counter;
      global_inc[d.counter] = 1'b1;
    end else begin
      global_inc[GC_PANAMA_IN] = 1'b1;
      if (d.retrans) global_inc[GC_RETRANS_IN] = 1'b1;
      if (!in_hit) begin
        drop_counter = 5'(GC_DROP_UNKNOWN_ENTRY);
        global_inc[GC_DROP_UNKNOWN_ENTRY] = 1'b1;
      end else begin
        if (d.retrans) entry_inc[EC_RETRANS_IN] = 1'b1;
        if (d.child >= 16'(MAX_FAN_IN) || !entry.mask[d.child[5:0]]) begin
          entry_inc[EC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          global_inc[GC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          drop_counter = 5'(GC_DROP_CHILD_NOT_ALLOWED);
        end else begin
          // Generation window: the newest generation, the one after it, or
          // the shadow of the one before.
          if (in_generation == m_top + 32'd1) begin
            win_ok = m_state != S_ACC;  // else the older generation is still open
            advance = 1'b1;
          end else if (in_generation == m_top) begin
            win_ok = m_state == S_EMPTY || m_seq == d.seq;
          end else if (m_top >= 32'd1 && in_generation == m_top - 32'd1) begin
            win_ok = m_state != S_EMPTY && m_seq == d.seq;
          end
          if (!win_ok) begin
            entry_inc[EC_DROP_SEQ_WINDOW] = 1'b1;
            global_inc[GC_DROP_SEQ_WINDOW] = 1'b1;
            drop_counter = 5'(GC_DROP_SEQ_WINDOW);
          end else if (advance || m_state == S_EMPTY) begin
            // First contribution of this generation: stored as it arrives.
            top_write = advance;
            meta_write = 1'b1;
            kind = K_FIRST;
            n_state = S_ACC;
            n_seq = d.seq;
            n_children = child_bit;
            n_count = 7'd1;
            n_ecn = d.ecn;
            n_cwnd = d.cwnd;
            n_elems = d.elems;
          end else if (m_state == S_DONE) begin
            if (d.retrans) begin
              global_inc[GC_RETRANS_SERVED] = 1'b1;
              entry_inc[EC_RETRANS_SERVED] = 1'b1;
              kind = K_READ;
              emit = 1'b1;
              action = A_REEMITTED;
            end else begin
              entry_inc[EC_DUPLICATES] = 1'b1;
              global_inc[GC_DUPLICATES] = 1'b1;
              drop_counter = 5'(GC_DUPLICATES);
            end
          end else if ((m_children & child_bit) != 64'd0) begin
            entry_inc[EC_DUPLICATES] = 1'b1;
            global_inc[GC_DUPLICATES] = 1'b1;
            drop_counter = 5'(GC_DUPLICATES);
          end else if (d.elems != m_elems) begin
            entry_inc[EC_DROP_COUNT_MISMATCH] = 1'b1;
            global_inc[GC_DROP_COUNT_MISMATCH] = 1'b1;
            drop_counter = 5'(GC_DROP_COUNT_MISMATCH);
          end else begin
            meta_write = 1'b1;
            kind = K_ADD;
            n_children = m_children | child_bit;
            n_count = m_count + 7'd1;
            n_ecn = m_ecn | d.ecn;
            if (d.cwnd < m_cwnd) n_cwnd = d.cwnd;
          end
          if (kind == K_FIRST || kind == K_ADD) begin
            global_inc[GC_AGGREGATED] = 1'b1;
            entry_inc[EC_AGGREGATED] = 1'b1;
            if (d.ecn == 2'(ECN_CE)) begin
              global_inc[GC_ECN_MARKED] = 1'b1;
              entry_inc[EC_ECN_MARKED] = 1'b1;
            end
            action = A_AGGREGATED;
            if ({1'b0, n_count} >= entry.fan_in) begin
              n_state = S_DONE;
              global_inc[GC_EMITTED] = 1'b1;
              entry_inc[EC_EMITTED] = 1'b1;
              emit = 1'b1;
              action = A_EMITTED;
            end
          end
        end
      end
    end
  end
  assign entry_inc_valid = in_valid && d.verdict == V_PANAMA && in_hit;

  // Metadata updates; clearing wins over a frame's update.
  for (genvar s = 0; s < NUM_SLOTS; s++) begin : g_slot_meta
    logic clear_slot;
    assign clear_slot = rst || clear_all ||
        (clear_range_valid && 32'(s) >= clear_range_base && 32'(s) < clear_range_end);
    always_ff @(posedge clk) begin
      if (clear_slot) begin
        slot_top[s] <= 32'd0;
        bank_state[s][0] <= S_EMPTY;
        bank_state[s][1] <= S_EMPTY;
      end else if (in_valid && slot == SLOT_BITS'(s)) begin
        if (top_write) slot_top[s] <= in_generation;
        if (meta_write) bank_state[s][bank] <= n_state;
      end
    end
  end
  always_ff @(posedge clk) begin
    if (in_valid && meta_write) begin
      bank_count[bank][slot] <= n_count;
      bank_ecn[bank][slot] <= n_ecn;
      bank_cwnd[bank][slot] <= n_cwnd;
      bank_elems[bank][slot] <= n_elems;
      bank_seq[bank][slot] <= n_seq;
      bank_children[bank][slot] <= n_children;
    end
  end

  // ---- A: the decided action, registered
  always_ff @(posedge clk) begin
    out_valid <= rst ? 1'b0 : in_valid;
    out_decided.kind <= kind;
    out_decided.emit <= emit;
    out_decided.retrans <= kind == K_READ;
    out_decided.beats <= d.beats;
    out_decided.len <= d.len;
    out_decided.entry <= 8'(in_entry);
    out_decided.base <= ({{(32 - SLOT_BITS) {1'b0}}, slot} * 2 + {31'd0, bank}) * 32'(SLOT_WORDS);
    out_decided.ecn <= n_ecn;
    out_decided.cwnd <= n_cwnd;
    out_decided.elems <= n_elems;
    out_decided.seq <= n_seq;
  end

  assign status_decision_valid = in_valid;
  assign status_decision_action = action;
  assign status_decision_counter = drop_counter;
  assign status_decision_entry = (d.verdict == V_PANAMA && in_hit) ? 8'(in_entry) : 8'hFF;

  // Entry fields the decision does not use (the header builder does).
  logic unused;
  assign unused = ^{entry.enabled, entry.root, entry.job, entry.tree, entry.count, entry.out_child, entry.eth_dst,
                    entry.eth_src, entry.ip_src, entry.ip_dst, entry.udp_src, entry.udp_dst, entry.ttl,
                    entry.dscp, d.job, d.tree};
endmodule
`default_nettype wire
