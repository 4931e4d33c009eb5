// The Verilated RTL engine (panama::cosim::RtlEngine) as a simulation engine:
// register accesses are AXI4-Lite transactions on the RTL's control port and
// frames go through its AXI4-Stream ports.
#include <memory>

#include "panama/driver/simulation.hpp"
#include "panama/rtl_engine.hpp"

namespace panama::driver {

bool rtl_engine_available() {
  return true;
}

namespace {

class RtlSimEngine final : public SimEngine {
 public:
  std::string name() const override {
    return "Verilated RTL engine (hw/rtl/panama_engine.sv, " +
           std::to_string(cosim::RtlEngine::kTableEntries) + " entries, " +
           std::to_string(cosim::RtlEngine::kPacketSlots) + " slots)";
  }
  uint32_t reg_read(uint32_t offset) override { return rtl_.reg_read(offset); }
  void reg_write(uint32_t offset, uint32_t value) override { rtl_.reg_write(offset, value); }
  void process_frame(const uint8_t* data, uint32_t len, std::vector<Frame>& out) override {
    rtl_.process_frame_fn(data, len, [&out](const uint8_t* d, uint32_t n) { out.emplace_back(d, d + n); });
  }

 private:
  cosim::RtlEngine rtl_;
};

}  // namespace

std::unique_ptr<SimEngine> make_rtl_sim_engine() {
  return std::make_unique<RtlSimEngine>();
}

}  // namespace panama::driver
