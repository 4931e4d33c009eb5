// The RTL-versus-kernel comparison of a scenario (kernel_cosim.hpp).
#include "panama/kernel_cosim.hpp"

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
  auto sink = [out](const uint8_t* p, uint32_t n) { out->emplace_back(p, p + n); };
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
  CompareResult res;
  auto kernel = std::make_unique<KernelModel>();
  std::mt19937_64 rng(driving.seed);
  rtl.set_shaping(rtl_shaping);
  rtl.reset_stats();
  auto fail = [&](const std::string& m) {
    res.ok = false;
    std::ostringstream o;
    o << "seed " << sc.seed << ": " << m;
    res.message = o.str();
    res.stats = rtl.stats();
    return res;
  };

  std::vector<uint32_t> ks, rs;
  apply_writes(*kernel, sc.setup, &ks);
  apply_writes(rtl, sc.setup, &rs);
  if (ks != rs) return fail("entry command statuses differ after set-up");

  size_t base = 0;
  for (size_t s = 0; s < sc.segments.size(); ++s) {
    const auto& frames = sc.segments[s];
    std::vector<Frame> kout, rout;
    std::vector<EngineOutcome> koc;
    try {
      koc = run_kernel_segment(*kernel, frames, rng, driving, &kout);
    } catch (const std::exception& e) {
      return fail(std::string("kernel C simulation: ") + e.what());
    }
    const std::vector<EngineOutcome> roc =
        rtl.run(frames, [&](const uint8_t* d, uint32_t n) { rout.emplace_back(d, d + n); });
    if (auto d = diff_outcomes("kernel", frames, base, koc, roc); !d.empty()) return fail(d);
    if (auto d = diff_emitted("kernel", s, kout, rout); !d.empty()) return fail(d);
    res.emitted += kout.size();
    base += frames.size();
    ks.clear();
    rs.clear();
    apply_writes(*kernel, sc.between[s], &ks);
    apply_writes(rtl, sc.between[s], &rs);
    if (ks != rs) return fail("entry command statuses differ between segments");
  }
  if (auto d = diff_registers("kernel", read_all(*kernel), read_all(rtl)); !d.empty()) return fail(d);
  res.frames = base;
  res.stats = rtl.stats();
  return res;
}

}  // namespace panama::cosim
