// Data pipeline: replays each stored frame with its action, one beat per
// clock. Beat 0 of an emitted aggregate is the built header; slot words are
// read, summed with the frame's payload by 32 fp32 adders and written back
// (K_ADD), written as they arrive (K_FIRST) or read out for a re-emission
// (K_READ). Passed frames go out as they came; dropped frames are popped.
//
// The slot memory has rows of 32 fp32 accumulators (1024 bits, two 512-bit
// halves): element k of a slot bank is lane k % 32 of row k / 32, whatever
// the type. A word address counts half rows (row * 2 + half). An fp32 beat
// (16 elements) reads the row and adds into, and writes, one half; a bf16 or
// fp16 beat (32 elements, widened to fp32) the whole row. The adders' `b`
// operand is {beat, beat} for fp32, so the 16 lanes of either half meet the
// beat's elements; the other half's sums are never written or sent.
//
//   issue  -> p1            slot-memory read address (registered)
//          -> p1+RD_LAT-1   the frame beat widened (16-bit) or doubled (fp32)
//          -> p1+RD_LAT     = PA: read data; forward mux; adder stage 1
//          -> PA+ADD_LAT    = PR: sum; rounding stage R1 (panama_elem16_round)
//          -> PR+1          = PW: slot-memory write (registered data, address);
//                                 rounding stage R2
//          -> PR+OUT_LAT    = PO: output FIFO (the half row of an fp32 beat,
//                                 or the row rounded to bf16 / fp16)
//
// The slot memory is UltraRAM (ram_style "ultra"), two arrays of 512-bit
// halves with one row address: a registered read and RD_LAT - 1 output
// registers, written as Vivado's UltraRAM template writes them (each
// enabled by the read enable delayed with it), so that Vivado can move them
// into the cascade of a large matrix (UG901 "Pipelining the RAM";
// docs/rtl.md, "Memories").
//
// The read-add-write loop of a slot word is ADD_LAT = D clocks long (the
// adder's pipeline, panama_fp32_add: 2). Read-after-write, per half row:
// the beats in PR .. PW+RD_LAT had not written their half rows when the
// read of the beat in PA was launched (PW+RD_LAT writes in the clock that
// read is launched, so the memory's choice on a collision never matters),
// so each half of PA's operand comes from the newest of them that writes
// that half of the same row, decided ahead and registered: no address
// comparison in the loop, and for RD_LAT >= 3 the address comparisons run
// when the beat is issued (p1), the priority in p2 and only a one-hot
// multiplexer in PA-1. A beat that reads a word (K_ADD, K_READ) needs the
// previous contribution's sum, which exists D clocks after that
// contribution was issued: the issuer holds such a beat while a write to the
// same row was issued fewer than D clocks earlier (the hazard flag is itself
// computed a clock ahead). Frames to different slot banks, and frames of at
// least D - 1 payload words, never wait. With D = 2 no beat waits at all: a
// frame is a header beat and at least one word, so contributions of
// back-to-back frames to one word are 2 clocks apart (the hazard check is
// empty and stays for deeper adders). None of this depends on RD_LAT.
//
// The issuer only issues a beat the output FIFO will have room for, so
// m_axis back-pressure stalls without loss.
`default_nettype none
module panama_datapath #(
    // 1024-bit rows in the slot memory (slots * 2 banks * rows per bank).
    parameter int DATA_ROWS = 512 * 2 * 72,
    // Output FIFO depth in beats (a power of two, at least the issue to
    // output round trip PO + 4 for one beat per clock).
    parameter int OUT_FIFO_DEPTH = 32,
    // Slot-memory read latency in clocks (registered address to data): the
    // memory's read register and RD_LAT - 1 output registers (1 for block
    // RAM; the engine's default is the UltraRAM matrix's, docs/rtl.md).
    parameter int RD_LAT = 12,
    // Row address bits and word (half-row) address bits (derived).
    parameter int ROW_BITS = DATA_ROWS > 1 ? $clog2(DATA_ROWS) : 1,
    parameter int DADDR_BITS = ROW_BITS + 1
) (
    input  wire logic                          clk,
    input  wire logic                          rst,

    // Actions, one per frame in frame order.
    input  wire panama_engine_pkg::action_t    s_act,
    input  wire logic                          s_act_valid,
    output logic                               s_act_ready,

    // Stored input beats.
    input  wire logic                  [511:0] s_beat_data,
    input  wire logic                          s_beat_valid,
    output logic                               s_beat_ready,

    output logic                       [511:0] m_axis_tdata,
    output logic                       [63:0]  m_axis_tkeep,
    output logic                               m_axis_tvalid,
    input  wire logic                          m_axis_tready,
    output logic                               m_axis_tlast,

    // No beat in flight and the output FIFO empty.
    output logic                               status_empty
);
  import panama_engine_pkg::*;

  // Adder pipeline depth = length of the read-add-write loop (D).
  localparam int ADD_LAT = 2;
  // Result to output FIFO: the rounding to bf16 / fp16 (panama_elem16_round).
  localparam int OUT_LAT = 2;
  localparam int PA = 1 + RD_LAT;      // operand stage
  localparam int PR = PA + ADD_LAT;    // result stage
  localparam int PW = PR + 1;          // slot-memory write stage
  localparam int PO = PR + OUT_LAT;    // output stage (output FIFO write)
  localparam int NST = PW + RD_LAT;    // last stage a result is forwarded from
  localparam int NOLD = RD_LAT + 1;    // results forwarded from p_res (PR+1 .. NST)

  initial begin
    if (RD_LAT < 1) $error("%m: RD_LAT must be at least 1");
    if (OUT_FIFO_DEPTH < PO + 4) $error("%m: OUT_FIFO_DEPTH must be at least the pipeline depth + 4");
  end

  // ---- Issuer. The action being issued is held in cur (loaded from the
  // head of the action FIFO when the previous one is done), together with
  // registered flags for its current beat, computed a clock ahead (for beat 0
  // from the FIFO head, else for the next beat), so the issue decision is a
  // few gates on registers.
  panama_engine_pkg::action_t cur;
  logic       cur_valid;
  logic       cur_wide, cur_fp16;  // bf16 or fp16 payload (a beat is a whole row); fp16
  logic [7:0] beat_inc_reg;  // the beat of cur being issued + 1
  logic [7:0] cur_out_beats_m1, cur_issue_m1;  // out_beats - 1, issue - 1
  logic [6:0] cur_last_bytes;  // bytes in the last output beat
  logic [DADDR_BITS-1:0] cur_base_inc;  // base + one beat's words
  // Flags of beat_reg: header beat, pops an input beat, reads/writes a slot
  // word, gives an output beat, the last output beat, the last beat.
  logic       f_hdr, f_pop, f_mem, f_reads, f_writes, f_out, f_last_out, f_last;
  logic [$clog2(OUT_FIFO_DEPTH)+1:0] out_count;
  logic [$clog2(OUT_FIFO_DEPTH)+1:0] credits_reg;  // output beats the FIFO can still take
  logic       credit_ok_reg;                       // credits_reg != 0
  logic       issue, load, out_pop;
  logic [DADDR_BITS-1:0] addr_reg, addr_inc_reg;  // word address of beat_reg (beats >= 1), and + one beat
  logic       hazard_reg;  // a write to addr_reg's row was issued fewer than ADD_LAT clocks ago

  always_comb begin
    issue = cur_valid && (!f_pop || s_beat_valid) && credit_ok_reg && !(f_reads && hazard_reg);
    load = !cur_valid || (issue && f_last);
  end
  assign s_beat_ready = issue && f_pop;
  assign s_act_ready = load;

  function automatic is_mem_kind(input logic [2:0] k);
    is_mem_kind = k == K_FIRST || k == K_ADD || k == K_READ;
  endfunction
  function automatic is_read_kind(input logic [2:0] k);
    is_read_kind = k == K_ADD || k == K_READ;
  endfunction
  function automatic is_write_kind(input logic [2:0] k);
    is_write_kind = k == K_FIRST || k == K_ADD;
  endfunction

  always_ff @(posedge clk) begin
    if (rst) cur_valid <= 1'b0;
    else if (load) cur_valid <= s_act_valid;
    if (load) begin
      cur <= s_act;
      cur_wide <= s_act.etype[1];
      cur_fp16 <= s_act.etype == 2'd3;
      beat_inc_reg <= 8'd1;
      cur_out_beats_m1 <= s_act.out_beats - 8'd1;
      cur_issue_m1 <= s_act.issue - 8'd1;
      cur_last_bytes <= 7'(s_act.out_len - {2'd0, s_act.out_beats - 8'd1, 6'd0});
      cur_base_inc <= DADDR_BITS'(s_act.base) + (s_act.etype[1] ? DADDR_BITS'(2) : DADDR_BITS'(1));
      // beat 0: the header beat, never a slot word
      f_hdr <= 1'b1;
      f_pop <= s_act.in_beats != 8'd0;
      f_mem <= 1'b0;
      f_reads <= 1'b0;
      f_writes <= 1'b0;
      f_out <= s_act.out_beats != 8'd0;
      f_last_out <= s_act.out_beats == 8'd1;
      f_last <= s_act.issue == 8'd1;
    end else if (issue) begin
      beat_inc_reg <= beat_inc_reg + 8'd1;
      f_hdr <= 1'b0;
      f_pop <= beat_inc_reg < cur.in_beats;
      f_mem <= is_mem_kind(cur.kind) && beat_inc_reg <= cur.words;
      f_reads <= is_read_kind(cur.kind) && beat_inc_reg <= cur.words;
      f_writes <= is_write_kind(cur.kind) && beat_inc_reg <= cur.words;
      f_out <= beat_inc_reg < cur.out_beats;
      f_last_out <= beat_inc_reg == cur_out_beats_m1;
      f_last <= beat_inc_reg == cur_issue_m1;
    end
  end

  // Output credits: every output beat issued takes one, every beat the
  // output FIFO sends gives one back (pushed - sent + in flight <= depth).
  assign out_pop = m_axis_tvalid && m_axis_tready;
  always_ff @(posedge clk) begin
    if (rst) begin
      credits_reg <= ($clog2(OUT_FIFO_DEPTH) + 2)'(OUT_FIFO_DEPTH);
      credit_ok_reg <= 1'b1;
    end else if (out_pop && !(issue && f_out)) begin
      credits_reg <= credits_reg + 1'b1;
      credit_ok_reg <= 1'b1;
    end else if (!out_pop && issue && f_out) begin
      credits_reg <= credits_reg - 1'b1;
      credit_ok_reg <= credits_reg != ($clog2(OUT_FIFO_DEPTH) + 2)'(1);
    end
  end

  // Pipeline tokens, stage k = clocks since issue (1 .. NST).
  localparam logic [1:0] OP_NONE = 2'd0, OP_FIRST = 2'd1, OP_ADD = 2'd2, OP_READ = 2'd3;
  logic                  p_valid[1:PO];
  logic [1:0]            p_op[1:PR];
  logic [DADDR_BITS-1:0] p_addr[1:NST];
  logic                  p_out[1:PO], p_last[1:PO];
  logic                  p_wide[1:PR];    // a bf16 / fp16 slot beat: widened operand, rounded output
  logic                  p_fp16[1:PR];
  logic [63:0]           p_keep[2:PO];
  logic [6:0]            p_lastb1;        // bytes in the last output beat (stage 1)
  logic [511:0]          p_b[1:PA-1];     // frame beat (adder operand b / passed data), as it came
  logic [1023:0]         p_bw;            // in PA: p_b widened (16-bit) or doubled
  logic [1023:0]         bw_next;
  logic [1023:0]         p_byp[PA+1:PR];  // result of a beat that does not add
  logic [1023:0]         res;             // result of the beat in PR
  logic [1023:0]         p_res[PR+1:NST]; // results; written from PW, forwarded until NST
  logic [1:0]            p_wm[1:NST];     // halves the beat writes when in PW ({upper, lower})
  logic                  p_re1;           // the beat in p1 reads the slot memory
  logic                  mem_re[0:RD_LAT-1];  // enables of the read register and the output registers
  logic [1023:0]         mem_rd[0:RD_LAT-1];
  logic [1023:0]         fwd_a, sum;

  // UltraRAM on UltraScale+ (Vivado infers block RAM without the attribute):
  // the lower and the upper 512 bits of each row.
  (* ram_style = "ultra" *)
  logic [511:0] dmem_lo[DATA_ROWS];
  (* ram_style = "ultra" *)
  logic [511:0] dmem_hi[DATA_ROWS];


  always_ff @(posedge clk) begin
    p_valid[1] <= rst ? 1'b0 : issue;
    p_op[1] <= !f_mem ? OP_NONE : (cur.kind == K_FIRST ? OP_FIRST : (cur.kind == K_ADD ? OP_ADD : OP_READ));
    // an fp32 beat writes the half its word address names, a 16-bit beat both
    p_wm[1] <= (!rst && issue && f_writes) ? (cur_wide ? 2'b11 : (addr_reg[0] ? 2'b10 : 2'b01)) : 2'b00;
    p_re1 <= !rst && issue && f_reads;
    p_addr[1] <= addr_reg;
    p_wide[1] <= f_mem && cur_wide;
    p_fp16[1] <= cur_fp16;
    p_b[1] <= (f_hdr && cur.emit) ? cur.hdr : s_beat_data;
    p_out[1] <= f_out;
    p_last[1] <= f_last_out;
    p_lastb1 <= cur_last_bytes;
    // the last output beat's tkeep, one stage later: byte j is kept when
    // j < bytes (a compare with a constant per bit, not a shifter)
    for (int j = 0; j < 64; j++) p_keep[2][j] <= !p_last[1] || 7'(j) < p_lastb1;
    for (int k = 2; k <= NST; k++) begin
      p_wm[k] <= rst ? 2'b00 : p_wm[k-1];
      p_addr[k] <= p_addr[k-1];
    end
    for (int k = 2; k <= PR; k++) begin
      p_op[k] <= p_op[k-1];
      p_wide[k] <= p_wide[k-1];
      p_fp16[k] <= p_fp16[k-1];
    end
    for (int k = 2; k <= PO; k++) begin
      p_valid[k] <= rst ? 1'b0 : p_valid[k-1];
      p_out[k] <= p_out[k-1];
      p_last[k] <= p_last[k-1];
    end
    for (int k = 3; k <= PO; k++) p_keep[k] <= p_keep[k-1];
    for (int k = 2; k <= PA - 1; k++) p_b[k] <= p_b[k-1];
    p_bw <= bw_next;
    p_byp[PA+1] <= p_op[PA] == OP_READ ? fwd_a : p_bw;
    for (int k = PA + 2; k <= PR; k++) p_byp[k] <= p_byp[k-1];
    p_res[PR+1] <= res;
    for (int k = PR + 2; k <= NST; k++) p_res[k] <= p_res[k-1];
  end

  // The adders' b operand, registered into PA: a 16-bit payload beat
  // widened to 32 fp32 lanes, any other beat doubled.
  panama_elem16_widen widen (
      .beat(p_b[PA-1]),
      .wide(p_wide[PA-1]),
      .fp16(p_fp16[PA-1]),
      .out (bw_next)
  );

  // Word address of the next slot-memory beat: the bank's base at the header
  // beat, then one word (fp32) or two (a row, 16-bit) per beat; the address
  // of the beat after it is kept registered too.
  always_ff @(posedge clk) begin
    if (issue) begin
      if (f_hdr) begin
        addr_reg <= DADDR_BITS'(cur.base);
        addr_inc_reg <= cur_base_inc;
      end else begin
        addr_reg <= addr_inc_reg;
        addr_inc_reg <= addr_inc_reg + (cur_wide ? DADDR_BITS'(2) : DADDR_BITS'(1));
      end
    end
  end

  // Row equality and a write flag on the carry chain (a LUT per three
  // address bits, the chain ANDs the groups and the flag), as vendor
  // comparators do.
  localparam int AG = (ROW_BITS + 2) / 3;  // 3-bit groups of a row address
  function automatic row_hit(input logic we, input logic [ROW_BITS-1:0] a, input logic [ROW_BITS-1:0] b);
    logic [3*AG-1:0] ap, bp;
    logic [AG:0] g;
    ap = (3 * AG)'(a);
    bp = (3 * AG)'(b);
    g[AG] = we;
    for (int k = 0; k < AG; k++) g[k] = ap[3*k+:3] == bp[3*k+:3];
    row_hit = (({1'b0, g} + (AG + 2)'(1)) >> (AG + 1)) != (AG + 2)'(0);
  endfunction

  // Hazard flag for the next clock. A write issued j clocks before the next
  // clock is in p_{j-1} now (j = 2 .. ADD_LAT - 1; the beat issued now never
  // writes the next beat's row, except an fp32 beat the other half of it,
  // which only a deeper adder would have to wait for). The next address is
  // addr_reg (nothing issued), addr_inc_reg (a word beat issued) or the bank
  // base (the header beat issued); all three are compared and the right one
  // chosen. Compared by row (conservative for fp32 beats: a write to the
  // other half of the row holds the beat too). Empty at ADD_LAT = 2.
  logic hz_same, hz_inc, hz_base;
  always_comb begin
    hz_same = 1'b0;
    hz_inc = 1'b0;
    hz_base = 1'b0;
    for (int j = 2; j < ADD_LAT; j++) begin
      hz_same |= row_hit(p_wm[j-1] != 2'b00, p_addr[j-1][DADDR_BITS-1:1], addr_reg[DADDR_BITS-1:1]);
      hz_inc |= row_hit(p_wm[j-1] != 2'b00, p_addr[j-1][DADDR_BITS-1:1], addr_inc_reg[DADDR_BITS-1:1]);
      hz_base |= row_hit(p_wm[j-1] != 2'b00, p_addr[j-1][DADDR_BITS-1:1], cur.base[DADDR_BITS-1:1]);
    end
  end
  always_ff @(posedge clk) begin
    if (rst) hazard_reg <= 1'b0;
    else if (!issue) hazard_reg <= hz_same;
    else if (f_hdr) hazard_reg <= hz_base;
    else hazard_reg <= hz_inc;
  end

  // Slot memory: registered read address, RD_LAT clocks to data; the write
  // is registered (PW), so it leaves from flip-flops for the whole matrix.
  // As in Vivado's UltraRAM template, the read register and each output
  // register load only with the read enable that travels with them. A read
  // takes the whole row; a write the halves of p_wm.
  always_ff @(posedge clk) begin
    mem_re[0] <= p_re1;
    for (int k = 1; k < RD_LAT; k++) mem_re[k] <= mem_re[k-1];
  end
  always_ff @(posedge clk) begin
    if (p_re1) mem_rd[0] <= {dmem_hi[p_addr[1][DADDR_BITS-1:1]], dmem_lo[p_addr[1][DADDR_BITS-1:1]]};
    for (int k = 1; k < RD_LAT; k++) if (mem_re[k-1]) mem_rd[k] <= mem_rd[k-1];
  end
  always_ff @(posedge clk) if (p_wm[PW][0]) dmem_lo[p_addr[PW][DADDR_BITS-1:1]] <= p_res[PW][511:0];
  always_ff @(posedge clk) if (p_wm[PW][1]) dmem_hi[p_addr[PW][DADDR_BITS-1:1]] <= p_res[PW][1023:512];

  // Which older beat each half of PA's operand must come from, decided a
  // clock early (the beat in PA-1 against those that will be in PR .. NST
  // next clock), the newest that writes that half of the row first: the sum
  // or the bypassed value of the beat that will be in PR, or a result (old
  // candidate i: the beat now in PR + i, res for i = 0), which is selected
  // now and registered (old_res_reg), so PA chooses among four registers.
  logic [1023:0] old_cand[NOLD];
  always_comb begin
    old_cand[0] = res;
    for (int i = 1; i < NOLD; i++) old_cand[i] = p_res[PR+i];
  end

  for (genvar h = 0; h < 2; h++) begin : g_half
    logic [1:0]   fwd_next;
    logic [511:0] old_next;
    // PA's operand: 0 memory, 1 sum, 2 bypass, 3 old_res_reg. Kept binary
    // (no FSM recoding to one-hot): the 4:1 operand mux is then one LUT6
    // per bit.
    (* fsm_encoding = "none" *)
    logic [1:0]   fwd_reg;
    logic [511:0] old_res_reg;  // a result written after PA's read was launched

    if (RD_LAT >= 3) begin : g_fwd_early
      // The address comparisons of a beat with every older beat it may take
      // a value from are made when it is in p1 (the distance between two
      // beats never changes: the pipeline does not stall), the priority in
      // p2, and the choice travels with the beat to PA-1: there only a
      // one-hot multiplexer of the candidates remains.
      localparam int FS = PA - 1;  // the stage that selects (>= 3)
      logic            hs2, hs_add2;  // the beat at distance ADD_LAT writes this half of the row (adds)
      logic [NOLD-1:0] ho2;           // old candidate i (distance ADD_LAT + 1 + i) writes it
      logic [1:0]      f_fwd[3:FS];
      logic [NOLD-1:0] f_sel[3:FS];   // one-hot: the newest old candidate
      always_ff @(posedge clk) begin
        hs2 <= row_hit(p_wm[1+ADD_LAT][h], p_addr[1+ADD_LAT][DADDR_BITS-1:1], p_addr[1][DADDR_BITS-1:1]);
        hs_add2 <= p_op[1+ADD_LAT] == OP_ADD;
        for (int i = 0; i < NOLD; i++)
          ho2[i] <= row_hit(p_wm[2+ADD_LAT+i][h], p_addr[2+ADD_LAT+i][DADDR_BITS-1:1], p_addr[1][DADDR_BITS-1:1]);
      end
      always_ff @(posedge clk) begin
        f_fwd[3] <= hs2 ? (hs_add2 ? 2'd1 : 2'd2) : (ho2 != '0 ? 2'd3 : 2'd0);
        for (int i = 0; i < NOLD; i++) f_sel[3][i] <= ho2[i] && (ho2 & NOLD'((1 << i) - 1)) == '0;
        for (int k = 4; k <= FS; k++) begin
          f_fwd[k] <= f_fwd[k-1];
          f_sel[k] <= f_sel[k-1];
        end
      end
      always_comb begin
        fwd_next = f_fwd[FS];
        old_next = '0;
        for (int i = 0; i < NOLD; i++) old_next |= f_sel[FS][i] ? old_cand[i][512*h+:512] : 512'd0;
      end
    end else begin : g_fwd_late
      // Short read latency: the comparisons are made in PA-1 itself.
      always_comb begin
        fwd_next = 2'd0;
        old_next = res[512*h+:512];
        for (int i = NOLD - 1; i >= 0; i--) begin
          if (row_hit(p_wm[PR+i][h], p_addr[PR+i][DADDR_BITS-1:1], p_addr[PA-1][DADDR_BITS-1:1])) begin
            fwd_next = 2'd3;
            old_next = old_cand[i][512*h+:512];  // p_res[PR+i+1] next clock
          end
        end
        if (row_hit(p_wm[PR-1][h], p_addr[PR-1][DADDR_BITS-1:1], p_addr[PA-1][DADDR_BITS-1:1]))
          fwd_next = p_op[PR-1] == OP_ADD ? 2'd1 : 2'd2;
      end
    end
    always_ff @(posedge clk) begin
      fwd_reg <= fwd_next;
      old_res_reg <= old_next;
    end

    logic [511:0] a_half;
    always_comb begin
      case (fwd_reg)
        2'd1: a_half = sum[512*h+:512];
        2'd2: a_half = p_byp[PR][512*h+:512];
        2'd3: a_half = old_res_reg;
        default: a_half = mem_rd[RD_LAT-1][512*h+:512];
      endcase
    end
    assign fwd_a[512*h+:512] = a_half;
  end

  panama_fp32_add16 #(
      .LANES(32)
  ) adders (
      .clk(clk),
      .a  (fwd_a),
      .b  (p_bw),
      .sum(sum)
  );

  assign res = p_op[PR] == OP_ADD ? sum : p_byp[PR];

  // The output beat: an fp32 beat's half row, or a 16-bit beat's row rounded
  // to its type (OUT_LAT clocks).
  logic [511:0] out_data;
  panama_elem16_round round (
      .clk(clk),
      .in_x(res),
      .in_round(p_wide[PR]),
      .in_fp16(p_fp16[PR]),
      .in_hi(p_addr[PR][0]),
      .out(out_data)
  );

  logic out_s_ready;
  panama_fifo #(
      .WIDTH(512 + 64 + 1),
      .DEPTH(OUT_FIFO_DEPTH)
  ) out_fifo (
      .clk(clk),
      .rst(rst),
      .s_data({out_data, p_keep[PO], p_last[PO]}),
      .s_valid(p_valid[PO] && p_out[PO]),
      .s_ready(out_s_ready),
      .m_data({m_axis_tdata, m_axis_tkeep, m_axis_tlast}),
      .m_valid(m_axis_tvalid),
      .m_ready(m_axis_tready),
      .count(out_count)
  );

  logic any_valid;
  always_comb begin
    any_valid = 1'b0;
    for (int k = 1; k <= PO; k++) any_valid |= p_valid[k];
    for (int k = PR + 1; k <= PW; k++) any_valid |= p_wm[k] != 2'b00;
  end
  assign status_empty = !cur_valid && !any_valid && out_count == '0;

  // The issuer's credit check guarantees room in the output FIFO.
  logic unused;
  assign unused = ^{out_s_ready, cur.base[31:DADDR_BITS], cur.out_len, cur.issue, cur.etype};
endmodule
`default_nettype wire
