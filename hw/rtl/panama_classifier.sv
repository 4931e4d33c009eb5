// Classifier: the checks of engine.hpp process_frame and wire.hpp
// classify_frame that need only the frame's first beat, its length and its
// MAC error flag, in the model's order (MAC error, oversize, engine
// disabled, not PANAMA, truncated, bad IPv4 header, version, type, result
// passing through, element type, element count, lengths, slot capacity).
// The verdict travels with the header fields the decision needs.
//
// Latency 2: the descriptor is registered (C1), classified, and the result
// registered (C2).
`default_nettype none
module panama_classifier #(
    // Elements one slot bank holds (SLOT_WORDS * 16).
    parameter int SLOT_CAPACITY = 2304
) (
    input  wire logic                             clk,
    input  wire logic                             rst,

    input  wire panama_engine_pkg::frame_desc_t   in_desc,
    input  wire logic                             in_valid,

    output panama_engine_pkg::frame_fields_t      out_fields,
    output logic                                  out_valid,

    // Configuration (CONTROL.ENABLE, UDP_PORT).
    input  wire logic                             cfg_enabled,
    input  wire logic                     [15:0]  cfg_udp_port,

    // A frame is in C1 (the register stage after the descriptor FIFO).
    output logic                                  status_busy
);
  import panama_wire_pkg::*;
  import panama_regmap_pkg::*;
  import panama_engine_pkg::*;

  initial begin
    if (SLOT_CAPACITY < 1 || SLOT_CAPACITY > 65535) $error("%m: SLOT_CAPACITY must be 1..65535");
  end

  // ---- C1: descriptor registered
  logic          c1_valid_reg;
  frame_desc_t   c1_reg;
  always_ff @(posedge clk) begin
    c1_valid_reg <= rst ? 1'b0 : in_valid;
    c1_reg <= in_desc;
  end

  frame_header_t h;
  logic [15:0]   ip_sum;
  logic [15:0]   len;
  logic [31:0]   payload_bytes;
  frame_fields_t f;

  assign h = header_from_beat(c1_reg.first_beat);
  assign len = c1_reg.len;

  panama_ipv4_checksum ip_check (
      .hdr(h.ip),
      .sum(ip_sum)
  );

  always_comb begin
    f.verdict = V_PANAMA;
    f.counter = 5'd0;
    payload_bytes = 32'd4 * {16'd0, h.panama.elem_count};
    if (c1_reg.mac_error) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_MAC_ERROR);
    end else if (len > 16'(MAX_FRAME_BYTES) || c1_reg.beats > 16'(MAX_FRAME_BEATS)) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_OVERSIZE);
    end else if (!cfg_enabled) begin
      f.verdict = V_PASS;
      f.counter = 5'(GC_PASSTHROUGH);
    end else if (len < 16'(UDP_DST_PORT + 2) || h.eth.ethertype != 16'(ETHERTYPE_IPV4) ||
                 h.ip.ver_ihl != 8'h45 || h.ip.proto != 8'(IP_PROTO_UDP) || h.ip.flags_frag[12:0] != 13'd0 ||
                 h.udp.dst_port != cfg_udp_port) begin
      f.verdict = V_PASS;
      f.counter = 5'(GC_PASSTHROUGH);
    end else if (len < 16'(PAYLOAD_OFFSET)) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_TRUNCATED);
    end else if (ip_sum != 16'hFFFF || h.ip.flags_frag[13]) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_IP_HEADER);
    end else if (h.panama.version != 8'(VERSION)) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_VERSION);
    end else if (h.panama.pkt_type != 8'(TYPE_AGGREGATE_UP) && h.panama.pkt_type != 8'(TYPE_RESULT_DOWN) &&
                 h.panama.pkt_type != 8'(TYPE_RETRANSMISSION)) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_TYPE);
    end else if (h.panama.pkt_type == 8'(TYPE_RESULT_DOWN)) begin
      f.verdict = V_PASS;
      f.counter = 5'(GC_RESULTS_PASSED);
    end else if (h.panama.elem_type != 8'(ELEM_TYPE_FLOAT32)) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_ELEM_TYPE);
    end else if (h.panama.elem_count == 16'd0) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_ELEM_COUNT);
    end else if ({16'd0, h.ip.total_len} != 32'(IP_FIXED_BYTES) + payload_bytes ||
                 {16'd0, h.udp.length} != 32'(UDP_FIXED_BYTES) + payload_bytes) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_LENGTH);
    end else if ({16'd0, len} < 32'(PAYLOAD_OFFSET) + payload_bytes) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_TRUNCATED);
    end else if ({16'd0, h.panama.elem_count} > 32'(SLOT_CAPACITY)) begin
      f.verdict = V_DROP;
      f.counter = 5'(GC_DROP_BAD_ELEM_COUNT);
    end
    f.retrans = h.panama.pkt_type == 8'(TYPE_RETRANSMISSION);
    f.job = h.panama.job_id;
    f.tree = h.panama.tree_id;
    f.child = h.panama.child_id;
    f.seq = h.panama.seq;
    f.cwnd = h.panama.cwnd_cap;
    f.elems = h.panama.elem_count;
    f.ecn = h.ip.ecn;
    f.len = len;
    f.beats = c1_reg.beats > 16'(MAX_FRAME_BEATS) ? 8'(MAX_FRAME_BEATS) : c1_reg.beats[7:0];
  end

  // ---- C2: classified
  always_ff @(posedge clk) begin
    out_valid <= rst ? 1'b0 : c1_valid_reg;
    out_fields <= f;
  end

  assign status_busy = c1_valid_reg;

  // Fields the classifier does not look at.
  logic unused;
  assign unused = ^{h.eth.dst, h.eth.src, h.ip.dscp, h.ip.id, h.ip.ttl, h.ip.checksum, h.ip.src, h.ip.dst,
                    h.ip.flags_frag[15:14], h.udp.src_port, h.udp.checksum, h.panama.pad};
endmodule
`default_nettype wire
