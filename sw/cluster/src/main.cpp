// panama-cluster: the virtual-cluster main job (docs/cluster.md).
//
// The same binary is every process of a cluster run: started with options
// it is the parent (ClusterRun: plans, starts, supervises, summarises);
// `panama-cluster --node <run_dir>/nodes/<name>.json`, the one entry point
// of its children, runs one PSwitch or worker from its node-spec file
// (node_spec.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/cluster_cli.hpp"
#include "panama/cluster/node_spec.hpp"
#include "panama/cluster/test_data.hpp"

namespace {

using panama::cluster::ClusterOptions;

// Options that do not apply to the run's mode: the first one given, with
// why; "" when all of them apply.
std::string option_not_for_mode(const CLI::App& app, const ClusterOptions& o) {
  auto given = [&](const char* name) { return app.count(name) > 0; };
  if (!o.in_process && given("--zero-copy-send"))
    return std::string("--zero-copy-send applies to --nodes threads (net_ring links) only, not to --nodes ") +
           (o.netns ? "netns (af_packet copies every frame anyway)"
                    : "processes (memif copies every frame anyway)");
  if (!o.netns) {
    for (const char* name : {"--pmd", "--link-delay", "--link-ecn"}) {
      if (given(name)) return std::string(name) + " applies to --nodes netns only (veth links shaped by tc)";
    }
    if (o.gloo_baseline)
      return "--baseline gloo applies to --nodes netns only (Gloo ranks talk TCP over the namespaces' veths)";
    if (o.fail_signal == "DOWN")
      return "--fail-switch NAME:DOWN applies to --nodes netns only (it takes the PSwitch's veths down)";
  }
  if (o.gloo_baseline) {
    if (o.dtype != panama::wire::ElemType::kFloat32)
      return std::string("--dtype ") + panama::cluster::dtype_name(o.dtype) +
             " applies to in-network aggregation only, not to --baseline gloo (the Gloo runs are fp32)";
    if (o.jobs != 1) return "--baseline gloo runs one job (--jobs 1)";
    for (const char* name :
         {"--trees", "--backup-trees", "--failover-after", "--packet-memory", "--shares", "--rto-min-us",
          "--retry-budget", "--zero-copy-send", "--streaming-copy-bytes", "--fail-switch", "--ring-channels",
          "--faults", "--elems-per-packet", "--poll", "--pool"}) {
      if (given(name)) return std::string(name) + " does not apply to --baseline gloo (no PSwitch, no DPDK)";
    }
    return {};
  }
  if (!o.ring_baseline && given("--ring-channels")) return "--ring-channels applies to --baseline ring only";
  if (o.ring_baseline && o.dtype != panama::wire::ElemType::kFloat32)
    return std::string("--dtype ") + panama::cluster::dtype_name(o.dtype) +
           " applies to in-network aggregation only, not to --baseline ring (the ring baseline sums fp32)";
  if (o.ring_baseline) {
    // The ring baseline has no trees, engine slots or PANAMA protocol.
    for (const char* name :
         {"--trees", "--backup-trees", "--failover-after", "--packet-memory", "--shares", "--rto-min-us",
          "--retry-budget", "--zero-copy-send", "--streaming-copy-bytes", "--fail-switch", "--pool"}) {
      if (given(name))
        return std::string(name) + " applies to in-network aggregation only, not to --baseline ring";
    }
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (panama::cluster::is_node_child(argc, argv)) return panama::cluster::run_node_child(argc, argv);
  namespace pc = panama::cluster;
  ClusterOptions o;
  CLI::App app{
      "panama-cluster: a PANAMA cluster on this machine (software PSwitches and DPDK workers, a process per "
      "node over memif, a thread per node over net_ring, or a process per node in its own network "
      "namespace over veth pairs); runs allreduces and checks every result bit for bit. docs/cluster.md"};
  app.footer(
      "Exit status: 0 every result bit-exact, 1 a mismatch or failure, 2 bad options or set-up, 130 "
      "interrupted.");
  pc::add_cluster_options(app, o);
  // Traffic
  uint64_t size_bytes = 64u << 20;  // turned into elements once --dtype is known
  pc::add_parsed_option(
      app, "--size",
      [&size_bytes](const std::string& v) {
        size_bytes = pc::parse_size(v);
        if (size_bytes == 0) throw std::invalid_argument("must be a positive number of bytes");
      },
      "bytes per allreduce, a multiple of the element size (4 for fp32, 2 for bf16 and fp16): 64MiB, 100KB, "
      "400012 (100003 fp32 elements)",
      "64MiB")
      ->group(pc::kTrafficGroup);
  std::string dtype = "fp32";
  app.add_option(
         "--dtype", dtype,
         "element type of the allreduces: fp32, or bf16 / fp16 (summed in fp32 by the engines, rounded "
         "once per sum; half the bytes of fp32 for the same elements)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->capture_default_str()
      ->group(pc::kTrafficGroup);
  app.add_option("--iterations", o.iterations, "allreduces to run")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str()
      ->group(pc::kTrafficGroup);
  app.add_option("--seed", o.seed, "seed of the data and of the fault injection")
      ->capture_default_str()
      ->group(pc::kTrafficGroup);
  // Links and faults
  pc::add_parsed_option(
      app, "--fail-switch", [&o](const std::string& v) { pc::parse_fail_switch(v, o); },
      "failure injection: NAME[:STOP|KILL][@FRACTION] stops this PSwitch once FRACTION (0.3) of the run's "
      "bytes are done; STOP (default) freezes it, KILL ends it for good (any --nodes), DOWN takes its links "
      "down and leaves it running (--nodes netns)",
      "")
      ->group(pc::kLinksGroup);
  // Run
  std::string nodes = "processes";
  app.add_option(
         "--nodes", nodes,
         "processes: a process per node, links memif; threads: every node a thread of this process, links "
         "net_ring pairs (what scripts/demo.sh runs); netns: a process per node in its own network "
         "namespace, links veth pairs shaped by tc, ports net_af_packet (root); the last one given counts")
      ->check(CLI::IsMember({"processes", "threads", "netns"}))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str()
      ->group(pc::kRunGroup);
  std::string baseline = "none";
  app.add_option("--baseline", baseline,
                 "ring: a host ring allreduce over the same links instead of in-network aggregation; gloo "
                 "(--nodes netns): Gloo through torch.distributed over the same veths, a Linux bridge in "
                 "each PSwitch's place")
      ->check(CLI::IsMember({"none", "ring", "gloo"}))
      ->capture_default_str()
      ->group(pc::kRunGroup);
  app.add_option("--summary-json", o.summary_path, "also write the summary as JSON to this file")
      ->group(pc::kRunGroup);
  bool cleanup = false;
  app.add_flag("--cleanup", cleanup,
               "remove what --nodes netns runs whose launcher is gone left behind (network namespaces "
               "pnm<pid>-*, their veths and processes, DPDK runtime folders), say what, and exit")
      ->group(pc::kRunGroup);
  app.add_flag("!--no-progress", o.progress, "no progress line on stderr")->group(pc::kRunGroup);
  app.add_option("--stall-timeout", o.stall_timeout_s, "stop after this many seconds without progress")
      ->check(CLI::PositiveNumber)
      ->capture_default_str()
      ->group(pc::kRunGroup);
  // Tuning
  app.add_option("--poll", o.poll,
                 "how every polling loop waits when idle: busy, balanced or handoff (default: handoff with "
                 "--nodes threads and netns, balanced with processes); overrides after a comma, e.g. "
                 "handoff,spin=200 "
                 "(docs/cluster.md, \"Idle back-off\")")
      ->check([](const std::string& v) {
        try {
          panama::runtime::IdlePolicy::parse(v);
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
        return std::string();
      })
      ->group(pc::kTuningGroup);
  app.add_option("--zero-copy-send", o.zero_copy_send,
                 "--nodes threads: workers send payloads from their buffers instead of copying them into "
                 "frames (docs/runtime.md)")
      ->capture_default_str()
      ->group(pc::kTuningGroup);
  pc::add_parsed_option(
      app, "--streaming-copy-bytes",
      [&o](const std::string& v) { o.streaming_copy_bytes = pc::parse_size(v); },
      "workers copy payloads of allreduces at least this large with streaming stores (0: never; "
      "docs/runtime.md)",
      "8MiB")
      ->group(pc::kTuningGroup);
  app.add_option("--pmd", o.pmd,
                 "--nodes netns: the DPDK driver of every port over its veth: af_packet (net_af_packet) or "
                 "af_xdp (net_af_xdp; frames up to 3 KiB: --elems-per-packet 752 or fewer in fp32)")
      ->check(CLI::IsMember({"af_packet", "af_xdp"}))
      ->capture_default_str()
      ->group(pc::kTuningGroup);
  app.add_option("--link-delay", o.link_delay_ms,
                 "--nodes netns: one-way delay of every link in milliseconds (tc netem on each end)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str()
      ->group(pc::kLinksGroup);
  app.add_option("--link-ecn", o.link_ecn,
                 "--nodes netns: who marks CE for the links: kernel (an ECN-marking qdisc on every veth, "
                 "RED or fq_codel, at --ecn-k), pswitch (the PSwitches' output queues, as in the other "
                 "modes), auto (kernel where tc has such a qdisc, else pswitch)")
      ->check(CLI::IsMember({"auto", "kernel", "pswitch"}))
      ->capture_default_str()
      ->group(pc::kLinksGroup);
  app.add_option("--ring-channels", o.ring_channels,
                 "--baseline ring: independent rings, each over its share of the data")
      ->check(CLI::Range(1, 16))
      ->capture_default_str()
      ->group(pc::kTuningGroup);
  if (const int rc = pc::parse_cluster_command_line(app, argc, argv); rc >= 0) return rc;
  if (cleanup) return pc::cleanup_command();

  o.ring_baseline = baseline == "ring";
  o.gloo_baseline = baseline == "gloo";
  o.in_process = nodes == "threads";
  o.netns = nodes == "netns";
  pc::parse_dtype(dtype, o.dtype);  // checked by CLI11
  const uint32_t eb = panama::wire::elem_bytes(static_cast<uint8_t>(o.dtype));
  if (size_bytes % eb != 0) {
    std::fprintf(stderr,
                 "panama-cluster: --size %llu: must be a positive multiple of %u bytes (%s elements)\n",
                 static_cast<unsigned long long>(size_bytes), eb, dtype.c_str());
    return 2;
  }
  o.elems = size_bytes / eb;
  std::string bad = pc::check_cluster_options(app, o);
  if (bad.empty()) bad = option_not_for_mode(app, o);
  if (!bad.empty()) {
    std::fprintf(stderr, "panama-cluster: %s\n", bad.c_str());
    return 2;
  }
  // Refuse what cannot fit instead of dying of std::bad_alloc in every worker.
  const uint64_t need = pc::worker_memory_bytes(o.elems, eb, o.workers, o.jobs);
  const uint64_t avail = pc::mem_available_bytes();
  if (avail > 0 && need > avail) {
    std::fprintf(
        stderr,
        "panama-cluster: %.1f GiB per allreduce need about %.1f GiB in the workers (%u workers x %u "
        "job(s), data and reference copy each); this machine has %.1f GiB available (MemAvailable)\n",
        static_cast<double>(pc::tensor_bytes(o)) / (1u << 30), static_cast<double>(need) / (1u << 30),
        o.workers, o.jobs, static_cast<double>(avail) / (1u << 30));
    return 2;
  }
  return pc::run_cluster(o);
}
