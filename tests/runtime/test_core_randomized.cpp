// Whole allreduces through the in-memory fabric (core_rig.hpp) under seeded
// random loss, duplication, reordering, CE marks, cap changes and poisoned
// late duplicates: every chunk written exactly once, every result exact, the
// window and cap bounds kept; and workers fed the same result stream compute
// the same cwnd sequence.
//
// Seed: PANAMA_TEST_SEED overrides the random seed (printed on failure).
#include <catch2/catch.hpp>
#include <cstdint>
#include <iostream>
#include <random>
#include <vector>

#include "core_rig.hpp"
#include "panama/runtime/allreduce_core.hpp"

using namespace panama;
using namespace panama::runtime;
using namespace panama::test::core;

TEST_CASE("core: workers fed identical result streams compute identical cwnd sequences") {
  const uint64_t seed = seed_from_env();
  INFO("seed " << seed);
  Faults f;
  f.ce_down = 0.2;
  f.cap_change = 0.1;
  f.ce_up = 0.05;
  Rig c(seed, 3, 2, 16, 16, 4, f);  // no loss: every worker sees the same stream
  std::vector<std::vector<float>> bufs(3, std::vector<float>(16 * 400, 1.0f));
  for (uint32_t w = 0; w < 3; ++w) c.worker(w).start(bufs[w].data(), bufs[w].size(), 0);
  for (int i = 0;
       i < 100000 && (c.worker(0).pending_ops() || c.worker(1).pending_ops() || c.worker(2).pending_ops());
       ++i)
    c.step();
  for (uint32_t t = 0; t < 2; ++t) {
    REQUIRE(c.cwnd_trace[0][t].size() == 200);
    CHECK(c.cwnd_trace[1][t] == c.cwnd_trace[0][t]);
    CHECK(c.cwnd_trace[2][t] == c.cwnd_trace[0][t]);
    // The stream had CE marks: cwnd went down at some point.
    bool decreased = false;
    for (size_t i = 1; i < c.cwnd_trace[0][t].size(); ++i)
      decreased |= c.cwnd_trace[0][t][i] < c.cwnd_trace[0][t][i - 1];
    CHECK(decreased);
  }
  CHECK(c.cap_violations == 0);
  CHECK(bufs[0][123] == 3.0f);
}

TEST_CASE("core: every chunk written exactly once and results exact under random event orders") {
  const uint64_t base_seed = seed_from_env();
  std::cout << "test_runtime_core: random event orders, seed " << base_seed
            << " (PANAMA_TEST_SEED to reproduce)\n";
  std::mt19937_64 meta(base_seed);
  for (int run = 0; run < 150; ++run) {
    const uint64_t seed = meta();
    std::mt19937_64 g(seed);
    Scenario s;
    s.world = 1 + static_cast<uint32_t>(g() % 4);
    s.trees = 1 + static_cast<uint32_t>(g() % 3);
    s.elems = 1 + static_cast<uint32_t>(g() % 64);
    s.q = 1 + static_cast<uint32_t>(g() % 16);
    s.initial_cap = static_cast<uint16_t>(1 + g() % s.q);
    const size_t nops = 1 + g() % 4;
    for (size_t i = 0; i < nops; ++i) {
      const size_t kind = g() % 5;
      s.sizes.push_back(kind == 0 ? 0 : kind == 1 ? 1 + g() % s.elems : 1 + g() % (s.elems * 300));
    }
    auto p = [&](double max) { return std::uniform_real_distribution<double>(0, max)(g); };
    s.faults.loss_up = p(0.2);
    s.faults.loss_down = p(0.2);
    s.faults.dup = p(0.2);
    s.faults.ce_up = p(0.2);
    s.faults.ce_down = p(0.3);
    s.faults.cap_change = p(0.3);
    s.faults.poison = p(0.5);
    s.faults.reorder_window = 1 + static_cast<uint32_t>(g() % 8);
    // Some allreduces at or above the threshold (streaming payload copies), some below.
    s.streaming_copy_bytes = g() % 3 == 0 ? 0 : 4 * (1 + g() % (s.elems * 150));
    s.zero_copy = g() % 2 == 0;
    INFO("run " << run << ": world " << s.world << " trees " << s.trees << " elems " << s.elems << " Q "
                << s.q << " streaming from " << s.streaming_copy_bytes << " bytes, zero-copy send "
                << s.zero_copy);
    run_scenario(seed, s);
  }
}
