// ClusterRun: the steps of a panama-cluster run around a NodeLauncher
// (cluster_run.hpp).
#include "panama/cluster/cluster_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "panama/cluster/test_data.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

}  // namespace

ClusterRun::ClusterRun(const ClusterOptions& opt, std::unique_ptr<NodeLauncher> launcher)
    : opt_(opt), launcher_(std::move(launcher)) {}

int ClusterRun::run() {
  if (const int rc = plan(); rc != 0) return rc;
  if (start()) supervise();
  if (interrupted_) std::fprintf(stderr, "panama-cluster: interrupted, stopping every node\n");
  if (stalled_) {
    std::fprintf(stderr, "panama-cluster: no progress for %.0f s, stopping (see the logs in %s)\n",
                 opt_.stall_timeout_s, run_.run_dir.c_str());
  }
  launcher_->stop(!setup_failed_ && !interrupted_ && !stalled_ && !switch_failed_, workers_);
  return launcher_->exit_code(summarise());
}

// 1. The controller's plan, checks that need it, the start-up lines.
int ClusterRun::plan() {
  if (const int rc = plan_run_or_report(opt_, run_, "panama-cluster"); rc != 0) return rc;
  const controller::Deployment& dep = run_.dep;
  try {
    if (!opt_.fail_switch.empty() &&
        std::none_of(dep.switches.begin(), dep.switches.end(),
                     [&](const controller::SwitchOutput& s) { return s.node.node == opt_.fail_switch; })) {
      throw SetupError("--fail-switch: no PSwitch named '" + opt_.fail_switch + "'");
    }
    launcher_->check(run_, opt_);
  } catch (const SetupError& e) {
    std::fprintf(stderr, "panama-cluster: %s\n", e.what());
    finish_run_dir(run_, true, "panama-cluster");
    return 2;
  }
  const double size_bytes = static_cast<double>(tensor_bytes(opt_));
  std::fprintf(stderr,
               "panama-cluster: %s topology, %zu PSwitch(es), %u job(s) x %u workers, %u tree(s) per job, "
               "%s (%llu %s elements) x %u allreduces, links %.3g Gbit/s%s, %s\n",
               opt_.topology.c_str(), dep.switches.size(), opt_.jobs, opt_.workers, opt_.trees,
               human_bytes(size_bytes).c_str(), static_cast<unsigned long long>(opt_.elems),
               dtype_name(opt_.dtype), opt_.iterations, opt_.link_gbps,
               (opt_.loss + opt_.dup + opt_.reorder) > 0 ? " (fault injection on)" : "",
               launcher_->description().c_str());
  if (opt_.ring_baseline)
    std::fprintf(stderr, "  baseline: host ring allreduce (no in-network aggregation)\n");
  if (opt_.gloo_baseline)
    std::fprintf(stderr,
                 "  baseline: Gloo (torch.distributed) over TCP, Linux bridges in the PSwitches' place\n");
  for (const auto& t : dep.trees) {
    if (opt_.ring_baseline || opt_.gloo_baseline) break;
    std::fprintf(stderr, "  job %u tree %u rooted at %s\n", t.job, t.tree, t.root.c_str());
  }
  std::fprintf(stderr, "  polling loops: %s\n", idle_policy(opt_).describe().c_str());
  std::fprintf(stderr, "  run directory %s\n", run_.run_dir.c_str());
  return 0;
}

// 2. PSwitches, then workers.
bool ClusterRun::start() {
  try {
    launcher_->start(run_, opt_, workers_);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-cluster: %s\n", e.what());
    setup_failed_ = true;
    return false;
  }
}

void ClusterRun::progress_line(uint64_t done_bytes, double total_bytes, double elapsed_s, bool final_line) {
  const auto now = Clock::now();
  if (!opt_.progress || (!final_line && now - last_print_ < std::chrono::milliseconds(500))) return;
  last_print_ = now;
  std::fprintf(stderr, "\r  progress %5.1f%%  %s of %s  %.1fs   %s",
               100.0 * static_cast<double>(done_bytes) / total_bytes,
               human_bytes(static_cast<double>(done_bytes)).c_str(), human_bytes(total_bytes).c_str(),
               elapsed_s, final_line ? "\n" : "");
}

// 3. Until every worker is done: progress, failure injection, a PSwitch
// that dies, a signal, a stall.
void ClusterRun::supervise() {
  // Progress counts payload bytes (the workers' bytes_completed).
  const double size_bytes = static_cast<double>(tensor_bytes(opt_));
  const double total_bytes = size_bytes * opt_.iterations * static_cast<double>(workers_.size());
  const auto start = Clock::now();
  auto last_progress = start;
  uint64_t last_total = 0;
  for (WorkerStatus& w : workers_) w.last_done = start;
  for (;;) {
    launcher_->poll(100, workers_);
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    uint64_t done_bytes = 0;
    bool running = false;
    for (WorkerStatus& w : workers_) {
      if (w.iteration > w.seen_seconds.size()) {  // allreduces finished since the last poll share its time
        const size_t n = w.iteration - w.seen_seconds.size();
        const double each = std::chrono::duration<double>(now - w.last_done).count() / static_cast<double>(n);
        w.seen_seconds.insert(w.seen_seconds.end(), n, each);
        w.last_done = now;
      }
      done_bytes += static_cast<uint64_t>(w.iteration * size_bytes) + (w.running ? w.bytes : 0);
      running = running || w.running;
    }
    if (const std::string gone = launcher_->switch_failure(); !gone.empty()) {
      std::fprintf(stderr, "\npanama-cluster: PSwitch %s\n", gone.c_str());
      switch_failed_ = true;
      break;
    }
    if (done_bytes != last_total) {
      last_total = done_bytes;
      last_progress = now;
    }
    // Failure injection: the named PSwitch is frozen or ended mid-run.
    if (!opt_.fail_switch.empty() && !injected_ && done_bytes >= opt_.fail_at * total_bytes) {
      const std::string what =
          launcher_->fail_switch(opt_.fail_switch, opt_.fail_signal == "KILL"   ? FailMode::kKill
                                                   : opt_.fail_signal == "DOWN" ? FailMode::kLinkDown
                                                                                : FailMode::kStop);
      if (!what.empty()) {
        injected_ = true;
        injected_at_s_ = elapsed;
        std::fprintf(stderr, "\npanama-cluster: %s at %.3f s (%.1f%% done)\n", what.c_str(), elapsed,
                     100.0 * static_cast<double>(done_bytes) / total_bytes);
      }
    }
    progress_line(done_bytes, total_bytes, elapsed, !running);
    if (!running) break;
    if (launcher_->interrupted()) {
      interrupted_ = true;
      break;
    }
    if (std::chrono::duration<double>(now - last_progress).count() > opt_.stall_timeout_s) {
      stalled_ = true;
      break;
    }
  }
  if (opt_.progress && (interrupted_ || stalled_ || switch_failed_)) std::fprintf(stderr, "\n");
}

// 4. Every worker's report, or what is known of one that has none.
json ClusterRun::collect_workers(uint64_t& mismatches, uint32_t& failed) const {
  json out = json::array();
  for (const WorkerStatus& w : workers_) {
    json r = w.report;
    if (r.is_null()) {
      std::string how = "no report: " + (w.ended.empty() ? std::string("did not finish") : w.ended);
      if (interrupted_) how += " after the run was interrupted";
      r = {{"ok", false},
           {"error", how},
           {"iterations_done", w.iteration},
           {"bytes_in_progress", w.bytes},
           {"seconds", w.seen_seconds},
           {"job", w.job},
           {"rank", w.rank}};
      if (w.signal != 0) r["signal"] = w.signal;
    }
    r["host"] = w.host;
    if (!r.value("ok", false)) {
      ++failed;
      if (!interrupted_ && !stalled_) {
        std::fprintf(stderr, "worker %s failed: %s\n%s", w.host.c_str(), r.value("error", "mismatch").c_str(),
                     w.log_path.empty() ? "" : (tail_of(w.log_path) + "\n").c_str());
      }
    }
    mismatches += r.value("mismatches", uint64_t{0});
    out.push_back(r);
  }
  return out;
}

// 5. The summary: goodput per job, rank 0's per-tree statistics, every
// PSwitch's counters; the exit status.
int ClusterRun::summarise() {
  json summary = summary_header(opt_, opt_.in_process);
  uint64_t mismatches = 0;
  uint32_t failed = 0;
  summary["workers"] = collect_workers(mismatches, failed);
  if (injected_) {
    summary["failure_injected"] = {
        {"pswitch", opt_.fail_switch}, {"how", opt_.fail_signal}, {"at_s", injected_at_s_}};
  }
  std::printf("\n== PANAMA virtual cluster summary%s ==\n", launcher_->summary_title().c_str());
  report_jobs(opt_, summary);
  report_switches(launcher_->switch_counters(run_), summary);
  const bool ran = !setup_failed_ && !interrupted_ && !stalled_ && !switch_failed_;
  const bool ok = report_result(opt_, summary, ran, failed, mismatches,
                                interrupted_ ? ", interrupted" : (stalled_ ? ", stalled" : ""));
  // A failed run keeps its logs for a look; an interrupted one does not.
  finish_run_dir(run_, ok || interrupted_, "panama-cluster");
  if (interrupted_) return 130;
  return ok ? 0 : 1;
}

int run_cluster(const ClusterOptions& opt) {
  std::unique_ptr<NodeLauncher> launcher;
  if (opt.in_process) {
    launcher = make_thread_launcher();
  } else {
    const std::string exe = self_exe();
    if (exe.empty()) {
      std::fprintf(stderr, "panama-cluster: cannot find its own executable (/proc/self/exe)\n");
      return 1;
    }
    launcher = opt.netns ? make_netns_launcher(exe) : make_process_launcher(exe);
  }
  ClusterRun run(opt, std::move(launcher));
  return run.run();
}

}  // namespace panama::cluster
