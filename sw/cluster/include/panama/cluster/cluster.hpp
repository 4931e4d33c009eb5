// The virtual cluster: one command that plans a PANAMA deployment on this
// machine (controller), starts one process per PSwitch and per worker
// connected by DPDK memif links, runs allreduces, checks every result bit
// for bit, and summarises goodput, per-tree congestion statistics and
// PSwitch counters. docs/cluster.md describes it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace panama::runtime {
class DpdkEal;
class Runtime;
}  // namespace panama::runtime

namespace panama::cluster {

struct ClusterOptions {
  std::string topology = "single";  // "single" or "two-tier"
  uint32_t workers = 4;             // per job
  uint32_t leaves = 2, spines = 2;  // two-tier only
  bool dual_homed = false;          // two-tier: every worker has two uplinks (two planes of leaves)
  uint32_t trees = 2;
  uint32_t jobs = 1;
  uint64_t elems = 16u << 20;  // fp32 elements per allreduce (64 MiB)
  uint32_t iterations = 3;
  double link_gbps = 10.0;
  uint64_t ecn_k_bytes = 256u << 10;
  uint64_t engine_ecn_k_bytes = 256u << 10;  // every PSwitch's engine queue
  uint64_t queue_bytes = 4u << 20;
  uint32_t packet_memory = 512;  // slots per PSwitch
  double loss = 0, dup = 0, reorder = 0;
  uint64_t seed = 1;
  uint32_t elems_per_packet = 1024;
  // Retransmission timeout floor: processes share two cores here, so a
  // scheduling gap of a few ms is not a loss.
  uint32_t rto_min_us = 10000;
  // Retransmissions of one chunk before an allreduce fails (0: the runtime's default).
  uint32_t retry_budget = 0;
  std::string shares = "equal";   // or "weighted" (job j gets weight j+1)
  std::string run_dir;            // empty: a fresh /tmp/panama-cluster-XXXXXX
  bool keep = false;              // keep run_dir (configs, plans, logs, stats)
  double stall_timeout_s = 60.0;  // abort when no allreduce makes progress this long
  std::string summary_path;       // also write the summary as JSON here
  bool progress = true;
  bool ring_baseline = false;  // host ring allreduce instead of in-network aggregation
  uint32_t ring_channels = 2;  // rings of the baseline, each over 1/channels of the data
  // Idle back-off of every polling loop (PSwitches, workers' progress
  // threads, ring workers): sleep up to this long when a poll finds nothing.
  // Every process of the cluster shares this machine's few CPUs; 0 busy-polls.
  uint32_t idle_sleep_us = 50;
  // Before backing off, every polling loop keeps polling until idle for
  // this long (IdleBackoffConfig::spin_us). -1: the mode's default
  // (kThreadsIdleSpinUs with --nodes threads, where the loops hand frames
  // to each other within one process and a yield gives the CPU to any
  // runnable thread at once; for the ring baseline too, which gains as
  // much from it; 0 with processes, where more loops than CPUs poll).
  int64_t idle_spin_us = -1;
  // RuntimeOptions::streaming_copy_bytes of every worker. On by default
  // here, off in the runtime: in the virtual cluster one CPU's cache holds
  // every worker's frames (one progress thread serves them all with
  // --nodes threads), and another thread reads each frame; docs/runtime.md.
  size_t streaming_copy_bytes = size_t{8} << 20;
  // RuntimeOptions::zero_copy_send of every worker: with --nodes threads
  // (net_ring links) the workers send their payloads from their buffers and
  // the PSwitch's engine adds them from there. No effect over memif.
  bool zero_copy_send = true;
  // Every node a thread of this one process, links net_ring pairs (no memif
  // copies, no process switches); else one process per node over memif.
  bool in_process = false;
  // Tree failover (docs/cluster.md, "Tree failover"): a standby tree per tree,
  // and the workers' failover threshold (0: the runtime's default).
  bool backup_trees = false;
  uint32_t failover_after = 0;
  // Failure injection: this PSwitch gets `fail_signal` ("STOP" or "KILL") once
  // `fail_at` of all the run's bytes are done.
  std::string fail_switch;
  std::string fail_signal = "STOP";
  double fail_at = 0.3;
};

// Runs the whole virtual cluster; returns the exit code (0: every result
// bit-exact; 1: mismatch or failure; 2: bad options; 130: interrupted).
int run_cluster(const ClusterOptions& opt, const std::string& self_exe);

constexpr uint32_t kThreadsIdleSpinUs = 2000;

// ClusterOptions::idle_spin_us with -1 resolved for the run's mode.
inline uint32_t idle_spin_us(const ClusterOptions& o) {
  if (o.idle_spin_us >= 0) return static_cast<uint32_t>(o.idle_spin_us);
  return o.in_process ? kThreadsIdleSpinUs : 0;
}

struct WorkerOptions {
  std::string plan_path;
  std::string vdev;
  std::string vdev2;  // a dual-homed worker's second uplink
  std::string file_prefix;
  uint64_t seed = 1;
  uint64_t elems = 0;
  uint32_t iterations = 1;
  uint32_t idle_sleep_us = 50;      // ClusterOptions::idle_sleep_us
  uint32_t idle_spin_us = 0;        // ClusterOptions::idle_spin_us, resolved
  size_t streaming_copy_bytes = 0;  // ClusterOptions::streaming_copy_bytes
  uint32_t ring_channels = 2;       // ring baseline only
};

// Waits until every rank of the job in `plan_path`'s directory has reached
// `iteration` (a file per rank and iteration), so no worker generates or
// checks test data while another one's allreduce is being timed. Calls
// `while_waiting` (if any) between checks. Throws after `timeout_s`.
void iteration_barrier(const std::string& plan_path, uint32_t job, uint32_t rank, uint32_t world,
                       uint32_t iteration, double timeout_s = 600.0,
                       const std::function<void()>& while_waiting = {});

// The left and right neighbours of a ring-allreduce worker.
struct RingPeers {
  std::array<uint8_t, 6> left{}, right{};
};

// A worker of the ring-allreduce baseline (--baseline ring): same data, same
// checks, same reports as run_worker, over the same links.
int run_ring_worker(const WorkerOptions& opt, const RingPeers& peers);

// Progress of one worker: iteration, bytes of it completed.
using WorkerProgress = std::function<void(uint32_t iteration, uint64_t bytes)>;

// The allreduces of one worker (generate, barrier, allreduce, check),
// returning its report (the JSON of the "R" line). With `shared_rt` null it
// starts its own runtime and EAL on opt.vdev (a worker process); otherwise
// it opens `device` in that runtime, whose one progress thread then serves
// every worker of the in-process cluster.
nlohmann::json worker_iterations(const WorkerOptions& opt, runtime::Runtime* shared_rt,
                                 const std::string& device, const WorkerProgress& progress);
// The same for the ring baseline, on its own port `device` of `eal`
// (or, with `eal` null, its own EAL on opt.vdev). With `keep_alive`, the
// port (and its mempool, whose mbufs other threads may still hold) is handed
// to the caller instead of being closed on return.
nlohmann::json ring_iterations(const WorkerOptions& opt, const RingPeers& peers,
                               const std::shared_ptr<runtime::DpdkEal>& eal, const std::string& device,
                               const WorkerProgress& progress, std::shared_ptr<void>* keep_alive);

// The whole virtual cluster as threads of this process, linked by net_ring
// pairs instead of memif (ClusterOptions::in_process); same summary and exit
// codes as run_cluster.
int run_cluster_in_process(const ClusterOptions& opt);

// One worker process (started by run_cluster): prints progress lines
// "P <iteration> <bytes done>" and a final "R <json>" on stdout.
int run_worker(const WorkerOptions& opt);

// "64MiB", "1.5GiB", "4096", "10KB" -> bytes, parsed exactly. Throws
// std::invalid_argument for anything else, including sizes over 2^64 - 1.
uint64_t parse_size(const std::string& text);

// MemAvailable of /proc/meminfo in bytes (0 when unknown).
uint64_t mem_available_bytes();

// Bytes the worker processes hold for one run (each worker keeps its data
// and a reference copy), saturating at UINT64_MAX.
uint64_t worker_memory_bytes(uint64_t elems, uint32_t workers_per_job, uint32_t jobs);

// EAL arguments of a virtual-cluster process: no hugepages, no PCI, nothing
// shared config, its own file prefix, not pinned to one core, one vdev.
std::vector<std::string> node_eal_args(const std::string& vdev, unsigned memory_mb,
                                       const std::string& prefix);

}  // namespace panama::cluster
