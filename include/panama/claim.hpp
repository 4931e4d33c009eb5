// PANAMA claim frames: the wire format of the pooled-slot control packets
// (docs/hybrid-allreduce.md): claim (4), claim-result (5) and release (6).
//
// Claim frames reuse the encapsulation and the 16-byte PANAMA header of
// wire.hpp, with no payload but an 8-byte body where a payload would start:
//
//    0  Ethernet II / IPv4 / UDP (PANAMA port), as every PANAMA frame
//   42  PANAMA header  version 1, type 4/5/6, job_id, tree_id,
//                      elem_type = 0, child_id = the sender's child id at
//                      the receiving engine, seq = the group index (claim,
//                      claim-result) or the cumulative count of released
//                      groups (release), cwnd_cap = 0, elem_count = 0
//   58  padding        6 bytes, zero when sent, ignored when received
//   64  body           8 bytes:
//                        claim:        u8 flags (bit 0: denied below), 7 zero bytes
//                        claim-result: u8 answer (1 granted, 0 denied),
//                                      u8 reason (Reason), 6 zero bytes
//                        release:      u8 flags (bit 0: confirmation, going down;
//                                      bit 1: ask for one, going up), 7 zero bytes
//
// A claim frame is 72 bytes: IPv4 total length 58, UDP length 38.
//
// The types stay outside wire::PacketType on purpose: the engine (and the RTL
// that mirrors wire.hpp) classifies them as a bad type and drops them, so an
// engine without pools never acts on a claim (docs/hybrid-allreduce.md,
// rule 1).
//
// Like wire.hpp, plain C++14 without heap, exceptions or standard containers.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "panama/wire.hpp"

namespace panama {
namespace claim {

// ---------------------------------------------------------------- constants

enum class Type : uint8_t {
  kClaim = 4,        // worker or engine -> parent: claim G pool slots for a group
  kClaimResult = 5,  // root engine -> workers: the root's answer for a group
  kRelease = 6,      // worker or engine -> parent: cumulative count of finished groups;
                     // with the confirmation flag, root engine -> workers: the count the
                     // root has freed (every child released it)
};

enum class Answer : uint8_t {
  kDenied = 0,
  kGranted = 1,
};

// Why a group was denied (kNone for a granted one).
enum class Reason : uint8_t {
  kNone = 0,
  kPoolFull = 1,     // no run of G free pool slots
  kOverCap = 2,      // the entry would hold more than its claim cap
  kExpired = 3,      // the lease ended before the group emitted anything
  kDeniedBelow = 4,  // an engine below could not reserve
  kStale = 5,        // the group is below the released count
};
constexpr uint8_t kReasonCount = 6;

constexpr uint8_t kFlagDeniedBelow = 0x01;   // claim flags, bit 0
constexpr uint8_t kFlagConfirmation = 0x01;  // release flags, bit 0: the root's confirmation
constexpr uint8_t kFlagAsk = 0x02;           // release flags, bit 1: a repeated release asking for one

constexpr uint32_t kBodyOffset = wire::kPayloadOffset;  // 64
constexpr uint32_t kBodyBytes = 8;
constexpr uint32_t kClaimFlags = kBodyOffset + 0;           // u8 (claim)
constexpr uint32_t kReleaseFlags = kBodyOffset + 0;         // u8 (release)
constexpr uint32_t kResultAnswer = kBodyOffset + 0;         // u8 (claim-result)
constexpr uint32_t kResultReason = kBodyOffset + 1;         // u8 (claim-result)
constexpr uint32_t kFrameBytes = kBodyOffset + kBodyBytes;  // 72
constexpr uint32_t kIpTotalLength =
    wire::kIpHeaderBytes + wire::kUdpHeaderBytes + wire::kPanamaHeaderBytes + kBodyBytes;       // 58
constexpr uint32_t kUdpLength = wire::kUdpHeaderBytes + wire::kPanamaHeaderBytes + kBodyBytes;  // 38

static_assert(kFrameBytes == wire::kEthHeaderBytes + kIpTotalLength, "frame = Ethernet + IPv4 total length");

constexpr bool is_claim_type(uint8_t type) {
  return type >= 4 && type <= 6;
}

constexpr const char* reason_name(Reason r) {
  return r == Reason::kNone          ? "none"
         : r == Reason::kPoolFull    ? "pool full"
         : r == Reason::kOverCap     ? "over the claim cap"
         : r == Reason::kExpired     ? "expired"
         : r == Reason::kDeniedBelow ? "denied below"
         : r == Reason::kStale       ? "stale"
                                     : "?";
}

// ----------------------------------------------------------------- frames

// The PANAMA fields of a claim frame, in host order. `seq` is the group
// index (claim, claim-result) or the cumulative released-group count
// (release). `denied_below` belongs to a claim, `answer` and `reason` to a
// claim-result, `confirmation` and `ask` to a release (`confirmation`: the
// root's count, going down; `ask`: a repeated release that wants one back);
// the other types leave them false / kDenied / kNone.
struct Frame {
  Type type = Type::kClaim;
  uint16_t job_id = 0;
  uint8_t tree_id = 0;
  uint16_t child_id = 0;
  uint32_t seq = 0;
  bool denied_below = false;
  Answer answer = Answer::kDenied;
  Reason reason = Reason::kNone;
  bool confirmation = false;
  bool ask = false;
};

// Outcome of parsing one frame. kNotClaim: not a PANAMA frame, or a PANAMA
// frame whose type is not a claim type (wire::classify_frame decides what it
// is). The malformed classes are listed in the order parse_frame checks them.
enum class Class : uint8_t {
  kNotClaim = 0,
  kClaim,
  kClaimResult,
  kRelease,
  kTruncated,     // shorter than 72 bytes
  kBadIpHeader,   // wrong IPv4 header checksum, or MF set
  kBadVersion,    // PANAMA version is not wire::kVersion
  kBadElemType,   // elem_type is not 0
  kBadElemCount,  // elem_count is not 0
  kBadCwndCap,    // cwnd_cap is not 0
  kBadLength,     // IPv4 total length not 58, UDP length not 38, or longer than 72 bytes
  kBadBody,       // unknown flag bits, answer not 0/1, reason unknown or not matching the
                  // answer (granted needs kNone, denied a reason), nonzero reserved body bytes
};

constexpr bool is_malformed(Class c) {
  return c != Class::kNotClaim && c != Class::kClaim && c != Class::kClaimResult && c != Class::kRelease;
}

constexpr const char* class_name(Class c) {
  return c == Class::kNotClaim       ? "not a claim frame"
         : c == Class::kClaim        ? "claim"
         : c == Class::kClaimResult  ? "claim-result"
         : c == Class::kRelease      ? "release"
         : c == Class::kTruncated    ? "truncated"
         : c == Class::kBadIpHeader  ? "bad IPv4 header"
         : c == Class::kBadVersion   ? "bad version"
         : c == Class::kBadElemType  ? "nonzero elem_type"
         : c == Class::kBadElemCount ? "nonzero elem_count"
         : c == Class::kBadCwndCap   ? "nonzero cwnd_cap"
         : c == Class::kBadLength    ? "bad length"
         : c == Class::kBadBody      ? "bad body"
                                     : "?";
}

// Builds a claim frame into `out` (capacity `cap` bytes). The addresses,
// DSCP, ECN, TTL, IPv4 ID and UDP ports come from `addr` (its PANAMA fields
// are ignored), the PANAMA fields and the body from `f`; elem_type,
// cwnd_cap and elem_count are 0, DF is set, the IPv4 checksum is computed,
// the UDP checksum is 0. Returns kFrameBytes, or 0 when `cap` is too small or
// `f` is not encodable (a granted answer with a reason, a denied one without).
inline uint32_t build_frame(uint8_t* out, uint32_t cap, const wire::Header& addr, const Frame& f) {
  if (cap < kFrameBytes) return 0;
  if (f.type == Type::kClaimResult && ((f.answer == Answer::kGranted) != (f.reason == Reason::kNone)))
    return 0;
  if (f.type == Type::kClaimResult && static_cast<uint8_t>(f.reason) >= kReasonCount) return 0;
  if (!is_claim_type(static_cast<uint8_t>(f.type))) return 0;
  if (f.confirmation && f.ask) return 0;  // a confirmation goes down, an ask up
  wire::Header h = addr;
  h.version = wire::kVersion;
  h.type = static_cast<uint8_t>(f.type);
  h.job_id = f.job_id;
  h.tree_id = f.tree_id;
  h.elem_type = 0;
  h.child_id = f.child_id;
  h.seq = f.seq;
  h.cwnd_cap = 0;
  h.elem_count = 0;
  wire::write_headers(out, h);
  // write_headers sizes the lengths for a payload; a claim frame carries the body instead.
  wire::store_be16(out + wire::kIpTotalLen, static_cast<uint16_t>(kIpTotalLength));
  wire::store_be16(out + wire::kUdpLength, static_cast<uint16_t>(kUdpLength));
  wire::store_be16(out + wire::kIpChecksum, 0);
  wire::store_be16(out + wire::kIpChecksum, wire::ipv4_header_checksum(out + wire::kIpOffset));
  for (uint32_t i = 0; i < kBodyBytes; ++i) out[kBodyOffset + i] = 0;
  if (f.type == Type::kClaim) {
    out[kClaimFlags] = f.denied_below ? kFlagDeniedBelow : 0;
  } else if (f.type == Type::kClaimResult) {
    out[kResultAnswer] = static_cast<uint8_t>(f.answer);
    out[kResultReason] = static_cast<uint8_t>(f.reason);
  } else {
    out[kReleaseFlags] =
        static_cast<uint8_t>((f.confirmation ? kFlagConfirmation : 0) | (f.ask ? kFlagAsk : 0));
  }
  return kFrameBytes;
}

inline uint32_t build_claim(uint8_t* out, uint32_t cap, const wire::Header& addr, uint16_t job_id,
                            uint8_t tree_id, uint16_t child_id, uint32_t group, bool denied_below) {
  Frame f;
  f.type = Type::kClaim;
  f.job_id = job_id;
  f.tree_id = tree_id;
  f.child_id = child_id;
  f.seq = group;
  f.denied_below = denied_below;
  return build_frame(out, cap, addr, f);
}

inline uint32_t build_claim_result(uint8_t* out, uint32_t cap, const wire::Header& addr, uint16_t job_id,
                                   uint8_t tree_id, uint16_t child_id, uint32_t group, Answer answer,
                                   Reason reason) {
  Frame f;
  f.type = Type::kClaimResult;
  f.job_id = job_id;
  f.tree_id = tree_id;
  f.child_id = child_id;
  f.seq = group;
  f.answer = answer;
  f.reason = reason;
  return build_frame(out, cap, addr, f);
}

inline uint32_t build_release(uint8_t* out, uint32_t cap, const wire::Header& addr, uint16_t job_id,
                              uint8_t tree_id, uint16_t child_id, uint32_t released,
                              bool confirmation = false, bool ask = false) {
  Frame f;
  f.type = Type::kRelease;
  f.job_id = job_id;
  f.tree_id = tree_id;
  f.child_id = child_id;
  f.seq = released;
  f.confirmation = confirmation;
  f.ask = ask;
  return build_frame(out, cap, addr, f);
}

// Parses `frame` (`len` bytes). A frame is a claim frame when it is a PANAMA
// frame (wire::classify_frame's recognition: Ethernet II / IPv4 without
// options / UDP to `udp_port`, not a non-first fragment) whose type byte is
// 4, 5 or 6; a frame too short to hold the type byte is kNotClaim. A claim
// frame is then checked in the order of the malformed classes of Class and
// counted under the first rule it breaks. `h` receives the decoded header
// (as classify_frame fills it) whenever the frame is at least 64 bytes and a
// claim frame, `f` the claim fields when the frame is well formed. Never
// reads past `len`.
inline Class parse_frame(const uint8_t* frame, uint32_t len, uint16_t udp_port, wire::Header& h, Frame& f) {
  const wire::FrameClass wc = wire::classify_frame(frame, len, udp_port, h);
  if (wc == wire::FrameClass::kNotPanama) return Class::kNotClaim;
  if (len <= wire::kPanamaType || !is_claim_type(frame[wire::kPanamaType])) return Class::kNotClaim;
  if (len < kFrameBytes) return Class::kTruncated;
  // Frames of 64 bytes or more: classify_frame decoded the header and ran
  // the IPv4 and version checks before it found the type unknown.
  if (wc == wire::FrameClass::kBadIpHeader) return Class::kBadIpHeader;
  if (wc == wire::FrameClass::kBadVersion) return Class::kBadVersion;
  if (h.elem_type != 0) return Class::kBadElemType;
  if (h.elem_count != 0) return Class::kBadElemCount;
  if (h.cwnd_cap != 0) return Class::kBadCwndCap;
  if (wire::load_be16(frame + wire::kIpTotalLen) != kIpTotalLength ||
      wire::load_be16(frame + wire::kUdpLength) != kUdpLength || len > kFrameBytes) {
    return Class::kBadLength;
  }
  f = Frame{};
  f.type = static_cast<Type>(h.type);
  f.job_id = h.job_id;
  f.tree_id = h.tree_id;
  f.child_id = h.child_id;
  f.seq = h.seq;
  const uint8_t* body = frame + kBodyOffset;
  uint32_t first_reserved = 0;
  if (f.type == Type::kClaim) {
    if ((body[0] & ~kFlagDeniedBelow) != 0) return Class::kBadBody;
    f.denied_below = (body[0] & kFlagDeniedBelow) != 0;
    first_reserved = 1;
  } else if (f.type == Type::kClaimResult) {
    if (body[0] > 1 || body[1] >= kReasonCount) return Class::kBadBody;
    f.answer = static_cast<Answer>(body[0]);
    f.reason = static_cast<Reason>(body[1]);
    if ((f.answer == Answer::kGranted) != (f.reason == Reason::kNone)) return Class::kBadBody;
    first_reserved = 2;
  } else {
    if ((body[0] & ~(kFlagConfirmation | kFlagAsk)) != 0 || body[0] == (kFlagConfirmation | kFlagAsk))
      return Class::kBadBody;
    f.confirmation = (body[0] & kFlagConfirmation) != 0;
    f.ask = (body[0] & kFlagAsk) != 0;
    first_reserved = 1;
  }
  for (uint32_t i = first_reserved; i < kBodyBytes; ++i) {
    if (body[i] != 0) return Class::kBadBody;
  }
  return f.type == Type::kClaim         ? Class::kClaim
         : f.type == Type::kClaimResult ? Class::kClaimResult
                                        : Class::kRelease;
}

}  // namespace claim
}  // namespace panama
