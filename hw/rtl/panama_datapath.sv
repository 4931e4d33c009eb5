// Data pipeline: replays each stored frame with its action, one beat per
// clock. Beat 0 of an emitted aggregate is the built header; slot words are
// read, summed with the frame's payload by 16 fp32 adders and written back
// (K_ADD), written as they arrive (K_FIRST) or read out for a re-emission
// (K_READ). Passed frames go out as they came; dropped frames are popped.
//
//   issue  -> p1 slot-memory read (address registered)
//          -> p2 read data; forward mux; adder stage 1
//          -> p3 adder stage 2
//          -> p4 result: slot-memory write; output FIFO
//
// Read-after-write: the beat in p4 writes at the end of the clock, the one
// in p5 wrote at the edge where p2's read happened; forwarding both into p2
// gives back-to-back frames of one slot (two clocks apart at the shortest)
// each other's sums. The address matches are registered one stage ahead. The issuer only issues a beat the output FIFO will have
// room for, so m_axis back-pressure stalls without loss.
`default_nettype none
module panama_datapath #(
    // 512-bit words in the slot memory (slots * 2 banks * words per bank).
    parameter int DATA_WORDS = 512 * 2 * 144,
    // Output FIFO depth in beats (a power of two).
    parameter int OUT_FIFO_DEPTH = 16,
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

  panama_engine_pkg::action_t act;
  assign act = s_act;

  logic [7:0] beat_reg;  // beat of the head frame being issued
  logic [$clog2(OUT_FIFO_DEPTH)+1:0] out_count;
  logic [2:0] out_inflight;
  logic       issue, issue_pop, issue_mem, issue_out, issue_last_out;
  logic [63:0] issue_keep;
  logic [15:0] last_bytes;

  always_comb begin
    issue_pop = beat_reg < act.in_beats;
    issue = s_act_valid && (!issue_pop || s_beat_valid) &&
        16'(out_count) + 16'(out_inflight) < 16'(OUT_FIFO_DEPTH);
    issue_mem = (act.kind == K_FIRST || act.kind == K_ADD || act.kind == K_READ) && beat_reg >= 8'd1 &&
        beat_reg <= act.words;
    issue_out = beat_reg < act.out_beats;
    issue_last_out = beat_reg == act.out_beats - 8'd1;
    last_bytes = act.out_len - {2'd0, act.out_beats - 8'd1, 6'd0};
    issue_keep = issue_last_out ? (64'hFFFFFFFFFFFFFFFF >> (7'd64 - last_bytes[6:0])) : '1;
  end
  assign s_beat_ready = issue && issue_pop;
  assign s_act_ready = issue && beat_reg == act.issue - 8'd1;

  always_ff @(posedge clk) begin
    if (rst) beat_reg <= 8'd0;
    else if (issue) beat_reg <= s_act_ready ? 8'd0 : beat_reg + 8'd1;
  end

  // Pipeline tokens p1 (memory read) .. p4 (memory write, output).
  localparam logic [1:0] OP_NONE = 2'd0, OP_FIRST = 2'd1, OP_ADD = 2'd2, OP_READ = 2'd3;
  logic                  p1_valid, p2_valid, p3_valid, p4_valid;
  logic [1:0]            p1_op, p2_op, p3_op, p4_op;
  logic [DADDR_BITS-1:0] p1_addr, p2_addr, p3_addr, p4_addr;
  logic [511:0]          p1_b, p2_b, p3_b, p4_b, p3_a, p4_a, p5_data;
  logic                  p1_out, p2_out, p3_out, p4_out;
  logic                  p1_last, p2_last, p3_last, p4_last;
  logic [63:0]           p1_keep, p2_keep, p3_keep, p4_keep;
  logic [511:0]          mem_rdata;
  logic [511:0]          p2_a, p4_result, sum;
  logic                  p4_we;

  logic [511:0] dmem[DATA_WORDS];

  always_ff @(posedge clk) begin
    p1_valid <= rst ? 1'b0 : issue;
    p1_op <= !issue_mem ? OP_NONE : (act.kind == K_FIRST ? OP_FIRST : (act.kind == K_ADD ? OP_ADD : OP_READ));
    p1_addr <= DADDR_BITS'(act.base) + DADDR_BITS'(beat_reg) - DADDR_BITS'(1);
    p1_b <= (beat_reg == 8'd0 && act.emit) ? act.hdr : s_beat_data;
    p1_out <= issue_out;
    p1_last <= issue_last_out;
    p1_keep <= issue_keep;
  end

  always_ff @(posedge clk) mem_rdata <= dmem[p1_addr];
  always_ff @(posedge clk) if (p4_we) dmem[p4_addr] <= p4_result;

  // Which older beat p2 must take its operand from, decided a clock early
  // (p1 against the beats that will be in p4 and p5 next clock), so no
  // address comparison sits in the read-add-write loop.
  logic p3_we, fwd4_reg, fwd5_reg;
  assign p3_we = p3_valid && (p3_op == OP_FIRST || p3_op == OP_ADD);
  always_ff @(posedge clk) begin
    fwd4_reg <= p3_we && p3_addr == p1_addr;
    fwd5_reg <= p4_we && p4_addr == p1_addr;
  end

  always_comb begin
    if (fwd4_reg) p2_a = p4_result;
    else if (fwd5_reg) p2_a = p5_data;
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
    {p2_op, p2_addr, p2_b, p2_out, p2_last, p2_keep} <= {p1_op, p1_addr, p1_b, p1_out, p1_last, p1_keep};
    {p3_op, p3_addr, p3_b, p3_out, p3_last, p3_keep} <= {p2_op, p2_addr, p2_b, p2_out, p2_last, p2_keep};
    {p4_op, p4_addr, p4_b, p4_out, p4_last, p4_keep} <= {p3_op, p3_addr, p3_b, p3_out, p3_last, p3_keep};
    p3_a <= p2_a;
    p4_a <= p3_a;
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

  assign status_empty = !p1_valid && !p2_valid && !p3_valid && !p4_valid && out_count == '0;

  // The issuer's credit check guarantees room in the output FIFO.
  logic unused;
  assign unused = ^{out_s_ready, last_bytes[15:7], act.base[31:DADDR_BITS]};
endmodule
`default_nettype wire
