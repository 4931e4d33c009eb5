// The command-line options that describe a virtual cluster (fabric, links
// and faults, protocol, run directory), shared by panama-cluster and
// panama-torchrun so both take the same flags with the same meaning, in the
// same help sections (CLI11 option groups). docs/cluster.md lists them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>

#include "panama/cluster/cluster.hpp"

namespace panama::cluster {

// Help sections of the cluster programs, in this order.
inline constexpr const char* kFabricGroup = "Fabric";
inline constexpr const char* kTrafficGroup = "Traffic";
inline constexpr const char* kLinksGroup = "Links and faults";
inline constexpr const char* kProtocolGroup = "Protocol";
inline constexpr const char* kRunGroup = "Run";
inline constexpr const char* kTuningGroup = "Tuning";

// Option values with a syntax of their own; each throws
// std::invalid_argument with what is wrong.
// single | two-tier[:LEAVESxSPINES] | dual-homed[:LEAVESxSPINES]
void parse_topology(const std::string& text, ClusterOptions& opt);
// P (loss, duplication and reordering alike) | loss=P,dup=P,reorder=P (any of them)
void parse_faults(const std::string& text, ClusterOptions& opt);
// K (port queues and engine queue) | PORT_K,ENGINE_K; sizes as parse_size
void parse_ecn_k(const std::string& text, ClusterOptions& opt);
// NAME[:STOP|KILL][@FRACTION]
void parse_fail_switch(const std::string& text, ClusterOptions& opt);

// An option whose value `parse` turns into ClusterOptions fields; a
// std::invalid_argument becomes CLI11's validation error for the option.
inline CLI::Option* add_parsed_option(CLI::App& app, const std::string& name,
                                      std::function<void(const std::string&)> parse, const std::string& help,
                                      const std::string& default_text) {
  CLI::Option* o = app.add_option_function<std::string>(
      name,
      [name, parse](const std::string& v) {
        try {
          parse(v);
        } catch (const std::invalid_argument& e) {
          throw CLI::ValidationError(name, e.what());
        }
      },
      help);
  if (!default_text.empty()) o->default_str(default_text);
  return o;
}

inline void add_cluster_options(CLI::App& app, ClusterOptions& opt) {
  // Fabric
  add_parsed_option(
      app, "--topology", [&opt](const std::string& v) { parse_topology(v, opt); },
      "single (one PSwitch), two-tier[:LEAVESxSPINES] (leaf-spine, 2x2 by default; workers round-robin "
      "over the leaves) or dual-homed[:LEAVESxSPINES] (two-tier, every worker linked to a leaf of each of "
      "two planes: an even LEAVES)",
      "single")
      ->group(kFabricGroup);
  app.add_option("--workers", opt.workers, "workers per job")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_option("--jobs", opt.jobs, "concurrent jobs sharing the PSwitches")
      ->check(CLI::Range(1, 8))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_option("--trees", opt.trees, "aggregation trees per job")
      ->check(CLI::Range(1, 64))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_flag(
         "--backup-trees", opt.backup_trees,
         "a standby tree per tree on another spine (or plane): workers fail over to it when a tree dies")
      ->group(kFabricGroup);
  app.add_option("--packet-memory", opt.packet_memory, "slots per PSwitch engine")
      ->check(CLI::Range(1, 512))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_option("--shares", opt.shares, "PSwitch memory shares: equal, or weighted (job j has weight j)")
      ->check(CLI::IsMember({"equal", "weighted"}))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_option("--pool", opt.pool_slots,
                 "pooled mode: a pool of SLOTS engine slots on every PSwitch serving a pooled job, claimed a "
                 "group at a time; a group the pool denies is reduced on a host ring (0: fixed shares only)")
      ->check(CLI::Range(0, 512))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_option("--pooled-jobs", opt.pooled_jobs,
                 "with --pool: the pooled jobs (ids 1..--jobs, comma-separated; default: every job)")
      ->delimiter(',')
      ->check(CLI::Range(1, 8))
      ->group(kFabricGroup);
  app.add_option("--group", opt.pool_group,
                 "with --pool: sequences per group G, pool slots per claim (0: the controller's default)")
      ->check(CLI::Range(0, 512))
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_option("--lease-us", opt.pool_lease_us,
                 "with --pool: how long a claim that has emitted nothing holds its slots, microseconds (0: "
                 "the controller's default)")
      ->capture_default_str()
      ->group(kFabricGroup);
  app.add_flag("--ring-cc", opt.pool_ring_cc,
               "with --pool: congestion control (DCTCP) on the ring of denied groups, paced by its window "
               "instead of the claim-ahead limit")
      ->group(kFabricGroup);
  app.add_option("--overcommit", opt.pool_overcommit,
                 "with --pool: claim caps are the jobs' weighted parts of the pool times this, at most the "
                 "pool")
      ->check(CLI::Range(1.0, 1e6))
      ->capture_default_str()
      ->group(kFabricGroup);
  // Traffic
  app.add_option("--elems-per-packet", opt.elems_per_packet,
                 "elements per packet whatever their type (fp32 frames are the largest)")
      ->check(CLI::Range(1, 2288))
      ->capture_default_str()
      ->group(kTrafficGroup);
  // Links and faults
  app.add_option("--link-rate", opt.link_gbps,
                 "link rate in Gbit/s of every PSwitch port (with --nodes netns also every veth's tc "
                 "shaping; 0: unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str()
      ->group(kLinksGroup);
  add_parsed_option(
      app, "--queue",
      [&opt](const std::string& v) {
        const uint64_t b = parse_size(v);
        if (b < 9216 || b > (uint64_t{1} << 34)) throw std::invalid_argument("from 9216 bytes to 16 GiB");
        opt.queue_bytes = b;
      },
      "output queue capacity of every PSwitch port (bytes, or e.g. 4MiB)", "4MiB")
      ->group(kLinksGroup);
  add_parsed_option(
      app, "--ecn-k", [&opt](const std::string& v) { parse_ecn_k(v, opt); },
      "ECN marking threshold K of the output queues and of every PSwitch's engine queue (frames waiting "
      "for the engine); PORT_K,ENGINE_K sets them apart; 0: off",
      "256KiB")
      ->group(kLinksGroup);
  add_parsed_option(
      app, "--faults", [&opt](const std::string& v) { parse_faults(v, opt); },
      "probabilities a PSwitch port drops, duplicates or reorders a frame it sends: P for all three, or "
      "loss=P,dup=P,reorder=P (each up to 0.5)",
      "0")
      ->group(kLinksGroup);
  // Protocol
  app.add_option("--rto-min-us", opt.rto_min_us, "workers' minimum retransmission timeout (microseconds)")
      ->check(CLI::Range(100, 1000000))
      ->capture_default_str()
      ->group(kProtocolGroup);
  app.add_option("--retry-budget", opt.retry_budget,
                 "retransmissions of one chunk before an allreduce fails (0: the runtime's default)")
      ->capture_default_str()
      ->group(kProtocolGroup);
  app.add_option(
         "--failover-after", opt.failover_after,
         "with --backup-trees: timeouts of one chunk before a tree is declared dead (0: the runtime's "
         "default)")
      ->capture_default_str()
      ->group(kProtocolGroup);
  // Run
  app.add_option("--run-dir", opt.run_dir,
                 "directory for configs, plans, node specs, logs and counters, kept (default: a fresh /tmp "
                 "directory, removed unless the run failed)")
      ->group(kRunGroup);
}

// Checks between the shared options after parsing: an empty string, or
// what is wrong (the caller exits with status 2).
inline std::string check_cluster_options(const CLI::App& app, const ClusterOptions& opt) {
  if (app.count("--failover-after") > 0 && !opt.backup_trees)
    return "--failover-after applies only with --backup-trees (a tree without a standby does not fail over)";
  if (opt.pool_slots == 0) {
    for (const char* o : {"--pooled-jobs", "--group", "--lease-us", "--overcommit", "--ring-cc"}) {
      if (app.count(o) > 0) return std::string(o) + " applies only with --pool";
    }
  }
  for (uint32_t j : opt.pooled_jobs) {
    if (j > opt.jobs)
      return "--pooled-jobs: job " + std::to_string(j) + " is not one of the " + std::to_string(opt.jobs) +
             " job(s)";
  }
  return {};
}

// CLI11's parse with the cluster programs' exit statuses: returns -1 to go
// on, 0 after --help, 2 for a bad option (CLI11's message on stderr).
inline int parse_cluster_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

}  // namespace panama::cluster
