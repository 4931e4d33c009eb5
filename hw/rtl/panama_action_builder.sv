// Header and action builder: turns a decided action and its table entry
// into the data pipeline's work record, with the first beat of the emitted
// aggregate already built (wire.hpp write_headers with the fields of
// engine.hpp emit: the entry's addresses, ECN OR of the contributions,
// cwnd_cap = min(contributions, the entry's share), a fresh IPv4 checksum).
//
// Pipelined, one frame per clock, latency LATENCY = 6 (in_valid at clock t,
// out_valid at t + 6), at most 6 logic levels per stage:
//   A0  the decided record registered (while the table reads the entry)
//   A1  what depends on the decided record alone: the slot words (half
//       rows of 16 fp32 for fp32, rows of 32 for bf16 and fp16), the
//       emitted lengths (fixed bytes + w * element count, w = 4 for fp32,
//       2 for bf16 and fp16); the entry
//       arrives (the table's two-clock read, indexed by in_decided.entry at
//       t); the IPv4 header to sum goes into the checksum pipeline (3 clocks)
//   A2  beats and bytes sent, cwnd_cap, the header fields
//   A3  beats the issuer runs (max of in and out)
//   A4  waits for the checksum
//   out the action with the checksum in its header, registered
`default_nettype none
module panama_action_builder (
    input  wire logic                            clk,
    input  wire logic                            rst,

    input  wire panama_engine_pkg::decided_t     in_decided,
    input  wire logic                            in_valid,
    // The table entry of in_decided.entry, two clocks after in_decided.
    input  wire panama_engine_pkg::table_entry_t in_entry,

    output panama_engine_pkg::action_t           out_action,
    output logic                                 out_valid
);
  import panama_wire_pkg::*;
  import panama_engine_pkg::*;
  localparam int LATENCY = 6;

  // ---- A0: decided registered
  logic        a0_valid_reg;
  decided_t    a0_reg;
  always_ff @(posedge clk) begin
    a0_valid_reg <= rst ? 1'b0 : in_valid;
    a0_reg <= in_decided;
  end

  // ---- A1: what depends on the decided record alone
  logic        a1_valid_reg;
  decided_t    a1_reg;
  logic [7:0]  a1_words_reg;
  logic [15:0] a1_emit_len_reg, a1_ip_len_reg, a1_udp_len_reg;
  logic        a0_wide;          // bf16 or fp16 (elem_type bit 1)
  logic [15:0] a0_payload_bytes;  // w * element count
  assign a0_wide = a0_reg.etype[1];
  assign a0_payload_bytes = a0_wide ? {a0_reg.elems[14:0], 1'b0} : {a0_reg.elems[13:0], 2'b00};
  always_ff @(posedge clk) begin
    a1_valid_reg <= rst ? 1'b0 : a0_valid_reg;
    a1_reg <= a0_reg;
    // 64-byte payload beats: 16 fp32 or 32 bf16/fp16 elements each
    a1_words_reg <= a0_wide ? 8'((a0_reg.elems + 16'd31) >> 5) : 8'((a0_reg.elems + 16'd15) >> 4);
    a1_emit_len_reg <= 16'(PAYLOAD_OFFSET) + a0_payload_bytes;
    a1_ip_len_reg <= 16'(IP_FIXED_BYTES) + a0_payload_bytes;
    a1_udp_len_reg <= 16'(UDP_FIXED_BYTES) + a0_payload_bytes;
  end

  // The IPv4 header with a zero checksum field, summed by ip_gen (sum in A4).
  ipv4_header_t ip_unsummed;
  always_comb begin
    ip_unsummed.ver_ihl = 8'h45;
    ip_unsummed.dscp = in_entry.dscp;
    ip_unsummed.ecn = a1_reg.ecn;
    ip_unsummed.total_len = a1_ip_len_reg;
    ip_unsummed.id = 16'd0;
    ip_unsummed.flags_frag = 16'h4000;  // don't fragment
    ip_unsummed.ttl = in_entry.ttl;
    ip_unsummed.proto = 8'(IP_PROTO_UDP);
    ip_unsummed.checksum = 16'd0;
    ip_unsummed.src = in_entry.ip_src;
    ip_unsummed.dst = in_entry.ip_dst;
  end
  logic [15:0] ip_sum_a4;
  panama_ipv4_checksum ip_gen (
      .clk(clk),
      .hdr(ip_unsummed),
      .sum(ip_sum_a4)
  );

  // ---- A2: beats and bytes sent, cwnd_cap, header fields
  frame_header_t h;
  logic [15:0]   out_cwnd;
  action_t       act1;
  always_comb begin
    // min(contributions, share), the share saturated at 16 bits.
    out_cwnd = (in_entry.count[31:16] != 16'd0 || a1_reg.cwnd < in_entry.count[15:0]) ? a1_reg.cwnd :
        in_entry.count[15:0];

    h.eth.dst = in_entry.eth_dst;
    h.eth.src = in_entry.eth_src;
    h.eth.ethertype = 16'(ETHERTYPE_IPV4);
    h.ip = ip_unsummed;  // checksum filled in at the output
    h.udp.src_port = in_entry.udp_src;
    h.udp.dst_port = in_entry.udp_dst;
    h.udp.length = a1_udp_len_reg;
    h.udp.checksum = 16'd0;
    h.panama.version = 8'(VERSION);
    h.panama.pkt_type = in_entry.root ? 8'(TYPE_RESULT_DOWN) :
        (a1_reg.retrans ? 8'(TYPE_RETRANSMISSION) : 8'(TYPE_AGGREGATE_UP));
    h.panama.job_id = in_entry.job;
    h.panama.tree_id = in_entry.tree;
    h.panama.elem_type = {6'd0, a1_reg.etype};
    h.panama.child_id = in_entry.out_child;
    h.panama.seq = a1_reg.seq;
    h.panama.cwnd_cap = out_cwnd;
    h.panama.elem_count = a1_reg.elems;
    h.panama.pad = 48'd0;

    act1.kind = a1_reg.kind;
    act1.emit = a1_reg.emit;
    act1.etype = a1_reg.etype;
    act1.in_beats = a1_reg.beats;
    act1.words = a1_words_reg;
    act1.out_beats = 8'd0;
    act1.out_len = 16'd0;
    if (a1_reg.kind == K_PASS) begin
      act1.out_beats = a1_reg.beats;
      act1.out_len = a1_reg.len;
    end else if (a1_reg.emit) begin
      act1.out_beats = a1_words_reg + 8'd1;
      act1.out_len = a1_emit_len_reg;
    end
    act1.issue = 8'd0;  // A3
    act1.base = a1_reg.base;
    act1.hdr = 512'd0;  // at the output
  end
  logic          a2_valid_reg;
  action_t       a2_act_reg;
  frame_header_t a2_h_reg;
  always_ff @(posedge clk) begin
    a2_valid_reg <= rst ? 1'b0 : a1_valid_reg;
    a2_act_reg <= act1;
    a2_h_reg <= h;
  end

  // ---- A3: beats the issuer runs
  logic          a3_valid_reg;
  action_t       a3_act_reg;
  frame_header_t a3_h_reg;
  always_ff @(posedge clk) begin
    a3_valid_reg <= rst ? 1'b0 : a2_valid_reg;
    a3_act_reg <= a2_act_reg;
    a3_act_reg.issue <= a2_act_reg.out_beats > a2_act_reg.in_beats ? a2_act_reg.out_beats : a2_act_reg.in_beats;
    a3_h_reg <= a2_h_reg;
  end

  // ---- A4: the checksum arrives
  logic          a4_valid_reg;
  action_t       a4_act_reg;
  frame_header_t a4_h_reg;
  always_ff @(posedge clk) begin
    a4_valid_reg <= rst ? 1'b0 : a3_valid_reg;
    a4_act_reg <= a3_act_reg;
    a4_h_reg <= a3_h_reg;
  end

  // ---- output
  frame_header_t h_out;
  action_t       act_out;
  always_comb begin
    h_out = a4_h_reg;
    h_out.ip.checksum = ~ip_sum_a4;
    act_out = a4_act_reg;
    act_out.hdr = beat_from_header(h_out);
  end
  always_ff @(posedge clk) begin
    out_valid <= rst ? 1'b0 : a4_valid_reg;
    out_action <= act_out;
  end

  logic unused;
  assign unused = ^{in_entry.enabled, in_entry.fan_in, in_entry.mask, in_entry.base, a1_reg.entry, LATENCY,
                    act1.issue, act1.hdr};
endmodule
`default_nettype wire
