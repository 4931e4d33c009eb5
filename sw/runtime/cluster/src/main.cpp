// panama-cluster: the virtual-cluster main job (docs/cluster.md).
//
// The same binary is every process of the cluster: started without the
// internal flags it is the parent (plans, starts, watches, summarises);
// --internal-pswitch and --internal-worker are its children.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstring>

#include "panama/cluster/cluster.hpp"
#include "panama/node_config.hpp"
#include "panama/pswitch/pswitch_process.hpp"

namespace {

std::atomic<bool> g_stop{false};
void on_term(int) {
  g_stop.store(true);
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = 0;
  return buf;
}

// argv of the children: fixed pairs "--flag value", written by orchestrator.cpp.
const char* arg_after(int argc, char** argv, const char* flag) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  }
  return nullptr;
}

int internal_main(int argc, char** argv) {
  if (std::strcmp(argv[1], "--internal-pswitch") == 0) {
    std::signal(SIGINT, SIG_IGN);  // the parent sends SIGTERM when it is time
    std::signal(SIGTERM, on_term);
    panama::pswitch::PswitchProcessOptions o;
    o.config_path = argv[2];
    if (const char* s = arg_after(argc, argv, "--internal-stats")) o.stats_path = s;
    o.extra_eal = {"--log-level=*:error"};
    if (const char* p = arg_after(argc, argv, "--internal-prefix")) o.file_prefix = p;
    return panama::pswitch::run_pswitch_process(o, g_stop);
  }
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
  app.add_option("--topology", o.topology, "single (one PSwitch) or two-tier (leaf-spine)")
      ->check(CLI::IsMember({"single", "two-tier"}))
      ->capture_default_str();
  app.add_option("--workers", o.workers, "workers per job")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--leaves", o.leaves, "leaf PSwitches (two-tier)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--spines", o.spines, "spine PSwitches (two-tier)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--trees", o.trees, "aggregation trees per job")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--jobs", o.jobs, "concurrent jobs sharing the PSwitches")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  app.add_option("--size", size, "bytes per allreduce (e.g. 64MiB, 100KB, 4); a multiple of 4")
      ->capture_default_str();
  app.add_option("--elems", elems, "fp32 elements per allreduce (instead of --size)");
  app.add_option("--iterations", o.iterations, "allreduces to run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--link-rate", o.link_gbps,
                 "emulated link rate in Gbit/s of every PSwitch port (0: unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--ecn-k", o.ecn_k_bytes, "ECN marking threshold K in bytes of queue (0: off)")
      ->capture_default_str();
  app.add_option("--queue", o.queue_bytes, "output queue capacity in bytes per port")
      ->check(CLI::Range(uint64_t{9216}, uint64_t{1} << 34))
      ->capture_default_str();
  app.add_option("--packet-memory", o.packet_memory, "slots per PSwitch engine")
      ->check(CLI::Range(1, 512))
      ->capture_default_str();
  app.add_option("--elems-per-packet", o.elems_per_packet, "fp32 elements per packet")
      ->check(CLI::Range(1, 2288))
      ->capture_default_str();
  app.add_option("--rto-min-us", o.rto_min_us, "workers' minimum retransmission timeout (microseconds)")
      ->check(CLI::Range(100, 1000000))
      ->capture_default_str();
  app.add_option("--shares", o.shares, "PSwitch memory shares: equal, or weighted (job j has weight j)")
      ->check(CLI::IsMember({"equal", "weighted"}))
      ->capture_default_str();
  app.add_option("--loss", o.loss, "probability a PSwitch drops a frame it sends")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--dup", o.dup, "probability a PSwitch sends a frame twice")->check(CLI::Range(0.0, 0.5));
  app.add_option("--reorder", o.reorder, "probability a PSwitch delays a frame behind the next")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--seed", o.seed, "seed of the data and of the fault injection")->capture_default_str();
  app.add_option("--run-dir", o.run_dir,
                 "directory for configs, plans, sockets, logs (default: a fresh /tmp dir)");
  app.add_flag("--keep", o.keep, "keep the run directory");
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
  CLI11_PARSE(app, argc, argv);

  o.ring_baseline = baseline == "ring";
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
  const std::string exe = self_exe();
  if (exe.empty()) {
    std::fprintf(stderr, "panama-cluster: cannot find its own executable (/proc/self/exe)\n");
    return 1;
  }
  return panama::cluster::run_cluster(o, exe);
}
