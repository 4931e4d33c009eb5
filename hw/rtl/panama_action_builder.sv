// Header and action builder: turns a decided action and its table entry
// into the data pipeline's work record, with the first beat of the emitted
// aggregate already built (wire.hpp write_headers with the fields of
// engine.hpp emit: the entry's addresses, ECN OR of the contributions,
// cwnd_cap = min(contributions, the entry's share), a fresh IPv4 checksum).
// Combinational (latency 0); the action FIFO registers it.
`default_nettype none
module panama_action_builder (
    input  wire panama_engine_pkg::decided_t     decided,
    input  wire panama_engine_pkg::table_entry_t entry,
    output panama_engine_pkg::action_t           action
);
  import panama_wire_pkg::*;
  import panama_engine_pkg::*;

  frame_header_t h;
  ipv4_header_t  ip_unsummed;
  logic [15:0]   ip_sum;
  logic [15:0]   share, out_cwnd;

  // The IPv4 header with a zero checksum field, summed by ip_gen.
  always_comb begin
    ip_unsummed.ver_ihl = 8'h45;
    ip_unsummed.dscp = entry.dscp;
    ip_unsummed.ecn = decided.ecn;
    ip_unsummed.total_len = 16'(IP_FIXED_BYTES) + 16'd4 * decided.elems;
    ip_unsummed.id = 16'd0;
    ip_unsummed.flags_frag = 16'h4000;  // don't fragment
    ip_unsummed.ttl = entry.ttl;
    ip_unsummed.proto = 8'(IP_PROTO_UDP);
    ip_unsummed.checksum = 16'd0;
    ip_unsummed.src = entry.ip_src;
    ip_unsummed.dst = entry.ip_dst;
  end

  always_comb begin
    share = entry.count > 32'hFFFF ? 16'hFFFF : entry.count[15:0];
    out_cwnd = decided.cwnd < share ? decided.cwnd : share;

    h.eth.dst = entry.eth_dst;
    h.eth.src = entry.eth_src;
    h.eth.ethertype = 16'(ETHERTYPE_IPV4);

    h.ip = ip_unsummed;

    h.udp.src_port = entry.udp_src;
    h.udp.dst_port = entry.udp_dst;
    h.udp.length = 16'(UDP_FIXED_BYTES) + 16'd4 * decided.elems;
    h.udp.checksum = 16'd0;

    h.panama.version = 8'(VERSION);
    h.panama.pkt_type = entry.root ? 8'(TYPE_RESULT_DOWN) :
        (decided.retrans ? 8'(TYPE_RETRANSMISSION) : 8'(TYPE_AGGREGATE_UP));
    h.panama.job_id = entry.job;
    h.panama.tree_id = entry.tree;
    h.panama.elem_type = 8'(ELEM_TYPE_FLOAT32);
    h.panama.child_id = entry.out_child;
    h.panama.seq = decided.seq;
    h.panama.cwnd_cap = out_cwnd;
    h.panama.elem_count = decided.elems;
    h.panama.pad = 48'd0;
    h.ip.checksum = ~ip_sum;
  end

  panama_ipv4_checksum ip_gen (
      .hdr(ip_unsummed),
      .sum(ip_sum)
  );

  // Beats the data pipeline runs for the frame.
  logic [7:0] words;
  always_comb begin
    words = 8'((decided.elems + 16'd15) >> 4);
    action.kind = decided.kind;
    action.emit = decided.emit;
    action.in_beats = decided.beats;
    action.words = words;
    action.out_beats = 8'd0;
    action.out_len = 16'd0;
    if (decided.kind == K_PASS) begin
      action.out_beats = decided.beats;
      action.out_len = decided.len;
    end else if (decided.emit) begin
      action.out_beats = words + 8'd1;
      action.out_len = 16'(PAYLOAD_OFFSET) + 16'd4 * decided.elems;
    end
    action.issue = action.out_beats > decided.beats ? action.out_beats : decided.beats;
    action.base = decided.base;
    action.hdr = beat_from_header(h);
  end

  logic unused;
  assign unused = ^{entry.enabled, entry.fan_in, entry.mask, entry.base, decided.entry};
endmodule
`default_nettype wire
