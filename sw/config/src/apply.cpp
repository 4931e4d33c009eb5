// apply_node_config: programs an engine's table through the staged-entry
// registers of panama/regmap.hpp and verifies the result by reading it back.
#include "panama/apply_config.hpp"

#include <fmt/format.h>

#include <cctype>

#include "panama/regmap.hpp"

namespace panama::config {

namespace {

struct StagedRegister {
  uint32_t addr;
  const char* name;
  uint32_t value;
};

std::vector<StagedRegister> staged_registers(const EntryConfig& e) {
  using namespace regmap;
  const uint64_t mask = e.child_mask();
  const auto mac_hi = [](const MacAddress& m) { return (uint32_t{m[0]} << 8) | m[1]; };
  const auto mac_lo = [](const MacAddress& m) {
    return (uint32_t{m[2]} << 24) | (uint32_t{m[3]} << 16) | (uint32_t{m[4]} << 8) | m[5];
  };
  return {
      {kEKey, "E_KEY", e.job | (uint32_t{e.tree} << 16)},
      {kEFlags, "E_FLAGS", kEntryFlagEnable | (e.root ? kEntryFlagRoot : 0u)},
      {kEFanIn, "E_FAN_IN", e.fan_in},
      {kEChildMaskLo, "E_CHILD_MASK_LO", static_cast<uint32_t>(mask)},
      {kEChildMaskHi, "E_CHILD_MASK_HI", static_cast<uint32_t>(mask >> 32)},
      {kESlotBase, "E_SLOT_BASE", e.slot_base},
      {kESlotCount, "E_SLOT_COUNT", e.slot_count},
      {kEOutChildId, "E_OUT_CHILD_ID", e.out_child_id},
      {kEEthDstLo, "E_ETH_DST_LO", mac_lo(e.eth_dst)},
      {kEEthDstHi, "E_ETH_DST_HI", mac_hi(e.eth_dst)},
      {kEEthSrcLo, "E_ETH_SRC_LO", mac_lo(e.eth_src)},
      {kEEthSrcHi, "E_ETH_SRC_HI", mac_hi(e.eth_src)},
      {kEIpSrc, "E_IP_SRC", e.ip_src},
      {kEIpDst, "E_IP_DST", e.ip_dst},
      {kEUdpPorts, "E_UDP_PORTS", e.udp_src | (uint32_t{e.udp_dst} << 16)},
      {kEIpTtlDscp, "E_IP_TTL_DSCP", e.ttl | (uint32_t{e.dscp} << 8)},
  };
}

std::string entry_name(const NodeConfig& cfg, size_t i) {
  const EntryConfig& e = cfg.entries[i];
  return fmt::format("node {}: entries[{}] (index {}, job {} tree {})", cfg.node, i, e.index, e.job, e.tree);
}

// Runs an ENTRY_CMD on `index` and returns ENTRY_STATUS.
uint32_t entry_command(RegisterAccess& regs, uint32_t index, uint32_t cmd) {
  regs.write32(regmap::kEntryIndex, index);
  regs.write32(regmap::kEntryCmd, cmd);
  return regs.read32(regmap::kEntryStatus);
}

}  // namespace

std::string describe_entry_status(uint32_t status) {
  if (status >= regmap::kNumEntryStatus) return fmt::format("unknown status code {}", status);
  // The register map's sentence, as a parenthesis: "SLOT_OVERLAP (the slot range ...)".
  std::string doc = regmap::kEntryStatusDocs[status];
  if (!doc.empty() && doc.back() == '.') doc.pop_back();
  if (!doc.empty()) doc[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(doc[0])));
  return fmt::format("{} ({})", regmap::kEntryStatusNames[status], doc);
}

EngineInfo probe_engine(RegisterAccess& regs) {
  using namespace regmap;
  const uint32_t id = regs.read32(kId);
  if (id != kIdValue) {
    throw ApplyError(
        ApplyError::Kind::kIncompatible,
        fmt::format("not a PANAMA engine: ID register reads 0x{:08X}, expected 0x{:08X} ('PNMA')", id,
                    kIdValue));
  }
  EngineInfo info;
  const uint32_t version = regs.read32(kVersion);
  info.version_major = version >> 16;
  info.version_minor = version & 0xFFFF;
  if (info.version_major != kVersionMajor) {
    throw ApplyError(
        ApplyError::Kind::kIncompatible,
        fmt::format("engine register map version {}.{} is not supported (this software speaks {}.x)",
                    info.version_major, info.version_minor, kVersionMajor));
  }
  info.num_entries = regs.read32(regmap::kNumEntries);
  info.num_slots = regs.read32(regmap::kNumSlots);
  info.slot_elems = regs.read32(regmap::kSlotElems);
  return info;
}

EngineInfo apply_node_config(RegisterAccess& regs, const NodeConfig& cfg) {
  using namespace regmap;
  const EngineInfo info = probe_engine(regs);

  // Capacity first, so nothing is changed when the configuration cannot fit.
  if (cfg.entries.size() > info.num_entries) {
    throw ApplyError(ApplyError::Kind::kCapacity,
                     fmt::format("node {}: {} entries configured, the engine has only {} table entries",
                                 cfg.node, cfg.entries.size(), info.num_entries));
  }
  for (size_t i = 0; i < cfg.entries.size(); ++i) {
    const EntryConfig& e = cfg.entries[i];
    if (e.index >= info.num_entries) {
      throw ApplyError(ApplyError::Kind::kCapacity,
                       fmt::format("{}: index {} is past the engine's {} table entries (0..{})",
                                   entry_name(cfg, i), e.index, info.num_entries, info.num_entries - 1));
    }
    if (uint64_t{e.slot_base} + e.slot_count > info.num_slots) {
      throw ApplyError(ApplyError::Kind::kCapacity,
                       fmt::format("{}: slots {}..{} run past the engine's {} slots", entry_name(cfg, i),
                                   e.slot_base, uint64_t{e.slot_base} + e.slot_count - 1, info.num_slots));
    }
  }

  regs.write32(kUdpPort, cfg.engine.udp_port);
  if (const uint32_t port = regs.read32(kUdpPort); port != cfg.engine.udp_port) {
    throw ApplyError(
        ApplyError::Kind::kReadback,
        fmt::format("node {}: UDP_PORT reads back {} after writing {}", cfg.node, port, cfg.engine.udp_port));
  }

  // Entries not in the configuration must stop matching; configured ones are
  // disabled too so that no stale entry blocks a new slot range or key.
  for (uint32_t idx = 0; idx < info.num_entries; ++idx) {
    if (const uint32_t st = entry_command(regs, idx, kCmdDisable); st != kStatusOk) {
      throw ApplyError(ApplyError::Kind::kRejected, fmt::format("node {}: disabling entry {} failed: {}",
                                                                cfg.node, idx, describe_entry_status(st)));
    }
  }

  for (size_t i = 0; i < cfg.entries.size(); ++i) {
    for (const StagedRegister& r : staged_registers(cfg.entries[i])) regs.write32(r.addr, r.value);
    if (const uint32_t st = entry_command(regs, cfg.entries[i].index, kCmdCommit); st != kStatusOk) {
      throw ApplyError(
          ApplyError::Kind::kRejected,
          fmt::format("{}: engine rejected the entry: {}", entry_name(cfg, i), describe_entry_status(st)));
    }
  }

  // Read back after all commits: a later commit must not have changed an earlier entry.
  for (size_t i = 0; i < cfg.entries.size(); ++i) {
    if (const uint32_t st = entry_command(regs, cfg.entries[i].index, kCmdLoad); st != kStatusOk) {
      throw ApplyError(ApplyError::Kind::kRejected,
                       fmt::format("{}: reading the entry back failed: {}", entry_name(cfg, i),
                                   describe_entry_status(st)));
    }
    for (const StagedRegister& r : staged_registers(cfg.entries[i])) {
      if (const uint32_t got = regs.read32(r.addr); got != r.value) {
        throw ApplyError(ApplyError::Kind::kReadback,
                         fmt::format("{}: read-back mismatch in {}: wrote 0x{:08X}, read 0x{:08X}",
                                     entry_name(cfg, i), r.name, r.value, got));
      }
    }
  }

  regs.write32(kControl, kControlEnable);
  return info;
}

}  // namespace panama::config
