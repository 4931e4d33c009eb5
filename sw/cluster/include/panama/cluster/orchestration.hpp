// The steps of a virtual-cluster run, shared by panama-cluster (ClusterRun,
// cluster_run.hpp, which runs its own allreduce workers) and panama-torchrun
// (which runs a training command per rank): plan, bring up the PSwitches,
// start the nodes, supervise them, collect what they left, tear everything
// down. docs/cluster.md ("How it runs") describes them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/cluster/cluster.hpp"
#include "panama/controller/controller.hpp"
#include "panama/runtime/idle_backoff.hpp"

namespace panama::cluster {

// Bad options or a set-up the controller rejects (exit status 2).
class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ------------------------------------------------------------------ 1. plan

struct PlannedRun {
  controller::Deployment dep;
  std::string run_dir;
  bool own_run_dir = false;  // created for this run (removed at the end unless kept)
};

// Describes the cluster and the job(s) of `opt` to the controller, which
// writes node configs, plans and deployment.json into the run directory
// (opt.run_dir, or a fresh /tmp/panama-cluster-XXXXXX); the node-spec files
// of the children (node_spec.hpp) go beside them, into nodes/, as they are
// started. Throws SetupError; std::runtime_error when the run directory
// cannot be created.
PlannedRun plan_run(const ClusterOptions& opt);

// The leaf PSwitch of every rank of job `job`: the index in dep.switches of
// the first PSwitch with a port to the rank's host (a dual-homed host's
// leaves in both planes group the ranks alike). The 16-bit reference needs
// it: each leaf rounds its workers' partial sum (test_data.hpp).
std::vector<uint32_t> leaf_of_rank(const controller::Deployment& dep, uint16_t job);

// plan_run into `run`, with a failure said on stderr after "<tool>: ":
// returns 0, or the exit status (2 for a setup error such as a bad option,
// 1 for anything else).
int plan_run_or_report(const ClusterOptions& opt, PlannedRun& run, const char* tool);

// ------------------------------------------------------ 2.-4., 6. processes

// A child process of the run: a PSwitch, a worker, or a user command.
struct Node {
  std::string name;
  bool is_switch = false;
  pid_t pid = -1;
  bool own_process_group = false;  // signals go to the whole group (the command's children too)
  int out_fd = -1, err_fd = -1;    // captured stdout / stderr; -1: they go to log_path
  std::string out_buffer, err_buffer;
  bool exited = false;
  int status = 0;  // waitpid status once exited
  std::string log_path;
  std::string dpdk_prefix;  // its DPDK runtime directory /var/run/dpdk/<prefix>, removed at tear-down
};

struct NodeSpec {
  std::string name;
  std::string exe;  // looked up in PATH when it has no '/'
  std::vector<std::string> args;
  std::vector<std::string> env;  // "KEY=value" added to this process's environment
  bool capture_stdout = false;
  bool capture_stderr = false;
  bool own_process_group = false;
  std::string dpdk_prefix;
  // The network namespace (a name `ip netns` lists) the node runs in; "":
  // the one NodeSet::set_namespaces gives its name, else the parent's.
  std::string netns;
};

// Called with every complete line a node writes to a captured stream.
using LineHandler = std::function<void(Node& node, const std::string& line, bool is_stderr)>;

// The processes of one run. Construction installs SIGINT/SIGTERM handlers
// (Ctrl-C stops the run in order instead of killing the parent);
// destruction tears down whatever is still running and restores them.
// Children die with the parent (PR_SET_PDEATHSIG), whatever kills it.
class NodeSet {
 public:
  explicit NodeSet(std::string run_dir);
  ~NodeSet();
  NodeSet(const NodeSet&) = delete;
  NodeSet& operator=(const NodeSet&) = delete;

  // The DPDK --file-prefix of node `name` in this run (unique per parent).
  std::string dpdk_prefix(const std::string& name) const;

  // Nodes started from now on run in these network namespaces (node name ->
  // namespace name; --nodes netns): the child enters it before exec.
  void set_namespaces(std::map<std::string, std::string> netns_of_node) { netns_ = std::move(netns_of_node); }

  // 2. Starts every PSwitch of `dep` as `pswitch_exe --node <run_dir>/nodes/<name>.json`
  // (node_spec.hpp; the executable calls run_node_child), servers first
  // (spines, then leaves), each once the previous one is ready. `poll`: how
  // their loops wait when idle. Throws std::runtime_error when one dies or
  // hangs during start-up, or on a signal.
  void start_switches(const controller::Deployment& dep, const std::string& pswitch_exe,
                      const runtime::IdlePolicy& poll);

  // 3. Starts one node. Throws std::runtime_error (fork/pipe failures).
  Node& start(const NodeSpec& spec);

  // 4. Waits up to `timeout_ms` for output, hands complete lines to
  // `on_line`, reaps nodes that exited (their last output is read first).
  void poll(int timeout_ms, const LineHandler& on_line);
  bool signalled() const;             // SIGINT or SIGTERM arrived
  const Node* exited_switch() const;  // a PSwitch that exited, or null
  bool non_switch_running() const;    // any worker / command still running
  std::vector<Node>& nodes() { return nodes_; }

  // 6. SIGTERM to the non-switch nodes, SIGKILL after `grace_s`; then the
  // same for the PSwitches (which write their final counters on SIGTERM);
  // closes the pipes, removes every node's DPDK runtime directory and
  // restores the signal handlers. Idempotent.
  void stop_non_switches(double grace_s);
  void tear_down(double worker_grace_s = 2.0, double switch_grace_s = 5.0);

 private:
  void stop(bool switches, double grace_s);
  std::string run_dir_;
  std::vector<Node> nodes_;
  std::map<std::string, std::string> netns_;
  bool torn_down_ = false;
};

// ---------------------------------------------------------------- 5. collect

// The final counters every PSwitch wrote into the run directory (one JSON
// object per PSwitch; unreadable files give {"node": ..., "error": ...}).
std::vector<nlohmann::json> collect_switch_counters(const PlannedRun& run);

// ---------------------------------------------------------------- 6. report

// The summary JSON's run description (workers and pswitches still empty).
nlohmann::json summary_header(const ClusterOptions& opt, bool in_process);

// Prints per job the slowest worker's time per allreduce, goodput (mean and
// best against the link), the payload bytes its workers moved, for 16-bit
// types how many results were rounded, retransmissions, tree failovers and
// rank 0's per-tree congestion state, from the worker reports in
// summary["workers"]; adds "goodput_gbps", "payload_bytes" and "failover"
// to `summary`.
void report_jobs(const ClusterOptions& opt, nlohmann::json& summary);

// Prints every PSwitch's port, tree and engine-queue counters and adds them
// to summary["pswitches"].
void report_switches(const std::vector<nlohmann::json>& switch_counters, nlohmann::json& summary);

// Prints the RESULT line, sets "ok" and "mismatches" and writes the summary
// to opt.summary_path (if set). `ran`: the run was not interrupted, stalled
// or failed in setup; `why` is appended to a failure line. Returns ok.
bool report_result(const ClusterOptions& opt, nlohmann::json& summary, bool ran, uint32_t failed,
                   uint64_t mismatches, const char* why);

// Removes the run directory when this run created it and it is not to be
// kept; otherwise says on stderr where it is (`tool` prefixes the message).
void finish_run_dir(const PlannedRun& run, bool remove, const char* tool);

// The last `max_bytes` of a log file (for error messages).
std::string tail_of(const std::string& path, size_t max_bytes = 1500);
std::string human_bytes(double bytes);

// The path of the running executable (/proc/self/exe), "" if unknown.
std::string self_exe();

}  // namespace panama::cluster
