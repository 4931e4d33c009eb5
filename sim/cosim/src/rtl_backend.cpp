// The "rtl" engine backend (panama/cosim/rtl_backend.hpp).
#include "panama/cosim/rtl_backend.hpp"

namespace panama::cosim {

RtlBackend::RtlBackend()
    : rtl_(std::make_unique<RtlEngine>()),
      udp_port_(static_cast<uint16_t>(rtl_->reg_read(regmap::kUdpPort))) {}

std::string RtlBackend::description() const {
  return "Verilated RTL engine (hw/rtl, " + std::to_string(RtlEngine::kTableEntries) + " entries, " +
         std::to_string(RtlEngine::kPacketSlots) + " slots of " +
         std::to_string(RtlEngine::kSlotWords * wire::kLanes) + " elements), clocked through its AXI ports";
}

uint32_t RtlBackend::reg_read(uint32_t addr) {
  return rtl_->reg_read(addr);
}

void RtlBackend::reg_write(uint32_t addr, uint32_t value) {
  rtl_->reg_write(addr, value);
  // UDP_PORT changes by a write to it or by CONTROL.RESET.
  if (addr == regmap::kUdpPort || addr == regmap::kControl) {
    udp_port_ = static_cast<uint16_t>(rtl_->reg_read(regmap::kUdpPort));
  }
}

EngineOutcome RtlBackend::process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out, bool mac_error) {
  return rtl_->process_frame(frame, len, out, mac_error);
}

}  // namespace panama::cosim
