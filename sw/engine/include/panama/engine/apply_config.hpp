// Programs an engine's table from a node configuration through its register
// map, and proves it took: identity and capacity are checked first, every
// entry is committed through the staged registers, and every field is read
// back. Works on anything behind RegisterAccess (model, RTL, card).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "panama/config/node_config.hpp"
#include "panama/engine/register_access.hpp"

namespace panama::config {

// What the engine reports about itself (ID, VERSION and capacity registers).
struct EngineInfo {
  uint32_t version_major = 0;
  uint32_t version_minor = 0;
  uint32_t num_entries = 0;
  uint32_t num_slots = 0;
  uint32_t slot_elems = 0;
  // ELEM_TYPES: bit t set when the engine sums elem_type t (register map
  // 1.2 on; an engine of an older map sums fp32 only and reads 0x2 here).
  uint32_t elem_types = 0;
};

// Why applying a configuration failed, for callers that react differently
// (the card driver maps these onto its own error kinds).
class ApplyError : public ConfigError {
 public:
  enum class Kind {
    kIncompatible,  // not a PANAMA engine, or an unsupported register-map version
    kCapacity,      // more entries or slots than the engine has
    kRejected,      // the engine refused a command (ENTRY_STATUS not OK)
    kReadback,      // a register read back differently from what was written
  };
  ApplyError(Kind kind, const std::string& what) : ConfigError(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Reads the identity and capacity registers. Throws ApplyError (kIncompatible) when the ID
// register does not read 'PNMA' or the major version is not the one this
// software speaks.
EngineInfo probe_engine(RegisterAccess& regs);

// Writes UDP_PORT, disables every table entry, commits each configured entry
// (which empties its slots and zeroes its counters), reads every entry back
// and sets CONTROL.ENABLE. Throws ApplyError naming the entry and the
// problem: capacity exceeded, an ENTRY_STATUS error code with its meaning,
// or a read-back mismatch.
EngineInfo apply_node_config(RegisterAccess& regs, const NodeConfig& cfg);

// "SLOT_OVERLAP (the slot range overlaps another enabled entry's)".
std::string describe_entry_status(uint32_t status);

}  // namespace panama::config
