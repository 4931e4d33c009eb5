// The engine behind a harness, chosen at run time: the C++ model today, an
// RTL co-simulation later (same interface, so panama-pcap's output format
// does not depend on the backend).
//
// Contract: process_frame hands every frame the engine sends because of the
// given input frame to `sink`, in order, before it returns. A backend with
// latency (RTL) runs its simulation until the engine is idle again, so each
// output can be attributed to the input that caused it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace panama {

class EngineBackend {
 public:
  using FrameSink = std::function<void(const uint8_t* data, uint32_t len)>;

  virtual ~EngineBackend() = default;
  virtual std::string name() const = 0;
  virtual uint32_t reg_read(uint32_t addr) = 0;
  virtual void reg_write(uint32_t addr, uint32_t value) = 0;
  virtual void process_frame(const uint8_t* frame, uint32_t len, const FrameSink& sink) = 0;
};

struct EngineBackendInfo {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<EngineBackend>()> make;
};

// Every backend this build has, in the order --help lists them. A new
// backend (e.g. "rtl" from sim/cosim) adds one row in engine_backend.cpp.
const std::vector<EngineBackendInfo>& engine_backends();

// The backend called `name`; std::invalid_argument listing the available
// names when there is none.
std::unique_ptr<EngineBackend> make_engine_backend(const std::string& name);

}  // namespace panama
