// The HLS C++ model (panama::DefaultEngine) as a simulation engine, and the
// engine factory of the simulation backend.
#include <memory>

#include "panama/driver/simulation.hpp"
#include "panama/engine.hpp"

namespace panama::driver {

std::unique_ptr<SimEngine> make_rtl_sim_engine();  // sim_engine_rtl.cpp or sim_engine_no_rtl.cpp

namespace {

class ModelEngine final : public SimEngine {
 public:
  ModelEngine() : engine_(std::make_unique<DefaultEngine>()) {}
  std::string name() const override { return "HLS C++ model (panama::DefaultEngine)"; }
  uint32_t reg_read(uint32_t offset) override { return engine_->reg_read(offset); }
  void reg_write(uint32_t offset, uint32_t value) override { engine_->reg_write(offset, value); }
  void process_frame(const uint8_t* data, uint32_t len, std::vector<Frame>& out) override {
    auto sink = [&out](const uint8_t* d, uint32_t n) { out.emplace_back(d, d + n); };
    engine_->process_frame(data, len, sink);
  }

 private:
  std::unique_ptr<DefaultEngine> engine_;  // large: the packet memory is inside
};

}  // namespace

std::unique_ptr<SimEngine> make_sim_engine(SimEngineKind kind) {
  if (kind == SimEngineKind::kModel || (kind == SimEngineKind::kAuto && !rtl_engine_available())) {
    return std::make_unique<ModelEngine>();
  }
  return make_rtl_sim_engine();
}

}  // namespace panama::driver
