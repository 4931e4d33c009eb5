// Engine backends for the simulation harnesses: "model" runs the HLS C++
// engine (panama::DefaultEngine) directly; "rtl" runs the Verilated RTL
// engine (panama::cosim::RtlEngine) cycle by cycle through its AXI ports,
// when the build has it (Verilator found).
#include "panama/engine_backend.hpp"

#include <stdexcept>

#include "panama/engine.hpp"
#ifdef PANAMA_HAVE_RTL_ENGINE
#include "panama/rtl_engine.hpp"
#endif

namespace panama {

namespace {

class ModelBackend final : public EngineBackend {
 public:
  ModelBackend() : engine_(std::make_unique<DefaultEngine>()) {}  // large: heap
  std::string name() const override { return "model"; }
  uint32_t reg_read(uint32_t addr) override { return engine_->reg_read(addr); }
  void reg_write(uint32_t addr, uint32_t value) override { engine_->reg_write(addr, value); }
  void process_frame(const uint8_t* frame, uint32_t len, const FrameSink& sink) override {
    engine_->process_frame(frame, len, sink);
  }

 private:
  std::unique_ptr<DefaultEngine> engine_;
};

#ifdef PANAMA_HAVE_RTL_ENGINE
class RtlBackend final : public EngineBackend {
 public:
  std::string name() const override { return "rtl"; }
  uint32_t reg_read(uint32_t addr) override { return rtl_.reg_read(addr); }
  void reg_write(uint32_t addr, uint32_t value) override { rtl_.reg_write(addr, value); }
  void process_frame(const uint8_t* frame, uint32_t len, const FrameSink& sink) override {
    rtl_.process_frame_fn(frame, len, sink);
  }

 private:
  cosim::RtlEngine rtl_;
};
#endif

}  // namespace

const std::vector<EngineBackendInfo>& engine_backends() {
  static const std::vector<EngineBackendInfo> backends = {
      {"model", "the HLS C++ engine (golden model)", [] { return std::make_unique<ModelBackend>(); }},
#ifdef PANAMA_HAVE_RTL_ENGINE
      {"rtl", "the Verilated RTL engine (hw/rtl), co-simulated cycle by cycle",
       [] { return std::make_unique<RtlBackend>(); }},
#endif
  };
  return backends;
}

std::unique_ptr<EngineBackend> make_engine_backend(const std::string& name) {
  std::string names;
  for (const EngineBackendInfo& b : engine_backends()) {
    if (b.name == name) return b.make();
    names += (names.empty() ? "" : ", ") + b.name;
  }
  throw std::invalid_argument("unknown engine \"" + name + "\" (available: " + names + ")");
}

}  // namespace panama
