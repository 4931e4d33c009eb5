// apply_node_config: programs an engine's table through the staged-entry
// registers of panama/regmap.hpp and verifies the result by reading it back.
#include "panama/engine/apply_config.hpp"

#include <fmt/format.h>

#include <cctype>

#include "panama/regmap.hpp"
#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

namespace panama::config {

namespace {

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
  info.elem_types = info.version_minor >= 2 ? regs.read32(regmap::kElemTypes) : wire::kElemTypeMaskFloat32;
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
    const StagedRegisters staged = pack_entry(cfg.entries[i].table_entry());
    for (uint32_t k = 0; k < kNumStagedRegisters; ++k) regs.write32(kStagedBase + 4 * k, staged[k]);
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
    const StagedRegisters staged = pack_entry(cfg.entries[i].table_entry());
    for (uint32_t k = 0; k < kNumStagedRegisters; ++k) {
      const uint32_t addr = kStagedBase + 4 * k;
      if (const uint32_t got = regs.read32(addr); got != staged[k]) {
        throw ApplyError(ApplyError::Kind::kReadback,
                         fmt::format("{}: read-back mismatch in {}: wrote 0x{:08X}, read 0x{:08X}",
                                     entry_name(cfg, i), register_name(addr), staged[k], got));
      }
    }
  }

  regs.write32(kControl, kControlEnable);
  return info;
}

}  // namespace panama::config
