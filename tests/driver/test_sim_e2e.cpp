// The driver end to end on the simulation backend: a configuration applied
// through the driver, traffic through the simulated engine (the Verilated RTL
// when it is built, and the HLS model), counters read back through the
// driver and checked against the traffic sent; results checked against host
// float sums. Randomized: the seed is printed and PANAMA_TEST_SEED replays it.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "driver/driver_errors.hpp"
#include "driver/support/test_xclbin.hpp"
#include "panama/config/node_config.hpp"
#include "panama/driver/simulation.hpp"
#include "panama/engine/counters.hpp"
#include "panama/regmap.hpp"
#include "support/frames.hpp"
#include "support/temp_dir.hpp"

using namespace panama;
using namespace panama::driver;
using namespace panama::driver::testing;
using panama::test::contribution;
using panama::test::f2u;
using panama::test::make_frame;
using panama::test::payload_of;
using panama::test::u2f;

namespace {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("PANAMA_TEST_SEED");
    const uint64_t v = s ? std::strtoull(s, nullptr, 0) : std::random_device{}();
    std::cout << "test_driver_sim: PANAMA_TEST_SEED=" << v << std::endl;
    return v;
  }();
  return seed;
}

config::EntryConfig entry(uint32_t index, uint16_t job, uint8_t tree, bool root, uint32_t fan_in,
                          std::vector<uint8_t> children, uint32_t slot_base, uint32_t slot_count) {
  config::EntryConfig e;
  e.index = index;
  e.job = job;
  e.tree = tree;
  e.root = root;
  e.fan_in = fan_in;
  e.children = std::move(children);
  e.slot_base = slot_base;
  e.slot_count = slot_count;
  e.out_child_id = root ? 0 : 5;
  e.eth_src = {0x02, 0, 0, 0, 0, 0x10};
  e.eth_dst = {0x02, 0, 0, 0, 1, 0};
  e.ip_src = 0x0A00000A;
  e.ip_dst = root ? 0xEF010000u + tree : 0x0A000101;
  e.udp_src = wire::kDefaultUdpPort;
  e.udp_dst = wire::kDefaultUdpPort;
  return e;
}

config::NodeConfig test_config() {
  config::NodeConfig cfg;
  cfg.node = "driver-test";
  cfg.entries.push_back(entry(0, 10, 0, true, 3, {0, 1, 2}, 0, 4));
  cfg.entries.push_back(entry(3, 10, 1, true, 2, {1, 3}, 4, 4));
  cfg.entries.push_back(entry(5, 11, 0, false, 4, {0, 1, 2, 3}, 16, 4));
  return cfg;
}

// Random finite fp32 values: normals of both signs and magnitudes, zeros of
// both signs and subnormals (the engine keeps them).
uint32_t random_value(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      return (rng() & 1) ? 0x80000000u : 0u;
    case 1:
      return static_cast<uint32_t>(rng() & 0x807FFFFFu);  // subnormal
    default: {
      std::uniform_real_distribution<float> d(-1000.f, 1000.f);
      return f2u(d(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20));
    }
  }
}

struct Traffic {
  uint64_t frames = 0, passthrough = 0, accepted = 0, emitted = 0, duplicates = 0, ecn = 0;
  uint64_t unknown = 0, child_not_allowed = 0, truncated = 0;
  std::vector<std::array<uint64_t, regmap::kNumEntryCounters>> per_entry;
};

void check_counters(Device& dev, const config::NodeConfig& cfg, const Traffic& t) {
  using namespace regmap;
  const config::CounterSnapshot s = config::read_counters(dev, cfg.entries);
  CHECK(s.global[kGcFramesIn] == t.frames);
  CHECK(s.global[kGcPassthrough] == t.passthrough);
  CHECK(s.global[kGcResultsPassed] == 0);
  CHECK(s.global[kGcPanamaIn] == t.accepted + t.duplicates + t.unknown + t.child_not_allowed);
  CHECK(s.global[kGcAggregated] == t.accepted);
  CHECK(s.global[kGcEmitted] == t.emitted);
  CHECK(s.global[kGcDuplicates] == t.duplicates);
  CHECK(s.global[kGcEcnMarked] == t.ecn);
  CHECK(s.global[kGcDropUnknownEntry] == t.unknown);
  CHECK(s.global[kGcDropChildNotAllowed] == t.child_not_allowed);
  CHECK(s.global[kGcDropTruncated] == t.truncated);
  for (uint32_t c : {kGcRetransIn, kGcRetransServed, kGcDropOversize, kGcDropBadIpHeader, kGcDropBadVersion,
                     kGcDropBadType, kGcDropBadElemType, kGcDropBadElemCount, kGcDropBadLength,
                     kGcDropSeqWindow, kGcDropCountMismatch}) {
    INFO("counter " << kGlobalCounterNames[c]);
    CHECK(s.global[c] == 0);
  }
  REQUIRE(s.entries.size() == cfg.entries.size());
  for (size_t i = 0; i < cfg.entries.size(); ++i) {
    for (uint32_t c = 0; c < kNumEntryCounters; ++c) {
      INFO("entry " << i << " counter " << kEntryCounterNames[c]);
      CHECK(s.entries[i].values[c] == t.per_entry[i][c]);
    }
  }
}

// Sends seeded traffic for every entry of `cfg` and checks every frame the
// engine sends; returns what was sent, counted independently of the engine.
Traffic run_traffic(SimulationDevice& dev, const config::NodeConfig& cfg, uint32_t seqs,
                    std::mt19937_64& rng) {
  using namespace regmap;
  Traffic t;
  t.per_entry.assign(cfg.entries.size(), {});
  auto chance = [&rng](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto send_expect_nothing = [&](const Frame& f) {
    ++t.frames;
    CHECK(dev.send_frame(f).empty());
  };
  auto noise = [&] {
    if (chance(0.05)) {  // ordinary UDP traffic: passes through untouched
      auto h = contribution(10, 0, 0, 0, 4);
      h.udp_dst = 5001;
      const Frame f = make_frame(h, {1, 2, 3, 4});
      ++t.frames;
      ++t.passthrough;
      const auto out = dev.send_frame(f);
      REQUIRE(out.size() == 1);
      CHECK(out[0] == f);
    }
    if (chance(0.04)) {
      send_expect_nothing(make_frame(contribution(99, 0, 0, 0, 2), {5, 6}));
      ++t.unknown;
    }
    if (chance(0.04)) {  // child 0 is not among entry 1's children
      send_expect_nothing(make_frame(contribution(cfg.entries[1].job, cfg.entries[1].tree, 0, 0, 2), {5, 6}));
      ++t.child_not_allowed;
      ++t.per_entry[1][kEcDropChildNotAllowed];
    }
    if (chance(0.03)) {  // cut short of its IPv4 length
      Frame f = make_frame(contribution(10, 0, 1, 0, 8), std::vector<uint32_t>(8, 7));
      f.resize(wire::kPayloadOffset + 4);
      send_expect_nothing(f);
      ++t.truncated;
    }
  };

  for (uint32_t seq = 0; seq < seqs; ++seq) {
    std::vector<size_t> order(cfg.entries.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t ei : order) {
      const config::EntryConfig& e = cfg.entries[ei];
      std::vector<uint8_t> children(e.children.begin(), e.children.begin() + e.fan_in);
      std::shuffle(children.begin(), children.end(), rng);
      const uint16_t n = static_cast<uint16_t>(1 + rng() % 40);
      std::vector<uint32_t> sum(n);
      uint8_t ecn = 0;
      uint32_t cap = e.slot_count;
      for (size_t k = 0; k < children.size(); ++k) {
        noise();
        std::vector<uint32_t> p(n);
        for (uint32_t& v : p) v = random_value(rng);
        const uint8_t frame_ecn = chance(0.2) ? wire::kEcnCe : wire::kEcnEct0;
        const uint16_t frame_cap = static_cast<uint16_t>(1 + rng() % 100);
        const Frame f = make_frame(contribution(e.job, e.tree, children[k], seq, n, frame_ecn, frame_cap), p);
        for (uint32_t i = 0; i < n; ++i) sum[i] = k == 0 ? p[i] : f2u(u2f(sum[i]) + u2f(p[i]));
        ecn |= frame_ecn;
        cap = std::min<uint32_t>(cap, frame_cap);
        ++t.frames;
        ++t.accepted;
        ++t.per_entry[ei][kEcAggregated];
        if (frame_ecn == wire::kEcnCe) {
          ++t.ecn;
          ++t.per_entry[ei][kEcEcnMarked];
        }
        const auto out = dev.send_frame(f);
        if (k + 1 < children.size()) {
          CHECK(out.empty());
        } else {
          ++t.emitted;
          ++t.per_entry[ei][kEcEmitted];
          INFO("entry " << ei << " seq " << seq);
          REQUIRE(out.size() == 1);
          const Frame& r = out[0];
          CHECK(r[wire::kPanamaType] == static_cast<uint8_t>(e.root ? wire::PacketType::kResultDown
                                                                    : wire::PacketType::kAggregateUp));
          CHECK(wire::load_be16(r.data() + wire::kPanamaJobId) == e.job);
          CHECK(r[wire::kPanamaTreeId] == e.tree);
          CHECK(wire::load_be32(r.data() + wire::kPanamaSeq) == seq);
          CHECK(wire::load_be16(r.data() + wire::kPanamaCwndCap) == cap);
          CHECK(wire::load_be16(r.data() + wire::kPanamaChildId) == e.out_child_id);
          CHECK(wire::load_be32(r.data() + wire::kIpDst) == e.ip_dst);
          CHECK((r[wire::kIpTos] & 3) == (ecn == wire::kEcnCe ? wire::kEcnCe : wire::kEcnEct0));
          CHECK(wire::ipv4_header_checksum(r.data() + wire::kIpOffset) == 0);
          CHECK(payload_of(r) == sum);
        }
        if (chance(0.1)) {  // the same contribution again
          send_expect_nothing(f);
          ++t.duplicates;
          ++t.per_entry[ei][kEcDuplicates];
        }
      }
    }
  }
  return t;
}

std::string temp_dir() {
  return panama::test::temp_dir("panama-driver-sim");
}

using panama::test::kind_of;

}  // namespace

TEST_CASE("the build's engine backends are all registered", "[driver][sim]") {
  // sim/cosim registers the "rtl" backend in every program that links it;
  // this one does wherever the RTL is built.
#ifdef PANAMA_TEST_HAVE_RTL
  CHECK(rtl_engine_available());
#else
  CHECK_FALSE(rtl_engine_available());
#endif
}

TEST_CASE("driver end to end on the simulation backend: configure, traffic, counters", "[driver][sim]") {
  const std::string spec = GENERATE(as<std::string>{}, "sim", "sim:model");
  std::mt19937_64 rng(test_seed());
  UNSCOPED_INFO("seed " << test_seed() << " (PANAMA_TEST_SEED), device " << spec);
  auto dev = open_device(spec);
  auto* sim = dynamic_cast<SimulationDevice*>(dev.get());
  REQUIRE(sim);
  if (spec == "sim")
    CHECK(sim->engine_name().find(rtl_engine_available() ? "RTL" : "model") != std::string::npos);

  const config::NodeConfig cfg = test_config();
  dev->apply(cfg);
  CHECK(dev->status().enabled);

  const Traffic t = run_traffic(*sim, cfg, 10, rng);
  check_counters(*dev, cfg, t);

  SECTION("clear zeroes the counters and keeps the configuration") {
    dev->clear_counters();
    Traffic zero;
    zero.per_entry.assign(cfg.entries.size(), {});
    check_counters(*dev, cfg, zero);
    CHECK(dev->status().enabled);
  }
  SECTION("reset disables every entry") {
    dev->reset();
    CHECK(sim->send_frame(make_frame(contribution(10, 0, 0, 0, 2), {1, 2})).empty());
    CHECK(dev->read_counter(regmap::global_counter_addr(regmap::kGcDropUnknownEntry)) == 1);
    CHECK(dev->read_counter(regmap::global_counter_addr(regmap::kGcFramesIn)) == 1);
  }
  SECTION("disabled, the engine passes PANAMA frames through") {
    dev->set_enabled(false);
    const Frame f = make_frame(contribution(10, 0, 0, 100, 2), {1, 2});
    const auto out = sim->send_frame(f);
    REQUIRE(out.size() == 1);
    CHECK(out[0] == f);
  }
}

TEST_CASE("simulation state persists across opens; one controller at a time", "[driver][sim]") {
  const std::string dir = temp_dir();
  OpenOptions ctl;
  ctl.sim_state = dir + "/sim.state";
  OpenOptions ro = ctl;
  ro.mode = OpenMode::kReadOnly;
  std::mt19937_64 rng(test_seed() + 1);
  const config::NodeConfig cfg = test_config();
  Traffic t;
  {
    auto dev = open_device("sim:model", ctl);
    dev->apply(cfg);
    t = run_traffic(dynamic_cast<SimulationDevice&>(*dev), cfg, 3, rng);
    CHECK(kind_of([&] { open_device("sim:model", ctl); }) == ErrorKind::kDeviceBusy);
    CHECK(kind_of([&] { open_device("sim:model", ro); }) == ErrorKind::kDeviceBusy);
  }
  {
    auto reader = open_device("sim", ro);  // any engine replays the same state
    check_counters(*reader, cfg, t);
    CHECK(kind_of([&] { reader->set_enabled(false); }) == ErrorKind::kInvalidArgument);
    auto second_reader = open_device("sim:model", ro);
    CHECK(second_reader->status().enabled);
  }
  {
    auto dev = open_device("sim:model", ctl);
    dev->reset();
  }
  auto after = open_device("sim:model", ro);
  CHECK(after->read_counter(regmap::global_counter_addr(regmap::kGcFramesIn)) == 0);
  CHECK(kind_of([&] {
          OpenOptions bad = ro;
          bad.sim_state = "/proc/version";  // exists, not a state file
          open_device("sim:model", bad);
        }) == ErrorKind::kInvalidArgument);
}

TEST_CASE("configurations the engine cannot hold are refused before anything is written", "[driver][sim]") {
  auto dev = open_device("sim");
  const Identity id = dev->identity();
  CHECK(id.version_major == regmap::kVersionMajor);

  config::NodeConfig many;
  many.node = "many";
  for (uint32_t i = 0; i <= id.num_entries; ++i) {
    many.entries.push_back(entry(i, static_cast<uint16_t>(i), 0, true, 1, {0}, i, 1));
  }
  CHECK(kind_of([&] { dev->apply(many); }) == ErrorKind::kCapacity);

  config::NodeConfig big;
  big.node = "big";
  big.entries.push_back(entry(0, 1, 0, true, 1, {0}, id.num_slots - 2, 4));
  CHECK(kind_of([&] { dev->apply(big); }) == ErrorKind::kCapacity);

  config::NodeConfig far;
  far.node = "far";
  far.entries.push_back(entry(id.num_entries, 1, 0, true, 1, {0}, 0, 4));
  CHECK(kind_of([&] { dev->apply(far); }) == ErrorKind::kCapacity);
  // Nothing was written: the engine still has its reset configuration.
  CHECK(dev->read32(regmap::kUdpPort) == wire::kDefaultUdpPort);

  config::NodeConfig bad_fan_in;  // three contributions, two children allowed
  bad_fan_in.node = "fan";
  bad_fan_in.entries.push_back(entry(0, 1, 0, true, 3, {0, 1}, 0, 4));
  CHECK(kind_of([&] { dev->apply(bad_fan_in); }) == ErrorKind::kConfigRejected);

  // UDP_PORT holds 16 bits: a wider value cannot read back.
  CHECK(kind_of([&] { dev->write_verified(regmap::kUdpPort, 0x12345); }) == ErrorKind::kReadbackMismatch);
  CHECK_NOTHROW(dev->write_verified(regmap::kUdpPort, 0x2345));
}

TEST_CASE("the simulation backend checks the xclbin it is programmed with", "[driver][sim]") {
  const std::string dir = temp_dir();
  auto dev = open_device("sim:model");
  const std::string good = dir + "/rtl.xclbin";
  {
    const auto image =
        build_xclbin(panama_xclbin_spec(KernelFlavor::kRtl, "xilinx_u250_gen3x16_xdma_4_1_202210_1"));
    std::ofstream(good, std::ios::binary)
        .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
  }
  dev->program(good);
  REQUIRE(dev->loaded_xclbin());
  CHECK(dev->loaded_xclbin()->platform == "xilinx_u250_gen3x16_xdma_4_1_202210_1");
  CHECK(kind_of([&] { dev->program(dir + "/none.xclbin"); }) == ErrorKind::kBadXclbin);
  CHECK(kind_of([&] { dev->program("/proc/version"); }) == ErrorKind::kBadXclbin);
  if (!rtl_engine_available()) CHECK(kind_of([] { open_device("sim:rtl"); }) == ErrorKind::kUnsupported);
}

// Raw register writes through the driver (what any XRT user can do): a
// disabled entry committed over a running job's slots is refused and the job
// completes its open sequence exactly; the engine rule is docs/protocol.md
// section 9. The HLS model only: the RTL follows the same rule separately.
TEST_CASE("driver: a disabled entry's raw COMMIT cannot empty a running job's slots", "[driver][sim]") {
  auto dev = open_device("sim:model");
  auto* sim = dynamic_cast<SimulationDevice*>(dev.get());
  REQUIRE(sim);
  const config::NodeConfig cfg = test_config();
  dev->apply(cfg);
  // Job 10 tree 0 (fan-in 3, slots 0..3): children 0 and 1 of sequence 0 are in.
  CHECK(sim->send_frame(make_frame(contribution(10, 0, 0, 0, 1), {f2u(1.5f)})).empty());
  CHECK(sim->send_frame(make_frame(contribution(10, 0, 1, 0, 1), {f2u(2.0f)})).empty());

  TableEntry e = cfg.entries[1].table_entry();  // job 10 tree 1's fields, moved over slots 2..5
  e.enable = false;
  e.job = 12;
  e.slot_base = 2;
  const StagedRegisters staged = pack_entry(e);
  for (uint32_t k = 0; k < regmap::kNumStagedRegisters; ++k)
    dev->write32(regmap::kStagedBase + 4 * k, staged[k]);
  dev->write32(regmap::kEntryIndex, 7);
  dev->write32(regmap::kEntryCmd, regmap::kCmdCommit);
  CHECK(dev->read32(regmap::kEntryStatus) == regmap::kStatusSlotOverlap);

  const auto out = sim->send_frame(make_frame(contribution(10, 0, 2, 0, 1), {f2u(0.25f)}));
  REQUIRE(out.size() == 1);
  CHECK(payload_of(out[0]) == std::vector<uint32_t>{f2u(3.75f)});
  CHECK(dev->read_counter(regmap::global_counter_addr(regmap::kGcDropSeqWindow)) == 0);
}
