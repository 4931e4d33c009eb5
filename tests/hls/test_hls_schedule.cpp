// The HLS kernel's schedule model (sim/hls_schedule) on the RTL co-simulation's
// line-rate patterns: with the initiation intervals and FIFO depths the
// kernel's pragmas declare, 2-beat frames run at 0.95 beat per clock or more
// and frames of 4 beats or more at 1.0 (no input beat ever held back), every
// slot-word read is at least the adder's loop after the word's write, and
// no FIFO fills. The model checks the schedule written in the code, not
// what Vitis HLS produces (docs/hls.md, "Schedule model").
#include <catch2/catch.hpp>
#include <cstdio>

#include "panama/hls_schedule/schedule_model.hpp"

using namespace panama;
using namespace panama::hls_schedule;

namespace {

void check_line_rate(const Params& params, bool print) {
  for (const Pattern& p : line_rate_patterns()) {
    INFO(p.name);
    const Result r = simulate(p, params);
    const uint32_t beats = frame_beats(p.frame_bytes);
    if (print) {
      std::printf("%-40s %3u beats: %.3f beat/clk accepted, %.3f sustained, %llu stalls\n", p.name.c_str(),
                  beats, r.accept_rate(), r.sustained_rate(),
                  static_cast<unsigned long long>(r.stall_cycles));
    }
    CHECK(r.in_beats == static_cast<uint64_t>(beats) * p.frames);
    CHECK(r.emitted == p.frames / p.fan_in);
    CHECK(r.loop_violations == 0);
    if (beats >= 4) {
      CHECK(r.stall_cycles == 0);
      CHECK(r.accept_rate() == 1.0);
    } else {
      CHECK(r.accept_rate() >= 0.95);
    }
  }
}

}  // namespace

TEST_CASE("schedule model: the declared schedule carries the RTL's line-rate patterns", "[hls][schedule]") {
  const Params params;
  check_line_rate(params, true);
  for (const Pattern& p : line_rate_patterns()) {
    INFO(p.name);
    const Result r = simulate(p, params);
    CHECK(r.sustained_rate() >= 0.95);  // filling and draining included
    for (const FifoStats& f : r.fifos) {
      INFO("FIFO " << f.name);
      CHECK(f.full_waits == 0);
      CHECK(f.max_occupancy < f.depth);
    }
  }
}

TEST_CASE("schedule model: the rates do not depend on how deep each process's pipeline is",
          "[hls][schedule]") {
  // The pipeline depths are estimates (csynth decides them): four times
  // deeper everywhere, the FIFOs still cover them.
  Params deep;
  deep.ingress_depth *= 4;
  deep.classify_depth *= 4;
  deep.slot_state_depth *= 4;
  deep.counters_depth *= 4;
  deep.accumulate_depth *= 4;
  deep.egress_depth *= 4;
  check_line_rate(deep, false);
}

TEST_CASE("schedule model: it sees a schedule that cannot carry line rate", "[hls][schedule]") {
  const Pattern two_beats{"68 B, one slot", 68, 1, 64, true, 64 * 70};
  SECTION("slot_state at II=4: one 2-beat frame per 4 clocks") {
    Params p;
    p.slot_state_ii = 4;
    const Result r = simulate(two_beats, p);
    CHECK(r.accept_rate() < 0.55);
    CHECK(r.stall_cycles > 0);
  }
  SECTION("a three-beat add loop: 2-beat frames into one slot read a sum that is not there yet") {
    Params p;
    p.add_loop = 3;
    CHECK(simulate(two_beats, p).loop_violations > 0);
    CHECK(simulate(Pattern{"196 B, one slot", 196, 1, 64, true, 640}, p).loop_violations == 0);
  }
  SECTION("one-beat frames: one per slot_state initiation, half a beat per clock") {
    const Result r = simulate(Pattern{"64 B pass-through", 64, 8, 4, false, 800, true}, Params());
    CHECK(r.emitted == 800);
    CHECK(r.accept_rate() == Approx(0.5).epsilon(0.05));
  }
}
