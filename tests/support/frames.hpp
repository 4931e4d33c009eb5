// Test helpers: build PANAMA frames and decode emitted ones, through the
// wire format's own helpers (the thing under test is the engine, not these).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "panama/emit_target.hpp"
#include "panama/wire.hpp"

namespace panama::test {

inline uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A header for a worker's contribution with sensible defaults.
inline wire::Header contribution(uint16_t job, uint8_t tree, uint16_t child, uint32_t seq, uint16_t n,
                                 uint8_t ecn = wire::kEcnEct0, uint16_t cwnd_cap = 0xFFFF,
                                 wire::PacketType type = wire::PacketType::kAggregateUp) {
  wire::Header h{};
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0xFE};
  const uint8_t src[6] = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(child)};
  std::memcpy(h.eth_dst, dst, 6);
  std::memcpy(h.eth_src, src, 6);
  h.ecn = ecn;
  h.ttl = 64;
  h.ip_src = 0x0A000001u + child;
  h.ip_dst = 0x0A0000FEu;
  h.udp_src = wire::kDefaultUdpPort;
  h.udp_dst = wire::kDefaultUdpPort;
  h.version = wire::kVersion;
  h.type = static_cast<uint8_t>(type);
  h.job_id = job;
  h.tree_id = tree;
  h.elem_type = static_cast<uint8_t>(wire::ElemType::kFloat32);
  h.child_id = child;
  h.seq = seq;
  h.cwnd_cap = cwnd_cap;
  h.elem_count = n;
  return h;
}

inline std::vector<uint8_t> make_frame(const wire::Header& h, const std::vector<uint32_t>& payload) {
  std::vector<uint8_t> f(wire::frame_length(h.elem_count));
  const uint32_t len = wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
  f.resize(len);
  return f;
}

inline std::vector<uint32_t> payload_of(const std::vector<uint8_t>& frame) {
  const uint32_t n = wire::load_be16(frame.data() + wire::kPanamaElemCount);
  std::vector<uint32_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = wire::load_le32(frame.data() + wire::kPayloadOffset + 4 * i);
  return p;
}

// Collects every frame an engine sends.
struct CollectSink final : EmitTarget {
  std::vector<std::vector<uint8_t>> frames;
  void emit(const uint8_t* d, uint32_t len, Ports) override { frames.emplace_back(d, d + len); }
};

}  // namespace panama::test
