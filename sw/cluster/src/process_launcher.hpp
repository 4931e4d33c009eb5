// The process launcher of ClusterRun (cluster_run.hpp), private to
// sw/cluster: every PSwitch and every worker its own process, started as
// `<exe> --node <spec file>` (node_spec.hpp) and supervised through NodeSet
// (orchestration.hpp). The memif launcher (--nodes processes) is this
// class; the netns launcher (--nodes netns, netns_launcher.cpp) derives
// from it and adds the namespaces and links around the same processes.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "panama/cluster/cluster_run.hpp"

namespace panama::cluster {

// "killed by signal 9 (SIGKILL: Killed)", "exited with status 3", "running".
std::string how_it_ended(const Node& c);

class ProcessLauncher : public NodeLauncher {
 public:
  explicit ProcessLauncher(std::string self) : self_(std::move(self)) {}

  std::string description() const override { return "a process per node (memif)"; }
  std::string summary_title() const override { return ""; }
  void check(const PlannedRun&, ClusterOptions&) override {}
  void start(const PlannedRun& run, const ClusterOptions& opt, std::vector<WorkerStatus>& workers) override;
  void poll(int timeout_ms, std::vector<WorkerStatus>& workers) override;
  std::string switch_failure() override;
  bool interrupted() const override { return nodes_ && nodes_->signalled(); }
  std::string fail_switch(const std::string& name, FailMode how) override;
  void stop(bool finished, std::vector<WorkerStatus>& workers) override;
  std::vector<nlohmann::json> switch_counters(const PlannedRun& run) override {
    return collect_switch_counters(run);
  }

 protected:
  // Starts the PSwitches of `dep` (unless `with_switches` is false) and
  // one worker process per worker of `dep`, each from a node-spec file in
  // `run_dir`; `nodes_` must exist.
  void start_nodes(const controller::Deployment& dep, const std::string& run_dir, const ClusterOptions& opt,
                   std::vector<WorkerStatus>& workers, bool with_switches = true);
  // Registers a started worker node (its status, its line protocol).
  void add_worker(const Node& n, const controller::WorkerOutput& w, std::vector<WorkerStatus>& workers);
  // Exited workers: no longer running; without a report, how they ended.
  void update(std::vector<WorkerStatus>& workers);

  std::string self_;
  std::unique_ptr<NodeSet> nodes_;
  std::map<std::string, size_t> index_;  // worker name -> its WorkerStatus
  pid_t injected_pid_ = -1;
  FailMode injected_how_ = FailMode::kStop;
};

}  // namespace panama::cluster
