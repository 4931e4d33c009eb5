// Registers the Verilated RTL engine as the "rtl" engine backend
// (panama/engine/backend.hpp) when the program starts. Built as an object
// library (panama_rtl_backend_registration) so that every program linking
// it has the backend: panama-pcap, panamactl's sim:rtl device, the software
// PSwitch's "engine": "rtl" and the tests that run them.
#include "panama/cosim/rtl_backend.hpp"

namespace {

[[maybe_unused]] const bool registered = [] {
  panama::register_engine_backend({"rtl", "the Verilated RTL engine (hw/rtl), co-simulated cycle by cycle",
                                   [] { return std::make_unique<panama::cosim::RtlBackend>(); }});
  return true;
}();

}  // namespace
