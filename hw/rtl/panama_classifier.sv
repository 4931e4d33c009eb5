// Classifier: the checks of engine.hpp process_frame and wire.hpp
// classify_frame that need only the frame's first beat, its length and its
// MAC error flag, in the model's order (MAC error, oversize, engine
// disabled, not PANAMA, truncated, bad IPv4 header, version, type, result
// passing through, element type, element count, lengths, truncated payload,
// bytes after the payload, slot capacity).
// The verdict travels with the header fields the decision needs.
//
// Pipelined, one frame per clock, latency LATENCY = 5 (in_valid at clock t,
// out_valid at t + 5), at most 6 logic levels per stage:
//   C1  descriptor registered
//   C2  every check that compares a field with a constant or the
//       configuration, as one flag each; the expected lengths
//       (fixed bytes + w * element count, w = 4 for fp32, 2 for bf16 and
//       fp16); checksum adder S1
//   C3  the length checks (compare with the expected lengths); the checks
//       before the IPv4 checksum reduced to the first failing one (the
//       model's order); checksum S2
//   C4  the checks after the checksum reduced likewise; checksum S3 (the
//       sum registered)
//   C5  the verdict: the checks before the checksum, else a bad checksum,
//       else the checks after it (out_fields, out_valid)
// The configuration (CONTROL.ENABLE, UDP_PORT) is sampled in C2; it only
// changes while the control pipeline is empty (register writes wait).
`default_nettype none
module panama_classifier #(
    // Elements one slot bank holds (SLOT_WORDS * 16), of any type: the
    // elem_count limit of fp32, bf16 and fp16 frames alike.
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

    // A frame is in C1 .. C4 (out_valid is the last stage).
    output logic                                  status_busy
);
  import panama_wire_pkg::*;
  import panama_regmap_pkg::*;
  import panama_engine_pkg::*;
  localparam int LATENCY = 5;

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
  logic [15:0]   len;
  frame_fields_t f1;  // the fields of the frame in C1 (verdict and counter set in C5)
  assign h = header_from_beat(c1_reg.first_beat);
  assign len = c1_reg.len;

  always_comb begin
    f1.verdict = V_PANAMA;
    f1.counter = 5'd0;
    f1.retrans = h.panama.pkt_type == 8'(TYPE_RETRANSMISSION);
    f1.job = h.panama.job_id;
    f1.tree = h.panama.tree_id;
    f1.child = h.panama.child_id;
    f1.seq = h.panama.seq;
    f1.cwnd = h.panama.cwnd_cap;
    f1.elems = h.panama.elem_count;
    f1.etype = h.panama.elem_type[1:0];
    f1.ecn = h.ip.ecn;
    f1.len = len;
    f1.beats = c1_reg.beats > 16'(MAX_FRAME_BEATS) ? 8'(MAX_FRAME_BEATS) : c1_reg.beats[7:0];
  end

  // IPv4 header checksum: hdr in C1, sum registered in C4.
  logic [15:0] ip_sum_c4;
  panama_ipv4_checksum ip_check (
      .clk(clk),
      .hdr(h.ip),
      .sum(ip_sum_c4)
  );

  // ---- C2: one flag per check against a constant; expected lengths
  // w * elem_count: bit 1 of elem_type is clear for fp32 (1), set for bf16
  // (2) and fp16 (3); any other value is dropped before the lengths count.
  logic [18:0] payload_bytes;
  assign payload_bytes = h.panama.elem_type[1] ? {2'b00, h.panama.elem_count, 1'b0} :
      {1'b0, h.panama.elem_count, 2'b00};
  logic          c2_valid_reg;
  frame_fields_t c2_fields_reg;
  logic c2_mac_error, c2_oversize, c2_pass_short, c2_pass_not_udp, c2_pass_port, c2_short_hdr, c2_frag_flag, c2_bad_version, c2_bad_type,
      c2_result_down, c2_bad_elem_type, c2_zero_count, c2_over_capacity;
  logic [18:0] c2_ip_len_exp, c2_udp_len_exp, c2_frame_len_exp;
  logic [15:0] c2_ip_total_len, c2_udp_length;
  always_ff @(posedge clk) begin
    c2_valid_reg <= rst ? 1'b0 : c1_valid_reg;
    c2_fields_reg <= f1;
    c2_mac_error <= c1_reg.mac_error;
    c2_oversize <= len > 16'(MAX_FRAME_BYTES) || c1_reg.beats > 16'(MAX_FRAME_BEATS);
    // Passed through: disabled, or not a PANAMA frame (three flags, ORed in C3).
    c2_pass_short <= !cfg_enabled || len < 16'(UDP_DST_PORT + 2);
    c2_pass_not_udp <= h.eth.ethertype != 16'(ETHERTYPE_IPV4) || h.ip.ver_ihl != 8'h45 ||
        h.ip.proto != 8'(IP_PROTO_UDP) || h.ip.flags_frag[12:0] != 13'd0;
    c2_pass_port <= h.udp.dst_port != cfg_udp_port;
    c2_short_hdr <= len < 16'(PAYLOAD_OFFSET);
    c2_frag_flag <= h.ip.flags_frag[13];
    c2_bad_version <= h.panama.version != 8'(VERSION);
    c2_bad_type <= h.panama.pkt_type != 8'(TYPE_AGGREGATE_UP) && h.panama.pkt_type != 8'(TYPE_RESULT_DOWN) &&
        h.panama.pkt_type != 8'(TYPE_RETRANSMISSION);
    c2_result_down <= h.panama.pkt_type == 8'(TYPE_RESULT_DOWN);
    // fp32, bf16 and fp16 are summed (ELEM_TYPES 0xE); anything else is no type.
    c2_bad_elem_type <= h.panama.elem_type != 8'(ELEM_TYPE_FLOAT32) && h.panama.elem_type != 8'(ELEM_TYPE_BFLOAT16) &&
        h.panama.elem_type != 8'(ELEM_TYPE_FLOAT16);
    c2_zero_count <= h.panama.elem_count == 16'd0;
    c2_over_capacity <= {16'd0, h.panama.elem_count} > 32'(SLOT_CAPACITY);
    // w * elem_count plus the fixed bytes (w = 4 for fp32, else 2; for a
    // frame of no type the lengths are never looked at), at most 2^18 + 64:
    // 19 bits.
    c2_ip_len_exp <= 19'(IP_FIXED_BYTES) + payload_bytes;
    c2_udp_len_exp <= 19'(UDP_FIXED_BYTES) + payload_bytes;
    c2_frame_len_exp <= 19'(PAYLOAD_OFFSET) + payload_bytes;
    c2_ip_total_len <= h.ip.total_len;
    c2_udp_length <= h.udp.length;
  end

  // ---- C3: length checks; the checks before the checksum reduced to the
  // first failing one (the model's order)
  logic          c3_valid_reg;
  frame_fields_t c3_fields_reg;
  logic          c3_pre_hit_reg, c3_frag_flag_reg;
  logic [1:0]    c3_pre_verdict_reg;
  logic [4:0]    c3_pre_counter_reg;
  logic c3_bad_version, c3_bad_type, c3_result_down, c3_bad_elem_type, c3_zero_count, c3_bad_length,
      c3_short_payload, c3_long_payload, c3_over_capacity;
  logic          pre_hit;
  logic [1:0]    pre_verdict;
  logic [4:0]    pre_counter;
  always_comb begin
    // Before the checksum: MAC error, oversize, disabled / not PANAMA, truncated header.
    pre_hit = 1'b1;
    pre_verdict = V_DROP;
    pre_counter = 5'd0;
    if (c2_mac_error) begin
      pre_counter = 5'(GC_DROP_MAC_ERROR);
    end else if (c2_oversize) begin
      pre_counter = 5'(GC_DROP_OVERSIZE);
    end else if (c2_pass_short || c2_pass_not_udp || c2_pass_port) begin
      pre_verdict = V_PASS;
      pre_counter = 5'(GC_PASSTHROUGH);
    end else if (c2_short_hdr) begin
      pre_counter = 5'(GC_DROP_TRUNCATED);
    end else begin
      pre_hit = 1'b0;
    end
  end
  always_ff @(posedge clk) begin
    c3_valid_reg <= rst ? 1'b0 : c2_valid_reg;
    c3_fields_reg <= c2_fields_reg;
    c3_pre_hit_reg <= pre_hit;
    c3_pre_verdict_reg <= pre_verdict;
    c3_pre_counter_reg <= pre_counter;
    c3_frag_flag_reg <= c2_frag_flag;
    c3_bad_version <= c2_bad_version;
    c3_bad_type <= c2_bad_type;
    c3_result_down <= c2_result_down;
    c3_bad_elem_type <= c2_bad_elem_type;
    c3_zero_count <= c2_zero_count;
    c3_bad_length <= c2_ip_len_exp != {3'd0, c2_ip_total_len} || c2_udp_len_exp != {3'd0, c2_udp_length};
    c3_short_payload <= {3'd0, c2_fields_reg.len} < c2_frame_len_exp;
    c3_long_payload <= {3'd0, c2_fields_reg.len} > c2_frame_len_exp;
    c3_over_capacity <= c2_over_capacity;
  end

  // ---- C4: the checks after the checksum reduced to the first failing
  // one; the checksum is registered meanwhile
  logic          c4_valid_reg;
  frame_fields_t c4_fields_reg;
  logic          c4_pre_hit_reg, c4_frag_flag_reg;
  logic [1:0]    c4_pre_verdict_reg, c4_post_verdict_reg;
  logic [4:0]    c4_pre_counter_reg, c4_post_counter_reg;
  logic [1:0]    post_verdict;
  logic [4:0]    post_counter;
  always_comb begin
    post_verdict = V_DROP;
    post_counter = 5'd0;
    if (c3_bad_version) begin
      post_counter = 5'(GC_DROP_BAD_VERSION);
    end else if (c3_bad_type) begin
      post_counter = 5'(GC_DROP_BAD_TYPE);
    end else if (c3_result_down) begin
      post_verdict = V_PASS;
      post_counter = 5'(GC_RESULTS_PASSED);
    end else if (c3_bad_elem_type) begin
      post_counter = 5'(GC_DROP_BAD_ELEM_TYPE);
    end else if (c3_zero_count) begin
      post_counter = 5'(GC_DROP_BAD_ELEM_COUNT);
    end else if (c3_bad_length) begin
      post_counter = 5'(GC_DROP_BAD_LENGTH);
    end else if (c3_short_payload) begin
      post_counter = 5'(GC_DROP_TRUNCATED);
    end else if (c3_long_payload) begin
      post_counter = 5'(GC_DROP_BAD_LENGTH);  // bytes after the payload
    end else if (c3_over_capacity) begin
      post_counter = 5'(GC_DROP_BAD_ELEM_COUNT);
    end else begin
      post_verdict = V_PANAMA;
    end
  end
  always_ff @(posedge clk) begin
    c4_valid_reg <= rst ? 1'b0 : c3_valid_reg;
    c4_fields_reg <= c3_fields_reg;
    c4_pre_hit_reg <= c3_pre_hit_reg;
    c4_pre_verdict_reg <= c3_pre_verdict_reg;
    c4_pre_counter_reg <= c3_pre_counter_reg;
    c4_post_verdict_reg <= post_verdict;
    c4_post_counter_reg <= post_counter;
    c4_frag_flag_reg <= c3_frag_flag_reg;
  end

  // ---- C5: the verdict
  frame_fields_t f5;
  always_comb begin
    f5 = c4_fields_reg;
    if (c4_pre_hit_reg) begin
      f5.verdict = c4_pre_verdict_reg;
      f5.counter = c4_pre_counter_reg;
    end else if (ip_sum_c4 != 16'hFFFF || c4_frag_flag_reg) begin
      f5.verdict = V_DROP;
      f5.counter = 5'(GC_DROP_BAD_IP_HEADER);
    end else begin
      f5.verdict = c4_post_verdict_reg;
      f5.counter = c4_post_counter_reg;
    end
  end
  always_ff @(posedge clk) begin
    out_valid <= rst ? 1'b0 : c4_valid_reg;
    out_fields <= f5;
  end

  assign status_busy = c1_valid_reg || c2_valid_reg || c3_valid_reg || c4_valid_reg;

  // Fields the classifier does not look at.
  logic unused;
  assign unused = ^{h.eth.dst, h.eth.src, h.ip.dscp, h.ip.id, h.ip.ttl, h.ip.checksum, h.ip.src, h.ip.dst,
                    h.ip.flags_frag[15:14], h.udp.src_port, h.udp.checksum, h.panama.pad, LATENCY};
endmodule
`default_nettype wire
