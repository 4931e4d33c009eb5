// panama-bench-engine: throughput of the engine model (panama::DefaultEngine,
// the HLS C++ golden model that the software PSwitch and the tools run) in
// packets/s and ns/packet, for several payload sizes, element types (fp32,
// bf16, fp16) and numbers of active jobs. Every job has one root entry with
// fan-in 4; the workers' frames are interleaved across jobs and workers in a
// shuffled order within a window of sequences, as they arrive at a switch.
// The element types of one (size, jobs) pair are measured in alternating
// repetitions, and the 16-bit types' payload throughput is printed as a ratio
// to fp32's at the same payload size. Not a test: it prints figures.
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "panama/engine.hpp"
#include "panama/engine/apply_config.hpp"

namespace {

using panama::DefaultEngine;
namespace wire = panama::wire;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kFanIn = 4;

struct Options {
  double duration = 1.0;
  uint32_t reps = 3;
  std::vector<uint32_t> sizes = {256, 1024, 4096};
  std::vector<std::string> types = {"fp32", "bf16", "fp16"};
  std::vector<uint32_t> jobs = {1, 8};
  uint32_t window = 16;
  uint64_t seed = 1;
};

struct Row {
  uint32_t payload_bytes;
  std::string type;
  uint32_t jobs;
  uint32_t frame_bytes;
  std::vector<double> ns_per_packet;  // CPU time, one per repetition
  std::vector<double> wall_ns_per_packet;
};

// Counts what the engine sends so that nothing can be optimised away.
struct CountingSink final : panama::EmitTarget {
  uint64_t frames = 0;
  uint64_t bytes = 0;
  void emit(const uint8_t*, uint32_t len, panama::Ports) override {
    ++frames;
    bytes += len;
  }
};

panama::config::NodeConfig bench_config(uint32_t jobs) {
  panama::config::NodeConfig cfg;
  cfg.node = "bench";
  const uint32_t share = DefaultEngine::kPacketSlots / jobs;
  for (uint32_t j = 0; j < jobs; ++j) {
    panama::config::EntryConfig e;
    e.index = j;
    e.job = static_cast<uint16_t>(j + 1);
    e.root = true;
    e.fan_in = kFanIn;
    e.children = {0, 1, 2, 3};
    e.slot_base = j * share;
    e.slot_count = share;
    e.eth_src = {0x02, 0, 0, 0, 0, 0x10};
    e.eth_dst = {0x01, 0x00, 0x5E, 0, 0, static_cast<uint8_t>(j)};
    e.ip_src = 0x0A00000A;
    e.ip_dst = 0xEF000000u + j;
    e.udp_src = e.udp_dst = wire::kDefaultUdpPort;
    cfg.entries.push_back(e);
  }
  return cfg;
}

// One window's worth of contributions of every job, shuffled; the sequence
// number is patched in per round (offset `seq_in_window`).
struct Trace {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint32_t> seq_in_window;
  uint32_t window;
};

uint8_t type_code(const std::string& name) {
  return name == "bf16" ? 2 : name == "fp16" ? 3 : 1;
}

Trace make_trace(uint32_t payload_bytes, uint8_t elem_type, uint32_t jobs, uint32_t window,
                 std::mt19937_64& rng) {
  Trace t;
  t.window = window;
  const uint16_t elems = static_cast<uint16_t>(payload_bytes / wire::elem_bytes(elem_type));
  std::vector<uint32_t> payload(elems);
  std::vector<uint16_t> payload16(elems);
  for (uint32_t j = 0; j < jobs; ++j) {
    for (uint32_t s = 0; s < window; ++s) {
      for (uint32_t c = 0; c < kFanIn; ++c) {
        wire::Header h{};
        const uint8_t mac[6] = {0x02, 0, 0, static_cast<uint8_t>(j), 0, static_cast<uint8_t>(c)};
        std::copy(mac, mac + 6, h.eth_src);
        h.eth_dst[0] = 0x02;
        h.eth_dst[5] = 0x10;
        h.ecn = wire::kEcnEct0;
        h.ttl = 64;
        h.ip_src = 0x0A000000u | (j << 8) | c;
        h.ip_dst = 0x0A00000A;
        h.udp_src = h.udp_dst = wire::kDefaultUdpPort;
        h.version = wire::kVersion;
        h.type = static_cast<uint8_t>(wire::PacketType::kAggregateUp);
        h.job_id = static_cast<uint16_t>(j + 1);
        h.elem_type = elem_type;
        h.child_id = static_cast<uint16_t>(c);
        h.cwnd_cap = 0xFFFF;
        h.elem_count = elems;
        // Normal values of moderate magnitude, so the adder takes its common path.
        std::vector<uint8_t> f(wire::frame_length(elems, elem_type));
        if (elem_type == 1) {
          for (uint32_t& v : payload)
            v = (static_cast<uint32_t>(rng() & 1) << 31) | ((120 + rng() % 8) << 23) | (rng() & 0x7FFFFF);
          wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
        } else if (elem_type == 2) {  // bf16 of the same magnitudes
          for (uint16_t& v : payload16)
            v = static_cast<uint16_t>(((rng() & 1) << 15) | ((120 + rng() % 8) << 7) | (rng() & 0x7F));
          wire::build_frame16(f.data(), static_cast<uint32_t>(f.size()), h, payload16.data());
        } else {  // fp16 normals around 2^-7..2^0
          for (uint16_t& v : payload16)
            v = static_cast<uint16_t>(((rng() & 1) << 15) | ((8 + rng() % 8) << 10) | (rng() & 0x3FF));
          wire::build_frame16(f.data(), static_cast<uint32_t>(f.size()), h, payload16.data());
        }
        t.frames.push_back(std::move(f));
        t.seq_in_window.push_back(s);
      }
    }
  }
  // Shuffle the frames and their offsets together.
  for (size_t i = t.frames.size(); i > 1; --i) {
    const size_t k = rng() % i;
    std::swap(t.frames[i - 1], t.frames[k]);
    std::swap(t.seq_in_window[i - 1], t.seq_in_window[k]);
  }
  return t;
}

double thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct Sample {
  double cpu_ns_per_packet;   // this thread's CPU time: robust on a shared machine
  double wall_ns_per_packet;  // elapsed time: includes time the thread was not running
};

// Runs rounds of the trace for `duration` seconds of this thread's CPU time.
Sample measure(DefaultEngine& eng, Trace& t, uint32_t& round, double duration) {
  CountingSink sink;
  uint64_t frames = 0;
  const uint64_t emitted_before = eng.global_counter(panama::regmap::kGcEmitted);
  const auto wall_start = Clock::now();
  const double cpu_start = thread_cpu_ns();
  double cpu_now;
  do {
    const uint32_t base = round * t.window;
    for (size_t i = 0; i < t.frames.size(); ++i) {
      std::vector<uint8_t>& f = t.frames[i];
      wire::store_be32(f.data() + wire::kPanamaSeq, base + t.seq_in_window[i]);
      eng.process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
    }
    frames += t.frames.size();
    ++round;
    cpu_now = thread_cpu_ns();
  } while (cpu_now - cpu_start < duration * 1e9);
  const double wall_ns = std::chrono::duration<double, std::nano>(Clock::now() - wall_start).count();
  // Every slot must have completed: otherwise the figure measured drops.
  const uint64_t emitted = eng.global_counter(panama::regmap::kGcEmitted) - emitted_before;
  if (emitted != frames / kFanIn || sink.frames != emitted) {
    throw std::runtime_error(fmt::format("engine emitted {} aggregates for {} contributions (expected {})",
                                         emitted, frames, frames / kFanIn));
  }
  return Sample{(cpu_now - cpu_start) / static_cast<double>(frames), wall_ns / static_cast<double>(frames)};
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Measures the throughput of the PANAMA engine model (packets/s, ns/packet).",
               "panama-bench-engine"};
  app.add_option("--duration", opt.duration, "seconds per measurement")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  app.add_option("--reps", opt.reps, "repetitions per row (the median is reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--sizes", opt.sizes,
                 "payload sizes in bytes (multiples of 4, at most 9152; 16-bit types at most 4608, twice "
                 "the slot's 2304 elements)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--types", opt.types, "element types: fp32, bf16, fp16")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--jobs", opt.jobs, "numbers of active jobs (1..64)")->delimiter(',')->capture_default_str();
  app.add_option("--window", opt.window, "sequences per job in flight (frames are shuffled within it)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--seed", opt.seed, "random seed for payloads and arrival order")->capture_default_str();
  try {
    app.parse(argc, argv);
    for (uint32_t s : opt.sizes) {
      if (s == 0 || s % 4 != 0 || s / 4 > DefaultEngine::kSlotCapacity ||
          wire::frame_length(s / 4) > wire::kMaxFrameBytes) {
        throw CLI::ValidationError("--sizes", fmt::format("{} is not a multiple of 4 in 4..9152", s));
      }
    }
    for (uint32_t j : opt.jobs) {
      if (j == 0 || j > 64 || DefaultEngine::kPacketSlots / j < opt.window) {
        throw CLI::ValidationError(
            "--jobs", fmt::format("{} jobs: need 1..64 jobs with a slot share of at least --window", j));
      }
    }
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "panama-bench-engine: error: %s\n", e.what());
    return 2;
  }

#ifndef __OPTIMIZE__
  std::fprintf(stderr,
               "panama-bench-engine: warning: built without optimisation; figures are not representative\n");
#endif
  fmt::print("PANAMA engine model throughput (panama::DefaultEngine: {} entries, {} slots of {} elements)\n",
             DefaultEngine::kTableEntries, DefaultEngine::kPacketSlots, DefaultEngine::kSlotCapacity);
  fmt::print("machine: {} CPUs online, {}; build {}\n", ::sysconf(_SC_NPROCESSORS_ONLN), cpu_model(),
             PANAMA_BUILD_TYPE);
  fmt::print(
      "each job: one root entry, fan-in {}, window {} sequences, arrival shuffled across jobs and workers\n",
      kFanIn, opt.window);
  fmt::print("{} s of CPU time x {} repetitions per row, single thread; figures from the thread's CPU time\n",
             opt.duration, opt.reps);
  fmt::print(
      "(median; range = min..max over repetitions; wall/cpu > 1 means the thread waited for a CPU)\n\n");
  fmt::print("16-bit conversions: {}\n", panama::elem16_runs_use_hardware()
                                             ? "vector path (AVX2 + F16C)"
                                             : "integer path (no AVX2/F16C, or MXCSR not at its defaults)");
  fmt::print("{:>8} {:>5} {:>5} {:>8} {:>12} {:>10} {:>19} {:>10} {:>10} {:>9} {:>10}\n", "payload", "type",
             "jobs", "frame B", "packets/s", "ns/packet", "range ns/packet", "Gbit/s in", "Gbit/s out",
             "wall/cpu", "vs fp32");

  std::mt19937_64 rng(opt.seed);
  try {
    for (uint32_t size : opt.sizes) {
      for (uint32_t jobs : opt.jobs) {
        // One engine and trace per type, measured in alternating repetitions.
        std::vector<std::unique_ptr<DefaultEngine>> engines;
        std::vector<Trace> traces;
        std::vector<Row> rows;
        std::vector<uint32_t> rounds;
        for (const std::string& type : opt.types) {
          const uint8_t t = type_code(type);
          if (size / wire::elem_bytes(t) > DefaultEngine::kSlotCapacity) {
            fmt::print("{:>6} B {:>5} {:>5}  (skipped: {} elements exceed a slot's {})\n", size, type, jobs,
                       size / wire::elem_bytes(t), DefaultEngine::kSlotCapacity);
            continue;
          }
          engines.push_back(std::make_unique<DefaultEngine>());
          panama::EngineRegisters<DefaultEngine> regs(*engines.back());
          panama::config::apply_node_config(regs, bench_config(jobs));
          traces.push_back(make_trace(size, t, jobs, opt.window, rng));
          rows.push_back(Row{size, type, jobs, wire::frame_length(size / wire::elem_bytes(t), t), {}, {}});
          rounds.push_back(0);
          // Warm caches and the branch predictor.
          measure(*engines.back(), traces.back(), rounds.back(), std::min(0.1, opt.duration));
        }
        for (uint32_t r = 0; r < opt.reps; ++r) {
          for (size_t k = 0; k < rows.size(); ++k) {
            const Sample smp = measure(*engines[k], traces[k], rounds[k], opt.duration);
            rows[k].ns_per_packet.push_back(smp.cpu_ns_per_packet);
            rows[k].wall_ns_per_packet.push_back(smp.wall_ns_per_packet);
          }
        }
        double fp32_ns = 0;
        for (const Row& row : rows) {
          if (row.type == "fp32") fp32_ns = median(row.ns_per_packet);
        }
        for (const Row& row : rows) {
          const double ns = median(row.ns_per_packet);
          const auto [lo, hi] = std::minmax_element(row.ns_per_packet.begin(), row.ns_per_packet.end());
          const double pps = 1e9 / ns;
          // Input: every contribution frame; output: one aggregate per fan-in frames.
          const double gbit_in = pps * row.frame_bytes * 8 / 1e9;
          // Payload bytes per CPU second relative to fp32 at the same payload size.
          const std::string vs = fp32_ns > 0 ? fmt::format("{:.2f}", fp32_ns / ns) : "-";
          fmt::print(
              "{:>6} B {:>5} {:>5} {:>8} {:>12.0f} {:>10.1f} {:>19} {:>10.2f} {:>10.2f} {:>9.2f} {:>10}\n",
              size, row.type, jobs, row.frame_bytes, pps, ns, fmt::format("{:.1f}..{:.1f}", *lo, *hi),
              gbit_in, gbit_in / kFanIn, median(row.wall_ns_per_packet) / ns, vs);
        }
        std::fflush(stdout);
      }
    }
    fmt::print(
        "\nvs fp32: payload bytes per CPU second of the type / those of fp32 at the same payload size "
        "(a 16-bit frame of S bytes carries twice the elements of an fp32 frame of S bytes)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-bench-engine: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
