// The registry of engine backends (panama/engine/backend.hpp): "model"
// always; others (sim/cosim's "rtl") register themselves.
#include "panama/engine/backend.hpp"

#include <stdexcept>

namespace panama {

namespace {

std::vector<EngineBackendInfo>& registry() {
  static std::vector<EngineBackendInfo> backends = {
      {"model", "the HLS C++ engine (golden model)",
       [] { return std::make_unique<ModelBackend<DefaultEngine>>(); }},
  };
  return backends;
}

}  // namespace

const std::vector<EngineBackendInfo>& engine_backends() {
  return registry();
}

void register_engine_backend(EngineBackendInfo info) {
  if (have_engine_backend(info.name)) {
    throw std::invalid_argument("engine backend \"" + info.name + "\" registered twice");
  }
  registry().push_back(std::move(info));
}

bool have_engine_backend(const std::string& name) {
  for (const EngineBackendInfo& b : engine_backends()) {
    if (b.name == name) return true;
  }
  return false;
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
