// The simulation backend: a PANAMA engine simulated in this process behind
// the same Device interface as a card. The engine is one of the engine
// backends (panama/engine/backend.hpp): the Verilated RTL, driven through
// its AXI4-Lite and AXI4-Stream ports, when the build has it, else the HLS
// C++ model; both implement the register map of include/panama/regmap.hpp.
//
// With a state file, the engine's state outlives the process: every register
// write and frame is appended to a journal that the next open replays (the
// engines are deterministic), so separate panamactl commands act on one
// simulated card. A RESET starts the journal afresh.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "panama/driver/device.hpp"
#include "panama/engine/backend.hpp"

namespace panama::driver {

using Frame = std::vector<uint8_t>;

// A simulated CMAC (the 100G MAC of one QSFP28 cage), modelling the status
// and control registers `panamactl link` uses (panama/driver/cmac.hpp): the
// link is up in near-end loopback, or when a cable is connected and RS-FEC is
// enabled in both directions exactly when the simulated far end uses it.
// Counters count the frames `send` puts through the engine and latch on a
// TICK_REG write, as the CMAC's do. Not a model of the transceivers: the
// link comes up at once and the RS-FEC status and error counters stay 0.
class SimCmac {
 public:
  static constexpr int kCounterCount = 7;
  // Order of Counters in panama/driver/cmac.hpp.
  static constexpr std::array<uint32_t, kCounterCount> kCounterOffsets = {0x0608, 0x0610, 0x06C0, 0x0500,
                                                                          0x0508, 0x1008, 0x1010};
  uint32_t read32(uint32_t offset);
  void write32(uint32_t offset, uint32_t value);
  void count_frames(uint64_t received, uint64_t sent);
  void set_cable(bool connected) {
    cable_ = connected;
    note_link_change();
  }
  void set_peer_rsfec(bool on) {
    peer_rsfec_ = on;
    note_link_change();
  }
  void set_counter(int index, uint64_t live, uint64_t latched);
  bool link_up() const;
  // Journal lines that rebuild this state (after the journal restarts).
  std::vector<std::string> state_lines(unsigned cage) const;

 private:
  bool local_rsfec() const;
  // After anything that can drop the link: a link that is down now latches
  // the status registers low until each is read.
  void note_link_change();
  bool cable_ = true;
  bool peer_rsfec_ = true;  // 100GBASE-SR4/CR4 switch ports default to RS-FEC
  uint32_t loopback_ = 0;
  uint32_t rsfec_enable_ = 0;  // the CMAC's reset value: RS-FEC off (as written)
  uint32_t rsfec_ind_ = 0;
  uint32_t rsfec_active_ = 0;  // RS-FEC enables in effect: rsfec_enable_ at the last RESET_REG pulse
  uint32_t reset_ = 0;         // RESET_REG as written
  // Latched lows of STAT_TX_STATUS, STAT_RX_STATUS, BLOCK_LOCK, LANE_SYNC.
  std::array<bool, 4> latched_down_{};
  std::array<uint64_t, kCounterCount> live_{};
  std::array<uint64_t, kCounterCount> latched_{};
};

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

  // QSFP28 cages 0 and 1 (the two-port build has both).
  RegisterPort& cmac(unsigned cage) override;
  // The simulated far end of a cage: cable connected or not, RS-FEC on or off.
  void set_sim_cable(unsigned cage, bool connected);
  void set_sim_peer_rsfec(unsigned cage, bool on);

 private:
  void replay();
  void journal(const std::string& line);
  void restart_journal();
  void check_cage(unsigned cage) const;

  SimEngineKind kind_;
  OpenOptions options_;
  std::unique_ptr<EngineBackend> engine_;
  std::string engine_name_;
  std::optional<XclbinInfo> xclbin_;
  int lock_fd_ = -1;
  std::FILE* journal_ = nullptr;
  std::array<SimCmac, 2> cmacs_;
  std::array<std::unique_ptr<RegisterPort>, 2> cmac_ports_;
};

}  // namespace panama::driver
