// Independent expectations for the wire-format and engine tests.
//
// The frame layout is restated here from docs/protocol.md with literal byte
// offsets, the IPv4 checksum is recomputed in a different way (byte-wise
// accumulation in 64 bits), and fp32 sums come from the host FPU (x86-64 SSE
// `float` addition, no FTZ/DAZ), with any NaN mapped to 0x7FC00000. Nothing
// here calls the encoder, checksum or adder under test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "panama/wire.hpp"  // only for the wire::Header data carrier
#include "wire/seeded_rng.hpp"

namespace panama::test::ref {

// Frame byte offsets (docs/protocol.md §1-§2; the PANAMA header starts at 42).
constexpr size_t kEthDst = 0, kEthSrc = 6, kEthType = 12;
constexpr size_t kIpVerIhl = 14, kIpTos = 15, kIpTotalLen = 16, kIpId = 18, kIpFlagsFrag = 20, kIpTtl = 22,
                 kIpProto = 23, kIpChecksum = 24, kIpSrc = 26, kIpDst = 30;
constexpr size_t kUdpSrc = 34, kUdpDst = 36, kUdpLen = 38, kUdpChecksum = 40;
constexpr size_t kVersion = 42, kType = 43, kJob = 44, kTree = 46, kElemType = 47, kChild = 48, kSeq = 50,
                 kCwndCap = 54, kElemCount = 56, kPad = 58, kPayload = 64;
constexpr size_t kMaxFrame = 9216;
constexpr uint32_t kMaxElems = 2288;
constexpr uint32_t kCanonicalNan = 0x7FC00000u;

inline void put8(std::vector<uint8_t>& f, size_t off, uint32_t v) {
  f.at(off) = static_cast<uint8_t>(v);
}
inline void put16(std::vector<uint8_t>& f, size_t off, uint32_t v) {  // network order
  f.at(off) = static_cast<uint8_t>(v >> 8);
  f.at(off + 1) = static_cast<uint8_t>(v);
}
inline void put32(std::vector<uint8_t>& f, size_t off, uint32_t v) {
  put16(f, off, v >> 16);
  put16(f, off + 2, v & 0xFFFF);
}
inline uint32_t get16(const uint8_t* f, size_t off) {
  return (uint32_t{f[off]} << 8) | f[off + 1];
}
inline uint32_t get32(const uint8_t* f, size_t off) {
  return (get16(f, off) << 16) | get16(f, off + 2);
}
inline uint32_t get_le32(const uint8_t* f, size_t off) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | f[off + i];
  return v;
}

// RFC 1071 one's-complement sum over the 20-byte IPv4 header at frame byte
// 14, skipping the checksum field itself; returns the value to store there.
inline uint16_t ip_checksum(const uint8_t* frame) {
  uint64_t sum = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (i == 10 || i == 11) continue;
    sum += (i % 2 == 0) ? uint64_t{frame[14 + i]} * 256 : frame[14 + i];
  }
  while (sum > 0xFFFF) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xFFFF);
}
inline void fix_ip_checksum(std::vector<uint8_t>& f) {
  put16(f, kIpChecksum, ip_checksum(f.data()));
}

// The frame a correct encoder produces for `h` and a payload of `count`
// elements of `elem_bytes` bytes each (docs/protocol.md): DF set, UDP
// checksum 0, zero padding; the payload bytes are the caller's to fill.
inline std::vector<uint8_t> encode_headers(const wire::Header& h, size_t count, uint32_t elem_bytes) {
  std::vector<uint8_t> f(kPayload + elem_bytes * count, 0xEE);
  for (size_t i = 0; i < 6; ++i) {
    f[kEthDst + i] = h.eth_dst[i];
    f[kEthSrc + i] = h.eth_src[i];
  }
  put16(f, kEthType, 0x0800);
  put8(f, kIpVerIhl, 0x45);
  put8(f, kIpTos, (uint32_t{h.dscp} << 2) | (h.ecn & 3u));
  put16(f, kIpTotalLen, 20 + 8 + 22 + elem_bytes * h.elem_count);
  put16(f, kIpId, h.ip_id);
  put16(f, kIpFlagsFrag, 0x4000);
  put8(f, kIpTtl, h.ttl);
  put8(f, kIpProto, 17);
  put32(f, kIpSrc, h.ip_src);
  put32(f, kIpDst, h.ip_dst);
  fix_ip_checksum(f);
  put16(f, kUdpSrc, h.udp_src);
  put16(f, kUdpDst, h.udp_dst);
  put16(f, kUdpLen, 8 + 22 + elem_bytes * h.elem_count);
  put16(f, kUdpChecksum, 0);
  put8(f, kVersion, h.version);
  put8(f, kType, h.type);
  put16(f, kJob, h.job_id);
  put8(f, kTree, h.tree_id);
  put8(f, kElemType, h.elem_type);
  put16(f, kChild, h.child_id);
  put32(f, kSeq, h.seq);
  put16(f, kCwndCap, h.cwnd_cap);
  put16(f, kElemCount, h.elem_count);
  for (size_t i = 0; i < 6; ++i) f[kPad + i] = 0;
  return f;
}

// An fp32 frame: little-endian binary32 payload.
inline std::vector<uint8_t> encode(const wire::Header& h, const std::vector<uint32_t>& payload) {
  std::vector<uint8_t> f = encode_headers(h, payload.size(), 4);
  for (size_t i = 0; i < payload.size(); ++i) {
    for (size_t b = 0; b < 4; ++b) f[kPayload + 4 * i + b] = static_cast<uint8_t>(payload[i] >> (8 * b));
  }
  return f;
}

// A bf16 or fp16 frame: little-endian 16-bit payload (h.elem_type says which).
inline std::vector<uint8_t> encode16(const wire::Header& h, const std::vector<uint16_t>& payload) {
  std::vector<uint8_t> f = encode_headers(h, payload.size(), 2);
  for (size_t i = 0; i < payload.size(); ++i) {
    f[kPayload + 2 * i] = static_cast<uint8_t>(payload[i]);
    f[kPayload + 2 * i + 1] = static_cast<uint8_t>(payload[i] >> 8);
  }
  return f;
}

// ------------------------------------------------------------- numbers

inline uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float value(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The contract's sum of two binary32 bit patterns, computed by the host FPU.
inline uint32_t host_add(uint32_t a, uint32_t b) {
  const float r = value(a) + value(b);
  return std::isnan(r) ? kCanonicalNan : bits(r);
}

// Checks once that the host FPU keeps subnormals (no FTZ/DAZ), which the
// expectations above rely on.
inline bool host_keeps_subnormals() {
  volatile float tiny = value(0x00000001u);
  volatile float r = tiny + tiny;
  return bits(r) == 0x00000002u;
}

// A payload value: mostly ordinary gradients, with zeros of both signs,
// subnormals, large values and (rarely) infinities and NaNs mixed in.
inline uint32_t random_element(Rng& rng) {
  const uint32_t pick = uniform(rng, 0, 999);
  const uint32_t sign = uniform(rng, 0, 1) << 31;
  if (pick < 30) return sign;                                                                  // +-0
  if (pick < 100) return sign | uniform(rng, 1, 0x007FFFFF);                                   // subnormal
  if (pick < 130) return sign | (uniform(rng, 0xF0, 0xFE) << 23) | uniform(rng, 0, 0x7FFFFF);  // huge
  if (pick < 133) return sign | 0x7F800000u;                                                   // inf
  if (pick < 135) return sign | 0x7F800000u | uniform(rng, 1, 0x7FFFFF);     // NaN (any kind)
  return sign | (uniform(rng, 100, 140) << 23) | uniform(rng, 0, 0x7FFFFF);  // ordinary
}

// ------------------------------------------------------------- 16-bit numbers
//
// Restated from docs/protocol.md §7 with double arithmetic (exact for every
// value involved) instead of bit manipulation: a 16-bit pattern's value, and
// rounding by searching the ordered finite patterns of the type.

constexpr uint8_t kBf16 = 2;
constexpr uint8_t kFp16 = 3;

// The value of 16-bit pattern `h` of type `t` (2 bf16, 3 fp16).
inline double value16(uint8_t t, uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (t == kBf16) {
    const uint32_t e = (h >> 7) & 0xFFu, m = h & 0x7Fu;
    if (e == 0xFF) return m ? std::nan("") : sign * INFINITY;
    if (e == 0) return sign * std::ldexp(static_cast<double>(m), -133);  // m * 2^-126 / 2^7
    return sign * std::ldexp(static_cast<double>(128 + m), static_cast<int>(e) - 134);
  }
  const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0x1F) return m ? std::nan("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(m), -24);
  return sign * std::ldexp(static_cast<double>(1024 + m), static_cast<int>(e) - 25);
}

// `h` widened to binary32 (a NaN gives some binary32 NaN).
inline uint32_t widen16(uint8_t t, uint16_t h) {
  return bits(static_cast<float>(value16(t, h)));
}

// Binary32 pattern `x` rounded to type `t`: nearest, ties to the even
// pattern, beyond the largest finite value (by half a step or more, as if
// the exponent went on) an infinity, NaN the canonical NaN.
inline uint16_t round16(uint8_t t, uint32_t x) {
  const double v = static_cast<double>(value(x));
  if (std::isnan(v)) return t == kBf16 ? 0x7FC0u : 0x7E00u;
  const uint16_t sign = (x & 0x80000000u) ? 0x8000u : 0;
  const double a = std::fabs(v);
  const uint16_t max_finite = t == kBf16 ? 0x7F7Fu : 0x7BFFu;
  const double beyond = t == kBf16 ? std::ldexp(1.0, 128) : 65536.0;  // the next step past max_finite
  // Largest finite pattern p with value16(p) <= a (values grow with patterns).
  uint32_t lo = 0, hi = max_finite;
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (value16(t, static_cast<uint16_t>(mid)) <= a) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const double down = value16(t, static_cast<uint16_t>(lo));
  if (down == a) return static_cast<uint16_t>(sign | lo);
  const double up = lo == max_finite ? beyond : value16(t, static_cast<uint16_t>(lo + 1));
  const double mid = (down + up) / 2;
  uint32_t r;
  if (a < mid) {
    r = lo;
  } else if (a > mid) {
    r = lo + 1;
  } else {
    r = (lo % 2 == 0) ? lo : lo + 1;
  }
  return static_cast<uint16_t>(sign | r);  // lo + 1 past max_finite is the infinity pattern
}

// A 16-bit payload value of type t: the same classes as random_element.
inline uint16_t random_element16(Rng& rng, uint8_t t) {
  const uint32_t pick = uniform(rng, 0, 999);
  const uint16_t sign = static_cast<uint16_t>(uniform(rng, 0, 1) << 15);
  const uint32_t mbits = t == kBf16 ? 7 : 10;
  const uint32_t emax = t == kBf16 ? 0xFF : 0x1F;
  const uint32_t mmax = (1u << mbits) - 1;
  if (pick < 30) return sign;                                                  // +-0
  if (pick < 100) return static_cast<uint16_t>(sign | uniform(rng, 1, mmax));  // subnormal
  if (pick < 130) return static_cast<uint16_t>(sign | ((emax - 1) << mbits) | uniform(rng, 0, mmax));  // huge
  if (pick < 133) return static_cast<uint16_t>(sign | (emax << mbits));                                // inf
  if (pick < 135) return static_cast<uint16_t>(sign | (emax << mbits) | uniform(rng, 1, mmax));        // NaN
  const uint32_t ebias = emax / 2;  // ordinary: within a few binades of 1
  return static_cast<uint16_t>(sign | (uniform(rng, ebias - 8, ebias + 4) << mbits) | uniform(rng, 0, mmax));
}

}  // namespace panama::test::ref
