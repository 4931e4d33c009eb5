// 32-bit register access to a PANAMA engine (AXI4-Lite shaped), so that the
// same configuration and counter code drives the C++ model, an RTL
// simulation or a card behind XRT. Offsets are those of panama/regmap.hpp.
#pragma once

#include <cstdint>
#include <string>

namespace panama {

struct RegisterAccess {
  virtual uint32_t read32(uint32_t addr) = 0;
  virtual void write32(uint32_t addr, uint32_t value) = 0;
  virtual ~RegisterAccess() = default;
};

// Adapts any engine-like object with reg_read(addr) / reg_write(addr, value)
// (panama::Engine, a simulation wrapper) to RegisterAccess. Holds a reference:
// the engine must outlive the adapter.
template <class E>
class EngineRegisters final : public RegisterAccess {
 public:
  explicit EngineRegisters(E& engine) : engine_(engine) {}
  uint32_t read32(uint32_t addr) override { return engine_.reg_read(addr); }
  void write32(uint32_t addr, uint32_t value) override { engine_.reg_write(addr, value); }

 private:
  E& engine_;
};

// "ID (0x000)", "counter frames_in (0x200)", "entry 3 counter emitted (0x1188)"
// for messages, from the register map's single source; offsets without a
// name print as "register 0x...".
std::string register_name(uint32_t offset);

}  // namespace panama
