// What the PyTorch backend needs from the protocol core (docs/pytorch.md):
// a new communicator of a job continues the sequences where the previous one
// stopped (the engines' slots remember them), and a caller that knows a peer
// is late can defer the retry budget's failure up to its own deadline.
#include <catch2/catch.hpp>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core_rig.hpp"
#include "panama/runtime/allreduce_core.hpp"

using namespace panama;
using namespace panama::runtime;
using namespace panama::test::core;

namespace {

// Polls and echoes every frame as its own result until nothing is pending;
// returns the (tree, sequence) of every first transmission.
std::vector<std::pair<uint8_t, uint32_t>> run_echo(AllreduceCore& core) {
  std::vector<std::pair<uint8_t, uint32_t>> sent;
  for (int round = 0; round < 200 && core.pending_ops() > 0; ++round) {
    VectorFrameOut out;
    core.poll(1000, out);
    for (Frame& f : out.frames) {
      sent.emplace_back(f[wire::kPanamaTreeId], wire::load_be32(f.data() + wire::kPanamaSeq));
      f[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
      REQUIRE(core.on_frame(f.data(), static_cast<uint32_t>(f.size()), 1000));
    }
  }
  return sent;
}

}  // namespace

TEST_CASE("core: a new communicator continues the sequences of the job where the previous one stopped") {
  const Plan p = make_plan(1, 4, 2, 5, 100);
  std::vector<float> a(47, 1.0f);  // 10 chunks: 5 per tree
  AllreduceCore first(p);
  first.start(a.data(), a.size(), 0);
  CHECK_THROWS_AS(first.next_sequences(), std::logic_error);  // unfinished
  run_echo(first);
  REQUIRE(first.pending_ops() == 0);
  const std::vector<uint32_t> next = first.next_sequences();
  REQUIRE(next == std::vector<uint32_t>{5, 5});

  AllreduceCore second(p);
  CHECK_THROWS_AS(second.continue_sequences({1}), std::invalid_argument);
  second.continue_sequences(next);
  std::vector<float> b(12, 2.0f);  // 3 chunks: trees 10, 11, 10
  second.start(b.data(), b.size(), 0);
  const auto sent = run_echo(second);
  REQUIRE(sent.size() == 3);
  for (const auto& [tree, seq] : sent) CHECK(seq >= 5);
  CHECK(second.next_sequences() == std::vector<uint32_t>{7, 6});
  CHECK(second.stats().trees[0].next_seq == 7);
  CHECK_THROWS_AS(second.continue_sequences(next), std::logic_error);  // after a start
}

TEST_CASE("core: a failed communicator has no sequences to continue from") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  AllreduceCore core(p);
  core.abort("gone");
  CHECK_THROWS_AS(core.next_sequences(), std::logic_error);
}

TEST_CASE("core: deferring failure keeps retransmitting past the retry budget until the caller's deadline") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.retry_budget = 3;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 400;
  AllreduceCore core(p);
  const uint64_t deadline = 20'000'000;  // 20 ms of core time, far beyond 3 x 400 us
  core.defer_failure_until(deadline);
  CHECK(core.failure_deferred_until() == deadline);
  std::vector<float> a(4, 1.0f);
  const OpId id = core.start(a.data(), a.size(), 0);
  uint64_t now = 0, retransmissions = 0, last_before = 0;
  for (int i = 0; i < 1000 && !core.failed(); ++i) {
    VectorFrameOut out;
    core.poll(now, out);
    for (auto& f : out.frames) retransmissions += f[wire::kPanamaType] == 3;
    if (core.failed()) break;
    if (now < deadline) last_before = now;
    now = core.next_timer_ns();
    REQUIRE(now != UINT64_MAX);
  }
  REQUIRE(core.failed());
  CHECK(core.status(id) == OpStatus::kFailed);
  CHECK_THAT(core.op_error(id), Catch::Contains("retry_budget"));
  // Not before the deadline; retransmitted at rto_max all along.
  CHECK(now >= deadline);
  CHECK(last_before < deadline);
  CHECK(retransmissions >= deadline / 400'000 - 2);
}

TEST_CASE("core: ending the deferral lets the retry budget fail the job at the next timeout") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.retry_budget = 2;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 200;
  AllreduceCore core(p);
  core.defer_failure_until(UINT64_MAX);
  std::vector<float> a(4, 1.0f);
  core.start(a.data(), a.size(), 0);
  uint64_t now = 0;
  for (int i = 0; i < 50; ++i) {
    VectorFrameOut out;
    core.poll(now, out);
    now = core.next_timer_ns();
  }
  REQUIRE_FALSE(core.failed());  // 50 timeouts, far past the budget, deferred
  core.defer_failure_until(0);
  VectorFrameOut out;
  core.poll(now, out);
  CHECK(core.failed());
}

TEST_CASE("core: the skew allowance holds back retransmissions while the tree is silent") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 400;
  AllreduceCore core(p);
  core.set_skew_allowance_ns(5'000'000);  // 5 ms; the RTO is 100 us
  std::vector<float> a(16, 1.0f);         // 4 chunks, all sent at once (initial cwnd 4)
  core.start(a.data(), a.size(), 0);
  std::vector<Frame> first;
  {
    VectorFrameOut out;
    core.poll(0, out);
    REQUIRE(out.frames.size() == 4);
    first = out.frames;
  }
  // Before any result: nothing is retransmitted for 5 ms, however often the timer is looked at.
  uint64_t now = 0;
  for (int i = 0; i < 20; ++i) {
    now = core.next_timer_ns();
    REQUIRE(now != UINT64_MAX);
    if (now >= 5'000'000) break;
    VectorFrameOut out;
    core.poll(now, out);
    CHECK(out.frames.empty());
  }
  CHECK(now == 5'000'000);
  CHECK(core.stats().timeouts == 0);
  // A result for chunk 0 at 4 ms: the silence ends, the others' timers
  // restart from it (4.1 ms); with nothing after it, the tree is silent again
  // at 4.1 ms, so they wait for the rest of the allowance (5 ms), and then
  // only the oldest unacknowledged chunk (sequence 1) probes the tree.
  Frame r = first[0];
  r[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
  REQUIRE(core.on_frame(r.data(), static_cast<uint32_t>(r.size()), 4'000'000));
  CHECK(core.next_timer_ns() == 4'100'000);
  {
    VectorFrameOut out;
    core.poll(4'100'000, out);
    CHECK(out.frames.empty());
  }
  CHECK(core.next_timer_ns() == 5'000'000);
  VectorFrameOut out;
  core.poll(5'000'000, out);
  REQUIRE(out.frames.size() == 1);
  CHECK(wire::load_be32(out.frames[0].data() + wire::kPanamaSeq) == 1);
  CHECK(core.stats().retransmissions == 1);
  // The round trip of chunk 0 measured the late worker, not the path: no RTT sample.
  CHECK(core.stats().trees[0].srtt_us == 0);
}

TEST_CASE("core: without a result, the skew allowance ends in an ordinary retransmission") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  AllreduceCore core(p);
  core.set_skew_allowance_ns(1'000'000);
  std::vector<float> a(4, 1.0f);
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  REQUIRE(out.frames.size() == 1);
  VectorFrameOut later;
  core.poll(1'000'000, later);
  REQUIRE(later.frames.size() == 1);
  CHECK(later.frames[0][wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kRetransmission));
}

TEST_CASE("core: in a silence past the skew allowance only the oldest chunk probes the tree") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 1000;
  AllreduceCore core(p);
  core.set_skew_allowance_ns(1'000'000);
  std::vector<float> a(16, 1.0f);  // 4 chunks
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  REQUIRE(out.frames.size() == 4);
  uint64_t now = 0;
  std::vector<uint32_t> probed;
  for (int i = 0; i < 12; ++i) {
    now = core.next_timer_ns();
    VectorFrameOut o;
    core.poll(now, o);
    for (const Frame& f : o.frames) probed.push_back(wire::load_be32(f.data() + wire::kPanamaSeq));
  }
  REQUIRE(!probed.empty());
  for (uint32_t s : probed) CHECK(s == 0);  // always the oldest, never the window
  CHECK(core.stats().timeouts == probed.size());
}

TEST_CASE("core: without the skew allowance every expired chunk is retransmitted, as before") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  AllreduceCore core(p);
  std::vector<float> a(16, 1.0f);
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  VectorFrameOut later;
  core.poll(100'000, later);
  CHECK(later.frames.size() == 4);
}

TEST_CASE(
    "core: with results flowing, a chunk without result is retransmitted after its RTO, not the allowance") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  AllreduceCore core(p);
  core.set_skew_allowance_ns(5'000'000);
  std::vector<float> a(16, 1.0f);  // 4 chunks
  core.start(a.data(), a.size(), 0);
  VectorFrameOut first;
  core.poll(0, first);
  REQUIRE(first.frames.size() == 4);
  // The late worker arrives at 4 ms: results for chunks 0 and 1 (2 and 3 are lost).
  for (int i = 0; i < 2; ++i) {
    Frame r = first.frames[static_cast<size_t>(i)];
    r[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
    REQUIRE(core.on_frame(r.data(), static_cast<uint32_t>(r.size()),
                          4'000'000 + 50'000 * static_cast<uint64_t>(i)));
  }
  VectorFrameOut out;
  core.poll(4'100'000, out);  // an RTO after the restart, the tree not silent
  CHECK(out.frames.size() == 2);
  CHECK(core.stats().retransmissions == 2);
}
