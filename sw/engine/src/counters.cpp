// Reading and presenting engine counters (see panama/engine/counters.hpp).
#include "panama/engine/counters.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace panama::config {

uint64_t read_counter64(RegisterAccess& regs, uint32_t addr) {
  const uint32_t lo = regs.read32(addr);  // latches the high word
  const uint32_t hi = regs.read32(addr + 4);
  return (uint64_t{hi} << 32) | lo;
}

CounterSnapshot read_counters(RegisterAccess& regs, const std::vector<EntryConfig>& entries) {
  CounterSnapshot snap;
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) {
    snap.global[c] = read_counter64(regs, regmap::global_counter_addr(c));
  }
  for (const EntryConfig& e : entries) {
    EntryCounters ec;
    ec.index = e.index;
    ec.job = e.job;
    ec.tree = e.tree;
    for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
      ec.values[c] = read_counter64(regs, regmap::entry_counter_addr(e.index, c));
    }
    snap.entries.push_back(ec);
  }
  return snap;
}

std::string format_counters_table(const CounterSnapshot& snap) {
  std::string out = "global counters\n";
  size_t name_width = 0;
  for (const char* n : regmap::kGlobalCounterNames) name_width = std::max(name_width, std::string(n).size());
  size_t value_width = 1;
  for (uint64_t v : snap.global) value_width = std::max(value_width, fmt::format("{}", v).size());
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) {
    out += fmt::format("  {:<{}}  {:>{}}\n", regmap::kGlobalCounterNames[c], name_width, snap.global[c],
                       value_width);
  }
  if (snap.entries.empty()) return out;

  // One column per entry; wide tables are split into groups so lines stay readable.
  constexpr size_t kColumnsPerGroup = 6;
  size_t row_width = 0;
  for (const char* n : regmap::kEntryCounterNames) row_width = std::max(row_width, std::string(n).size());
  for (size_t first = 0; first < snap.entries.size(); first += kColumnsPerGroup) {
    const size_t last = std::min(snap.entries.size(), first + kColumnsPerGroup);
    std::vector<std::string> heads;
    std::vector<size_t> widths;
    for (size_t i = first; i < last; ++i) {
      const EntryCounters& e = snap.entries[i];
      heads.push_back(fmt::format("e{} j{}/t{}", e.index, e.job, e.tree));
      size_t w = heads.back().size();
      for (uint64_t v : e.values) w = std::max(w, fmt::format("{}", v).size());
      widths.push_back(w);
    }
    out += fmt::format("\nentry counters\n  {:<{}}", "entry job/tree", row_width);
    for (size_t k = 0; k < heads.size(); ++k) out += fmt::format("  {:>{}}", heads[k], widths[k]);
    out += "\n";
    for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
      out += fmt::format("  {:<{}}", regmap::kEntryCounterNames[c], row_width);
      for (size_t i = first; i < last; ++i) {
        out += fmt::format("  {:>{}}", snap.entries[i].values[c], widths[i - first]);
      }
      out += "\n";
    }
  }
  return out;
}

nlohmann::json counters_to_json(const CounterSnapshot& snap) {
  nlohmann::json global = nlohmann::json::object();
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c)
    global[regmap::kGlobalCounterNames[c]] = snap.global[c];
  nlohmann::json entries = nlohmann::json::array();
  for (const EntryCounters& e : snap.entries) {
    nlohmann::json counters = nlohmann::json::object();
    for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c)
      counters[regmap::kEntryCounterNames[c]] = e.values[c];
    entries.push_back({{"index", e.index}, {"job", e.job}, {"tree", e.tree}, {"counters", counters}});
  }
  return {{"global", global}, {"entries", entries}};
}

}  // namespace panama::config
