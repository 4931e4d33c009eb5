// The PANAMA device interface: one card (XRT backend) or one simulated engine
// (simulation backend), chosen at run time by a device spec:
//
//   xrt:<index> | xrt:<bdf> | <index>   an Alveo card through XRT
//   sim | sim:rtl | sim:model           the simulated engine: the Verilated RTL
//                                       (sim, sim:rtl) or the HLS C++ model
//
// A Device is a panama::RegisterAccess, so the configuration and counter code
// of sw/config drives cards and simulations alike. Register offsets come from
// panama/regmap.hpp only. Every write the driver makes for configuration is
// read back and verified; failures are DriverErrors (errors.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "panama/driver/errors.hpp"
#include "panama/driver/xclbin.hpp"
#include "panama/engine/register_access.hpp"

namespace panama::config {
struct NodeConfig;
}

namespace panama::driver {

class RegisterPort;

// What the identity registers say.
struct Identity {
  uint32_t id = 0;
  uint16_t version_major = 0;
  uint16_t version_minor = 0;
  uint32_t num_entries = 0;
  uint32_t num_slots = 0;
  uint32_t slot_elems = 0;
  uint32_t elem_types = 0;  // ELEM_TYPES: bit t = elem_type t summed (0x2 for maps before 1.2)
};

struct Status {
  Identity identity;
  bool enabled = false;
  uint16_t udp_port = 0;
};

class Device : public panama::RegisterAccess {
 public:
  // "xrt:0", "sim:rtl", ...
  virtual std::string spec() const = 0;
  // One line for people: backend, card or engine, loaded image.
  virtual std::string description() const = 0;

  // Loads the xclbin (XRT) or checks and records it (simulation), then
  // checks the engine's identity. Throws kBadXclbin, kDeviceBusy,
  // kIncompatible, kRegisterAccess.
  virtual void program(const std::string& xclbin_path) = 0;
  // The loaded image, when the backend knows it.
  virtual std::optional<XclbinInfo> loaded_xclbin() const = 0;

  // Reads the identity registers; throws kIncompatible when ID is not
  // PANAMA's or the register-map major version differs from this driver's.
  Identity identity();
  Status status();

  // Writes a register and reads it back; throws kReadbackMismatch when the
  // bits in `mask` differ.
  void write_verified(uint32_t offset, uint32_t value, uint32_t mask = 0xFFFFFFFFu);

  void set_enabled(bool enabled);
  void set_udp_port(uint16_t port);
  void clear_counters();
  // Disables every entry, empties every slot, zeroes every counter.
  void reset();

  // Checks that `cfg` fits this engine (entries, slot memory), then writes
  // it through the staged entry registers, checking status and read-back.
  // Throws kCapacity, kReadbackMismatch, kRegisterAccess.
  void apply(const config::NodeConfig& cfg);

  // A 64-bit counter at `offset` (low word latches the high word).
  uint64_t read_counter(uint32_t offset);

  // The register port of the 100G MAC (CMAC kernel cmac_<cage>) of QSFP28
  // cage `cage` (panama/driver/cmac.hpp). Throws kNotProgrammed, or
  // kUnsupported when the image has no such kernel.
  virtual RegisterPort& cmac(unsigned cage) = 0;
};

enum class OpenMode {
  kControl,   // exclusive: program, configure, reset (other controllers get kDeviceBusy)
  kReadOnly,  // shared: status and counters, alongside a controller
};

enum class SimEngineKind { kAuto, kRtl, kModel };

struct OpenOptions {
  OpenMode mode = OpenMode::kControl;
  // Simulation backend: file that keeps the simulated engine's state between
  // processes (a journal of register writes and frames, replayed on open).
  // Empty: the state lives as long as the Device.
  std::string sim_state;
};

// Opens the device a spec names. Throws kInvalidArgument for a bad spec,
// kNoDevice, kDeviceBusy.
std::unique_ptr<Device> open_device(const std::string& spec, const OpenOptions& options = {});

struct DeviceListing {
  std::string spec;
  std::string description;
};
// Cards XRT sees and the simulation backends built in. `note` receives why
// no cards could be listed (e.g. XRT's library not found), else stays empty.
std::vector<DeviceListing> list_devices(std::string* note = nullptr);

}  // namespace panama::driver
