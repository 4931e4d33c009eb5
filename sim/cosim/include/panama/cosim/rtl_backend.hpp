// The Verilated RTL engine (RtlEngine) behind the one engine-backend
// interface (panama/engine/backend.hpp), as the "rtl" backend.
#pragma once

#include <memory>
#include <string>

#include "panama/cosim/rtl_engine.hpp"
#include "panama/engine/backend.hpp"

namespace panama::cosim {

class RtlBackend final : public EngineBackend {
 public:
  RtlBackend();
  std::string name() const override { return "rtl"; }
  std::string description() const override;
  uint32_t reg_read(uint32_t addr) override;
  void reg_write(uint32_t addr, uint32_t value) override;
  EngineOutcome process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out,
                              bool mac_error = false) override;
  uint16_t udp_port() const override { return udp_port_; }

  RtlEngine& rtl() { return *rtl_; }

 private:
  std::unique_ptr<RtlEngine> rtl_;
  uint16_t udp_port_;  // UDP_PORT, re-read after writes that can change it
};

}  // namespace panama::cosim
