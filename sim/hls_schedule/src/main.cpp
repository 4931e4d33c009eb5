// panama-hls-schedule: the HLS kernel's schedule model (schedule_model.hpp)
// over the RTL co-simulation's line-rate patterns: beats per clock per
// pattern, and how full each FIFO got. It models the schedule the kernel's
// pragmas declare, not what Vitis HLS produces (docs/hls.md).
//
//   panama-hls-schedule                       every pattern, the declared schedule
//   panama-hls-schedule --slot-state-ii 4     what if csynth missed II=2 there
//   panama-hls-schedule --depth-scale 3       every process pipeline 3x deeper
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "panama/hls_schedule/schedule_model.hpp"

using namespace panama::hls_schedule;

int main(int argc, char** argv) {
  CLI::App app{"The HLS kernel's schedule model over the RTL's line-rate patterns"};
  Params p;
  uint32_t depth_scale = 1;
  std::string only;
  app.add_option("--classify-ii", p.classify_ii, "Initiation interval of classify")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--slot-state-ii", p.slot_state_ii, "Initiation interval of slot_state")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--accumulate-ii", p.accumulate_ii, "Initiation interval of accumulate")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--add-loop", p.add_loop, "Beats after which a slot word's sum can be read again")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--depth-scale", depth_scale, "Multiply every process's pipeline depth")
      ->check(CLI::Range(1u, 16u));
  app.add_option("--pattern", only, "Only patterns whose name contains this");
  CLI11_PARSE(app, argc, argv);
  p.ingress_depth *= depth_scale;
  p.classify_depth *= depth_scale;
  p.slot_state_depth *= depth_scale;
  p.counters_depth *= depth_scale;
  p.accumulate_depth *= depth_scale;
  p.egress_depth *= depth_scale;

  std::printf("HLS kernel schedule model: the schedule the pragmas declare (not a csynth result)\n");
  std::printf(
      "II: ingress %u, classify %u, slot_state %u, counters %u, accumulate %u, egress %u; "
      "pipeline depths %u/%u/%u/%u/%u/%u clocks; slot read latency %u, add loop %u beats\n\n",
      p.ingress_ii, p.classify_ii, p.slot_state_ii, p.counters_ii, p.accumulate_ii, p.egress_ii,
      p.ingress_depth, p.classify_depth, p.slot_state_depth, p.counters_depth, p.accumulate_depth,
      p.egress_depth, panama::kernel::kSlotReadLatency, p.add_loop);
  std::printf("%-40s %6s %6s %8s %8s %8s %7s %9s %6s\n", "pattern", "beats", "frames", "accept", "sustain",
              "stalls", "emitted", "forwarded", "loop!");
  std::map<std::string, FifoStats> worst;
  auto run = [&](const Pattern& pat, bool rtl_pattern) {
    const Result r = simulate(pat, p);
    std::printf("%-40s %6u %6llu %8.3f %8.3f %8llu %7llu %9llu %6llu\n", pat.name.c_str(),
                frame_beats(pat.frame_bytes), static_cast<unsigned long long>(r.frames), r.accept_rate(),
                r.sustained_rate(), static_cast<unsigned long long>(r.stall_cycles),
                static_cast<unsigned long long>(r.emitted),
                static_cast<unsigned long long>(r.forwarded_reads),
                static_cast<unsigned long long>(r.loop_violations));
    if (!rtl_pattern) return;
    for (const FifoStats& f : r.fifos) {
      FifoStats& w = worst[f.name];
      w.name = f.name;
      w.depth = f.depth;
      w.max_occupancy = std::max(w.max_occupancy, f.max_occupancy);
      w.full_waits += f.full_waits;
    }
  };
  for (const Pattern& pat : line_rate_patterns()) {
    if (only.empty() || pat.name.find(only) != std::string::npos) run(pat, true);
  }
  std::printf("\nnot one of the RTL's patterns: one-beat frames (the slot_state II bounds them)\n");
  const Pattern small{"64 B pass-through (1 beat)", 64, 8, 4, false, 800, true};
  if (only.empty() || small.name.find(only) != std::string::npos) run(small, false);

  std::printf(
      "\naccept: input beats per clock while offered (1.000 = never held back); sustain: over the whole\n"
      "run, filling and draining included; loop!: slot-word reads closer than the add loop (must be 0)\n");
  std::printf("\nFIFO        depth  max held  producer waits (the RTL's patterns)\n");
  for (const auto& kv : worst) {
    std::printf("%-10s %6u %9u %15llu\n", kv.first.c_str(), kv.second.depth, kv.second.max_occupancy,
                static_cast<unsigned long long>(kv.second.full_waits));
  }
  return 0;
}
