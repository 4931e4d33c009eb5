// Builds without the Verilated RTL engine (Verilator absent, or hw/rtl not
// built): the simulation backend offers the HLS C++ model only.
#include "panama/driver/errors.hpp"
#include "panama/driver/simulation.hpp"

namespace panama::driver {

bool rtl_engine_available() {
  return false;
}

std::unique_ptr<SimEngine> make_rtl_sim_engine() {
  throw DriverError(
      ErrorKind::kUnsupported,
      "sim:rtl: this build has no Verilated RTL engine (library panama_rtl_engine was not built); "
      "use sim:model, or install verilator (scripts/setup.sh) and rebuild");
}

}  // namespace panama::driver
