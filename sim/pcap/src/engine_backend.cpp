// Engine backends for the simulation harnesses: "model" runs the HLS C++
// engine (panama::DefaultEngine) directly.
#include "panama/engine_backend.hpp"

#include <stdexcept>

#include "panama/engine.hpp"

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

}  // namespace

const std::vector<EngineBackendInfo>& engine_backends() {
  static const std::vector<EngineBackendInfo> backends = {
      {"model", "the HLS C++ engine (golden model)", [] { return std::make_unique<ModelBackend>(); }},
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
