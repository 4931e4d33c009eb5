// Test harness for the HLS C++ engine: programs table entries through the
// register interface, builds contribution frames with the independent
// reference encoder (tests/wire/reference.hpp), keeps a test-side model of
// each slot's expected aggregate (host FPU sums in arrival order), and
// compares counters. Nothing here calls the engine's own logic to form an
// expectation.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "panama/engine.hpp"
#include "panama/regmap.hpp"
#include "panama/table_entry.hpp"
#include "wire/reference.hpp"

// The engine tests run twice: against the host engine (test_engine) and
// against the Vitis kernel's stages in C simulation (test_engine_kernel,
// built with PANAMA_TEST_KERNEL_CSIM).
#if defined(PANAMA_TEST_KERNEL_CSIM)
#include "panama/kernel_csim.hpp"
#endif

namespace panama::test {

#if defined(PANAMA_TEST_KERNEL_CSIM)
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords>
using EngineUnderTest = KernelCsim<NumEntries, NumSlots, SlotWords>;
#else
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords>
using EngineUnderTest = Engine<NumEntries, NumSlots, SlotWords>;
#endif
using DefaultEngineUnderTest = EngineUnderTest<64, 512, 144>;

// A table entry as the tests think of it: the project's TableEntry
// (panama/table_entry.hpp) with test defaults. Its packing into the E_*
// registers is pack_entry's, whose bit positions test_table_entry checks
// against the register map's documented layout.
struct EntrySpec : TableEntry {
  EntrySpec() {
    job = 1;
    tree = 0;
    enable = true;
    root = true;
    fan_in = 2;
    child_mask = 0x3;
    slot_base = 0;
    slot_count = 4;
    out_child_id = 0;
    eth_dst = {{0x02, 0xAA, 0, 0, 0, 0x01}};
    eth_src = {{0x02, 0xBB, 0, 0, 0, 0x02}};
    ip_src = 0x0A010101;
    ip_dst = 0xE0000001;
    udp_src = 40000;
    udp_dst = 9600;
    ttl = 32;
    dscp = 0x0A;
  }
};

inline EntrySpec random_addresses(EntrySpec s, Rng& rng) {
  for (auto& b : s.eth_dst) b = static_cast<uint8_t>(uniform(rng, 0, 255));
  for (auto& b : s.eth_src) b = static_cast<uint8_t>(uniform(rng, 0, 255));
  s.ip_src = static_cast<uint32_t>(rng());
  s.ip_dst = static_cast<uint32_t>(rng());
  s.udp_src = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  s.udp_dst = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  s.ttl = static_cast<uint8_t>(uniform(rng, 0, 255));
  s.dscp = static_cast<uint8_t>(uniform(rng, 0, 63));
  s.out_child_id = static_cast<uint16_t>(uniform(rng, 0, 63));
  return s;
}

// Writes the staged fields of `s`.
template <class E>
void stage_entry(E& eng, const EntrySpec& s) {
  const StagedRegisters r = pack_entry(s);
  for (uint32_t k = 0; k < regmap::kNumStagedRegisters; ++k) eng.reg_write(regmap::kStagedBase + 4 * k, r[k]);
}

// Commits `s` to entry `index`; returns ENTRY_STATUS.
template <class E>
uint32_t commit_entry(E& eng, uint32_t index, const EntrySpec& s) {
  return panama::commit_entry(eng, index, static_cast<const TableEntry&>(s));
}

// A contribution to entry `s` from `child`, encoded by the reference encoder.
inline std::vector<uint8_t> contribution(const EntrySpec& s, uint16_t child, uint32_t seq,
                                         const std::vector<uint32_t>& payload, uint8_t ecn = 2,
                                         uint16_t cwnd_cap = 0xFFFF, uint8_t type = 1,
                                         uint16_t udp_port = 9600) {
  wire::Header h{};
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0xFE};
  const uint8_t src[6] = {0x02, 0, 0, 0, static_cast<uint8_t>(child >> 8), static_cast<uint8_t>(child)};
  std::copy(dst, dst + 6, h.eth_dst);
  std::copy(src, src + 6, h.eth_src);
  h.dscp = 0;
  h.ecn = ecn;
  h.ttl = 64;
  h.ip_id = static_cast<uint16_t>(seq * 7 + child);
  h.ip_src = 0x0A000000u + child;
  h.ip_dst = 0x0A0000FEu;
  h.udp_src = 12345;
  h.udp_dst = udp_port;
  h.version = 1;
  h.type = type;
  h.job_id = s.job;
  h.tree_id = s.tree;
  h.elem_type = 1;
  h.child_id = child;
  h.seq = seq;
  h.cwnd_cap = cwnd_cap;
  h.elem_count = static_cast<uint16_t>(payload.size());
  return ref::encode(h, payload);
}

inline std::vector<uint32_t> random_payload(Rng& rng, uint32_t n) {
  std::vector<uint32_t> p(n);
  for (auto& v : p) v = ref::random_element(rng);
  return p;
}

// Expected state of one sequence at the engine: what the contract says the
// slot holds after the contributions seen so far.
struct RefSlot {
  uint32_t seq = 0;
  std::vector<uint32_t> sum;
  uint64_t children = 0;
  uint32_t count = 0;
  uint8_t ecn = 0;
  uint16_t cwnd_cap = 0xFFFF;
  bool done = false;

  void add(uint16_t child, const std::vector<uint32_t>& p, uint8_t ecn_in, uint16_t cap) {
    if (count == 0) {
      sum = p;  // the first contribution is stored as it arrives
      ecn = ecn_in;
      cwnd_cap = cap;
    } else {
      for (size_t i = 0; i < p.size(); ++i) sum[i] = ref::host_add(sum[i], p[i]);
      ecn = static_cast<uint8_t>(ecn | ecn_in);
      cwnd_cap = std::min(cwnd_cap, cap);
    }
    children |= uint64_t{1} << child;
    ++count;
  }
};

// The frame an engine must emit for entry `s` and the completed slot `r`
// (docs/protocol.md §6); `answer_retrans` when it answers a retransmission.
inline std::vector<uint8_t> expected_emission(const EntrySpec& s, const RefSlot& r, bool answer_retrans) {
  wire::Header h{};
  std::copy(s.eth_dst.begin(), s.eth_dst.end(), h.eth_dst);
  std::copy(s.eth_src.begin(), s.eth_src.end(), h.eth_src);
  h.dscp = s.dscp;
  h.ecn = r.ecn;
  h.ttl = s.ttl;
  h.ip_id = 0;
  h.ip_src = s.ip_src;
  h.ip_dst = s.ip_dst;
  h.udp_src = s.udp_src;
  h.udp_dst = s.udp_dst;
  h.version = 1;
  h.type = s.root ? 2 : (answer_retrans ? 3 : 1);
  h.job_id = s.job;
  h.tree_id = s.tree;
  h.elem_type = 1;
  h.child_id = s.out_child_id;
  h.seq = r.seq;
  h.cwnd_cap =
      static_cast<uint16_t>(std::min<uint32_t>(r.cwnd_cap, std::min<uint32_t>(s.slot_count, 0xFFFF)));
  h.elem_count = static_cast<uint16_t>(r.sum.size());
  return ref::encode(h, r.sum);
}

// Collects every frame the engine sends.
struct Sink final : EmitTarget {
  std::vector<std::vector<uint8_t>> frames;
  void emit(const uint8_t* d, uint32_t len, Ports) override { frames.emplace_back(d, d + len); }
};

template <class E>
EngineOutcome send(E& eng, const std::vector<uint8_t>& frame, Sink& sink) {
  return eng.process_frame(frame.data(), static_cast<uint32_t>(frame.size()), sink);
}

// Every counter of an engine, read through the accessors.
struct Counters {
  std::vector<uint64_t> global;
  std::vector<std::vector<uint64_t>> entry;
};

template <class E>
Counters snapshot(const E& eng) {
  Counters c;
  for (uint32_t i = 0; i < regmap::kNumGlobalCounters; ++i) c.global.push_back(eng.global_counter(i));
  for (uint32_t e = 0; e < E::kTableEntries; ++e) {
    c.entry.emplace_back();
    for (uint32_t i = 0; i < regmap::kNumEntryCounters; ++i)
      c.entry.back().push_back(eng.entry_counter(e, i));
  }
  return c;
}

// Names the counters that moved between two snapshots and by how much,
// e.g. "drop_truncated+1 frames_in+1", so that checks read like the spec.
inline std::string counter_delta(const Counters& a, const Counters& b) {
  std::string out;
  for (uint32_t i = 0; i < a.global.size(); ++i) {
    if (a.global[i] != b.global[i]) {
      out += std::string(out.empty() ? "" : " ") + regmap::kGlobalCounterNames[i] + "+" +
             std::to_string(b.global[i] - a.global[i]);
    }
  }
  for (uint32_t e = 0; e < a.entry.size(); ++e) {
    for (uint32_t i = 0; i < a.entry[e].size(); ++i) {
      if (a.entry[e][i] != b.entry[e][i]) {
        out += " e" + std::to_string(e) + "." + regmap::kEntryCounterNames[i] + "+" +
               std::to_string(b.entry[e][i] - a.entry[e][i]);
      }
    }
  }
  return out;
}

}  // namespace panama::test
