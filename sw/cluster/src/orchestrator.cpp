// panama-cluster's parent process: the steps of orchestration.hpp around its
// own allreduce workers (progress, stall detection) and its summary.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/orchestration.hpp"
#include "panama/controller/controller.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

}  // namespace

uint64_t parse_size(const std::string& text) {
  const std::string hint =
      "not a size: '" + text + "' (e.g. 64MiB, 4096, 1.5GiB; units B, KiB, MiB, GiB, KB, MB, GB)";
  // Digits, an optional fraction, a unit; parsed exactly, every step checked for overflow.
  size_t i = 0;
  uint64_t whole = 0;
  bool any_digit = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    any_digit = true;
    if (__builtin_mul_overflow(whole, 10u, &whole) ||
        __builtin_add_overflow(whole, static_cast<uint64_t>(text[i] - '0'), &whole)) {
      throw std::invalid_argument("size '" + text + "' is too large (more than 2^64 bytes)");
    }
  }
  std::string fraction;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) fraction += text[i];
    any_digit = any_digit || !fraction.empty();
  }
  if (!any_digit) throw std::invalid_argument(hint);
  std::string unit = text.substr(i);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::tolower(ch); });
  static const std::map<std::string, uint64_t> units = {
      {"", 1},           {"b", 1},          {"k", 1024},           {"kb", 1000},       {"kib", 1024},
      {"m", 1u << 20},   {"mb", 1000000},   {"mib", 1u << 20},     {"g", 1u << 30},    {"gb", 1000000000},
      {"gib", 1u << 30}, {"t", 1ull << 40}, {"tb", 1000000000000}, {"tib", 1ull << 40}};
  auto it = units.find(unit);
  if (it == units.end()) throw std::invalid_argument(hint);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, it->second, &bytes)) {
    throw std::invalid_argument("size '" + text + "' is too large (more than 2^64 bytes)");
  }
  // The fraction, rounded to the nearest byte: at most 19 digits keep the product in range.
  if (!fraction.empty()) {
    const std::string f = fraction.substr(0, 18);
    uint64_t num = 0, den = 1;
    for (char ch : f) {
      num = num * 10 + static_cast<uint64_t>(ch - '0');
      den *= 10;
    }
    const unsigned __int128 part = (static_cast<unsigned __int128>(num) * it->second + den / 2) / den;
    if (part > UINT64_MAX - bytes) throw std::invalid_argument("size '" + text + "' is too large");
    bytes += static_cast<uint64_t>(part);
  }
  return bytes;
}

uint64_t worker_memory_bytes(uint64_t elems, uint32_t workers_per_job, uint32_t jobs) {
  const unsigned __int128 need =
      static_cast<unsigned __int128>(elems) * 4u * 2u * workers_per_job * std::max<uint32_t>(jobs, 1);
  return need > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(need);
}

uint64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

std::vector<std::string> node_eal_args(const std::string& vdev, unsigned memory_mb,
                                       const std::string& prefix) {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> a = {"--no-huge", "-m", std::to_string(memory_mb), "--no-pci", "--no-telemetry",
                                "--log-level=*:error", "--file-prefix=" + prefix,
                                // One lcore that may run on every CPU: the processes share the machine.
                                "--lcores=0@(0-" + std::to_string(cpus - 1) + ")"};
  if (!vdev.empty()) a.push_back("--vdev=" + vdev);
  return a;
}

namespace {

// Worker progress and reports, from the lines a worker prints on stdout.
struct WorkerState {
  uint32_t iteration = 0;
  uint64_t bytes = 0;
  json report;
  // What the parent saw of the allreduces this worker finished (seconds
  // each, from its progress lines): the summary of a run cut short.
  std::vector<double> seen_seconds;
  Clock::time_point last_done{};
};

void worker_line(WorkerState& w, const std::string& line, Clock::time_point now) {
  if (line.rfind("P ", 0) == 0) {
    unsigned it = 0;
    unsigned long long bytes = 0;
    if (std::sscanf(line.c_str() + 2, "%u %llu", &it, &bytes) == 2) {
      if (it > w.seen_seconds.size()) {  // allreduces finished since the last line share its time
        const size_t n = it - w.seen_seconds.size();
        const double each = std::chrono::duration<double>(now - w.last_done).count() / static_cast<double>(n);
        w.seen_seconds.insert(w.seen_seconds.end(), n, each);
        w.last_done = now;
      }
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

// 3. The allreduce workers, one per planned host.
void start_workers(NodeSet& nodes, const PlannedRun& run, const ClusterOptions& opt,
                   const std::string& self) {
  for (const auto& w : run.dep.workers) {
    NodeSpec spec;
    spec.name = w.host;
    spec.exe = self;
    spec.capture_stdout = true;
    spec.dpdk_prefix = nodes.dpdk_prefix(w.host);
    spec.args = {"--internal-worker",
                 run.run_dir + "/" + w.host + ".plan.json",
                 "--internal-vdev",
                 w.vdev,
                 "--internal-prefix",
                 spec.dpdk_prefix,
                 "--seed",
                 std::to_string(opt.seed),
                 "--elems",
                 std::to_string(opt.elems),
                 "--iterations",
                 std::to_string(opt.iterations),
                 "--internal-idle-us",
                 std::to_string(opt.idle_sleep_us),
                 "--internal-idle-spin-us",
                 std::to_string(idle_spin_us(opt)),
                 "--internal-streaming",
                 std::to_string(opt.streaming_copy_bytes),
                 "--ring-channels",
                 std::to_string(opt.ring_channels)};
    if (w.vdevs.size() > 1) spec.args.insert(spec.args.end(), {"--internal-vdev2", w.vdevs[1]});
    if (opt.ring_baseline) {
      // Neighbours in rank order within the job.
      auto mac_of_rank = [&](uint32_t rank) {
        for (const auto& o : run.dep.workers) {
          if (o.plan.job_id == w.plan.job_id && o.plan.rank == rank)
            return config::format_mac(o.plan.local_mac);
        }
        return std::string();
      };
      const uint32_t n = w.plan.world_size;
      spec.args.insert(spec.args.end(), {"--ring-left", mac_of_rank((w.plan.rank + n - 1) % n),
                                         "--ring-right", mac_of_rank((w.plan.rank + 1) % n)});
    }
    nodes.start(spec);
  }
}

struct Supervision {
  bool interrupted = false, stalled = false, switch_failed = false;
  pid_t injected_pid = -1;  // the PSwitch stopped by --fail-switch
  double injected_at_s = 0;
};

// "killed by signal 9 (SIGKILL: Killed)", "exited with status 3", "running".
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

// 4. Until every worker is done: progress, a PSwitch that dies, a signal, a stall.
Supervision supervise_workers(NodeSet& nodes, std::map<std::string, WorkerState>& workers,
                              const ClusterOptions& opt, double total_bytes) {
  Supervision sv;
  const double size_bytes = static_cast<double>(opt.elems) * 4.0;
  const auto start = Clock::now();
  auto last_progress = start, last_print = start;
  uint64_t last_total = 0;
  for (const Node& n : nodes.nodes()) {
    if (!n.is_switch) workers[n.name].last_done = start;
  }
  for (;;) {
    nodes.poll(100, [&](Node& n, const std::string& line, bool) {
      worker_line(workers[n.name], line, Clock::now());
    });
    const Node* gone = nodes.exited_switch();
    if (gone && gone->pid == sv.injected_pid) gone = nullptr;  // killed on purpose
    if (const Node* s = gone) {
      std::fprintf(stderr, "\npanama-cluster: PSwitch %s exited early (%s):\n%s\n", s->name.c_str(),
                   how_it_ended(*s).c_str(), tail_of(s->log_path).c_str());
      sv.switch_failed = true;
      break;
    }
    uint64_t done_bytes = 0;
    for (const Node& n : nodes.nodes()) {
      if (n.is_switch) continue;
      const WorkerState& w = workers[n.name];
      done_bytes += static_cast<uint64_t>(w.iteration * size_bytes) + (n.exited ? 0 : w.bytes);
    }
    const bool running = nodes.non_switch_running();
    const auto now = Clock::now();
    if (done_bytes != last_total) {
      last_total = done_bytes;
      last_progress = now;
    }
    // Failure injection: the named PSwitch stops (SIGSTOP) or dies (SIGKILL) mid-run.
    if (!opt.fail_switch.empty() && sv.injected_pid < 0 && done_bytes >= opt.fail_at * total_bytes) {
      for (const Node& n : nodes.nodes()) {
        if (!n.is_switch || n.name != opt.fail_switch || n.exited) continue;
        kill(n.pid, opt.fail_signal == "KILL" ? SIGKILL : SIGSTOP);
        sv.injected_pid = n.pid;
        sv.injected_at_s = std::chrono::duration<double>(now - start).count();
        std::fprintf(stderr, "\npanama-cluster: SIG%s to PSwitch %s at %.3f s (%.1f%% done)\n",
                     opt.fail_signal.c_str(), n.name.c_str(), sv.injected_at_s,
                     100.0 * done_bytes / total_bytes);
      }
    }
    if (opt.progress && (now - last_print > std::chrono::milliseconds(500) || !running)) {
      last_print = now;
      const double el = std::chrono::duration<double>(now - start).count();
      std::fprintf(stderr, "\r  progress %5.1f%%  %s of %s  %.1fs   ", 100.0 * done_bytes / total_bytes,
                   human_bytes(static_cast<double>(done_bytes)).c_str(), human_bytes(total_bytes).c_str(),
                   el);
    }
    if (!running) break;
    if (nodes.signalled()) {
      sv.interrupted = true;
      break;
    }
    if (std::chrono::duration<double>(now - last_progress).count() > opt.stall_timeout_s) {
      sv.stalled = true;
      break;
    }
  }
  return sv;
}

// A worker without a final report: how it ended (exit status or the signal
// that killed it) and what the parent saw of its progress.
json partial_report(const Node& c, const WorkerState& ws, const controller::Deployment& dep,
                    bool interrupted) {
  std::string how = "no report: " + how_it_ended(c);
  if (interrupted) how += " after the run was interrupted";
  json r = {{"ok", false},
            {"error", how},
            {"iterations_done", ws.iteration},
            {"bytes_in_progress", ws.bytes},
            {"seconds", ws.seen_seconds}};
  if (c.exited && WIFSIGNALED(c.status)) r["signal"] = WTERMSIG(c.status);
  for (const auto& w : dep.workers) {
    if (w.host == c.name) {
      r["job"] = w.plan.job_id;
      r["rank"] = w.plan.rank;
    }
  }
  return r;
}

// 5. The summary: goodput per job, rank 0's per-tree statistics, every
// PSwitch's counters; the exit status.
int summarise(const ClusterOptions& opt, const PlannedRun& run, NodeSet& nodes,
              std::map<std::string, WorkerState>& workers, int rc, bool interrupted, bool stalled) {
  const controller::Deployment& dep = run.dep;
  json summary = summary_header(opt, false);
  uint64_t mismatches = 0;
  uint32_t failed = 0;
  for (const Node& c : nodes.nodes()) {
    if (c.is_switch) continue;
    const WorkerState& ws = workers[c.name];
    json r = ws.report.is_null() ? partial_report(c, ws, dep, interrupted) : ws.report;
    r["host"] = c.name;
    if (!r.value("ok", false)) {
      ++failed;
      if (!interrupted && !stalled) {
        std::fprintf(stderr, "worker %s failed: %s\n%s\n", c.name.c_str(),
                     r.value("error", "mismatch").c_str(), tail_of(c.log_path).c_str());
      }
    }
    mismatches += r.value("mismatches", uint64_t{0});
    summary["workers"].push_back(r);
  }
  std::printf("\n== PANAMA virtual cluster summary ==\n");
  report_jobs(opt, summary);
  report_switches(collect_switch_counters(run), summary);
  const bool ok = report_result(opt, summary, rc == 0 && !interrupted && !stalled, failed, mismatches,
                                interrupted ? ", interrupted" : (stalled ? ", stalled" : ""));
  // A failed run keeps its logs for a look; an interrupted one does not.
  finish_run_dir(run, !opt.keep && (ok || interrupted), "panama-cluster");
  if (interrupted) return 130;
  return ok ? 0 : 1;
}

}  // namespace

int run_cluster(const ClusterOptions& opt, const std::string& self_exe) {
  // 1. plan
  PlannedRun run;
  if (const int rc = plan_run_or_report(opt, run, "panama-cluster"); rc != 0) return rc;
  const controller::Deployment& dep = run.dep;
  const std::string& run_dir = run.run_dir;
  if (!opt.fail_switch.empty() &&
      std::none_of(dep.switches.begin(), dep.switches.end(),
                   [&](const controller::SwitchOutput& s) { return s.node.node == opt.fail_switch; })) {
    std::fprintf(stderr, "panama-cluster: --fail-switch: no PSwitch named '%s'\n", opt.fail_switch.c_str());
    finish_run_dir(run, true, "panama-cluster");
    return 2;
  }
  const double size_bytes = static_cast<double>(opt.elems) * 4.0;
  std::fprintf(stderr,
               "panama-cluster: %s topology, %zu PSwitch(es), %u job(s) x %u workers, %u tree(s) per job, "
               "%s x %u allreduces, links %.3g Gbit/s%s\n",
               opt.topology.c_str(), dep.switches.size(), opt.jobs, opt.workers, opt.trees,
               human_bytes(size_bytes).c_str(), opt.iterations, opt.link_gbps,
               (opt.loss + opt.dup + opt.reorder) > 0 ? " (fault injection on)" : "");
  if (opt.ring_baseline)
    std::fprintf(stderr, "  baseline: host ring allreduce (no in-network aggregation)\n");
  for (const auto& t : dep.trees) {
    std::fprintf(stderr, "  job %u tree %u rooted at %s\n", t.job, t.tree, t.root.c_str());
  }
  std::fprintf(stderr, "  run directory %s\n", run_dir.c_str());

  // 2.-3. bring up the PSwitches, start the workers
  NodeSet nodes(run_dir);
  std::map<std::string, WorkerState> workers;
  int rc = 0;
  try {
    nodes.start_switches(dep, self_exe, opt.idle_sleep_us, idle_spin_us(opt));
    start_workers(nodes, run, opt, self_exe);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-cluster: %s\n", e.what());
    rc = 1;
  }

  // 4. supervise
  Supervision sv;
  if (rc == 0) {
    sv = supervise_workers(nodes, workers, opt,
                           size_bytes * opt.iterations * static_cast<double>(dep.workers.size()));
    if (sv.switch_failed) rc = 1;
  }
  const bool interrupted = sv.interrupted, stalled = sv.stalled;
  if (opt.progress && isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
  if (interrupted) std::fprintf(stderr, "panama-cluster: interrupted, stopping every process\n");
  if (stalled) {
    std::fprintf(stderr, "panama-cluster: no progress for %.0f s, stopping (see the logs in %s)\n",
                 opt.stall_timeout_s, run_dir.c_str());
  }
  // A frozen PSwitch would sit out the tear-down's SIGTERM grace period.
  if (sv.injected_pid > 0 && opt.fail_signal == "STOP") kill(sv.injected_pid, SIGCONT);
  // 6. tear down (before the summary: the PSwitches write their final counters on SIGTERM)
  nodes.tear_down();

  // 5. collect
  return summarise(opt, run, nodes, workers, rc, interrupted, stalled);
}

}  // namespace panama::cluster
