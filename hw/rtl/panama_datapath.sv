// Data pipeline: replays each stored frame with its action, one beat per
// clock. Beat 0 of an emitted aggregate is the built header; slot words are
// read, summed with the frame's payload by 16 fp32 adders and written back
// (K_ADD), written as they arrive (K_FIRST) or read out for a re-emission
// (K_READ). Passed frames go out as they came; dropped frames are popped.
//
//   issue  -> p1            slot-memory read address (registered)
//          -> p1+RD_LAT     = PA: read data; forward mux; adder stage 1
//          -> PA+ADD_LAT    = PR: sum; output FIFO
//          -> PR+1          = PW: slot-memory write (registered data, address)
//
// The slot memory is UltraRAM (ram_style "ultra"): a registered read and
// RD_LAT - 1 output registers, written as Vivado's UltraRAM template writes
// them (each enabled by the read enable delayed with it), so that Vivado
// can move them into the cascade of a large matrix (UG901 "Pipelining the
// RAM"; docs/rtl.md, "Memories").
//
// The read-add-write loop of a slot word is ADD_LAT = D clocks long (the
// adder's pipeline, panama_fp32_add: 2). Read-after-write: the beats in
// PR .. PW+RD_LAT had not written their word when the read of the beat in
// PA was launched (PW+RD_LAT writes in the clock that read is launched, so
// the memory's choice on a collision never matters), so PA takes its operand
// from the newest of them with the same address, decided ahead and
// registered: no address comparison in the loop, and for RD_LAT >= 3 the
// address comparisons run when the beat is issued (p1), the priority in p2
// and only a one-hot multiplexer in PA-1. A beat that reads a word (K_ADD,
// K_READ) needs the previous contribution's sum, which exists D clocks after
// that contribution was issued: the issuer holds such a beat while a write
// to the same word was issued fewer than D clocks earlier (the hazard flag is
// itself computed a clock ahead). Frames to different slot banks, and frames
// of at least D - 1 payload words, never wait. With D = 2 no beat waits at
// all: a frame is a header beat and at least one word, so contributions of
// back-to-back frames to one word are 2 clocks apart (the hazard check is
// empty and stays for deeper adders). None of this depends on RD_LAT.
//
// The issuer only issues a beat the output FIFO will have room for, so
// m_axis back-pressure stalls without loss.
`default_nettype none
module panama_datapath #(
    // 512-bit words in the slot memory (slots * 2 banks * words per bank).
    parameter int DATA_WORDS = 512 * 2 * 144,
    // Output FIFO depth in beats (a power of two, at least the issue to
    // output round trip PR + 4 for one beat per clock).
    parameter int OUT_FIFO_DEPTH = 32,
    // Slot-memory read latency in clocks (registered address to data): the
    // memory's read register and RD_LAT - 1 output registers (1 for block
    // RAM; the engine's default is the UltraRAM matrix's, docs/rtl.md).
    parameter int RD_LAT = 14,
    // Word address bits (derived).
    parameter int DADDR_BITS = $clog2(DATA_WORDS)
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
  localparam int PA = 1 + RD_LAT;      // operand stage
  localparam int PR = PA + ADD_LAT;    // result stage
  localparam int PW = PR + 1;          // slot-memory write stage
  localparam int NST = PW + RD_LAT;    // last stage a result is forwarded from
  localparam int NOLD = RD_LAT + 1;    // results forwarded from p_res (PR+1 .. NST)

  initial begin
    if (RD_LAT < 1) $error("%m: RD_LAT must be at least 1");
    if (OUT_FIFO_DEPTH < PR + 4) $error("%m: OUT_FIFO_DEPTH must be at least the pipeline depth + 4");
  end

  // ---- Issuer. The action being issued is held in cur (loaded from the
  // head of the action FIFO when the previous one is done), together with
  // registered flags for its current beat, computed a clock ahead (for beat 0
  // from the FIFO head, else for the next beat), so the issue decision is a
  // few gates on registers.
  panama_engine_pkg::action_t cur;
  logic       cur_valid;
  logic [7:0] beat_inc_reg;  // the beat of cur being issued + 1
  logic [7:0] cur_out_beats_m1, cur_issue_m1;  // out_beats - 1, issue - 1
  logic [6:0] cur_last_bytes;  // bytes in the last output beat
  logic [DADDR_BITS-1:0] cur_base_inc;  // base + 1
  // Flags of beat_reg: header beat, pops an input beat, reads/writes a slot
  // word, gives an output beat, the last output beat, the last beat.
  logic       f_hdr, f_pop, f_mem, f_reads, f_writes, f_out, f_last_out, f_last;
  logic [$clog2(OUT_FIFO_DEPTH)+1:0] out_count;
  logic [$clog2(OUT_FIFO_DEPTH)+1:0] credits_reg;  // output beats the FIFO can still take
  logic       credit_ok_reg;                       // credits_reg != 0
  logic       issue, load, out_pop;
  logic [DADDR_BITS-1:0] addr_reg, addr_inc_reg;  // word address of beat_reg (beats >= 1), and + 1
  logic       hazard_reg;  // a write to addr_reg was issued fewer than ADD_LAT clocks ago

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
      beat_inc_reg <= 8'd1;
      cur_out_beats_m1 <= s_act.out_beats - 8'd1;
      cur_issue_m1 <= s_act.issue - 8'd1;
      cur_last_bytes <= 7'(s_act.out_len - {2'd0, s_act.out_beats - 8'd1, 6'd0});
      cur_base_inc <= DADDR_BITS'(s_act.base) + DADDR_BITS'(1);
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
  logic                  p_valid[1:PR];
  logic [1:0]            p_op[1:PR];
  logic [DADDR_BITS-1:0] p_addr[1:NST];
  logic                  p_out[1:PR], p_last[1:PR];
  logic [63:0]           p_keep[2:PR];
  logic [6:0]            p_lastb1;        // bytes in the last output beat (stage 1)
  logic [511:0]          p_b[1:PA];       // frame beat (adder operand b / passed data)
  logic [511:0]          p_byp[PA+1:PR];  // result of a beat that does not add
  logic [511:0]          res;             // result of the beat in PR
  logic [511:0]          p_res[PR+1:NST]; // results; written from PW, forwarded until NST
  logic                  p_we[1:NST];     // writes the slot memory when in PW
  logic                  p_re1;           // the beat in p1 reads the slot memory
  logic                  mem_re[0:RD_LAT-1];  // enables of the read register and the output registers
  logic [511:0]          mem_rd[0:RD_LAT-1];
  logic [511:0]          fwd_a, sum;
  // PA's operand: 0 memory, 1 sum, 2 bypass, 3 old_res_reg. Kept binary (no
  // FSM recoding to one-hot): the 4:1 operand mux is then one LUT6 per bit.
  (* fsm_encoding = "none" *)
  logic [1:0]            fwd_reg;
  logic [511:0]          old_res_reg;     // a result written after PA's read was launched

  // UltraRAM on UltraScale+ (Vivado infers block RAM without the attribute).
  (* ram_style = "ultra" *)
  logic [511:0] dmem[DATA_WORDS];

  always_ff @(posedge clk) begin
    p_valid[1] <= rst ? 1'b0 : issue;
    p_op[1] <= !f_mem ? OP_NONE : (cur.kind == K_FIRST ? OP_FIRST : (cur.kind == K_ADD ? OP_ADD : OP_READ));
    p_we[1] <= !rst && issue && f_writes;
    p_re1 <= !rst && issue && f_reads;
    p_addr[1] <= addr_reg;
    p_b[1] <= (f_hdr && cur.emit) ? cur.hdr : s_beat_data;
    p_out[1] <= f_out;
    p_last[1] <= f_last_out;
    p_lastb1 <= cur_last_bytes;
    // the last output beat's tkeep, one stage later (64 - bytes zero bits on top)
    p_keep[2] <= p_last[1] ? (64'hFFFFFFFFFFFFFFFF >> (7'd64 - p_lastb1)) : '1;
    for (int k = 2; k <= NST; k++) begin
      p_we[k] <= !rst && p_we[k-1];
      p_addr[k] <= p_addr[k-1];
    end
    for (int k = 2; k <= PR; k++) begin
      p_valid[k] <= rst ? 1'b0 : p_valid[k-1];
      p_op[k] <= p_op[k-1];
      p_out[k] <= p_out[k-1];
      p_last[k] <= p_last[k-1];
    end
    for (int k = 3; k <= PR; k++) p_keep[k] <= p_keep[k-1];
    for (int k = 2; k <= PA; k++) p_b[k] <= p_b[k-1];
    p_byp[PA+1] <= p_op[PA] == OP_READ ? fwd_a : p_b[PA];
    for (int k = PA + 2; k <= PR; k++) p_byp[k] <= p_byp[k-1];
    p_res[PR+1] <= res;
    for (int k = PR + 2; k <= NST; k++) p_res[k] <= p_res[k-1];
  end

  // Word address of the next slot-memory beat: the bank's base at the header
  // beat, then one word per beat; addr_reg + 1 is kept registered too.
  always_ff @(posedge clk) begin
    if (issue) begin
      if (f_hdr) begin
        addr_reg <= DADDR_BITS'(cur.base);
        addr_inc_reg <= cur_base_inc;
      end else begin
        addr_reg <= addr_inc_reg;
        addr_inc_reg <= addr_inc_reg + DADDR_BITS'(1);
      end
    end
  end

  // Hazard flag for the next clock. A write issued j clocks before the next
  // clock is in p_{j-1} now (j = 2 .. ADD_LAT - 1; the beat issued now never
  // writes the next beat's word). The next address is addr_reg (nothing
  // issued), addr_reg + 1 (a word beat issued) or the bank base (the header
  // beat issued); all three are compared and the right one chosen.
  // "A write is in flight to this word": the address equality on the carry
  // chain (a LUT per three address bits, the chain ANDs the groups and the
  // write flag), as vendor comparators do.
  localparam int AG = (DADDR_BITS + 2) / 3;  // 3-bit groups of a word address
  function automatic addr_hit(input logic we, input logic [DADDR_BITS-1:0] a, input logic [DADDR_BITS-1:0] b);
    logic [3*AG-1:0] ap, bp;
    logic [AG:0] g;
    ap = (3 * AG)'(a);
    bp = (3 * AG)'(b);
    g[AG] = we;
    for (int k = 0; k < AG; k++) g[k] = ap[3*k+:3] == bp[3*k+:3];
    addr_hit = (({1'b0, g} + (AG + 2)'(1)) >> (AG + 1)) != (AG + 2)'(0);
  endfunction

  logic hz_same, hz_inc, hz_base;
  always_comb begin
    hz_same = 1'b0;
    hz_inc = 1'b0;
    hz_base = 1'b0;
    for (int j = 2; j < ADD_LAT; j++) begin
      hz_same |= addr_hit(p_we[j-1], p_addr[j-1], addr_reg);
      hz_inc |= addr_hit(p_we[j-1], p_addr[j-1], addr_inc_reg);
      hz_base |= addr_hit(p_we[j-1], p_addr[j-1], DADDR_BITS'(cur.base));
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
  // register load only with the read enable that travels with them.
  always_ff @(posedge clk) begin
    mem_re[0] <= p_re1;
    for (int k = 1; k < RD_LAT; k++) mem_re[k] <= mem_re[k-1];
  end
  always_ff @(posedge clk) begin
    if (p_re1) mem_rd[0] <= dmem[p_addr[1]];
    for (int k = 1; k < RD_LAT; k++) if (mem_re[k-1]) mem_rd[k] <= mem_rd[k-1];
  end
  always_ff @(posedge clk) if (p_we[PW]) dmem[p_addr[PW]] <= p_res[PW];

  // Which older beat PA must take its operand from, decided a clock early
  // (the beat in PA-1 against those that will be in PR .. NST next clock),
  // the newest first: the sum or the bypassed value of the beat that will be
  // in PR, or a result (old candidate i: the beat now in PR + i, res for i =
  // 0), which is selected now and registered (old_res_reg), so PA chooses
  // among four registers.
  logic [1:0]   fwd_next;
  logic [511:0] old_next;
  logic [511:0] old_cand[NOLD];
  always_comb begin
    old_cand[0] = res;
    for (int i = 1; i < NOLD; i++) old_cand[i] = p_res[PR+i];
  end

  if (RD_LAT >= 3) begin : g_fwd_early
    // The address comparisons of a beat with every older beat it may take
    // a value from are made when it is in p1 (the distance between two beats
    // never changes: the pipeline does not stall), the priority in p2, and
    // the choice travels with the beat to PA-1: there only a one-hot
    // multiplexer of the candidates remains.
    localparam int FS = PA - 1;  // the stage that selects (>= 3)
    logic            hs2, hs_add2;   // the beat at distance ADD_LAT writes the word (adds)
    logic [NOLD-1:0] ho2;            // old candidate i (distance ADD_LAT + 1 + i) writes the word
    logic [1:0]      f_fwd[3:FS];
    logic [NOLD-1:0] f_sel[3:FS];    // one-hot: the newest old candidate
    always_ff @(posedge clk) begin
      hs2 <= addr_hit(p_we[1+ADD_LAT], p_addr[1+ADD_LAT], p_addr[1]);
      hs_add2 <= p_op[1+ADD_LAT] == OP_ADD;
      for (int i = 0; i < NOLD; i++) ho2[i] <= addr_hit(p_we[2+ADD_LAT+i], p_addr[2+ADD_LAT+i], p_addr[1]);
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
      for (int i = 0; i < NOLD; i++) old_next |= f_sel[FS][i] ? old_cand[i] : 512'd0;
    end
  end else begin : g_fwd_late
    // Short read latency: the comparisons are made in PA-1 itself.
    always_comb begin
      fwd_next = 2'd0;
      old_next = res;
      for (int i = NOLD - 1; i >= 0; i--) begin
        if (addr_hit(p_we[PR+i], p_addr[PR+i], p_addr[PA-1])) begin
          fwd_next = 2'd3;
          old_next = old_cand[i];  // p_res[PR+i+1] next clock
        end
      end
      if (addr_hit(p_we[PR-1], p_addr[PR-1], p_addr[PA-1])) fwd_next = p_op[PR-1] == OP_ADD ? 2'd1 : 2'd2;
    end
  end
  always_ff @(posedge clk) begin
    fwd_reg <= fwd_next;
    old_res_reg <= old_next;
  end

  always_comb begin
    case (fwd_reg)
      2'd1: fwd_a = sum;
      2'd2: fwd_a = p_byp[PR];
      2'd3: fwd_a = old_res_reg;
      default: fwd_a = mem_rd[RD_LAT-1];
    endcase
  end

  panama_fp32_add16 adders (
      .clk(clk),
      .a  (fwd_a),
      .b  (p_b[PA]),
      .sum(sum)
  );

  assign res = p_op[PR] == OP_ADD ? sum : p_byp[PR];


  logic out_s_ready;
  panama_fifo #(
      .WIDTH(512 + 64 + 1),
      .DEPTH(OUT_FIFO_DEPTH)
  ) out_fifo (
      .clk(clk),
      .rst(rst),
      .s_data({res, p_keep[PR], p_last[PR]}),
      .s_valid(p_valid[PR] && p_out[PR]),
      .s_ready(out_s_ready),
      .m_data({m_axis_tdata, m_axis_tkeep, m_axis_tlast}),
      .m_valid(m_axis_tvalid),
      .m_ready(m_axis_tready),
      .count(out_count)
  );

  logic any_valid;
  always_comb begin
    any_valid = 1'b0;
    for (int k = 1; k <= PR; k++) any_valid |= p_valid[k];
    for (int k = PR + 1; k <= PW; k++) any_valid |= p_we[k];
  end
  assign status_empty = !cur_valid && !any_valid && out_count == '0;

  // The issuer's credit check guarantees room in the output FIFO.
  logic unused;
  assign unused = ^{out_s_ready, cur.base[31:DADDR_BITS], cur.out_len, cur.issue};
endmodule
`default_nettype wire
