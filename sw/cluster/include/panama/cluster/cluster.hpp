// The virtual cluster: one command that plans a PANAMA deployment on this
// machine (controller), runs its PSwitches and workers (a process per node
// over DPDK memif links, or a thread per node over net_ring links), runs
// allreduces, checks every result bit for bit, and summarises goodput,
// per-tree congestion statistics and PSwitch counters. docs/cluster.md
// describes it; cluster_run.hpp has the steps of a run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "panama/runtime/idle_backoff.hpp"
#include "panama/wire.hpp"

namespace panama::cluster {

struct ClusterOptions {
  std::string topology = "single";  // "single" or "two-tier"
  uint32_t workers = 4;             // per job
  uint32_t leaves = 2, spines = 2;  // two-tier only
  bool dual_homed = false;          // two-tier: every worker has two uplinks (two planes of leaves)
  uint32_t trees = 2;
  uint32_t jobs = 1;
  uint64_t elems = 16u << 20;  // elements of `dtype` per allreduce (64 MiB of fp32)
  // The allreduces' element type (--dtype): fp32, or bf16 / fp16, which the
  // engines sum in fp32 and round once per emitted sum (docs/protocol.md §7);
  // packets hold elems_per_packet elements whatever the type.
  wire::ElemType dtype = wire::ElemType::kFloat32;
  uint32_t iterations = 3;
  double link_gbps = 10.0;
  uint64_t ecn_k_bytes = 256u << 10;
  uint64_t engine_ecn_k_bytes = 256u << 10;  // every PSwitch's engine queue
  uint64_t queue_bytes = 4u << 20;
  uint32_t packet_memory = 512;  // slots per PSwitch
  double loss = 0, dup = 0, reorder = 0;
  uint64_t seed = 1;
  uint32_t elems_per_packet = 1024;
  // Retransmission timeout floor (docs/cluster.md, "Timeouts").
  uint32_t rto_min_us = 10000;
  // Retransmissions of one chunk before an allreduce fails (0: the runtime's default).
  uint32_t retry_budget = 0;
  std::string shares = "equal";   // or "weighted" (job j gets weight j+1)
  std::string run_dir;            // empty: a fresh /tmp/panama-cluster-XXXXXX, removed unless the run failed
  double stall_timeout_s = 60.0;  // abort when no allreduce makes progress this long
  std::string summary_path;       // also write the summary as JSON here
  bool progress = true;
  bool ring_baseline = false;  // host ring allreduce instead of in-network aggregation
  uint32_t ring_channels = 2;  // rings of the baseline, each over 1/channels of the data
  // How every polling loop (PSwitches, workers' progress threads, ring
  // workers) waits when idle: a runtime::IdlePolicy preset, optionally with
  // overrides ("handoff,spin=200"); empty: the mode's (idle_policy()).
  std::string poll;
  // RuntimeOptions::streaming_copy_bytes of every worker. On by default
  // here, off in the runtime: in the virtual cluster one CPU's cache holds
  // every worker's frames (one progress thread serves them all with
  // --nodes threads), and another thread reads each frame; docs/runtime.md.
  size_t streaming_copy_bytes = size_t{8} << 20;
  // RuntimeOptions::zero_copy_send of every worker, with --nodes threads
  // (net_ring links): the workers send their payloads from their buffers and
  // the PSwitch's engine adds them from there.
  bool zero_copy_send = true;
  // Every node a thread of this one process, links net_ring pairs (no memif
  // copies, no process switches); else one process per node over memif.
  bool in_process = false;
  // --nodes netns: one process per node, each in its own network namespace,
  // links veth pairs shaped by tc, ports a DPDK PMD over the kernel
  // interface (docs/cluster.md, "Namespaces and veths").
  bool netns = false;
  std::string pmd = "af_packet";  // netns: net_af_packet, or af_xdp (net_af_xdp)
  double link_delay_ms = 0;       // netns: one-way delay of every link (tc netem)
  // netns: who marks CE at the links: "auto" (the kernel's queues where tc
  // has an ECN-marking qdisc, else the PSwitches), "kernel", "pswitch".
  std::string link_ecn = "auto";
  // netns: Gloo through torch.distributed between the same namespaces over
  // the same veths (a Linux bridge where the PSwitches were) instead of
  // in-network aggregation.
  bool gloo_baseline = false;
  // Tree failover (docs/cluster.md, "Tree failover"): a standby tree per tree,
  // and the workers' failover threshold (0: the runtime's default).
  bool backup_trees = false;
  uint32_t failover_after = 0;
  // Pooled mode (docs/cluster.md, "Pooled jobs"): a pool of this many slots
  // in every PSwitch engine that serves a pooled job (0: no pool, every job
  // has fixed shares); the pooled jobs (ids 1..jobs; empty: all of them with
  // a pool); their group size G (0: the controller's default), the claims'
  // lease (0: the controller's default) and the caps' overcommit.
  uint32_t pool_slots = 0;
  std::vector<uint32_t> pooled_jobs;
  uint32_t pool_group = 0;
  uint64_t pool_lease_us = 0;
  double pool_overcommit = 1.0;
  bool pool_ring_cc = false;  // DCTCP on the ring of denied groups (PooledPlan::ring_congestion)
  // Failure injection: this PSwitch is stopped ("STOP": frozen; "KILL": for
  // good) once `fail_at` of all the run's bytes are done.
  std::string fail_switch;
  std::string fail_signal = "STOP";
  double fail_at = 0.3;
};

// The polling preset of a run's loops: ClusterOptions::poll, or the mode's
// default (handoff with --nodes threads and netns, balanced with processes). Throws
// std::invalid_argument for an unknown preset.
runtime::IdlePolicy idle_policy(const ClusterOptions& o);

// Runs the whole virtual cluster (ClusterRun with the launcher of
// opt.in_process); returns the exit code (0: every result bit-exact; 1:
// mismatch or failure; 2: bad options or set-up; 130: interrupted).
int run_cluster(const ClusterOptions& opt);

// panama-cluster --cleanup: removes what --nodes netns runs whose launcher
// is gone left behind (their namespaces, veths and processes, DPDK runtime
// folders), says what on stdout; returns the exit status (0).
int cleanup_command();

// "64MiB", "1.5GiB", "4096", "10KB" -> bytes, parsed exactly. Throws
// std::invalid_argument for anything else, including sizes over 2^64 - 1.
uint64_t parse_size(const std::string& text);

// MemAvailable of /proc/meminfo in bytes (0 when unknown).
uint64_t mem_available_bytes();

// Bytes the workers hold for one run (each worker keeps its data and a
// reference copy, `elem_bytes` per element), saturating at UINT64_MAX.
uint64_t worker_memory_bytes(uint64_t elems, uint32_t elem_bytes, uint32_t workers_per_job, uint32_t jobs);

// Payload bytes of one allreduce of opt.elems elements of opt.dtype.
inline uint64_t tensor_bytes(const ClusterOptions& opt) {
  return opt.elems * wire::elem_bytes(static_cast<uint8_t>(opt.dtype));
}

}  // namespace panama::cluster
