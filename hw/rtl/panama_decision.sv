// Decision: per frame, after the divider has split its sequence number into
// slot (base + seq % Q) and generation (seq / Q), the generation window,
// child and duplicate checks and the fan-in count of engine.hpp. At most
// one frame every two clocks (in_valid is never high in two consecutive
// clocks: the engine admits frames so), four register stages:
//   R   the divider's output and the entry's base, fan-in and mask registered
//   M   slot = base + offset; registered read of the slot's metadata word
//       (block RAM); the compares that need only the frame (generation +-1,
//       child bit, child allowed, fan-in - 1); slot match with the frame in B2
//   B1  the slot's current word: the memory word or, when the frame in B2
//       (two clocks ahead) addresses the same slot, the word that frame
//       computed (forward path); the window, sequence, duplicate, element
//       type, element count and cwnd compares of the frame against it (against all four candidates,
//       memory or forwarded word, bank 0 or 1, chosen on the results); the
//       window verdict, first contribution or addition, and the bank word
//       each of them would write, registered
//   B2  the fan-in count (an addition completes the slot?), the rules on
//       the flags: kind, action, counter increments; the new
//       word (a multiplexer), written back at the end of the clock and kept
//       for the forward path (the slot's read-modify-write loop is B1 + B2,
//       two clocks)
// The decided action, the counter increments and the decision status are
// registered after B2 (latency 4 from in_valid to out_valid / inc_valid).
//
// Slot metadata, one RAM word per slot: the newest generation and, per bank
// (the live generation and its shadow), state, sequence number, child
// bitmap, count, ECN, cwnd_cap, element count and element type. Clearing (a successful
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

    // Divider output: the frame, its table entry, seq / Q and seq % Q; at
    // most one frame every two clocks.
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

    // Counter increments of the decided frame (valid with inc_valid,
    // registered, in the clock of out_valid).
    output logic                                   inc_valid,
    output logic                  [ENTRY_BITS-1:0] inc_entry,
    output logic   [panama_regmap_pkg::NUM_GLOBAL_COUNTERS-1:0] global_inc,
    output logic   [panama_regmap_pkg::NUM_ENTRY_COUNTERS-1:0]  entry_inc,
    output logic                                   entry_inc_valid,

    // Decided action (registered).
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

  // Slot-memory rows (32 fp32 accumulators, two 512-bit words) per bank.
  localparam int BANK_ROWS = (SLOT_WORDS + 1) / 2;

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
    logic [1:0]  etype;  // elem_type of the first contribution (1 fp32, 2 bf16, 3 fp16)
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
  slot_meta_t meta_rd, last_word_reg, cur_word, b2_cur, new_word;
  localparam int META_BITS = $bits(meta_rd);
  // A read of the slot B2 is writing in the same clock is never used (the
  // forward path replaces it): no read-during-write logic is needed.
  (* ram_style = "block", no_rw_check *) logic [META_BITS-1:0] meta[NUM_SLOTS];

  // ---- R: the divider's output and the frame's entry fields, registered
  logic                  r_valid;
  frame_fields_t         r_d;
  logic                  r_hit;
  logic [ENTRY_BITS-1:0] r_entry;
  logic [31:0]           r_gen;
  logic [15:0]           r_off;
  logic [SLOT_BITS-1:0]  r_base;
  logic [7:0]            r_fan_in;
  logic [63:0]           r_mask;
  always_ff @(posedge clk) begin
    r_valid <= rst ? 1'b0 : in_valid;
    r_d <= in_fields;
    r_hit <= in_hit;
    r_entry <= in_entry;
    r_gen <= in_generation;
    r_off <= in_slot_offset;
    r_base <= entry.base[SLOT_BITS-1:0];
    r_fan_in <= entry.fan_in;
    r_mask <= entry.mask;
  end

  // ---- M: slot address, metadata read, everything that does not depend on
  // the slot's metadata word
  logic [SLOT_BITS-1:0] rd_slot;
  assign rd_slot = r_base + SLOT_BITS'(r_off);

  logic                  b1_valid, b2_valid;
  frame_fields_t         b1_d, d;
  logic                  b1_hit, d_hit;
  logic [ENTRY_BITS-1:0] b1_entry, d_entry;
  logic [31:0]           b1_gen, d_gen;
  logic [SLOT_BITS-1:0]  b1_slot, b2_slot;
  logic                  b1_bank, bank;
  logic                  b1_fwd;
  logic [31:0]           b1_gen_m1, b1_gen_p1;  // generation - 1, + 1
  logic                  b1_gen_p1_ok;          // generation + 1 does not wrap
  logic [127:0]          b1_child_banks;  // the child's bit in the frame's bank: {bank 1, bank 0}
  logic [63:0]           b1_child_bit;
  logic                  b1_ok;                 // PANAMA, entry found, child allowed
  logic [7:0]            b1_fan_in_m1;          // fan-in - 1
  logic                  b1_fan_in_le1;         // fan-in 0 or 1: the first contribution completes
  logic                  b1_fan_in_zero;
  logic [NUM_GLOBAL_COUNTERS-1:0] b1_counter_bit;  // the verdict's counter, one-hot
  logic [31:0]           b2_base;

  always_ff @(posedge clk) begin
    b1_valid <= rst ? 1'b0 : r_valid;
    b1_d <= r_d;
    b1_hit <= r_hit;
    b1_entry <= r_entry;
    b1_gen <= r_gen;
    b1_slot <= rd_slot;
    b1_bank <= r_gen[0];
    meta_rd <= meta[rd_slot];
    // The frame now in B2 writes its slot at the end of this clock, after
    // this read: B1 takes its word instead (frames are at least two clocks
    // apart, so B2 holds the only frame that can be in the way).
    b1_fwd <= r_valid && b2_valid && eq16(16'(rd_slot), 16'(b2_slot));
    b1_gen_m1 <= r_gen - 32'd1;
    b1_gen_p1 <= r_gen + 32'd1;
    b1_gen_p1_ok <= r_gen != 32'hFFFFFFFF;
    b1_child_banks <= r_gen[0] ? {64'd1 << r_d.child[5:0], 64'd0} : {64'd0, 64'd1 << r_d.child[5:0]};
    b1_child_bit <= 64'd1 << r_d.child[5:0];
    b1_ok <= r_d.verdict == V_PANAMA && r_hit && r_d.child < 16'(MAX_FAN_IN) && r_mask[r_d.child[5:0]];
    b1_fan_in_m1 <= r_fan_in - 8'd1;
    b1_fan_in_le1 <= r_fan_in <= 8'd1;
    b1_fan_in_zero <= r_fan_in == 8'd0;
    b1_counter_bit <= NUM_GLOBAL_COUNTERS'(1) << r_d.counter;
  end
  // the slot bank's first data word, for the frame in B2: the slot memory
  // has rows of 32 fp32 accumulators (two 512-bit words), ceil(SLOT_WORDS / 2)
  // rows per bank, and words count half rows, so a bank starts at an even word
  always_ff @(posedge clk)
    b2_base <= ({{(32 - SLOT_BITS) {1'b0}}, b1_slot} * 2 + {31'd0, b1_bank}) * 32'(2 * BANK_ROWS);

  // ---- B1: the slot's current word (memory, or the word the frame in B2
  // has just computed), compared with the frame, and the rules of
  // engine.hpp. Every compare is made against all four candidates (memory
  // or forwarded word, bank 0 or 1) at once and the candidate is chosen on
  // the results. Equalities run on the carry chain (a LUT per three bit
  // pairs, the chain ANDs the groups), as vendor comparators do.
  function automatic eq32(input logic [31:0] x, input logic [31:0] y);
    logic [32:0] xp, yp;
    logic [10:0] g;
    xp = {1'b0, x};
    yp = {1'b0, y};
    for (int k = 0; k < 11; k++) g[k] = xp[3*k+:3] == yp[3*k+:3];
    eq32 = (({1'b0, g} + 12'd1) >> 11) != 12'd0;  // carry out of the chain: every group equal
  endfunction
  function automatic eq16(input logic [15:0] x, input logic [15:0] y);
    logic [17:0] xp, yp;
    logic [5:0] g;
    xp = {2'b0, x};
    yp = {2'b0, y};
    for (int k = 0; k < 6; k++) g[k] = xp[3*k+:3] == yp[3*k+:3];
    eq16 = (({1'b0, g} + 7'd1) >> 6) != 7'd0;
  endfunction
  // (a & b) != 0 for the 128 bits of both banks, on the carry chain (a LUT
  // per three bit pairs)
  function automatic any128(input logic [127:0] a, input logic [127:0] b);
    logic [128:0] ap, bp;
    logic [42:0] g;
    ap = {1'b0, a};
    bp = {1'b0, b};
    for (int k = 0; k < 43; k++) g[k] = (ap[3*k+:3] & bp[3*k+:3]) == 3'd0;
    any128 = (({1'b0, g} + 44'd1) >> 43) == 44'd0;  // carry out: no group has a common bit
  endfunction
  // 7'(count + 1) >= fan-in, the 7-bit sum wrapping as in the model
  function automatic count_done_of(input logic [6:0] count, input logic fan_in_zero, input logic [7:0] fan_in_m1);
    count_done_of = fan_in_zero || (count != 7'h7F && {1'b0, count} >= fan_in_m1);
  endfunction

  bank_meta_t c_r0, c_r1, c_f0, c_f1, m1;
  assign c_r0 = meta_rd.b0;
  assign c_r1 = meta_rd.b1;
  assign c_f0 = last_word_reg.b0;
  assign c_f1 = last_word_reg.b1;
  // The flag of the candidate {forwarded, bank}.
  // Written as AND-OR rather than as a multiplexer of the compare results:
  // Yosys's opt_share would otherwise merge the candidates' compares into
  // one compare behind a multiplexer of their operands, putting the
  // candidate choice in front of the carry chain instead of after it.
  function automatic pick(input logic [3:0] c, input logic fwd, input logic bnk);
    pick = (c[3] && fwd && bnk) || (c[2] && fwd && !bnk) || (c[1] && !fwd && bnk) || (c[0] && !fwd && !bnk);
  endfunction
  function automatic pick2(input logic [1:0] c, input logic fwd);
    pick2 = (c[1] && fwd) || (c[0] && !fwd);
  endfunction
  logic [3:0] c_seq_eq, c_elems_eq, c_cwnd_lt, c_type_eq;
  logic [1:0] c_eq_next, c_eq_cur, c_eq_prev;
  logic       eq_next, eq_cur, eq_prev, seq_eq, dup, elems_ne, type_ne, cwnd_lt;
  logic       win_ok, new_gen, first_c, add_c;
  always_comb begin
    c_seq_eq = {eq32(c_f1.seq, b1_d.seq), eq32(c_f0.seq, b1_d.seq), eq32(c_r1.seq, b1_d.seq),
                eq32(c_r0.seq, b1_d.seq)};
    c_elems_eq = {eq16(c_f1.elems, b1_d.elems), eq16(c_f0.elems, b1_d.elems), eq16(c_r1.elems, b1_d.elems),
                  eq16(c_r0.elems, b1_d.elems)};
    c_type_eq = {c_f1.etype == b1_d.etype, c_f0.etype == b1_d.etype, c_r1.etype == b1_d.etype,
                 c_r0.etype == b1_d.etype};
    c_cwnd_lt = {b1_d.cwnd < c_f1.cwnd, b1_d.cwnd < c_f0.cwnd, b1_d.cwnd < c_r1.cwnd, b1_d.cwnd < c_r0.cwnd};
    c_eq_next = {eq32(last_word_reg.top, b1_gen_m1), eq32(meta_rd.top, b1_gen_m1)};  // generation == top + 1
    c_eq_cur = {eq32(last_word_reg.top, b1_gen), eq32(meta_rd.top, b1_gen)};         // generation == top
    // top >= 1 && generation == top - 1
    c_eq_prev = {eq32(last_word_reg.top, b1_gen_p1), eq32(meta_rd.top, b1_gen_p1)};
    eq_next = pick2(c_eq_next, b1_fwd);
    eq_cur = pick2(c_eq_cur, b1_fwd);
    eq_prev = pick2(c_eq_prev, b1_fwd) && b1_gen_p1_ok;
    // the child's bit of the candidate's bitmap: one 256:1 multiplexer
    dup = pick2({any128({c_f1.children, c_f0.children}, b1_child_banks),
                 any128({c_r1.children, c_r0.children}, b1_child_banks)}, b1_fwd);
    seq_eq = pick(c_seq_eq, b1_fwd, b1_bank);
    elems_ne = !pick(c_elems_eq, b1_fwd, b1_bank);
    type_ne = !pick(c_type_eq, b1_fwd, b1_bank);
    cwnd_lt = pick(c_cwnd_lt, b1_fwd, b1_bank);
    cur_word = b1_fwd ? last_word_reg : meta_rd;
    m1 = b1_bank ? cur_word.b1 : cur_word.b0;
    // Generation window: the newest generation, the one after it, or the
    // shadow of the one before (the three compares exclude each other).
    win_ok = (eq_next && m1.state != S_ACC) ||  // else the older generation is still open
             (eq_cur && (m1.state == S_EMPTY || seq_eq)) || (eq_prev && m1.state != S_EMPTY && seq_eq);
    new_gen = eq_next || m1.state == S_EMPTY;
    // for a frame that passes the entry and child checks:
    first_c = win_ok && new_gen;  // the first contribution of the generation
    add_c = win_ok && !new_gen && m1.state != S_DONE && !dup && !type_ne && !elems_ne;  // an addition
  end

  // The bank word a first contribution writes (from the frame alone) and the
  // one an addition writes.
  bank_meta_t nb_first, nb_add;
  always_comb begin
    nb_first.state = b1_fan_in_le1 ? S_DONE : S_ACC;
    nb_first.seq = b1_d.seq;
    nb_first.children = b1_child_bit;
    nb_first.count = 7'd1;
    nb_first.ecn = b1_d.ecn;
    nb_first.cwnd = b1_d.cwnd;
    nb_first.elems = b1_d.elems;
    nb_first.etype = b1_d.etype;
    nb_add.state = m1.state;  // S_DONE when count_done (B2)
    nb_add.seq = m1.seq;
    nb_add.children = m1.children | b1_child_bit;
    nb_add.count = m1.count + 7'd1;
    nb_add.ecn = m1.ecn | b1_d.ecn;
    nb_add.cwnd = cwnd_lt ? b1_d.cwnd : m1.cwnd;
    nb_add.elems = m1.elems;
    nb_add.etype = m1.etype;
  end

  bank_meta_t m, b2_nb_first, b2_nb_add;
  logic       win_ok_r, new_gen_r, first_c_r, add_c_r, top_c_r, dup_r, elems_ne_r, type_ne_r, count_done;
  logic [7:0] fan_in_m1;
  logic       fan_in_zero;
  logic       ok, fan_in_le1;
  logic [NUM_GLOBAL_COUNTERS-1:0] counter_bit;
  always_ff @(posedge clk) begin
    b2_valid <= rst ? 1'b0 : b1_valid;
    d <= b1_d;
    d_hit <= b1_hit;
    d_entry <= b1_entry;
    d_gen <= b1_gen;
    b2_slot <= b1_slot;
    bank <= b1_bank;
    b2_cur <= cur_word;
    m <= m1;
    b2_nb_first <= nb_first;
    b2_nb_add <= nb_add;
    ok <= b1_ok;
    fan_in_le1 <= b1_fan_in_le1;
    counter_bit <= b1_counter_bit;
    win_ok_r <= win_ok;
    new_gen_r <= new_gen;
    first_c_r <= first_c;
    add_c_r <= add_c;
    top_c_r <= first_c && eq_next;
    dup_r <= dup;
    elems_ne_r <= elems_ne;
    type_ne_r <= type_ne;
    fan_in_m1 <= b1_fan_in_m1;
    fan_in_zero <= b1_fan_in_zero;
  end

  // ---- B2: the rules of engine.hpp on the flags
  assign count_done = count_done_of(m.count, fan_in_zero, fan_in_m1);  // an addition completes the slot
  logic [2:0]  kind;
  logic        emit;
  logic [2:0]  action;
  logic [4:0]  drop_counter;
  logic [NUM_GLOBAL_COUNTERS-1:0] g_inc;
  logic [NUM_ENTRY_COUNTERS-1:0]  e_inc;
  logic        first, add, done;

  always_comb begin
    kind = K_DROP;
    emit = 1'b0;
    action = A_DROPPED;
    drop_counter = 5'd0;
    g_inc = '0;
    e_inc = '0;
    first = 1'b0;
    add = 1'b0;
    done = 1'b0;
    g_inc[GC_FRAMES_IN] = 1'b1;
    if (d.verdict == V_PASS) begin
      kind = K_PASS;
      action = A_PASSED;
      g_inc = g_inc | counter_bit;
    end else if (d.verdict == V_DROP) begin
      drop_counter = d.counter;
      g_inc = g_inc | counter_bit;
    end else begin
      g_inc[GC_PANAMA_IN] = 1'b1;
      if (d.retrans) g_inc[GC_RETRANS_IN] = 1'b1;
      if (!d_hit) begin
        drop_counter = 5'(GC_DROP_UNKNOWN_ENTRY);
        g_inc[GC_DROP_UNKNOWN_ENTRY] = 1'b1;
      end else begin
        if (d.retrans) e_inc[EC_RETRANS_IN] = 1'b1;
        if (!ok) begin
          e_inc[EC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          g_inc[GC_DROP_CHILD_NOT_ALLOWED] = 1'b1;
          drop_counter = 5'(GC_DROP_CHILD_NOT_ALLOWED);
        end else if (!win_ok_r) begin
          e_inc[EC_DROP_SEQ_WINDOW] = 1'b1;
          g_inc[GC_DROP_SEQ_WINDOW] = 1'b1;
          drop_counter = 5'(GC_DROP_SEQ_WINDOW);
        end else if (new_gen_r) begin
          // First contribution of this generation: stored as it arrives.
          first = 1'b1;
          done = fan_in_le1;
        end else if (m.state == S_DONE) begin
          if (d.retrans && type_ne_r) begin
            // a retransmission of another type than the bank's
            e_inc[EC_DROP_TYPE_MISMATCH] = 1'b1;
            g_inc[GC_DROP_TYPE_MISMATCH] = 1'b1;
            drop_counter = 5'(GC_DROP_TYPE_MISMATCH);
          end else if (d.retrans) begin
            g_inc[GC_RETRANS_SERVED] = 1'b1;
            e_inc[EC_RETRANS_SERVED] = 1'b1;
            kind = K_READ;
            emit = 1'b1;
            action = A_REEMITTED;
          end else begin
            e_inc[EC_DUPLICATES] = 1'b1;
            g_inc[GC_DUPLICATES] = 1'b1;
            drop_counter = 5'(GC_DUPLICATES);
          end
        end else if (dup_r) begin
          e_inc[EC_DUPLICATES] = 1'b1;
          g_inc[GC_DUPLICATES] = 1'b1;
          drop_counter = 5'(GC_DUPLICATES);
        end else if (type_ne_r) begin
          e_inc[EC_DROP_TYPE_MISMATCH] = 1'b1;
          g_inc[GC_DROP_TYPE_MISMATCH] = 1'b1;
          drop_counter = 5'(GC_DROP_TYPE_MISMATCH);
        end else if (elems_ne_r) begin
          e_inc[EC_DROP_COUNT_MISMATCH] = 1'b1;
          g_inc[GC_DROP_COUNT_MISMATCH] = 1'b1;
          drop_counter = 5'(GC_DROP_COUNT_MISMATCH);
        end else begin
          add = 1'b1;
          done = count_done;
        end
        if (first || add) begin
          kind = first ? K_FIRST : K_ADD;
          g_inc[GC_AGGREGATED] = 1'b1;
          e_inc[EC_AGGREGATED] = 1'b1;
          if (d.ecn == 2'(ECN_CE)) begin
            g_inc[GC_ECN_MARKED] = 1'b1;
            e_inc[EC_ECN_MARKED] = 1'b1;
          end
          action = A_AGGREGATED;
          if (done) begin
            g_inc[GC_EMITTED] = 1'b1;
            e_inc[EC_EMITTED] = 1'b1;
            emit = 1'b1;
            action = A_EMITTED;
          end
        end
      end
    end
  end

  // ---- B2: the new metadata word of the slot (the current word where
  // nothing changes, so the forward path may take it whether or not it is
  // written), written back and kept for the forward path
  bank_meta_t nb;
  logic       word_write;
  always_comb begin
    // first / add of the rules above, from the flags B1 prepared
    nb = (ok && first_c_r) ? b2_nb_first : ((ok && add_c_r) ? b2_nb_add : m);
    if (ok && add_c_r && count_done) nb.state = S_DONE;
    new_word = b2_cur;
    if (ok && top_c_r) new_word.top = d_gen;
    if (bank) new_word.b1 = nb;
    else new_word.b0 = nb;
    word_write = ok && (first_c_r || add_c_r);
  end
  always_ff @(posedge clk) last_word_reg <= new_word;

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

  // The metadata write port: the clear engine or the frame in B2 (never
  // both: no frame is admitted while clearing).
  always_ff @(posedge clk) begin
    if (clearing_reg) meta[SLOT_BITS'(clear_ptr_reg)] <= '0;
    else if (b2_valid && word_write) meta[b2_slot] <= new_word;
  end

  // ---- the decided action, the counter increments and the status, registered
  always_ff @(posedge clk) begin
    out_valid <= rst ? 1'b0 : b2_valid;
    out_decided.kind <= kind;
    out_decided.emit <= emit;
    out_decided.retrans <= kind == K_READ;
    out_decided.beats <= d.beats;
    out_decided.len <= d.len;
    out_decided.entry <= 8'(d_entry);
    out_decided.base <= b2_base;
    out_decided.ecn <= nb.ecn;
    out_decided.cwnd <= nb.cwnd;
    out_decided.elems <= nb.elems;
    out_decided.etype <= nb.etype;
    out_decided.seq <= nb.seq;
    inc_valid <= rst ? 1'b0 : b2_valid;
    inc_entry <= d_entry;
    global_inc <= g_inc;
    entry_inc <= e_inc;
    entry_inc_valid <= !rst && b2_valid && d.verdict == V_PANAMA && d_hit;
    status_decision_valid <= rst ? 1'b0 : b2_valid;
    status_decision_action <= action;
    status_decision_counter <= drop_counter;
    status_decision_entry <= (d.verdict == V_PANAMA && d_hit) ? 8'(d_entry) : 8'hFF;
  end

  // Entry fields the decision does not use (the header builder does).
  logic unused;
  assign unused = ^{entry.enabled, entry.root, entry.job, entry.tree, entry.count, entry.out_child, entry.eth_dst,
                    entry.base[31:SLOT_BITS], clear_range_base[31:SLOT_BITS+1], clear_range_end[31:SLOT_BITS+1],
                    entry.eth_src, entry.ip_src, entry.ip_dst, entry.udp_src, entry.udp_dst, entry.ttl,
                    entry.dscp, d, b1_d.job, b1_d.tree, r_off, c_r0.state, c_r1.state,
                    c_f0.state, c_f1.state, c_r0.ecn, c_r1.ecn, c_f0.ecn, c_f1.ecn, c_r0.count, c_r1.count,
                    c_f0.count, c_f1.count};
endmodule
`default_nettype wire
