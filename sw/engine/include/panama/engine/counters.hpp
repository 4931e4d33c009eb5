// Reading an engine's 64-bit counters through the register map (low word
// first: reading it latches the high word) and presenting them as an aligned
// table or as JSON. Shared by panama-pcap, the card driver and panamactl.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/config/node_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/regmap.hpp"

namespace panama::config {

struct EntryCounters {
  uint32_t index = 0;
  uint16_t job = 0;
  uint8_t tree = 0;
  std::array<uint64_t, regmap::kNumEntryCounters> values{};  // by regmap::EntryCounter
};

struct CounterSnapshot {
  std::array<uint64_t, regmap::kNumGlobalCounters> global{};  // by regmap::GlobalCounter
  std::vector<EntryCounters> entries;                         // in configuration order
};

// One 64-bit counter at `addr` (a regmap::*_counter_addr).
uint64_t read_counter64(RegisterAccess& regs, uint32_t addr);

// The global counters and those of each configured entry.
CounterSnapshot read_counters(RegisterAccess& regs, const std::vector<EntryConfig>& entries);

// Global counters as "name  value" lines, then the per-entry counters as a
// table with one column per entry. Names are regmap's counter names.
std::string format_counters_table(const CounterSnapshot& snap);

// {"global": {"frames_in": n, ...}, "entries": [{"index", "job", "tree", "counters": {...}}]}
nlohmann::json counters_to_json(const CounterSnapshot& snap);

}  // namespace panama::config
