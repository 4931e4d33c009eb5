// The command-line options that describe a virtual cluster (topology,
// links, engines, congestion, run directory), shared by panama-cluster and
// panama-torchrun so both take the same flags with the same meaning.
#pragma once

#include <CLI/CLI.hpp>

#include "panama/cluster/cluster.hpp"

namespace panama::cluster {

inline void add_cluster_options(CLI::App& app, ClusterOptions& opt) {
  app.add_option("--topology", opt.topology, "single (one PSwitch) or two-tier (leaf-spine)")
      ->check(CLI::IsMember({"single", "two-tier"}))
      ->capture_default_str();
  app.add_option("--workers", opt.workers, "workers per job")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--leaves", opt.leaves, "leaf PSwitches (two-tier)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--spines", opt.spines, "spine PSwitches (two-tier)")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--trees", opt.trees, "aggregation trees per job")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--jobs", opt.jobs, "concurrent jobs sharing the PSwitches")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  app.add_option("--link-rate", opt.link_gbps,
                 "emulated link rate in Gbit/s of every PSwitch port (0: unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--ecn-k", opt.ecn_k_bytes, "ECN marking threshold K in bytes of queue (0: off)")
      ->capture_default_str();
  app.add_option(
         "--engine-ecn-k", opt.engine_ecn_k_bytes,
         "ECN marking threshold K of every PSwitch's engine queue (frames waiting for the engine), bytes "
         "(0: off)")
      ->capture_default_str();
  app.add_option("--queue", opt.queue_bytes, "output queue capacity in bytes per port")
      ->check(CLI::Range(uint64_t{9216}, uint64_t{1} << 34))
      ->capture_default_str();
  app.add_option("--packet-memory", opt.packet_memory, "slots per PSwitch engine")
      ->check(CLI::Range(1, 512))
      ->capture_default_str();
  app.add_option("--elems-per-packet", opt.elems_per_packet, "fp32 elements per packet")
      ->check(CLI::Range(1, 2288))
      ->capture_default_str();
  app.add_option("--rto-min-us", opt.rto_min_us, "workers' minimum retransmission timeout (microseconds)")
      ->check(CLI::Range(100, 1000000))
      ->capture_default_str();
  app.add_option("--shares", opt.shares, "PSwitch memory shares: equal, or weighted (job j has weight j)")
      ->check(CLI::IsMember({"equal", "weighted"}))
      ->capture_default_str();
  app.add_option("--loss", opt.loss, "probability a PSwitch drops a frame it sends")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--dup", opt.dup, "probability a PSwitch sends a frame twice")->check(CLI::Range(0.0, 0.5));
  app.add_option("--reorder", opt.reorder, "probability a PSwitch delays a frame behind the next")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--run-dir", opt.run_dir,
                 "directory for configs, plans, sockets, logs (default: a fresh /tmp dir)");
  app.add_flag("--keep", opt.keep, "keep the run directory");
  app.add_option("--retry-budget", opt.retry_budget,
                 "retransmissions of one chunk before an allreduce fails (0: the runtime's default)");
  app.add_flag("--dual-homed", opt.dual_homed,
               "two-tier: every worker has two uplinks, to a leaf of each of two planes (dual-ToR)");
  app.add_flag("--backup-trees", opt.backup_trees,
               "a standby tree per tree on another spine: workers fail over to it when a tree dies");
  app.add_option(
      "--failover-after", opt.failover_after,
      "timeouts of one chunk before a tree with a standby is declared dead (0: the runtime's default)");
}

}  // namespace panama::cluster
