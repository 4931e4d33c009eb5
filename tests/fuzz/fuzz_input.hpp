// Reading a fuzz input front to back, for the libFuzzer targets of this
// folder. Every target's input is a byte stream of small records; the seed
// generator (make_corpus.py) writes the same layout, so seeds stay readable.
// Past the end, reads return zeros and `done()` turns true.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "panama/wire.hpp"

namespace panama::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  bool done() const { return p_ >= end_; }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

  uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  uint16_t u16() {  // big-endian, as on the wire
    const uint16_t hi = u8();
    return static_cast<uint16_t>((hi << 8) | u8());
  }
  // Up to `n` bytes (fewer at the end of the input); returns how many.
  size_t bytes(uint8_t* out, size_t n) {
    const size_t k = n < left() ? n : left();
    std::memcpy(out, p_, k);
    p_ += k;
    return k;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Makes a frame's IPv4 total length, UDP length and IPv4 header checksum
// consistent with its PANAMA element count, so that mutations of the other
// fields get past the checks a random byte string rarely passes.
inline void repair_lengths(uint8_t* f, uint32_t len) {
  if (len < wire::kPayloadOffset) return;
  const uint16_t n = wire::load_be16(f + wire::kPanamaElemCount);
  // The lengths of the frame's element type (fp32's for a value that is no type).
  const uint8_t t = wire::elem_bytes(f[wire::kPanamaElemType]) != 0 ? f[wire::kPanamaElemType] : 1;
  wire::store_be16(f + wire::kIpTotalLen, static_cast<uint16_t>(wire::ip_total_length(n, t)));
  wire::store_be16(f + wire::kUdpLength, static_cast<uint16_t>(wire::udp_length(n, t)));
  wire::store_be16(f + wire::kIpChecksum, 0);
  wire::store_be16(f + wire::kIpChecksum, wire::ipv4_header_checksum(f + wire::kIpOffset));
}

// An invariant a target checks: on failure, say which and abort (libFuzzer
// then saves the input as a crash artifact).
[[noreturn]] inline void invariant_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "fuzz invariant violated at %s:%d: %s\n", file, line, what);
  std::abort();
}

}  // namespace panama::fuzz

#define PANAMA_FUZZ_CHECK(cond) \
  ((cond) ? (void)0 : ::panama::fuzz::invariant_failed(#cond, __FILE__, __LINE__))
