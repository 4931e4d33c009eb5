// The engine behind a harness, chosen at run time: the one interface through
// which every tool that runs an aggregation engine in software drives it —
// panama-pcap, the driver's simulation device (panamactl -d sim:...), the
// co-simulation and the software PSwitch. Two backends implement it:
//   model  the HLS C++ engine (hw/hls, panama::Engine) called directly;
//   rtl    the Verilated SystemVerilog engine (hw/rtl) clocked through its
//          AXI4-Lite and AXI4-Stream ports; sim/cosim registers it
//          (register_engine_backend) in every program that links its
//          registration object (panama_rtl_backend_registration), when
//          Verilator was found at build time.
//
// Contract: process_frame hands every frame the engine sends because of the
// given input frame to the emit target `out` (panama/emit_target.hpp), in
// order, before it returns (a backend with latency runs its simulation until
// the engine is idle again), and returns what the engine did with the frame.
// Register offsets are those of panama/regmap.hpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "panama/emit_target.hpp"
#include "panama/engine.hpp"
#include "panama/regmap.hpp"

namespace panama {

class EngineBackend {
 public:
  virtual ~EngineBackend() = default;
  // Short name ("model", "rtl") and a description with the configuration.
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;

  virtual uint32_t reg_read(uint32_t addr) = 0;
  virtual void reg_write(uint32_t addr, uint32_t value) = 0;

  // `mac_error`: the MAC marked the frame bad (the stream's tuser bit).
  // A backend that builds its emissions on the host (the model) writes them
  // into out.buffer() when the target offers one, so the caller sends them
  // without a copy; others (the RTL's output stream) hand their own memory.
  virtual EngineOutcome process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out,
                                      bool mac_error = false) = 0;

  // A frame in two pieces (`head`: its first min(len, 64) bytes, `payload`:
  // the rest; Engine::process_frame_parts). This default joins the pieces,
  // for backends that take frames whole (the RTL's stream).
  virtual EngineOutcome process_frame_parts(const uint8_t* head, const uint8_t* payload, uint32_t len,
                                            EmitTarget& out, bool mac_error = false) {
    if (!payload || len <= wire::kPayloadOffset) return process_frame(head, len, out, mac_error);
    joined_.resize(len);
    wire::join_frame(joined_.data(), head, payload, len);
    return process_frame(joined_.data(), len, out, mac_error);
  }

  // The UDP destination port that marks PANAMA frames (UDP_PORT), without a
  // register access: harnesses classify frames with it on every packet.
  virtual uint16_t udp_port() const = 0;

  // A 64-bit counter read through the register protocol (low word first).
  uint64_t counter(uint32_t addr) {
    const uint32_t lo = reg_read(addr);
    const uint32_t hi = reg_read(addr + 4);
    return (uint64_t{hi} << 32) | lo;
  }
  uint64_t global_counter(uint32_t c) { return counter(regmap::global_counter_addr(c)); }
  uint64_t entry_counter(uint32_t e, uint32_t c) { return counter(regmap::entry_counter_addr(e, c)); }

 private:
  std::vector<uint8_t> joined_;
};

// The HLS C++ engine of any configuration as a backend. DefaultEngine for
// tools; the co-simulation instantiates it in the RTL's configuration.
template <class E>
class ModelBackend final : public EngineBackend {
 public:
  ModelBackend() : engine_(std::make_unique<E>()) {}  // large: the packet memory is inside
  std::string name() const override { return "model"; }
  std::string description() const override {
    return "HLS C++ engine model (" + std::to_string(E::kTableEntries) + " entries, " +
           std::to_string(E::kPacketSlots) + " slots of " + std::to_string(E::kSlotCapacity) + " elements)";
  }
  uint32_t reg_read(uint32_t addr) override { return engine_->reg_read(addr); }
  void reg_write(uint32_t addr, uint32_t value) override { engine_->reg_write(addr, value); }
  EngineOutcome process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out,
                              bool mac_error = false) override {
    return engine_->process_frame(frame, len, out, mac_error);
  }
  EngineOutcome process_frame_parts(const uint8_t* head, const uint8_t* payload, uint32_t len,
                                    EmitTarget& out, bool mac_error = false) override {
    return engine_->process_frame_parts(head, payload, len, out, mac_error);
  }
  uint16_t udp_port() const override { return engine_->udp_port(); }

  E& engine() { return *engine_; }

 private:
  std::unique_ptr<E> engine_;
};

struct EngineBackendInfo {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<EngineBackend>()> make;
};

// Every backend this program has, in the order --help lists them: "model",
// then those registered.
const std::vector<EngineBackendInfo>& engine_backends();

// Adds a backend to the registry (from a static initializer of the library
// that implements it). Throws std::invalid_argument if the name is taken.
void register_engine_backend(EngineBackendInfo info);

// True when this build has a backend called `name`.
bool have_engine_backend(const std::string& name);

// The backend called `name`; std::invalid_argument listing the available
// names when there is none.
std::unique_ptr<EngineBackend> make_engine_backend(const std::string& name);

}  // namespace panama
