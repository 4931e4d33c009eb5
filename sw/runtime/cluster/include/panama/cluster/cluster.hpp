// The virtual cluster: one command that plans a PANAMA deployment on this
// machine (controller), starts one process per PSwitch and per worker
// connected by DPDK memif links, runs allreduces, checks every result bit
// for bit, and summarises goodput, per-tree congestion statistics and
// PSwitch counters. docs/cluster.md describes it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace panama::cluster {

struct ClusterOptions {
  std::string topology = "single";  // "single" or "two-tier"
  uint32_t workers = 4;             // per job
  uint32_t leaves = 2, spines = 2;  // two-tier only
  uint32_t trees = 2;
  uint32_t jobs = 1;
  uint64_t elems = 16u << 20;  // fp32 elements per allreduce (64 MiB)
  uint32_t iterations = 3;
  double link_gbps = 10.0;
  uint64_t ecn_k_bytes = 256u << 10;
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
};

// Runs the whole virtual cluster; returns the exit code (0: every result
// bit-exact; 1: mismatch or failure; 2: bad options; 130: interrupted).
int run_cluster(const ClusterOptions& opt, const std::string& self_exe);

struct WorkerOptions {
  std::string plan_path;
  std::string vdev;
  std::string file_prefix;
  uint64_t seed = 1;
  uint64_t elems = 0;
  uint32_t iterations = 1;
};

// The left and right neighbours of a ring-allreduce worker.
struct RingPeers {
  std::array<uint8_t, 6> left{}, right{};
};

// A worker of the ring-allreduce baseline (--baseline ring): same data, same
// checks, same reports as run_worker, over the same links.
int run_ring_worker(const WorkerOptions& opt, const RingPeers& peers);

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
