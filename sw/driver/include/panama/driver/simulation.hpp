// The simulation backend: a PANAMA engine simulated in this process behind
// the same Device interface as a card. The engine is one of the engine
// backends (panama/engine_backend.hpp): the Verilated RTL, driven through
// its AXI4-Lite and AXI4-Stream ports, when the build has it, else the HLS
// C++ model; both implement the register map of include/panama/regmap.hpp.
//
// With a state file, the engine's state outlives the process: every register
// write and frame is appended to a journal that the next open replays (the
// engines are deterministic), so separate panamactl commands act on one
// simulated card. A RESET starts the journal afresh.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "panama/driver/device.hpp"
#include "panama/engine_backend.hpp"

namespace panama::driver {

using Frame = std::vector<uint8_t>;

// True when this build has the Verilated RTL engine.
bool rtl_engine_available();

class SimulationDevice final : public Device {
 public:
  SimulationDevice(SimEngineKind kind, const OpenOptions& options);
  ~SimulationDevice() override;
  SimulationDevice(const SimulationDevice&) = delete;
  SimulationDevice& operator=(const SimulationDevice&) = delete;

  std::string spec() const override;
  std::string description() const override;
  void program(const std::string& xclbin_path) override;
  std::optional<XclbinInfo> loaded_xclbin() const override { return xclbin_; }
  uint32_t read32(uint32_t offset) override;
  void write32(uint32_t offset, uint32_t value) override;

  // Sends one frame into the engine's stream input; returns the frames it
  // sends out (the frame itself when passed through, or an aggregate).
  std::vector<Frame> send_frame(const uint8_t* data, uint32_t len);
  std::vector<Frame> send_frame(const Frame& f) {
    return send_frame(f.data(), static_cast<uint32_t>(f.size()));
  }

  const std::string& engine_name() const { return engine_name_; }

 private:
  void replay();
  void journal(const std::string& line);
  void restart_journal();

  SimEngineKind kind_;
  OpenOptions options_;
  std::unique_ptr<EngineBackend> engine_;
  std::string engine_name_;
  std::optional<XclbinInfo> xclbin_;
  int lock_fd_ = -1;
  std::FILE* journal_ = nullptr;
};

}  // namespace panama::driver
