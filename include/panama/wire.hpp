// PANAMA wire format: the one definition of the packet layout.
//
// Every component (HLS engine, runtime, software PSwitch, driver, simulators)
// includes this header; the SystemVerilog package in hw/rtl mirrors it and a
// test checks that the two agree. docs/protocol.md explains the rules.
//
// Frame layout (byte offsets from the first byte of the Ethernet header):
//
//    0  Ethernet II    dst(6) src(6) ethertype(2) = 0x0800
//   14  IPv4           20 bytes, no options (IHL = 5), protocol 17
//   34  UDP            8 bytes, destination port = the PANAMA port
//   42  PANAMA header  16 bytes of fields + 6 bytes of padding
//   64  payload        elem_count little-endian values of the frame's
//                      elem_type: binary32 (4 bytes), bfloat16 or binary16
//                      (2 bytes)
//
// The padding puts the payload at byte 64, the start of the second 512-bit
// beat, so an fp32 element i sits in beat 1 + i/16, lane i%16 of a 512-bit
// datapath, and a 16-bit element i in beat 1 + i/32, 16-bit lane i%32.
//
// This header is plain C++14 without heap, exceptions or standard containers,
// so the HLS kernel can include it.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace panama {
namespace wire {

// ---------------------------------------------------------------- constants

constexpr uint8_t kVersion = 1;
constexpr uint16_t kDefaultUdpPort = 9600;  // configurable per engine / job
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint8_t kIpProtoUdp = 17;

enum class PacketType : uint8_t {
  kAggregateUp = 1,     // worker or engine -> parent: a contribution
  kResultDown = 2,      // root engine -> workers: the finished aggregate
  kRetransmission = 3,  // a contribution sent again after a timeout
};

enum class ElemType : uint8_t {
  kFloat32 = 1,   // IEEE-754 binary32, little-endian
  kBfloat16 = 2,  // bfloat16 (the high half of a binary32), little-endian
  kFloat16 = 3,   // IEEE-754 binary16, little-endian
};

// Element types as a bit mask (bit t for ElemType t): what an engine sums,
// as its ELEM_TYPES register reports.
constexpr uint32_t kElemTypeMaskFloat32 = 1u << 1;
constexpr uint32_t kElemTypeMaskAll = (1u << 1) | (1u << 2) | (1u << 3);

// Bytes per element of a type, 0 for a value that is not a type.
constexpr uint32_t elem_bytes(uint8_t elem_type) {
  return elem_type == 1 ? 4u : (elem_type == 2 || elem_type == 3) ? 2u : 0u;
}
// A type's short name ("fp32", "bf16", "fp16"), nullptr for a value that is not a type.
constexpr const char* elem_type_name(uint8_t elem_type) {
  return elem_type == 1 ? "fp32" : elem_type == 2 ? "bf16" : elem_type == 3 ? "fp16" : nullptr;
}
constexpr bool elem_type_in(uint8_t elem_type, uint32_t mask) {
  return elem_type >= 1 && elem_type <= 3 && ((mask >> elem_type) & 1u) != 0;
}

// IPv4 ECN codepoints (RFC 3168), the low two bits of the TOS byte.
constexpr uint8_t kEcnNotEct = 0;
constexpr uint8_t kEcnEct1 = 1;
constexpr uint8_t kEcnEct0 = 2;
constexpr uint8_t kEcnCe = 3;

// Byte offsets of every field the engine reads or writes.
constexpr uint32_t kEthDst = 0;
constexpr uint32_t kEthSrc = 6;
constexpr uint32_t kEthType = 12;
constexpr uint32_t kEthHeaderBytes = 14;

constexpr uint32_t kIpOffset = 14;
constexpr uint32_t kIpVerIhl = kIpOffset + 0;
constexpr uint32_t kIpTos = kIpOffset + 1;
constexpr uint32_t kIpTotalLen = kIpOffset + 2;
constexpr uint32_t kIpId = kIpOffset + 4;
constexpr uint32_t kIpFlagsFrag = kIpOffset + 6;
constexpr uint32_t kIpTtl = kIpOffset + 8;
constexpr uint32_t kIpProto = kIpOffset + 9;
constexpr uint32_t kIpChecksum = kIpOffset + 10;
constexpr uint32_t kIpSrc = kIpOffset + 12;
constexpr uint32_t kIpDst = kIpOffset + 16;
constexpr uint32_t kIpHeaderBytes = 20;

constexpr uint32_t kUdpOffset = kIpOffset + kIpHeaderBytes;  // 34
constexpr uint32_t kUdpSrcPort = kUdpOffset + 0;
constexpr uint32_t kUdpDstPort = kUdpOffset + 2;
constexpr uint32_t kUdpLength = kUdpOffset + 4;
constexpr uint32_t kUdpChecksum = kUdpOffset + 6;
constexpr uint32_t kUdpHeaderBytes = 8;

constexpr uint32_t kPanamaOffset = kUdpOffset + kUdpHeaderBytes;  // 42
constexpr uint32_t kPanamaVersion = kPanamaOffset + 0;            // u8
constexpr uint32_t kPanamaType = kPanamaOffset + 1;               // u8
constexpr uint32_t kPanamaJobId = kPanamaOffset + 2;              // u16
constexpr uint32_t kPanamaTreeId = kPanamaOffset + 4;             // u8
constexpr uint32_t kPanamaElemType = kPanamaOffset + 5;           // u8
constexpr uint32_t kPanamaChildId = kPanamaOffset + 6;            // u16
constexpr uint32_t kPanamaSeq = kPanamaOffset + 8;                // u32
constexpr uint32_t kPanamaCwndCap = kPanamaOffset + 12;           // u16
constexpr uint32_t kPanamaElemCount = kPanamaOffset + 14;         // u16
constexpr uint32_t kPanamaPad = kPanamaOffset + 16;               // 6 bytes, zero
constexpr uint32_t kPanamaFieldBytes = 16;
constexpr uint32_t kPanamaPadBytes = 6;
constexpr uint32_t kPanamaHeaderBytes = kPanamaFieldBytes + kPanamaPadBytes;  // 22

constexpr uint32_t kPayloadOffset = kPanamaOffset + kPanamaHeaderBytes;  // 64
constexpr uint32_t kElemBytes = 4;

// 512-bit datapath geometry the layout is designed for.
constexpr uint32_t kBeatBytes = 64;
constexpr uint32_t kLanes = kBeatBytes / kElemBytes;  // 16 fp32 per beat

// Largest frame any engine handles (144 beats, no FCS on the stream
// interfaces): 9000-byte-MTU jumbo frames fit. Longer frames of any kind are
// dropped and counted (DROP_OVERSIZE). The most elements a frame can carry.
constexpr uint32_t kMaxFrameBytes = 9216;
constexpr uint32_t kMaxElemsPerFrame = (kMaxFrameBytes - kPayloadOffset) / 4;  // 2288 fp32
constexpr uint32_t max_elems_per_frame(uint8_t elem_type) {
  return elem_bytes(elem_type) == 0 ? 0u : (kMaxFrameBytes - kPayloadOffset) / elem_bytes(elem_type);
}
constexpr uint32_t kMinPanamaFrameBytes = kPayloadOffset + kElemBytes;  // 68

constexpr uint32_t ip_total_length(uint32_t elem_count) {
  return kIpHeaderBytes + kUdpHeaderBytes + kPanamaHeaderBytes + kElemBytes * elem_count;
}
constexpr uint32_t udp_length(uint32_t elem_count) {
  return kUdpHeaderBytes + kPanamaHeaderBytes + kElemBytes * elem_count;
}
constexpr uint32_t frame_length(uint32_t elem_count) {
  return kPayloadOffset + kElemBytes * elem_count;
}
// The same for elements of `elem_type` (elem_bytes(elem_type) each).
constexpr uint32_t ip_total_length(uint32_t elem_count, uint8_t elem_type) {
  return kIpHeaderBytes + kUdpHeaderBytes + kPanamaHeaderBytes + elem_bytes(elem_type) * elem_count;
}
constexpr uint32_t udp_length(uint32_t elem_count, uint8_t elem_type) {
  return kUdpHeaderBytes + kPanamaHeaderBytes + elem_bytes(elem_type) * elem_count;
}
constexpr uint32_t frame_length(uint32_t elem_count, uint8_t elem_type) {
  return kPayloadOffset + elem_bytes(elem_type) * elem_count;
}

static_assert(kPayloadOffset == kBeatBytes, "payload must start on the second beat");
static_assert(kPanamaFieldBytes % 8 == 0, "PANAMA header fields are 8-byte aligned");

// ------------------------------------------------------------ byte helpers

inline uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t load_be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}
inline uint32_t load_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
inline void store_le32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

// RFC 1071 checksum of the 20-byte IPv4 header at `ip` (the checksum field
// is included as it is: the result is 0 for a header with a correct checksum
// when the field is filled, and the value to store when the field is zero).
inline uint16_t ipv4_header_checksum(const uint8_t* ip) {
  uint32_t sum = 0;
  for (uint32_t i = 0; i < kIpHeaderBytes; i += 2) sum += load_be16(ip + i);
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// ----------------------------------------------------------------- headers

// Every field of Ethernet/IPv4/UDP/PANAMA that PANAMA uses, in host order.
struct Header {
  uint8_t eth_dst[6];
  uint8_t eth_src[6];
  uint8_t dscp;  // upper six bits of the TOS byte
  uint8_t ecn;   // lower two bits of the TOS byte
  uint8_t ttl;
  uint16_t ip_id;
  uint32_t ip_src;
  uint32_t ip_dst;
  uint16_t udp_src;
  uint16_t udp_dst;
  uint8_t version;
  uint8_t type;  // a PacketType value
  uint16_t job_id;
  uint8_t tree_id;
  uint8_t elem_type;  // an ElemType value
  uint16_t child_id;
  uint32_t seq;
  uint16_t cwnd_cap;
  uint16_t elem_count;
};

// Outcome of classifying one frame. Values other than kNotPanama, kOk and
// kResultDown are malformed PANAMA frames. The order of the checks (and hence
// which reason a frame with several faults is counted under) is the order of
// the code in classify_frame, documented in docs/protocol.md section 4; it is
// not the order of this enum (the IPv4-length truncation check runs last).
enum class FrameClass : uint8_t {
  kNotPanama = 0,  // anything else: passes through untouched
  kOk,             // well-formed aggregate-up or retransmission
  kResultDown,     // well-formed result-down: passes through untouched
  kTruncated,      // shorter than the headers, or than the IP length says
  kBadIpHeader,    // wrong IPv4 header checksum, or a fragment
  kBadVersion,     // PANAMA version is not kVersion
  kBadType,        // packet type is none of PacketType
  kBadElemType,    // element type is none of ElemType, or one the engine does not sum
  kBadElemCount,   // zero elements (the engine adds: more than a slot holds)
  kBadLength,      // IPv4 / UDP lengths disagree with elem_count, or the frame
                   // is longer than elem_count needs
};

constexpr bool is_malformed(FrameClass c) {
  return c != FrameClass::kNotPanama && c != FrameClass::kOk && c != FrameClass::kResultDown;
}

// Classifies `frame` (`len` bytes) and, for PANAMA frames, decodes the header
// into `h`. A frame is PANAMA when it is Ethernet II / IPv4 without options,
// not a non-first fragment, protocol UDP, destination port `udp_port`.
// `elem_types` is the mask of element types the engine sums (bit t for
// ElemType t): a contribution of any other type is kBadElemType. Never reads
// past `len`.
inline FrameClass classify_frame(const uint8_t* frame, uint32_t len, uint16_t udp_port, Header& h,
                                 uint32_t elem_types = kElemTypeMaskAll) {
  if (len < kUdpDstPort + 2) return FrameClass::kNotPanama;
  if (load_be16(frame + kEthType) != kEtherTypeIpv4) return FrameClass::kNotPanama;
  if (frame[kIpVerIhl] != 0x45) return FrameClass::kNotPanama;
  if (frame[kIpProto] != kIpProtoUdp) return FrameClass::kNotPanama;
  const uint16_t flags_frag = load_be16(frame + kIpFlagsFrag);
  if ((flags_frag & 0x1FFF) != 0) return FrameClass::kNotPanama;  // no UDP header here
  if (load_be16(frame + kUdpDstPort) != udp_port) return FrameClass::kNotPanama;

  if (len < kPayloadOffset) return FrameClass::kTruncated;

  for (uint32_t i = 0; i < 6; ++i) {
    h.eth_dst[i] = frame[kEthDst + i];
    h.eth_src[i] = frame[kEthSrc + i];
  }
  h.dscp = frame[kIpTos] >> 2;
  h.ecn = frame[kIpTos] & 3;
  h.ttl = frame[kIpTtl];
  h.ip_id = load_be16(frame + kIpId);
  h.ip_src = load_be32(frame + kIpSrc);
  h.ip_dst = load_be32(frame + kIpDst);
  h.udp_src = load_be16(frame + kUdpSrcPort);
  h.udp_dst = load_be16(frame + kUdpDstPort);
  h.version = frame[kPanamaVersion];
  h.type = frame[kPanamaType];
  h.job_id = load_be16(frame + kPanamaJobId);
  h.tree_id = frame[kPanamaTreeId];
  h.elem_type = frame[kPanamaElemType];
  h.child_id = load_be16(frame + kPanamaChildId);
  h.seq = load_be32(frame + kPanamaSeq);
  h.cwnd_cap = load_be16(frame + kPanamaCwndCap);
  h.elem_count = load_be16(frame + kPanamaElemCount);

  if (ipv4_header_checksum(frame + kIpOffset) != 0 || (flags_frag & 0x2000) != 0) {
    return FrameClass::kBadIpHeader;
  }
  if (h.version != kVersion) return FrameClass::kBadVersion;
  if (h.type != static_cast<uint8_t>(PacketType::kAggregateUp) &&
      h.type != static_cast<uint8_t>(PacketType::kResultDown) &&
      h.type != static_cast<uint8_t>(PacketType::kRetransmission)) {
    return FrameClass::kBadType;
  }
  if (h.type == static_cast<uint8_t>(PacketType::kResultDown)) return FrameClass::kResultDown;
  if (!elem_type_in(h.elem_type, elem_types)) return FrameClass::kBadElemType;
  if (h.elem_count == 0) return FrameClass::kBadElemCount;
  if (load_be16(frame + kIpTotalLen) != ip_total_length(h.elem_count, h.elem_type) ||
      load_be16(frame + kUdpLength) != udp_length(h.elem_count, h.elem_type)) {
    return FrameClass::kBadLength;
  }
  if (len < frame_length(h.elem_count, h.elem_type)) return FrameClass::kTruncated;
  // Bytes after the payload: the frame is not what its header says (a
  // PANAMA frame is at least 66 bytes, so Ethernet never pads one).
  if (len > frame_length(h.elem_count, h.elem_type)) return FrameClass::kBadLength;
  return FrameClass::kOk;
}

// A frame held in two pieces (its first kPayloadOffset bytes at `head`, the
// rest at `payload`, as a worker sending from its own memory chains them)
// written contiguously to `dst` (`len` bytes in all, len > kPayloadOffset).
inline void join_frame(uint8_t* dst, const uint8_t* head, const uint8_t* payload, uint32_t len) {
  for (uint32_t i = 0; i < kPayloadOffset; ++i) dst[i] = head[i];
  for (uint32_t i = kPayloadOffset; i < len; ++i) dst[i] = payload[i - kPayloadOffset];
}

// Writes the 64 header bytes of a PANAMA frame carrying `h.elem_count`
// elements of `h.elem_type`: lengths and the IPv4 header checksum are
// computed, the UDP checksum is 0 (not used), DF is set, padding is zero. The
// payload (elem_bytes(h.elem_type) * elem_count bytes at kPayloadOffset) is
// the caller's to fill. A header whose elem_type is no type gets the lengths
// of fp32 elements (malformed frames for tests).
inline void write_headers(uint8_t* frame, const Header& h) {
  const uint8_t len_type =
      elem_bytes(h.elem_type) != 0 ? h.elem_type : static_cast<uint8_t>(ElemType::kFloat32);
  for (uint32_t i = 0; i < 6; ++i) {
    frame[kEthDst + i] = h.eth_dst[i];
    frame[kEthSrc + i] = h.eth_src[i];
  }
  store_be16(frame + kEthType, kEtherTypeIpv4);
  frame[kIpVerIhl] = 0x45;
  frame[kIpTos] = static_cast<uint8_t>((h.dscp << 2) | (h.ecn & 3));
  store_be16(frame + kIpTotalLen, static_cast<uint16_t>(ip_total_length(h.elem_count, len_type)));
  store_be16(frame + kIpId, h.ip_id);
  store_be16(frame + kIpFlagsFrag, 0x4000);  // DF
  frame[kIpTtl] = h.ttl;
  frame[kIpProto] = kIpProtoUdp;
  store_be16(frame + kIpChecksum, 0);
  store_be32(frame + kIpSrc, h.ip_src);
  store_be32(frame + kIpDst, h.ip_dst);
  store_be16(frame + kIpChecksum, ipv4_header_checksum(frame + kIpOffset));
  store_be16(frame + kUdpSrcPort, h.udp_src);
  store_be16(frame + kUdpDstPort, h.udp_dst);
  store_be16(frame + kUdpLength, static_cast<uint16_t>(udp_length(h.elem_count, len_type)));
  store_be16(frame + kUdpChecksum, 0);
  frame[kPanamaVersion] = h.version;
  frame[kPanamaType] = h.type;
  store_be16(frame + kPanamaJobId, h.job_id);
  frame[kPanamaTreeId] = h.tree_id;
  frame[kPanamaElemType] = h.elem_type;
  store_be16(frame + kPanamaChildId, h.child_id);
  store_be32(frame + kPanamaSeq, h.seq);
  store_be16(frame + kPanamaCwndCap, h.cwnd_cap);
  store_be16(frame + kPanamaElemCount, h.elem_count);
  for (uint32_t i = 0; i < kPanamaPadBytes; ++i) frame[kPanamaPad + i] = 0;
}

// Stores `n` words little-endian at `out` (4n bytes). On little-endian hosts
// that is the words' own bytes, copied in one go; elsewhere byte by byte.
inline void store_le32_run(uint8_t* out, const uint32_t* words, uint32_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  __builtin_memcpy(out, words, size_t{4} * n);
#else
  for (uint32_t i = 0; i < n; ++i) store_le32(out + 4 * i, words[i]);
#endif
}

// Builds a complete frame into `out` (capacity `cap` bytes) from `h` and
// `h.elem_count` payload words given as binary32 bit patterns. Returns the
// frame length, or 0 when `cap` is too small, elem_count is 0 or too big, or
// h.elem_type is a 16-bit type (build_frame16 builds those).
inline uint32_t build_frame(uint8_t* out, uint32_t cap, const Header& h, const uint32_t* payload_bits) {
  if (h.elem_count == 0 || h.elem_count > kMaxElemsPerFrame || elem_bytes(h.elem_type) == 2) return 0;
  const uint32_t len = frame_length(h.elem_count);
  if (cap < len) return 0;
  write_headers(out, h);
  store_le32_run(out + kPayloadOffset, payload_bits, h.elem_count);
  return len;
}

// The same for a 16-bit type (h.elem_type bf16 or fp16): `payload_bits` are
// the elements' 16-bit patterns. Returns 0 when `cap` is too small,
// elem_count is 0 or too big, or the type is not a 16-bit one.
inline uint32_t build_frame16(uint8_t* out, uint32_t cap, const Header& h, const uint16_t* payload_bits) {
  if (elem_bytes(h.elem_type) != 2 || h.elem_count == 0 || h.elem_count > max_elems_per_frame(h.elem_type)) {
    return 0;
  }
  const uint32_t len = frame_length(h.elem_count, h.elem_type);
  if (cap < len) return 0;
  write_headers(out, h);
  for (uint32_t i = 0; i < h.elem_count; ++i) {
    out[kPayloadOffset + 2 * i] = static_cast<uint8_t>(payload_bits[i]);
    out[kPayloadOffset + 2 * i + 1] = static_cast<uint8_t>(payload_bits[i] >> 8);
  }
  return len;
}

}  // namespace wire
}  // namespace panama
