// PANAMA wire format for the RTL engine: the SystemVerilog mirror of
// include/panama/wire.hpp. Byte offsets count from the first byte of the
// Ethernet header; on the 512-bit stream byte k of a beat is tdata[8k+7:8k].
// tests/rtl/test_wire_pkg.cpp parses this file and compares every constant
// with wire.hpp, so the two cannot drift.
`default_nettype none
package panama_wire_pkg;
  localparam int VERSION = 1;
  localparam int DEFAULT_UDP_PORT = 9600;
  localparam int ETHERTYPE_IPV4 = 'h0800;
  localparam int IP_PROTO_UDP = 17;

  localparam int TYPE_AGGREGATE_UP = 1;
  localparam int TYPE_RESULT_DOWN = 2;
  localparam int TYPE_RETRANSMISSION = 3;
  localparam int ELEM_TYPE_FLOAT32 = 1;
  localparam int ELEM_TYPE_BFLOAT16 = 2;
  localparam int ELEM_TYPE_FLOAT16 = 3;

  localparam int ECN_NOT_ECT = 0;
  localparam int ECN_ECT1 = 1;
  localparam int ECN_ECT0 = 2;
  localparam int ECN_CE = 3;

  localparam int ETH_DST = 0;
  localparam int ETH_SRC = 6;
  localparam int ETH_TYPE = 12;
  localparam int ETH_HEADER_BYTES = 14;

  localparam int IP_OFFSET = 14;
  localparam int IP_VER_IHL = 14;
  localparam int IP_TOS = 15;
  localparam int IP_TOTAL_LEN = 16;
  localparam int IP_ID = 18;
  localparam int IP_FLAGS_FRAG = 20;
  localparam int IP_TTL = 22;
  localparam int IP_PROTO = 23;
  localparam int IP_CHECKSUM = 24;
  localparam int IP_SRC = 26;
  localparam int IP_DST = 30;
  localparam int IP_HEADER_BYTES = 20;

  localparam int UDP_OFFSET = 34;
  localparam int UDP_SRC_PORT = 34;
  localparam int UDP_DST_PORT = 36;
  localparam int UDP_LENGTH = 38;
  localparam int UDP_CHECKSUM = 40;
  localparam int UDP_HEADER_BYTES = 8;

  localparam int PANAMA_OFFSET = 42;
  localparam int PANAMA_VERSION = 42;
  localparam int PANAMA_TYPE = 43;
  localparam int PANAMA_JOB_ID = 44;
  localparam int PANAMA_TREE_ID = 46;
  localparam int PANAMA_ELEM_TYPE = 47;
  localparam int PANAMA_CHILD_ID = 48;
  localparam int PANAMA_SEQ = 50;
  localparam int PANAMA_CWND_CAP = 54;
  localparam int PANAMA_ELEM_COUNT = 56;
  localparam int PANAMA_PAD = 58;
  localparam int PANAMA_FIELD_BYTES = 16;
  localparam int PANAMA_PAD_BYTES = 6;
  localparam int PANAMA_HEADER_BYTES = 22;

  localparam int PAYLOAD_OFFSET = 64;
  localparam int ELEM_BYTES = 4;
  localparam int BEAT_BYTES = 64;
  localparam int LANES = 16;

  localparam int MAX_FRAME_BYTES = 9216;
  localparam int MAX_ELEMS_PER_FRAME = 2288;
  localparam int MIN_PANAMA_FRAME_BYTES = 68;
  // Largest frame in beats; longer frames are dropped (DROP_OVERSIZE).
  localparam int MAX_FRAME_BEATS = MAX_FRAME_BYTES / BEAT_BYTES;

  // IPv4 total length and UDP length of a frame carrying n elements.
  localparam int IP_FIXED_BYTES = IP_HEADER_BYTES + UDP_HEADER_BYTES + PANAMA_HEADER_BYTES;
  localparam int UDP_FIXED_BYTES = UDP_HEADER_BYTES + PANAMA_HEADER_BYTES;
  // The first 64 bytes of a frame as typed fields (Ethernet II, IPv4 without
  // options, UDP, PANAMA header): the structs put the first wire byte in the
  // most significant bits, so after header_from_beat every multi-byte field
  // reads as a number in network order, with no hand-counted offsets.
  // tests/rtl/test_wire_pkg.cpp checks each field's position against the
  // byte offsets above.
  typedef struct packed {
    logic [47:0] dst;
    logic [47:0] src;
    logic [15:0] ethertype;
  } eth_header_t;

  typedef struct packed {
    logic [7:0]  ver_ihl;
    logic [5:0]  dscp;
    logic [1:0]  ecn;
    logic [15:0] total_len;
    logic [15:0] id;
    logic [15:0] flags_frag;
    logic [7:0]  ttl;
    logic [7:0]  proto;
    logic [15:0] checksum;
    logic [31:0] src;
    logic [31:0] dst;
  } ipv4_header_t;

  typedef struct packed {
    logic [15:0] src_port;
    logic [15:0] dst_port;
    logic [15:0] length;
    logic [15:0] checksum;
  } udp_header_t;

  typedef struct packed {
    logic [7:0]  version;
    logic [7:0]  pkt_type;
    logic [15:0] job_id;
    logic [7:0]  tree_id;
    logic [7:0]  elem_type;
    logic [15:0] child_id;
    logic [31:0] seq;
    logic [15:0] cwnd_cap;
    logic [15:0] elem_count;
    logic [47:0] pad;
  } panama_header_t;

  typedef struct packed {
    eth_header_t    eth;
    ipv4_header_t   ip;
    udp_header_t    udp;
    panama_header_t panama;
  } frame_header_t;

  // Beat byte k (tdata[8k+7:8k]) is wire byte k; the struct wants wire byte 0
  // on top. Functions in Verilog-2005 form: Yosys 0.23 reads these.
  function automatic frame_header_t header_from_beat(input logic [511:0] beat);
    integer k;
    for (k = 0; k < BEAT_BYTES; k = k + 1) header_from_beat[511-8*k-:8] = beat[8*k+:8];
  endfunction

  function automatic [511:0] beat_from_header(input frame_header_t h);
    integer k;
    for (k = 0; k < BEAT_BYTES; k = k + 1) beat_from_header[8*k+:8] = h[511-8*k-:8];
  endfunction
endpackage
`default_nettype wire
