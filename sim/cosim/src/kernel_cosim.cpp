// The RTL-versus-kernel comparison of a scenario (kernel_cosim.hpp).
#include "panama/cosim/kernel_cosim.hpp"

#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "panama/regmap.hpp"

namespace panama::cosim {

namespace {

using namespace panama::regmap;

// Runs one segment of frames through the kernel: frames are queued as beats,
// the region is invoked once per frame (plus idle invocations), and output
// beats are drained only now and then. Returns one outcome per frame.
std::vector<EngineOutcome> run_kernel_segment(KernelModel& k, const std::vector<Frame>& frames,
                                              std::mt19937_64& rng, const KernelDriving& d,
                                              std::vector<Frame>* out) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  EmitFn sink([out](const uint8_t* p, uint32_t n) { out->emplace_back(p, p + n); });
  std::vector<EngineOutcome> outcomes;
  size_t next = 0;
  while (next < frames.size()) {
    // Queue the next frame, and possibly more behind it.
    do {
      k.push_frame(frames[next].data(), static_cast<uint32_t>(frames[next].size()), false);
      ++next;
    } while (next < frames.size() && u(rng) < d.queue_probability);
    while (!k.input_empty()) {
      k.invoke();
      outcomes.push_back(k.last_outcome());
      if (u(rng) >= d.hold_probability) k.drain(sink);
    }
    if (u(rng) < d.idle_probability) {
      const size_t before = k.output_beats();
      k.invoke();  // nothing queued: must do nothing
      if (k.output_beats() != before) throw std::logic_error("beats emitted by an idle invocation");
    }
  }
  k.drain(sink);
  return outcomes;
}

}  // namespace

CompareResult compare_kernel(const Scenario& sc, RtlEngine& rtl, const StreamShaping& rtl_shaping,
                             const KernelDriving& driving) {
  auto kernel = std::make_unique<KernelModel>();
  std::mt19937_64 rng(driving.seed);
  // The kernel's comparison leaves MAC-error flags out on both sides.
  return compare_segments(sc, "kernel C simulation", *kernel, rtl, rtl_shaping, false,
                          [&](const std::vector<Frame>& frames, const std::vector<uint8_t>&,
                              const std::vector<EngineOutcome>& rtl_out, std::vector<EngineOutcome>* outcomes,
                              std::vector<Frame>* emitted) {
                            // The kernel has no receive FIFO to tell: the RTL
                            // must have kept every frame (a source that waits).
                            for (const EngineOutcome& o : rtl_out) {
                              if (rx_overflow_drop(o))
                                throw std::logic_error(
                                    "the RTL's receive FIFO dropped a frame; run it with a "
                                    "source that waits (StreamShaping::mac_source false)");
                            }
                            *outcomes = run_kernel_segment(*kernel, frames, rng, driving, emitted);
                          });
}

}  // namespace panama::cosim
