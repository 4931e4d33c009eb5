// The device interface's common operations (identity, verified writes,
// configuration, counters) on top of a backend's register access, and the
// choice of backend from a device spec.
#include "panama/driver/device.hpp"

#include <cstdio>

#include "backends.hpp"
#include "panama/config/node_config.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/driver/simulation.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/counters.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"

namespace panama::driver {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNoDevice:
      return "no device";
    case ErrorKind::kDeviceBusy:
      return "device busy";
    case ErrorKind::kBadXclbin:
      return "bad xclbin";
    case ErrorKind::kIncompatible:
      return "incompatible engine";
    case ErrorKind::kNotProgrammed:
      return "not programmed";
    case ErrorKind::kRegisterAccess:
      return "register access failed";
    case ErrorKind::kReadbackMismatch:
      return "read-back mismatch";
    case ErrorKind::kCapacity:
      return "over capacity";
    case ErrorKind::kConfigRejected:
      return "configuration rejected";
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kUnsupported:
      return "unsupported";
  }
  return "error";
}

namespace {

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%08X", v);
  return b;
}

}  // namespace

Identity Device::identity() {
  using namespace regmap;
  Identity id;
  id.id = read32(kId);
  if (id.id != kIdValue) {
    throw DriverError(ErrorKind::kIncompatible, spec() + ": not a PANAMA engine: ID reads " + hex32(id.id) +
                                                    ", expected " + hex32(kIdValue) +
                                                    " ('PNMA'); is the right xclbin loaded?");
  }
  const uint32_t version = read32(kVersion);
  id.version_major = static_cast<uint16_t>(version >> 16);
  id.version_minor = static_cast<uint16_t>(version);
  if (id.version_major != kVersionMajor) {
    throw DriverError(ErrorKind::kIncompatible,
                      spec() + ": engine register map version " + std::to_string(id.version_major) + "." +
                          std::to_string(id.version_minor) + " is not supported by this driver (" +
                          std::to_string(kVersionMajor) + ".x); rebuild the xclbin or update the driver");
  }
  id.num_entries = read32(regmap::kNumEntries);
  id.num_slots = read32(regmap::kNumSlots);
  id.slot_elems = read32(regmap::kSlotElems);
  id.elem_types = id.version_minor >= 2 ? read32(regmap::kElemTypes) : wire::kElemTypeMaskFloat32;
  if (id.num_entries == 0 || id.num_slots == 0 || id.slot_elems == 0) {
    throw DriverError(ErrorKind::kIncompatible, spec() + ": engine reports no capacity (NUM_ENTRIES " +
                                                    std::to_string(id.num_entries) + ", NUM_SLOTS " +
                                                    std::to_string(id.num_slots) + ")");
  }
  return id;
}

Status Device::status() {
  Status s;
  s.identity = identity();
  s.enabled = (read32(regmap::kControl) & regmap::kControlEnable) != 0;
  s.udp_port = static_cast<uint16_t>(read32(regmap::kUdpPort));
  return s;
}

void Device::write_verified(uint32_t offset, uint32_t value, uint32_t mask) {
  write32(offset, value);
  const uint32_t got = read32(offset);
  if ((got & mask) != (value & mask)) {
    throw DriverError(ErrorKind::kReadbackMismatch, spec() + ": " + register_name(offset) + " reads back " +
                                                        hex32(got) + " after writing " + hex32(value));
  }
}

void Device::set_enabled(bool enabled) {
  write_verified(regmap::kControl, enabled ? regmap::kControlEnable : 0, regmap::kControlEnable);
}

void Device::set_udp_port(uint16_t port) {
  write_verified(regmap::kUdpPort, port, 0xFFFF);
}

void Device::clear_counters() {
  // CLEAR_COUNTERS is a strobe; keep ENABLE as it is.
  const uint32_t enable = read32(regmap::kControl) & regmap::kControlEnable;
  write_verified(regmap::kControl, enable | regmap::kControlClearCounters, regmap::kControlEnable);
}

void Device::reset() {
  write_verified(regmap::kControl, regmap::kControlReset | regmap::kControlEnable, regmap::kControlEnable);
}

void Device::apply(const config::NodeConfig& cfg) {
  const Identity id = identity();
  // Typed capacity errors before anything is written.
  if (cfg.entries.size() > id.num_entries) {
    throw DriverError(ErrorKind::kCapacity,
                      spec() + ": node " + cfg.node + " has " + std::to_string(cfg.entries.size()) +
                          " entries, the engine holds " + std::to_string(id.num_entries));
  }
  uint64_t shares = 0;
  for (const config::EntryConfig& e : cfg.entries) {
    const std::string what = spec() + ": node " + cfg.node + " entry " + std::to_string(e.index) + " (job " +
                             std::to_string(e.job) + ", tree " + std::to_string(e.tree) + ")";
    if (e.index >= id.num_entries) {
      throw DriverError(ErrorKind::kCapacity, what + ": index past the engine's " +
                                                  std::to_string(id.num_entries) + " table entries");
    }
    if (uint64_t{e.slot_base} + e.slot_count > id.num_slots) {
      throw DriverError(ErrorKind::kCapacity,
                        what + ": memory share slots " + std::to_string(e.slot_base) + ".." +
                            std::to_string(uint64_t{e.slot_base} + e.slot_count - 1) +
                            " is over the engine's " + std::to_string(id.num_slots) + " slots");
    }
    shares += e.slot_count;
  }
  if (shares > id.num_slots) {
    throw DriverError(ErrorKind::kCapacity, spec() + ": node " + cfg.node + " shares " +
                                                std::to_string(shares) + " slots in total, the engine has " +
                                                std::to_string(id.num_slots));
  }
  try {
    config::apply_node_config(*this, cfg);
  } catch (const config::ApplyError& e) {
    ErrorKind kind = ErrorKind::kConfigRejected;
    switch (e.kind()) {
      case config::ApplyError::Kind::kIncompatible:
        kind = ErrorKind::kIncompatible;
        break;
      case config::ApplyError::Kind::kCapacity:
        kind = ErrorKind::kCapacity;
        break;
      case config::ApplyError::Kind::kRejected:
        kind = ErrorKind::kConfigRejected;
        break;
      case config::ApplyError::Kind::kReadback:
        kind = ErrorKind::kReadbackMismatch;
        break;
    }
    throw DriverError(kind, spec() + ": " + e.what());
  }
  // apply_node_config sets ENABLE last; prove it took.
  if ((read32(regmap::kControl) & regmap::kControlEnable) == 0) {
    throw DriverError(ErrorKind::kReadbackMismatch,
                      spec() + ": CONTROL.ENABLE reads 0 after the configuration");
  }
}

uint64_t Device::read_counter(uint32_t offset) {
  return config::read_counter64(*this, offset);
}

std::unique_ptr<Device> open_device(const std::string& spec, const OpenOptions& options) {
  if (spec == "sim") return std::make_unique<SimulationDevice>(SimEngineKind::kAuto, options);
  if (spec == "sim:rtl") return std::make_unique<SimulationDevice>(SimEngineKind::kRtl, options);
  if (spec == "sim:model") return std::make_unique<SimulationDevice>(SimEngineKind::kModel, options);
  if (spec.rfind("xrt:", 0) == 0) return detail::open_xrt_device(spec.substr(4), options);
  if (!spec.empty() && spec.find_first_not_of("0123456789") == std::string::npos) {
    return detail::open_xrt_device(spec, options);
  }
  throw DriverError(ErrorKind::kInvalidArgument,
                    "unknown device \"" + spec + "\": use xrt:<index>, xrt:<bdf>, sim, sim:rtl or sim:model");
}

std::vector<DeviceListing> list_devices(std::string* note) {
  std::vector<DeviceListing> out = detail::list_xrt_devices(note);
  const std::string model = "simulation: HLS C++ model (panama::DefaultEngine)";
  if (rtl_engine_available()) {
    out.push_back(DeviceListing{"sim", "simulation: Verilated RTL engine (same as sim:rtl)"});
    out.push_back(DeviceListing{"sim:rtl", "simulation: Verilated RTL engine"});
  } else {
    out.push_back(DeviceListing{"sim", model + " (this build has no RTL engine)"});
  }
  out.push_back(DeviceListing{"sim:model", model});
  return out;
}

}  // namespace panama::driver
