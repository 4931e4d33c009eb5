// One virtual-cluster run of panama-cluster, whatever its nodes are:
//
//   plan -> start -> supervise -> collect -> summarise
//
// ClusterRun does every step that does not depend on how a node runs: the
// plan (the controller, orchestration.hpp), supervision (progress, a stall,
// Ctrl-C, a PSwitch that dies), failure injection (--fail-switch), the
// workers' reports and the summary. A NodeLauncher starts and controls the
// nodes:
//
//   process launcher  every PSwitch and worker its own process, started as
//                     `<exe> --node <run_dir>/nodes/<name>.json`
//                     (node_spec.hpp), linked by memif (--nodes processes);
//   thread launcher   every node a thread of this process, linked by
//                     net_ring pairs, one runtime progress thread for all
//                     PANAMA workers (--nodes threads);
//   netns launcher    the process launcher's processes, each in a network
//                     namespace of its own, linked by veth pairs shaped
//                     with tc, ports net_af_packet (--nodes netns).
//
// docs/cluster.md ("How it runs", "Launchers") describes both.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/orchestration.hpp"

namespace panama::cluster {

// What the run knows of one worker; the launcher keeps it up to date.
struct WorkerStatus {
  std::string host;
  uint32_t job = 0, rank = 0;
  uint32_t iteration = 0;  // allreduces done
  uint64_t bytes = 0;      // bytes of the current allreduce done
  bool running = true;
  nlohmann::json report;  // its final report; null until it has one
  std::string ended;      // without a report: how it ended ("killed by signal 9 (SIGKILL: Killed)")
  int signal = 0;         // the signal that killed it, if one did
  std::string log_path;   // where its output went ("": nowhere to look)
  // Kept by ClusterRun: the seconds of each allreduce it finished, as seen
  // from its progress (the summary of a run cut short).
  std::vector<double> seen_seconds;
  std::chrono::steady_clock::time_point last_done{};
};

// How a PSwitch is failed (--fail-switch NAME:STOP|KILL).
enum class FailMode {
  kStop,      // frozen: stops forwarding, links stay up; resumed after the run to report its counters
  kKill,      // ended for good
  kLinkDown,  // --nodes netns: every link of it taken down (ip link set down), the process left running
};

// Starts and controls the nodes of a run. ClusterRun calls start() once,
// then poll() until every worker has ended (or the run is cut short), then
// stop() and switch_counters(), and finally exit_code().
class NodeLauncher {
 public:
  virtual ~NodeLauncher() = default;
  // How the nodes run, for the start-up line ("a process per node (memif)").
  virtual std::string description() const = 0;
  // Appended to the summary's title ("" or " (in-process)").
  virtual std::string summary_title() const = 0;
  // What the worker processes must be told, e.g. zero-copy send, and may
  // refuse (SetupError) a combination of options it cannot run.
  virtual void check(const PlannedRun& run, ClusterOptions& opt) = 0;
  // Starts every PSwitch (each ready before the next) and every worker of
  // `run`, one WorkerStatus per worker. Throws std::runtime_error.
  virtual void start(const PlannedRun& run, const ClusterOptions& opt,
                     std::vector<WorkerStatus>& workers) = 0;
  // Waits up to `timeout_ms` and brings `workers` up to date.
  virtual void poll(int timeout_ms, std::vector<WorkerStatus>& workers) = 0;
  // A PSwitch that ended by itself (not failed on purpose): "<name> (how it
  // ended)" and what it left in its log; "" while every one runs.
  virtual std::string switch_failure() = 0;
  // SIGINT or SIGTERM arrived.
  virtual bool interrupted() const = 0;
  // Failure injection: what was done ("SIGSTOP to PSwitch spine0"), or ""
  // when there is no such PSwitch running.
  virtual std::string fail_switch(const std::string& name, FailMode how) = 0;
  // Stops every node: workers first (joined when `finished`, else left or
  // killed), then the PSwitches, a frozen one resumed first so that it
  // writes its counters. Brings `workers` up to date one last time.
  virtual void stop(bool finished, std::vector<WorkerStatus>& workers) = 0;
  // Every PSwitch's final counters (one JSON object each).
  virtual std::vector<nlohmann::json> switch_counters(const PlannedRun& run) = 0;
  // What the process does with the run's exit status: returns it, or (the
  // thread launcher, whose nodes may still hold DPDK resources) exits.
  virtual int exit_code(int code) { return code; }
};

// A process per node (memif links); `self_exe` is the executable the
// children run (panama-cluster itself).
std::unique_ptr<NodeLauncher> make_process_launcher(const std::string& self_exe);
// A thread per node in this process (net_ring links).
std::unique_ptr<NodeLauncher> make_thread_launcher();
// A process per node, each in its own network namespace, linked by veth
// pairs (netns_launcher.cpp, netns.hpp).
std::unique_ptr<NodeLauncher> make_netns_launcher(const std::string& self_exe);

class ClusterRun {
 public:
  ClusterRun(const ClusterOptions& opt, std::unique_ptr<NodeLauncher> launcher);
  ClusterRun(const ClusterRun&) = delete;
  ClusterRun& operator=(const ClusterRun&) = delete;

  // The whole run; returns the exit status (0: every result bit-exact; 1:
  // a mismatch or failure; 2: bad options or set-up; 130: interrupted).
  int run();

 private:
  int plan();
  bool start();
  void supervise();
  nlohmann::json collect_workers(uint64_t& mismatches, uint32_t& failed) const;
  int summarise();
  void progress_line(uint64_t done_bytes, double total_bytes, double elapsed_s, bool final_line);

  ClusterOptions opt_;
  std::unique_ptr<NodeLauncher> launcher_;
  PlannedRun run_;
  std::vector<WorkerStatus> workers_;
  bool setup_failed_ = false, interrupted_ = false, stalled_ = false, switch_failed_ = false;
  bool injected_ = false;
  double injected_at_s_ = 0;
  std::chrono::steady_clock::time_point last_print_{};
};

}  // namespace panama::cluster
