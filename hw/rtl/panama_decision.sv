// Decision: per frame, after the divider has split its sequence number into
// slot (base + seq % Q) and generation (seq / Q), the generation window,
// child and duplicate checks and the fan-in count of engine.hpp. Two clocks,
// one frame per clock:
//   D0  slot = entry base + offset; registered read of the slot's metadata
//       word (block RAM); the frame's fields are registered
//   D1  the metadata word (or, when the frame decided in the previous clock
//       wrote the same slot, the word it wrote: forward path), the checks,
//       the new word written back; counter increments and the decision
//       status leave (combinational); the decided action is registered
// (latency 2 from in_valid to out_valid).
//
// Slot metadata, one RAM word per slot: the newest generation and, per bank
// (the live generation and its shadow), state, sequence number, child
// bitmap, count, ECN, cwnd_cap and element count. Clearing (a successful
// commit's slot range; CONTROL.RESET and rst: every slot) is a background
// engine writing one slot per clock; status_clear_busy is high meanwhile,
// and the engine admits no frame and no register write until it is low (a
// cleared word is all zeros: generation 0, both banks empty).
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
    // The clear engine is running.
    output logic                                        status_clear_busy,

    // Counter increments of the frame in D1 (valid with inc_valid).
    output logic                                   inc_valid,
    output logic                  [ENTRY_BITS-1:0] inc_entry,
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

  // One bank's metadata and a slot's metadata word.
  typedef struct packed {
    logic [1:0]  state;
    logic [6:0]  count;
    logic [1:0]  ecn;
    logic [15:0] cwnd;
    logic [15:0] elems;
    logic [31:0] seq;
    logic [63:0] children;
  } bank_meta_t;
  typedef struct packed {
    logic [31:0] top;
    bank_meta_t  b1;
    bank_meta_t  b0;
  } slot_meta_t;

  // Stored as plain vectors (Yosys 0.23 takes an unpacked array of a struct
  // type for a single register, not a memory).
  slot_meta_t meta_rd, last_word_reg, cur_word, new_word;
  localparam int META_BITS = $bits(meta_rd);
  (* ram_style = "block" *) logic [META_BITS-1:0] meta[NUM_SLOTS];

  // ---- D0: slot address, metadata read, fields registered
  logic [SLOT_BITS-1:0] slot0;
  assign slot0 = SLOT_BITS'(entry.base + {16'd0, in_slot_offset});

  logic                  d1_valid;
  frame_fields_t         d;
  logic                  d1_hit;
  logic [ENTRY_BITS-1:0] d1_entry;
  logic [31:0]           d1_generation;
  logic [SLOT_BITS-1:0]  slot;
  logic                  bank;
  logic [7:0]            d1_fan_in;
  logic [63:0]           d1_mask;
  logic                  fwd_reg, last_write_reg, word_write;

  always_ff @(posedge clk) begin
    d1_valid <= rst ? 1'b0 : in_valid;
    d <= in_fields;
    d1_hit <= in_hit;
    d1_entry <= in_entry;
    d1_generation <= in_generation;
    slot <= slot0;
    bank <= in_generation[0];
    d1_fan_in <= entry.fan_in;
    d1_mask <= entry.mask;
    meta_rd <= meta[slot0];
    // The frame now in D1 writes its slot at the end of this clock, after
    // this read: the next clock takes its word instead.
    fwd_reg <= in_valid && d1_valid && slot0 == slot;
    last_write_reg <= d1_valid && word_write;
    last_word_reg <= new_word;
  end

  // ---- D1: current metadata of the addressed slot and bank
  logic [31:0] m_top;
  bank_meta_t  m;
  logic [1:0]  m_state;
  logic [6:0]  m_count;
  logic [1:0]  m_ecn;
  logic [15:0] m_cwnd, m_elems;
  logic [31:0] m_seq;
  logic [63:0] m_children;
  always_comb begin
    cur_word = (fwd_reg && last_write_reg) ? last_word_reg : meta_rd;
    m_top = cur_word.top;
    m = bank ? cur_word.b1 : cur_word.b0;
    m_state = m.state;
    m_count = m.count;
    m_ecn = m.ecn;
    m_cwnd = m.cwnd;
    m_elems = m.elems;
    m_seq = m.seq;
    m_children = m.children;
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
      if (!d1_hit) begin
        drop_counter = 5'(GC_DROP_UNKNOWN_ENTRY);
        global_inc[GC_DROP_UNKNOWN_ENTRY] = 1'b1;
      end else begin
        if (d.retrans) entry_inc[EC_RETRANS_IN] = 1'b1;
        if (d.child >= 16'(MAX_FAN_IN) || !d1_mask[d.child[5:0]]) begin
          entry_inc[EC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          global_inc[GC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          drop_counter = 5'(GC_DROP_CHILD_NOT_ALLOWED);
        end else begin
          // Generation window: the newest generation, the one after it, or
          // the shadow of the one before.
          if (d1_generation == m_top + 32'd1) begin
            win_ok = m_state != S_ACC;  // else the older generation is still open
            advance = 1'b1;
          end else if (d1_generation == m_top) begin
            win_ok = m_state == S_EMPTY || m_seq == d.seq;
          end else if (m_top >= 32'd1 && d1_generation == m_top - 32'd1) begin
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
            if ({1'b0, n_count} >= d1_fan_in) begin
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
  assign inc_valid = d1_valid;
  assign inc_entry = d1_entry;
  assign entry_inc_valid = d1_valid && d.verdict == V_PANAMA && d1_hit;

  // The new metadata word of the slot.
  bank_meta_t nb;
  always_comb begin
    nb.state = n_state;
    nb.count = n_count;
    nb.ecn = n_ecn;
    nb.cwnd = n_cwnd;
    nb.elems = n_elems;
    nb.seq = n_seq;
    nb.children = n_children;
    new_word = cur_word;
    if (top_write) new_word.top = d1_generation;
    if (meta_write) begin
      if (bank) new_word.b1 = nb;
      else new_word.b0 = nb;
    end
    word_write = meta_write || top_write;
  end

  // Clear engine: one slot per clock over [clear_ptr, clear_end).
  logic                 clearing_reg;
  logic [SLOT_BITS:0]   clear_ptr_reg, clear_end_reg;
  always_ff @(posedge clk) begin
    if (rst || clear_all) begin
      clearing_reg <= 1'b1;
      clear_ptr_reg <= '0;
      clear_end_reg <= (SLOT_BITS + 1)'(NUM_SLOTS);
    end else if (clear_range_valid) begin
      clearing_reg <= clear_range_base < clear_range_end;
      clear_ptr_reg <= (SLOT_BITS + 1)'(clear_range_base);
      clear_end_reg <= (SLOT_BITS + 1)'(clear_range_end);
    end else if (clearing_reg) begin
      clear_ptr_reg <= clear_ptr_reg + 1'b1;
      if (clear_ptr_reg + 1'b1 >= clear_end_reg) clearing_reg <= 1'b0;
    end
  end
  assign status_clear_busy = clearing_reg;

  // The metadata write port: the clear engine or the frame in D1 (never
  // both: no frame is admitted while clearing).
  always_ff @(posedge clk) begin
    if (clearing_reg) meta[SLOT_BITS'(clear_ptr_reg)] <= '0;
    else if (d1_valid && word_write) meta[slot] <= new_word;
  end

  // ---- the decided action, registered
  always_ff @(posedge clk) begin
    out_valid <= rst ? 1'b0 : d1_valid;
    out_decided.kind <= kind;
    out_decided.emit <= emit;
    out_decided.retrans <= kind == K_READ;
    out_decided.beats <= d.beats;
    out_decided.len <= d.len;
    out_decided.entry <= 8'(d1_entry);
    out_decided.base <= ({{(32 - SLOT_BITS) {1'b0}}, slot} * 2 + {31'd0, bank}) * 32'(SLOT_WORDS);
    out_decided.ecn <= n_ecn;
    out_decided.cwnd <= n_cwnd;
    out_decided.elems <= n_elems;
    out_decided.seq <= n_seq;
  end

  assign status_decision_valid = d1_valid;
  assign status_decision_action = action;
  assign status_decision_counter = drop_counter;
  assign status_decision_entry = (d.verdict == V_PANAMA && d1_hit) ? 8'(d1_entry) : 8'hFF;

  // Entry fields the decision does not use (the header builder does).
  logic unused;
  assign unused = ^{entry.enabled, entry.root, entry.job, entry.tree, entry.count, entry.out_child, entry.eth_dst,
                    entry.base[31:SLOT_BITS], clear_range_base[31:SLOT_BITS+1], clear_range_end[31:SLOT_BITS+1],
                    entry.eth_src, entry.ip_src, entry.ip_dst, entry.udp_src, entry.udp_dst, entry.ttl,
                    entry.dscp, d.job, d.tree};
endmodule
`default_nettype wire
