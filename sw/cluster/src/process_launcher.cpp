// The process launcher of ClusterRun (process_launcher.hpp): every PSwitch
// and every worker its own process, started as `<exe> --node <spec file>`
// (node_spec.hpp) and linked by memif, supervised through NodeSet
// (orchestration.hpp).
#include "process_launcher.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstring>

#include "panama/cluster/node_spec.hpp"
#include "panama/config/node_config.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;

// A worker's stdout: "P <iteration> <bytes done>" lines and a final "R <json>".
void worker_line(WorkerStatus& w, const std::string& line) {
  if (line.rfind("P ", 0) == 0) {
    unsigned it = 0;
    unsigned long long bytes = 0;
    if (std::sscanf(line.c_str() + 2, "%u %llu", &it, &bytes) == 2) {
      w.iteration = it;
      w.bytes = bytes;
    }
  } else if (line.rfind("R ", 0) == 0) {
    try {
      w.report = json::parse(line.substr(2));
    } catch (const json::exception&) {
      w.report = {{"ok", false}, {"error", "unreadable report"}};
    }
  }
}

}  // namespace

std::string how_it_ended(const Node& c) {
  if (c.exited && WIFSIGNALED(c.status)) {
    const int sig = WTERMSIG(c.status);
    const char* abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + " (SIG" + (abbrev ? abbrev : "?") + ": " +
           strsignal(sig) + ")";
  }
  if (c.exited && WIFEXITED(c.status)) return "exited with status " + std::to_string(WEXITSTATUS(c.status));
  return "running";
}

void ProcessLauncher::start(const PlannedRun& run, const ClusterOptions& opt,
                            std::vector<WorkerStatus>& workers) {
  nodes_ = std::make_unique<NodeSet>(run.run_dir);
  start_nodes(run.dep, run.run_dir, opt, workers);
}

void ProcessLauncher::start_nodes(const controller::Deployment& dep, const std::string& run_dir,
                                  const ClusterOptions& opt, std::vector<WorkerStatus>& workers,
                                  bool with_switches) {
  const runtime::IdlePolicy poll = idle_policy(opt);
  if (with_switches) nodes_->start_switches(dep, self_, poll);
  for (const auto& w : dep.workers) {
    NodeSpecFile file;
    file.role = opt.ring_baseline ? NodeSpecFile::Role::kRingWorker : NodeSpecFile::Role::kWorker;
    file.name = w.host;
    file.dpdk_prefix = nodes_->dpdk_prefix(w.host);
    file.poll = poll;
    file.worker.plan_path = run_dir + "/" + w.host + ".plan.json";
    file.worker.vdevs = w.vdevs.empty() ? std::vector<std::string>{w.vdev} : w.vdevs;
    file.worker.seed = opt.seed;
    file.worker.elems = opt.elems;
    file.worker.iterations = opt.iterations;
    file.worker.streaming_copy_bytes = opt.streaming_copy_bytes;
    file.worker.ring_channels = opt.ring_channels;
    file.worker.dtype = opt.dtype;
    if (!opt.ring_baseline) file.worker.leaf_of_rank = leaf_of_rank(dep, w.plan.job_id);
    if (opt.ring_baseline) {
      // Neighbours in rank order within the job.
      const uint32_t n = w.plan.world_size;
      for (const auto& o : dep.workers) {
        if (o.plan.job_id != w.plan.job_id) continue;
        if (o.plan.rank == (w.plan.rank + n - 1) % n) file.peers.left = o.plan.local_mac;
        if (o.plan.rank == (w.plan.rank + 1) % n) file.peers.right = o.plan.local_mac;
      }
    }
    const std::string path = node_spec_path(run_dir, w.host);
    write_node_spec(path, file);
    NodeSpec spec;
    spec.name = w.host;
    spec.exe = self_;
    spec.capture_stdout = true;
    spec.dpdk_prefix = file.dpdk_prefix;
    spec.args = {"--node", path};
    add_worker(nodes_->start(spec), w, workers);
  }
}

void ProcessLauncher::add_worker(const Node& n, const controller::WorkerOutput& w,
                                 std::vector<WorkerStatus>& workers) {
  WorkerStatus ws;
  ws.host = w.host;
  ws.job = w.plan.job_id;
  ws.rank = w.plan.rank;
  ws.log_path = n.log_path;
  index_[w.host] = workers.size();
  workers.push_back(ws);
}

void ProcessLauncher::poll(int timeout_ms, std::vector<WorkerStatus>& workers) {
  if (!nodes_) return;
  nodes_->poll(timeout_ms, [&](Node& n, const std::string& line, bool) {
    if (auto it = index_.find(n.name); it != index_.end() && !n.is_switch)
      worker_line(workers[it->second], line);
  });
  update(workers);
}

std::string ProcessLauncher::switch_failure() {
  if (!nodes_) return {};
  for (const Node& n : nodes_->nodes()) {
    if (!n.is_switch || !n.exited || n.pid == injected_pid_) continue;  // killed on purpose
    return n.name + " exited early (" + how_it_ended(n) + "):\n" + tail_of(n.log_path);
  }
  return {};
}

std::string ProcessLauncher::fail_switch(const std::string& name, FailMode how) {
  if (how == FailMode::kLinkDown) return {};  // --nodes netns only (refused before)
  for (const Node& n : nodes_->nodes()) {
    if (!n.is_switch || n.name != name || n.exited) continue;
    kill(n.pid, how == FailMode::kKill ? SIGKILL : SIGSTOP);
    injected_pid_ = n.pid;
    injected_how_ = how;
    return std::string(how == FailMode::kKill ? "SIGKILL" : "SIGSTOP") + " to PSwitch " + name;
  }
  return {};
}

void ProcessLauncher::stop(bool, std::vector<WorkerStatus>& workers) {
  if (!nodes_) return;
  // A frozen PSwitch would sit out the tear-down's SIGTERM grace period.
  if (injected_pid_ > 0 && injected_how_ == FailMode::kStop) kill(injected_pid_, SIGCONT);
  // Before the summary: the PSwitches write their final counters on SIGTERM.
  nodes_->tear_down();
  update(workers);
}

void ProcessLauncher::update(std::vector<WorkerStatus>& workers) {
  for (const Node& n : nodes_->nodes()) {
    auto it = index_.find(n.name);
    if (n.is_switch || it == index_.end() || !n.exited) continue;
    WorkerStatus& w = workers[it->second];
    w.running = false;
    if (w.report.is_null()) {
      w.ended = how_it_ended(n);
      w.signal = WIFSIGNALED(n.status) ? WTERMSIG(n.status) : 0;
    }
  }
}

std::unique_ptr<NodeLauncher> make_process_launcher(const std::string& self_exe) {
  return std::make_unique<ProcessLauncher>(self_exe);
}

}  // namespace panama::cluster
