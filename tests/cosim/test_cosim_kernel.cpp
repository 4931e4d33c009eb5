// Co-simulation of the Verilated RTL engine against the Vitis kernel's
// DATAFLOW stages in C simulation (kernel.hpp via KernelCsim): seeded random
// traffic with tvalid gaps and tready back-pressure on the RTL side, and on
// the kernel side frames queued behind each other, idle invocations and
// output beats left undrained. Outcomes, emitted frames, entry statuses,
// registers and counters must agree. PANAMA_TEST_SEED replaces the seed
// list by one seed; failing traffic is written as a pcap.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "panama/cosim/kernel_cosim.hpp"
#include "panama/pcap/pcap_file.hpp"

using namespace panama;
using namespace panama::cosim;

namespace {

RtlEngine& shared_rtl() {
  static RtlEngine rtl;
  return rtl;
}

std::vector<uint64_t> seeds(std::initializer_list<uint64_t> fixed) {
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) return {std::strtoull(s, nullptr, 0)};
  return fixed;
}

void check_scenario(const Scenario& sc, const StreamShaping& shaping, const KernelDriving& driving) {
  const CompareResult r = compare_kernel(sc, shared_rtl(), shaping, driving);
  if (!r.ok) {
    const std::string path = "cosim-kernel-fail-seed-" + std::to_string(sc.seed) + ".pcap";
    pcapio::write_frames(path, all_frames(sc));
    std::printf("kernel co-simulation failed, seed %llu, traffic in %s\n",
                static_cast<unsigned long long>(sc.seed), path.c_str());
  }
  INFO(r.message);
  REQUIRE(r.ok);
  CHECK(r.frames == sc.frame_count());
  std::printf("  %zu frames, %zu emitted, RTL %llu clocks\n", r.frames, r.emitted,
              static_cast<unsigned long long>(r.stats.cycles));
}

}  // namespace

TEST_CASE("RTL matches the kernel's stages on random traffic with stalls and back-pressure", "[cosim][hls]") {
  TrafficOptions opt;
  opt.frames = 2000;
  for (uint64_t seed : seeds({301, 302, 303})) {
    UNSCOPED_INFO("seed " << seed << " (PANAMA_TEST_SEED=" << seed << " repeats it)");
    std::printf("kernel cosim seed %llu\n", static_cast<unsigned long long>(seed));
    check_scenario(random_scenario(seed, opt), StreamShaping{0.2, 0.2, seed},
                   KernelDriving{0.3, 0.3, 0.5, seed});
  }
}

TEST_CASE("RTL matches the kernel's stages with large frames and heavy back-pressure", "[cosim][hls]") {
  TrafficOptions opt;
  opt.frames = 500;
  opt.max_elems = 700;
  for (uint64_t seed : seeds({311})) {
    UNSCOPED_INFO("seed " << seed);
    check_scenario(random_scenario(seed, opt), StreamShaping{0.05, 0.7, seed},
                   KernelDriving{0.1, 0.6, 0.9, seed});
  }
}

TEST_CASE("RTL matches the kernel's stages when contributions to a slot come back to back", "[cosim][hls]") {
  // 8 jobs x 4 children round robin: every slot word is read, added and
  // written by consecutive frames (the slot memory's read-after-write case).
  for (uint32_t bytes : {68u, 1500u, 9000u}) {
    INFO("frame size " << bytes << " bytes");
    const Scenario sc = line_rate_scenario(bytes, 8, bytes >= 4096 ? 96 : 320);
    const CompareResult r =
        compare_kernel(sc, shared_rtl(), StreamShaping{0.0, 0.0, 1}, KernelDriving{0.0, 1.0, 1.0, 1});
    INFO(r.message);
    REQUIRE(r.ok);
    CHECK(r.emitted == sc.frame_count() / 4);
  }
}
