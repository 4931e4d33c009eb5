// The protocol core's recovery: a job that cannot finish fails after its
// retry budget with a clear error and no hang (also with a transmit path that
// refuses frames); a refused retransmission goes out later; a dead tree
// without a backup fails the job, one with a backup fails over to it with
// every allreduce bit-exact (whole allreduces through the in-memory fabric,
// core_rig.hpp); a tree that never answered is not failed over.
//
// Seed: PANAMA_TEST_SEED overrides the random seed (printed on failure).
#include <algorithm>
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

TEST_CASE("core: a job that cannot finish fails after the retry budget with a clear error, no hang") {
  Plan p = make_plan(0, 2, 2, 4, 8);
  p.congestion.retry_budget = 3;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 400;
  AllreduceCore core(p);
  std::vector<float> a(16, 1.0f);
  const OpId id = core.start(a.data(), a.size(), 0);
  uint64_t now = 0;
  uint64_t retrans_frames = 0;
  for (int i = 0; i < 100 && !core.failed(); ++i) {
    VectorFrameOut out;
    core.poll(now, out);
    for (auto& f : out.frames) retrans_frames += f[wire::kPanamaType] == 3;
    if (core.failed()) break;
    now = core.next_timer_ns();
    REQUIRE(now != UINT64_MAX);
  }
  REQUIRE(core.failed());
  CHECK(core.status(id) == OpStatus::kFailed);
  // 3 retransmissions (the budget) and 3 x 400 us (budget x rto_max) without any result.
  CHECK_THAT(core.op_error(id), Catch::Contains("no result after 4 retransmissions (retry_budget)") &&
                                    Catch::Contains("answered nothing for 1 ms"));
  CHECK(retrans_frames >= 3);
  // Backoff: 100, 200, 400 (capped) microseconds: the 4th timeout comes at >= 100+200+400+400.
  CHECK(now >= 1100 * 1000);
  const OpId later = core.start(a.data(), a.size(), now);
  CHECK(core.status(later) == OpStatus::kFailed);
  CHECK(a == std::vector<float>(16, 1.0f));  // the buffer is left untouched
}

TEST_CASE("core: a full transmit path does not stop the retry budget: the allreduce fails, no hang") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.retry_budget = 3;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 400;
  AllreduceCore core(p);
  std::vector<float> a(8, 2.0f);
  const OpId id = core.start(a.data(), a.size(), 0);
  VectorFrameOut first;
  core.poll(0, first);
  REQUIRE(first.frames.size() == 1);  // initial window
  // The peer is gone and the transmit queue never drains: nothing can be written.
  uint64_t now = 0;
  for (int i = 0; i < 100 && !core.failed(); ++i) {
    now = std::max(now + 1, core.next_timer_ns());
    REQUIRE(now != UINT64_MAX);
    VectorFrameOut full;
    full.limit = 0;
    CHECK(core.poll(now, full) == 0);
  }
  REQUIRE(core.failed());
  CHECK(core.status(id) == OpStatus::kFailed);
  CHECK_THAT(core.op_error(id), Catch::Contains("retry_budget"));
  CHECK(core.stats().timeouts == 4);  // 100, 300, 700, 1100 us; fails at 1500 us (>= 3 x 400 us of silence)
  CHECK(core.stats().retransmissions == 0);
  CHECK(now >= 1500 * 1000);  // the backed-off deadlines still apply
}

TEST_CASE("core: a retransmission the transmit path refused goes out on the next poll") {
  Plan p = make_plan(0, 1, 1, 4, 8);
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  AllreduceCore core(p);
  std::vector<float> a(4, 1.0f);
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  REQUIRE(out.frames.size() == 1);
  VectorFrameOut full;
  full.limit = 0;
  core.poll(100 * 1000, full);  // the deadline passes while the path is full
  CHECK(core.stats().timeouts == 1);
  CHECK(core.stats().retransmissions == 0);
  VectorFrameOut room;
  core.poll(100 * 1000 + 1, room);
  REQUIRE(room.frames.size() == 1);
  CHECK(room.frames[0][wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kRetransmission));
  CHECK(core.stats().timeouts == 1);  // one timeout, one retransmission
  CHECK(core.stats().retransmissions == 1);
}

TEST_CASE("core: a tree without a backup that dies fails the job after the retry budget") {
  const uint64_t seed = seed_from_env();
  Scenario s{3, 2, 8, 8, 4, {8 * 40, 8 * 40}, Faults{}};
  Setup setup;
  setup.adjust = [](Plan& p) { p.congestion.retry_budget = 8; };
  Rig c(seed, s.world, s.trees, s.elems, s.q, s.initial_cap, s.faults, setup);
  std::vector<std::vector<float>> bufs(s.world, std::vector<float>(s.sizes[0], 1.0f));
  for (uint32_t w = 0; w < s.world; ++w) c.worker(w).start(bufs[w].data(), bufs[w].size(), 0);
  for (int i = 0; i < 5; ++i) c.step();
  c.kill(0);
  bool all_failed = false;
  for (int i = 0; i < 100000 && !all_failed; ++i) {
    c.step();
    all_failed = true;
    for (uint32_t w = 0; w < s.world; ++w) all_failed &= c.worker(w).failed();
  }
  CHECK(all_failed);
  CHECK_THAT(c.worker(0).failure(), Catch::Contains("tree 10"));
}

TEST_CASE(
    "core: tree failover: a dead tree's chunks finish on its backup, bit-exact, agreed by every worker") {
  const uint64_t base_seed = seed_from_env();
  std::cout << "test_runtime_core: tree failover, seed " << base_seed << " (PANAMA_TEST_SEED to reproduce)\n";
  std::mt19937_64 meta(base_seed ^ 0xFA11);
  uint64_t replayed_kept = 0;
  for (int run = 0; run < 60; ++run) {
    const uint64_t seed = meta();
    std::mt19937_64 g(seed);
    Scenario s;
    s.world = 2 + static_cast<uint32_t>(g() % 3);
    s.trees = 1 + static_cast<uint32_t>(g() % 3);
    s.elems = 1 + static_cast<uint32_t>(g() % 64);
    s.q = 2 + static_cast<uint32_t>(g() % 15);
    s.initial_cap = static_cast<uint16_t>(1 + g() % s.q);
    const size_t nops = 2 + g() % 4;
    for (size_t i = 0; i < nops; ++i) s.sizes.push_back(s.trees * s.elems + g() % (s.elems * 200));
    auto p = [&](double max) { return std::uniform_real_distribution<double>(0, max)(g); };
    const bool faulty = run % 2 == 1;  // half the runs on a clean network
    if (faulty) {
      s.faults.loss_up = p(0.1);
      s.faults.loss_down = p(0.1);
      s.faults.dup = p(0.1);
      s.faults.ce_down = p(0.3);
      s.faults.cap_change = p(0.3);
      s.faults.poison = p(0.5);
      s.faults.reorder_window = 1 + static_cast<uint32_t>(g() % 8);
    }
    s.kill_tree = static_cast<int>(g() % s.trees);
    s.kill_step = 1 + g() % 80;
    s.failover_after = faulty ? 14 : 4;  // a live tree must not look dead under loss
    s.zero_copy = g() % 2 == 0;
    INFO("run " << run << ": world " << s.world << " trees " << s.trees << " elems " << s.elems << " Q "
                << s.q << " kill tree " << s.kill_tree << " at step " << s.kill_step << ", zero-copy send "
                << s.zero_copy);
    replayed_kept += run_scenario(seed, s);
  }
  // The hard case happened: workers re-sent contributions whose result they
  // already had, because others had not received it when the tree died.
  CHECK(replayed_kept > 0);
}

TEST_CASE("core: a tree that never answered is not failed over (a late worker looks the same)") {
  const uint64_t seed = seed_from_env();
  Setup setup;
  setup.backups = true;
  setup.adjust = [](Plan& p) {
    p.congestion.retry_budget = 10;
    p.congestion.failover_after = 2;
  };
  Rig c(seed, 2, 2, 8, 8, 4, Faults{}, setup);
  std::vector<std::vector<float>> bufs(2, std::vector<float>(8 * 20, 1.0f));
  c.kill(0);  // before anything was sent
  for (uint32_t w = 0; w < 2; ++w) c.worker(w).start(bufs[w].data(), bufs[w].size(), 0);
  for (int i = 0; i < 100000 && !(c.worker(0).failed() && c.worker(1).failed()); ++i) c.step();
  for (uint32_t w = 0; w < 2; ++w) {
    REQUIRE(c.worker(w).failed());
    CHECK_THAT(c.worker(w).failure(), Catch::Contains("tree 10") && Catch::Contains("retry_budget"));
    CHECK(c.worker(w).stats().failovers == 0);
  }
}
