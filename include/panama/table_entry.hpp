// One (job, tree) entry of an engine's table in host terms, and the one
// packing of it into the staged-entry registers (E_KEY .. E_IP_TTL_DSCP).
// The bit positions come from the register map's single source
// (regmap::kField*, generated from hw/regmap/panama_regmap.json); every
// harness that programs an engine (node-configuration apply, co-simulation,
// tests) packs entries here and nowhere else.
#pragma once

#include <array>
#include <cstdint>

#include "panama/regmap.hpp"

namespace panama {

using MacBytes = std::array<uint8_t, 6>;

struct TableEntry {
  uint16_t job = 0;
  uint8_t tree = 0;
  bool enable = true;
  bool root = false;        // emit result-down instead of aggregate-up
  uint32_t fan_in = 0;      // contributions (distinct children) that complete a slot
  uint64_t child_mask = 0;  // bit i: child id i may contribute
  uint32_t slot_base = 0;
  uint32_t slot_count = 0;  // the entry's share Q of the packet memory
  uint16_t out_child_id = 0;
  MacBytes eth_dst{};
  MacBytes eth_src{};
  uint32_t ip_src = 0;  // host order
  uint32_t ip_dst = 0;
  uint16_t udp_src = 0;
  uint16_t udp_dst = 0;
  uint8_t ttl = 64;
  uint8_t dscp = 0;  // 6 bits

  bool operator==(const TableEntry& o) const {
    return job == o.job && tree == o.tree && enable == o.enable && root == o.root && fan_in == o.fan_in &&
           child_mask == o.child_mask && slot_base == o.slot_base && slot_count == o.slot_count &&
           out_child_id == o.out_child_id && eth_dst == o.eth_dst && eth_src == o.eth_src &&
           ip_src == o.ip_src && ip_dst == o.ip_dst && udp_src == o.udp_src && udp_dst == o.udp_dst &&
           ttl == o.ttl && dscp == o.dscp;
  }
  bool operator!=(const TableEntry& o) const { return !(*this == o); }
};

// The staged registers in offset order: element k is register kStagedBase + 4k.
using StagedRegisters = std::array<uint32_t, regmap::kNumStagedRegisters>;

constexpr uint32_t staged_index(uint32_t reg) {
  return (reg - regmap::kStagedBase) / 4;
}

namespace detail {
inline void put(StagedRegisters& r, const regmap::StagedField& f, uint32_t v) {
  r[staged_index(f.reg)] = f.put(r[staged_index(f.reg)], v);
}
inline uint32_t get(const StagedRegisters& r, const regmap::StagedField& f) {
  return f.get(r[staged_index(f.reg)]);
}
// Ethernet address bytes 0..1 go to the _HI register (byte 0 in [15:8]),
// bytes 2..5 to _LO (byte 2 in [31:24]), as the register map documents.
inline uint32_t mac_hi(const MacBytes& m) {
  return (uint32_t{m[0]} << 8) | m[1];
}
inline uint32_t mac_lo(const MacBytes& m) {
  return (uint32_t{m[2]} << 24) | (uint32_t{m[3]} << 16) | (uint32_t{m[4]} << 8) | m[5];
}
inline MacBytes mac_from(uint32_t hi, uint32_t lo) {
  return {static_cast<uint8_t>(hi >> 8),  static_cast<uint8_t>(hi),      static_cast<uint8_t>(lo >> 24),
          static_cast<uint8_t>(lo >> 16), static_cast<uint8_t>(lo >> 8), static_cast<uint8_t>(lo)};
}
}  // namespace detail

inline StagedRegisters pack_entry(const TableEntry& e) {
  using namespace regmap;
  StagedRegisters r{};
  detail::put(r, kFieldJobId, e.job);
  detail::put(r, kFieldTreeId, e.tree);
  detail::put(r, kFieldEnable, e.enable ? 1u : 0u);
  detail::put(r, kFieldRoot, e.root ? 1u : 0u);
  detail::put(r, kFieldFanIn, e.fan_in);
  detail::put(r, kFieldChildMaskLo, static_cast<uint32_t>(e.child_mask));
  detail::put(r, kFieldChildMaskHi, static_cast<uint32_t>(e.child_mask >> 32));
  detail::put(r, kFieldSlotBase, e.slot_base);
  detail::put(r, kFieldSlotCount, e.slot_count);
  detail::put(r, kFieldOutChildId, e.out_child_id);
  detail::put(r, kFieldEthDstLo, detail::mac_lo(e.eth_dst));
  detail::put(r, kFieldEthDstHi, detail::mac_hi(e.eth_dst));
  detail::put(r, kFieldEthSrcLo, detail::mac_lo(e.eth_src));
  detail::put(r, kFieldEthSrcHi, detail::mac_hi(e.eth_src));
  detail::put(r, kFieldIpSrc, e.ip_src);
  detail::put(r, kFieldIpDst, e.ip_dst);
  detail::put(r, kFieldUdpSrc, e.udp_src);
  detail::put(r, kFieldUdpDst, e.udp_dst);
  detail::put(r, kFieldTtl, e.ttl);
  detail::put(r, kFieldDscp, e.dscp);
  return r;
}

inline TableEntry unpack_entry(const StagedRegisters& r) {
  using namespace regmap;
  using detail::get;
  TableEntry e;
  e.job = static_cast<uint16_t>(get(r, kFieldJobId));
  e.tree = static_cast<uint8_t>(get(r, kFieldTreeId));
  e.enable = get(r, kFieldEnable) != 0;
  e.root = get(r, kFieldRoot) != 0;
  e.fan_in = get(r, kFieldFanIn);
  e.child_mask = (uint64_t{get(r, kFieldChildMaskHi)} << 32) | get(r, kFieldChildMaskLo);
  e.slot_base = get(r, kFieldSlotBase);
  e.slot_count = get(r, kFieldSlotCount);
  e.out_child_id = static_cast<uint16_t>(get(r, kFieldOutChildId));
  e.eth_dst = detail::mac_from(get(r, kFieldEthDstHi), get(r, kFieldEthDstLo));
  e.eth_src = detail::mac_from(get(r, kFieldEthSrcHi), get(r, kFieldEthSrcLo));
  e.ip_src = get(r, kFieldIpSrc);
  e.ip_dst = get(r, kFieldIpDst);
  e.udp_src = static_cast<uint16_t>(get(r, kFieldUdpSrc));
  e.udp_dst = static_cast<uint16_t>(get(r, kFieldUdpDst));
  e.ttl = static_cast<uint8_t>(get(r, kFieldTtl));
  e.dscp = static_cast<uint8_t>(get(r, kFieldDscp));
  return e;
}

// The register writes that stage `e` and commit it to table entry `index`,
// in order, as (offset, value) pairs; `emit(offset, value)` performs each.
template <class Emit>
void entry_commit_writes(uint32_t index, const TableEntry& e, Emit&& emit) {
  const StagedRegisters r = pack_entry(e);
  for (uint32_t k = 0; k < regmap::kNumStagedRegisters; ++k) emit(regmap::kStagedBase + 4 * k, r[k]);
  emit(regmap::kEntryIndex, index);
  emit(regmap::kEntryCmd, regmap::kCmdCommit);
}

// Stages and commits `e` to entry `index` of anything with reg_write /
// reg_read (an engine, a backend); returns ENTRY_STATUS.
template <class Regs>
uint32_t commit_entry(Regs& regs, uint32_t index, const TableEntry& e) {
  entry_commit_writes(index, e, [&regs](uint32_t a, uint32_t v) { regs.reg_write(a, v); });
  return regs.reg_read(regmap::kEntryStatus);
}

}  // namespace panama
