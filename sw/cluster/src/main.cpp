// panama-cluster: the virtual-cluster main job (docs/cluster.md).
//
// The same binary is every process of the cluster: started without the
// internal flags it is the parent (plans, starts, watches, summarises);
// --internal-pswitch and --internal-worker are its children.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstring>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/cluster_cli.hpp"
#include "panama/cluster/orchestration.hpp"
#include "panama/config/node_config.hpp"

namespace {

// argv of the children: fixed pairs "--flag value", written by orchestrator.cpp.
const char* arg_after(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  }
  return nullptr;
}

int internal_main(int argc, char** argv) {
  if (panama::cluster::is_pswitch_child(argc, argv)) return panama::cluster::run_pswitch_child(argc, argv);
  panama::cluster::WorkerOptions w;
  w.plan_path = argv[2];
  const char* vdev = arg_after(argc, argv, "--internal-vdev");
  const char* seed = arg_after(argc, argv, "--seed");
  const char* elems = arg_after(argc, argv, "--elems");
  const char* iters = arg_after(argc, argv, "--iterations");
  if (!vdev || !seed || !elems || !iters) {
    std::fprintf(stderr, "internal worker: missing arguments\n");
    return 2;
  }
  w.vdev = vdev;
  if (const char* idle = arg_after(argc, argv, "--internal-idle-us"))
    w.idle_sleep_us = static_cast<uint32_t>(std::strtoul(idle, nullptr, 10));
  if (const char* spin = arg_after(argc, argv, "--internal-idle-spin-us"))
    w.idle_spin_us = static_cast<uint32_t>(std::strtoul(spin, nullptr, 10));
  if (const char* sc = arg_after(argc, argv, "--internal-streaming"))
    w.streaming_copy_bytes = static_cast<size_t>(std::strtoull(sc, nullptr, 10));
  if (const char* ch = arg_after(argc, argv, "--ring-channels"))
    w.ring_channels = static_cast<uint32_t>(std::strtoul(ch, nullptr, 10));
  if (const char* v2 = arg_after(argc, argv, "--internal-vdev2")) w.vdev2 = v2;
  if (const char* left = arg_after(argc, argv, "--ring-left")) {
    const char* right = arg_after(argc, argv, "--ring-right");
    panama::config::MacAddress l{}, r{};
    if (!right || !panama::config::parse_mac(left, l) || !panama::config::parse_mac(right, r)) {
      std::fprintf(stderr, "internal worker: bad ring peers\n");
      return 2;
    }
    if (const char* p = arg_after(argc, argv, "--internal-prefix")) w.file_prefix = p;
    w.seed = std::strtoull(seed, nullptr, 10);
    w.elems = std::strtoull(elems, nullptr, 10);
    w.iterations = static_cast<uint32_t>(std::strtoul(iters, nullptr, 10));
    return panama::cluster::run_ring_worker(w, panama::cluster::RingPeers{l, r});
  }
  if (const char* p = arg_after(argc, argv, "--internal-prefix")) w.file_prefix = p;
  w.seed = std::strtoull(seed, nullptr, 10);
  w.elems = std::strtoull(elems, nullptr, 10);
  w.iterations = static_cast<uint32_t>(std::strtoul(iters, nullptr, 10));
  return panama::cluster::run_worker(w);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 &&
      (std::strcmp(argv[1], "--internal-pswitch") == 0 || std::strcmp(argv[1], "--internal-worker") == 0)) {
    return internal_main(argc, argv);
  }
  panama::cluster::ClusterOptions o;
  std::string size = "64MiB";
  uint64_t elems = 0;
  CLI::App app{
      "panama-cluster: a PANAMA cluster on this machine (software PSwitches and DPDK workers as processes "
      "linked by memif); runs allreduces and checks every result bit for bit"};
  panama::cluster::add_cluster_options(app, o);
  app.add_option("--size", size, "bytes per allreduce (e.g. 64MiB, 100KB, 4); a multiple of 4")
      ->capture_default_str();
  app.add_option("--elems", elems, "fp32 elements per allreduce (instead of --size)");
  app.add_option("--iterations", o.iterations, "allreduces to run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the data and of the fault injection")->capture_default_str();
  app.add_option("--stall-timeout", o.stall_timeout_s, "abort after this many seconds without progress")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--summary-json", o.summary_path, "write the summary as JSON to this file");
  app.add_flag("!--no-progress", o.progress, "no progress line on stderr");
  std::string baseline = "none";
  app.add_option("--baseline", baseline,
                 "ring: run a host ring allreduce over the same links instead (for comparison)")
      ->check(CLI::IsMember({"none", "ring"}))
      ->capture_default_str();
  app.add_option("--idle-sleep-us", o.idle_sleep_us,
                 "idle back-off of every polling loop: sleep up to this many microseconds when a poll "
                 "finds nothing (0: busy-poll, for a core per process)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--idle-spin-us", o.idle_spin_us,
                 "before backing off, every polling loop keeps polling until idle this many microseconds "
                 "(-1: " +
                     std::to_string(panama::cluster::kThreadsIdleSpinUs) +
                     " with --nodes threads, PANAMA or ring, whose loops hand frames to each other in one "
                     "process; 0 with processes, where more loops than CPUs poll)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1000000}))
      ->capture_default_str();
  app.add_option("--streaming-copy-bytes", o.streaming_copy_bytes,
                 "workers copy payloads of allreduces at least this large with streaming stores "
                 "(0: never; docs/runtime.md)")
      ->capture_default_str();
  app.add_option("--zero-copy-send", o.zero_copy_send,
                 "with --nodes threads, workers send payloads from their buffers instead of copying "
                 "them into frames (true/false; docs/runtime.md)")
      ->capture_default_str();
  std::string nodes = "processes";
  app.add_option(
         "--nodes", nodes,
         "processes: one process per node, links memif; threads: every node a thread of this process, "
         "links net_ring pairs (no memif copies, no process switches); the last one given counts")
      ->check(CLI::IsMember({"processes", "threads"}))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  app.add_option("--ring-channels", o.ring_channels,
                 "--baseline ring: independent rings, each over its share of the data")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--fail-switch", o.fail_switch,
                 "stop this PSwitch mid-run (failure injection; see --fail-signal, --fail-at)");
  app.add_option("--fail-signal", o.fail_signal, "STOP (freeze the process) or KILL")
      ->check(CLI::IsMember({"STOP", "KILL"}))
      ->capture_default_str();
  app.add_option("--fail-at", o.fail_at, "fraction of the run's bytes done when --fail-switch is stopped")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  o.ring_baseline = baseline == "ring";
  o.in_process = nodes == "threads";
  if (elems > 0) {
    o.elems = elems;
  } else {
    uint64_t bytes = 0;
    try {
      bytes = panama::cluster::parse_size(size);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "panama-cluster: --size: %s\n", e.what());
      return 2;
    }
    if (bytes == 0 || bytes % 4 != 0) {
      std::fprintf(stderr, "panama-cluster: --size must be a positive multiple of 4 bytes (fp32), got %llu\n",
                   static_cast<unsigned long long>(bytes));
      return 2;
    }
    o.elems = bytes / 4;
  }
  // Refuse what cannot fit instead of dying of std::bad_alloc in every worker.
  const uint64_t need = panama::cluster::worker_memory_bytes(o.elems, o.workers, o.jobs);
  const uint64_t avail = panama::cluster::mem_available_bytes();
  if (avail > 0 && need > avail) {
    std::fprintf(
        stderr,
        "panama-cluster: %.1f GiB per allreduce need about %.1f GiB in the workers (%u workers x %u "
        "job(s), data and reference copy each); this machine has %.1f GiB available (MemAvailable)\n",
        static_cast<double>(o.elems) * 4.0 / (1u << 30), static_cast<double>(need) / (1u << 30), o.workers,
        o.jobs, static_cast<double>(avail) / (1u << 30));
    return 2;
  }
  const std::string exe = panama::cluster::self_exe();
  if (exe.empty()) {
    std::fprintf(stderr, "panama-cluster: cannot find its own executable (/proc/self/exe)\n");
    return 1;
  }
  if (o.in_process) return panama::cluster::run_cluster_in_process(o);
  return panama::cluster::run_cluster(o, exe);
}
