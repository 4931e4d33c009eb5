// panama_cosim: runs the RTL engine against the HLS model.
//   panama_cosim [--seed S --seeds N --frames M --gap P --stall P]   regression over seeds
//                [--mac-source]                                      the input never waits (a MAC)
//   panama_cosim --hours H                                           soak: new seeds until time is up
//   panama_cosim --pcap FILE                                         recorded traffic
//   panama_cosim --bench                                             line-rate figures per frame size
// Every run prints its cycle figures; a failure prints the seed and writes
// the failing traffic as a pcap (see docs/cosim.md).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "panama/cosim/cosim.hpp"
#include "panama/pcap/pcap_file.hpp"

using namespace panama::cosim;

namespace {

void print_stats(const char* label, const CompareResult& r) {
  const CycleStats& s = r.stats;
  const LatencySummary l = summarize(s.latencies);
  std::printf(
      "%s: frames %zu emitted %zu | cycles %llu, in beats %llu / offered cycles %llu = %.3f beat/clk | "
      "latency min/median/max %u/%u/%u clk | in stalls %llu | engine input stalls %llu (input FIFO %llu, "
      "descriptor FIFO %llu, other %llu) | receive FIFO drops: overflow %llu, MAC error %llu | "
      "out back-pressure %llu\n",
      label, r.frames, r.emitted, static_cast<unsigned long long>(s.cycles),
      static_cast<unsigned long long>(s.in_beats), static_cast<unsigned long long>(s.in_offered_cycles),
      s.beats_per_offered_cycle(), l.min, l.median, l.max, static_cast<unsigned long long>(s.in_stall_cycles),
      static_cast<unsigned long long>(s.engine_stall_cycles),
      static_cast<unsigned long long>(s.stall_in_fifo), static_cast<unsigned long long>(s.stall_desc_fifo),
      static_cast<unsigned long long>(s.stall_other), static_cast<unsigned long long>(s.rx_drop_overflow),
      static_cast<unsigned long long>(s.rx_drop_bad),
      static_cast<unsigned long long>(s.out_backpressure_cycles));
  std::fflush(stdout);
}

int report_failure(const Scenario& sc, const CompareResult& r, const std::string& dir) {
  std::printf("FAIL %s\n", r.message.c_str());
  const std::string path = dir + "/cosim-fail-seed-" + std::to_string(sc.seed) + ".pcap";
  try {
    panama::pcapio::write_frames(path, all_frames(sc));
    std::printf("failing traffic written to %s (replay: panama_cosim --seed %llu --seeds 1, or --pcap %s)\n",
                path.c_str(), static_cast<unsigned long long>(sc.seed), path.c_str());
  } catch (const panama::pcapio::PcapError& e) {
    std::printf("could not write the failing traffic: %s\n", e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PANAMA RTL co-simulation against the HLS model"};
  uint64_t seed = 1;
  uint32_t seeds = 4;
  TrafficOptions opt;
  double gap = 0.2, stall = 0.2, hours = 0.0;
  std::string pcap, fail_dir = ".";
  bool bench = false, mac_source = false;
  uint32_t bench_frames = 2000;
  app.add_option("--seed", seed, "First seed");
  app.add_option("--seeds", seeds, "Number of seeds (seed, seed+1, ...)")->check(CLI::Range(1u, 1000000000u));
  app.add_option("--frames", opt.frames, "Frames per seed")->check(CLI::Range(1u, 100000000u));
  app.add_option("--max-elems", opt.max_elems, "Usual largest element count")->check(CLI::Range(1u, 2288u));
  app.add_option("--gap", gap, "Probability of a tvalid gap before a beat")->check(CLI::Range(0.0, 0.99));
  app.add_option("--stall", stall, "Probability of tready low at the output")->check(CLI::Range(0.0, 0.99));
  app.add_option("--hours", hours, "Soak: run new seeds until this many hours have passed")
      ->check(CLI::Range(0.0, 1000.0));
  app.add_option("--pcap", pcap, "Run the frames of this pcap (Ethernet) file")->check(CLI::ExistingFile);
  app.add_option("--fail-dir", fail_dir, "Where failing traffic is written as pcap")
      ->check(CLI::ExistingDirectory);
  app.add_flag(
      "--mac-source", mac_source,
      "The input never waits for room in the receive FIFO (a MAC): frames that do not fit are dropped "
      "(DROP_RX_OVERFLOW) and the model is told");
  app.add_flag("--bench", bench, "Line-rate benchmark: full offered load, no back-pressure, per frame size");
  app.add_option("--bench-frames", bench_frames, "Frames per size in the benchmark")
      ->check(CLI::Range(8u, 10000000u));
  CLI11_PARSE(app, argc, argv);

  try {
    RtlEngine rtl;
    if (bench) {
      std::printf(
          "line-rate benchmark: %u frames per size, 8 jobs x 4 children, from a MAC source (never waits), no "
          "gaps, no back-pressure\n",
          bench_frames);
      int rc = 0;
      for (uint32_t bytes : {68u, 128u, 256u, 512u, 1024u, 1500u, 4096u, 9000u}) {
        const Scenario sc = line_rate_scenario(bytes, 8, bench_frames);
        const CompareResult r = compare(sc, rtl, StreamShaping{0.0, 0.0, 1, true});
        const std::string label = std::to_string(bytes) + " B";
        print_stats(label.c_str(), r);
        if (!r.ok) rc = report_failure(sc, r, fail_dir);
      }
      // bf16 and fp16: the same sizes up to the largest frame a slot takes
      // (SLOT_ELEMS elements of 2 bytes).
      const uint32_t max16 = 64 + 2 * RtlEngine::kSlotWords * 16;
      for (const uint8_t type : {uint8_t{2}, uint8_t{3}}) {
        const char* tname = type == 2 ? "bf16" : "fp16";
        std::printf("\n%s frames, 8 jobs x 4 children (same-slot runs, then interleaved):\n", tname);
        for (bool same_slot : {true, false}) {
          for (uint32_t bytes : {68u, 128u, 256u, 512u, 1024u, 1500u, 4096u, max16}) {
            if (bytes > max16) continue;
            const Scenario sc = line_rate_scenario(bytes, 8, bench_frames, 4, same_slot, type);
            const CompareResult r = compare(sc, rtl, StreamShaping{0.0, 0.0, 1, true});
            const std::string label =
                std::string(tname) + " " + std::to_string(bytes) + " B" + (same_slot ? "" : " interleaved");
            print_stats(label.c_str(), r);
            if (!r.ok) rc = report_failure(sc, r, fail_dir);
          }
        }
      }
      std::printf("\nframes to different slots (8 jobs interleaved):\n");
      for (uint32_t bytes : {68u, 128u, 256u}) {
        const Scenario sc = line_rate_scenario(bytes, 8, bench_frames, 4, false);
        const CompareResult r = compare(sc, rtl, StreamShaping{0.0, 0.0, 1, true});
        const std::string label = std::to_string(bytes) + " B interleaved";
        print_stats(label.c_str(), r);
        if (!r.ok) rc = report_failure(sc, r, fail_dir);
      }
      // The worst case: every frame adds into the same slot words (one job
      // of fan-in 64). Sustained rate over the whole run, and the Ethernet
      // wire rate it equals: a frame of L bytes (without FCS) takes
      // L + 4 (FCS) + 8 (preamble) + 12 (gap) bytes on the wire.
      std::printf("\nall frames to one slot (1 job, fan-in 64), sustained over the run:\n");
      for (uint32_t bytes : {68u, 128u, 256u, 512u}) {
        const Scenario sc = line_rate_scenario(bytes, 1, std::max<uint32_t>(bench_frames, 64), 64, true);
        const CompareResult r = compare(sc, rtl, StreamShaping{0.0, 0.0, 1, true});
        const double frames_per_clk = static_cast<double>(r.frames) / static_cast<double>(r.stats.cycles);
        std::printf(
            "%u B one slot: %.3f beat/clk, %.4f frame/clk = %.1f Gbit/s wire-equivalent at 322.27 MHz, "
            "%.1f at 300 MHz%s\n",
            bytes, static_cast<double>(r.stats.in_beats) / static_cast<double>(r.stats.cycles),
            frames_per_clk, frames_per_clk * (bytes + 24) * 8 * 322.265625e6 / 1e9,
            frames_per_clk * (bytes + 24) * 8 * 300e6 / 1e9, r.ok ? "" : " (MISMATCH)");
        if (!r.ok) rc = report_failure(sc, r, fail_dir);
      }
      return rc;
    }
    if (!pcap.empty()) {
      std::vector<Frame> frames;
      try {
        frames = panama::pcapio::read_frames(pcap);
      } catch (const panama::pcapio::PcapError& e) {
        std::fprintf(stderr, "panama_cosim: %s\n", e.what());
        return 2;
      }
      const Scenario sc = scenario_from_frames(frames);
      const CompareResult r = compare(sc, rtl, StreamShaping{gap, stall, seed, mac_source});
      print_stats(pcap.c_str(), r);
      if (!r.ok) return report_failure(sc, r, fail_dir);
      std::printf("PASS %s\n", pcap.c_str());
      return 0;
    }
    const auto start = std::chrono::steady_clock::now();
    uint64_t passed = 0;
    for (uint64_t s = seed;; ++s) {
      if (hours > 0.0) {
        const double h =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 3600.0;
        if (h >= hours) break;
      } else if (s - seed >= seeds) {
        break;
      }
      const Scenario sc = random_scenario(s, opt);
      const CompareResult r = compare(sc, rtl, StreamShaping{gap, stall, s, mac_source});
      const std::string label = "seed " + std::to_string(s);
      print_stats(label.c_str(), r);
      if (!r.ok) return report_failure(sc, r, fail_dir);
      ++passed;
    }
    std::printf("PASS %llu seeds\n", static_cast<unsigned long long>(passed));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama_cosim: %s\n", e.what());
    return 2;
  }
}
