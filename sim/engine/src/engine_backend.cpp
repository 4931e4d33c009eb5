// The registry of engine backends (panama/engine_backend.hpp): "model"
// always, "rtl" when the build has the Verilated engine (sim/cosim).
#include "panama/engine_backend.hpp"

#include <stdexcept>

#ifdef PANAMA_HAVE_RTL_ENGINE
#include "panama/rtl_backend.hpp"
#endif

namespace panama {

const std::vector<EngineBackendInfo>& engine_backends() {
  static const std::vector<EngineBackendInfo> backends = {
      {"model", "the HLS C++ engine (golden model)",
       [] { return std::make_unique<ModelBackend<DefaultEngine>>(); }},
#ifdef PANAMA_HAVE_RTL_ENGINE
      {"rtl", "the Verilated RTL engine (hw/rtl), co-simulated cycle by cycle",
       [] { return std::make_unique<cosim::RtlBackend>(); }},
#endif
  };
  return backends;
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
