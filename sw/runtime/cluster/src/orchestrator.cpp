// The virtual cluster's parent process: plan, start, watch, summarise, clean up.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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
#include "panama/controller/controller.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_signal{0};
void on_signal(int sig) {
  g_signal.store(sig);
}

struct Child {
  std::string name;
  bool is_worker = false;
  pid_t pid = -1;
  int out_fd = -1;  // the child's stdout (workers' progress and report)
  std::string buffer;
  bool exited = false;
  int status = 0;
  // Worker progress.
  uint32_t iteration = 0;
  uint64_t bytes = 0;
  json report;
  std::string log_path;
};

pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path,
            int* out_fd) {
  int fds[2] = {-1, -1};
  if (out_fd && pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Die with the parent, whatever kills it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      dup2(log, STDERR_FILENO);
      if (!out_fd) dup2(log, STDOUT_FILENO);
    }
    if (out_fd) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "exec %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  if (out_fd) {
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    *out_fd = fds[0];
  }
  return pid;
}

std::string tail_of(const std::string& path, size_t max_bytes = 1500) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.size() > max_bytes ? "..." + s.substr(s.size() - max_bytes) : s;
}

void read_lines(Child& c) {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(c.out_fd, buf, sizeof buf);
    if (n <= 0) break;
    c.buffer.append(buf, static_cast<size_t>(n));
  }
  size_t nl;
  while ((nl = c.buffer.find('\n')) != std::string::npos) {
    const std::string line = c.buffer.substr(0, nl);
    c.buffer.erase(0, nl + 1);
    if (line.rfind("P ", 0) == 0) {
      unsigned it = 0;
      unsigned long long bytes = 0;
      if (std::sscanf(line.c_str() + 2, "%u %llu", &it, &bytes) == 2) {
        c.iteration = it;
        c.bytes = bytes;
      }
    } else if (line.rfind("R ", 0) == 0) {
      try {
        c.report = json::parse(line.substr(2));
      } catch (const json::exception&) {
        c.report = {{"ok", false}, {"error", "unreadable report"}};
      }
    }
  }
}

void stop_children(std::vector<Child>& children, bool workers, double grace_s) {
  for (Child& c : children) {
    if (!c.exited && c.is_worker == workers) kill(c.pid, SIGTERM);
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_s);
  for (;;) {
    bool left = false;
    for (Child& c : children) {
      if (c.exited || c.is_worker != workers) continue;
      if (waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
      } else {
        left = true;
      }
    }
    if (!left) return;
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (Child& c : children) {
    if (!c.exited && c.is_worker == workers) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      c.exited = true;
    }
  }
}

// Waits until PSwitch `c` is ready: it writes its first counters file after
// every port has started. (A memif server socket exists earlier, at device
// probe; a client that connects before the server port is started is turned
// away and does not retry.) Throws when a PSwitch died or it takes too long.
void wait_until_ready(const Child& ready, const std::string& stats_path, std::vector<Child>& children) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(stats_path)) {
    for (Child& c : children) {
      if (!c.exited && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        throw std::runtime_error("PSwitch " + c.name + " exited during start-up:\n" + tail_of(c.log_path));
      }
    }
    if (g_signal.load() != 0) throw std::runtime_error("interrupted during start-up");
    if (Clock::now() > deadline)
      throw std::runtime_error("timed out waiting for PSwitch " + ready.name + " to start");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string human_bytes(double b) {
  char s[32];
  if (b >= 1 << 30) {
    std::snprintf(s, sizeof s, "%.2f GiB", b / (1 << 30));
  } else if (b >= 1 << 20) {
    std::snprintf(s, sizeof s, "%.2f MiB", b / (1 << 20));
  } else if (b >= 1 << 10) {
    std::snprintf(s, sizeof s, "%.2f KiB", b / (1 << 10));
  } else {
    std::snprintf(s, sizeof s, "%.0f B", b);
  }
  return s;
}

}  // namespace

uint64_t parse_size(const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw std::invalid_argument("not a size: '" + text + "' (e.g. 64MiB, 4096, 1GiB)");
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::tolower(ch); });
  static const std::map<std::string, double> units = {
      {"", 1},     {"b", 1},         {"k", 1024},    {"kb", 1e3}, {"kib", 1024},   {"m", 1 << 20},
      {"mb", 1e6}, {"mib", 1 << 20}, {"g", 1 << 30}, {"gb", 1e9}, {"gib", 1 << 30}};
  auto it = units.find(unit);
  if (it == units.end() || !(v >= 0) || !std::isfinite(v)) {
    throw std::invalid_argument("not a size: '" + text + "' (units: B, KiB, MiB, GiB, KB, MB, GB)");
  }
  return static_cast<uint64_t>(std::llround(v * it->second));
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

int run_cluster(const ClusterOptions& opt, const std::string& self_exe) {
  // ---------------------------------------------------------------- plan
  json cluster_desc, jobs_desc;
  const uint32_t hosts = opt.workers * opt.jobs;
  if (opt.topology == "single") {
    cluster_desc = controller::single_switch_cluster(hosts, opt.link_gbps);
  } else if (opt.topology == "two-tier") {
    cluster_desc = controller::two_tier_cluster(hosts, opt.leaves, opt.spines, opt.link_gbps);
  } else {
    std::fprintf(stderr, "panama-cluster: --topology must be single or two-tier\n");
    return 2;
  }
  cluster_desc["packet_memory"] = opt.packet_memory;
  cluster_desc["port_defaults"] = {{"queue_bytes", opt.queue_bytes},
                                   {"ecn_k_bytes", opt.ecn_k_bytes},
                                   {"loss", opt.loss},
                                   {"dup", opt.dup},
                                   {"reorder", opt.reorder},
                                   {"seed", opt.seed}};
  jobs_desc = {
      {"jobs", json::array()},
      {"elems_per_packet", opt.elems_per_packet},
      {"shares", opt.shares},
      {"congestion", {{"rto_min_us", opt.rto_min_us}, {"rto_initial_us", std::max(opt.rto_min_us, 5000u)}}}};
  for (uint32_t j = 0; j < opt.jobs; ++j) {
    json ws = json::array();
    // Interleave jobs over hosts so that on two tiers every job spans the leaves.
    for (uint32_t w = 0; w < opt.workers; ++w) ws.push_back("w" + std::to_string(w * opt.jobs + j));
    jobs_desc["jobs"].push_back({{"id", j + 1}, {"workers", ws}, {"trees", opt.trees}, {"weight", j + 1}});
  }

  std::string run_dir = opt.run_dir;
  if (run_dir.empty()) {
    char tmpl[] = "/tmp/panama-cluster-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::fprintf(stderr, "panama-cluster: cannot create a run directory: %s\n", std::strerror(errno));
      return 1;
    }
    run_dir = tmpl;
  }
  controller::Deployment dep;
  try {
    controller::ClusterDesc cd = controller::parse_cluster(cluster_desc);
    cd.run_dir = run_dir;
    dep = controller::plan_deployment(cd, controller::parse_jobs(jobs_desc));
    controller::write_deployment(dep, run_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-cluster: invalid set-up: %s\n", e.what());
    if (opt.run_dir.empty()) std::filesystem::remove_all(run_dir);
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

  // ---------------------------------------------------------------- start
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {};
  struct sigaction old_term {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  // DPDK's per-process runtime directories (/var/run/dpdk/<prefix>): unique
  // per run, removed at the end.
  auto prefix_of = [](const std::string& node) { return "pnm" + std::to_string(getpid()) + "-" + node; };
  std::vector<Child> children;
  int rc = 0;
  try {
    // memif clients fail to start when their server's socket is missing, so
    // servers first: spines, then leaves (clients of spines, servers of hosts).
    std::vector<const controller::SwitchOutput*> order;
    for (int pass = 0; pass < 2; ++pass) {
      for (const auto& s : dep.switches) {
        bool has_uplink = false;
        for (const auto& p : s.settings.ports) has_uplink = has_uplink || p.uplink;
        if (has_uplink == (pass == 1)) order.push_back(&s);
      }
    }
    for (const controller::SwitchOutput* s : order) {
      Child c;
      c.name = s->node.node;
      c.log_path = run_dir + "/" + c.name + ".log";
      const std::string stats = run_dir + "/" + c.name + ".stats.json";
      c.pid = spawn(self_exe,
                    {"--internal-pswitch", run_dir + "/" + c.name + ".json", "--internal-stats", stats,
                     "--internal-prefix", prefix_of(c.name)},
                    c.log_path, nullptr);
      children.push_back(c);
      wait_until_ready(children.back(), stats, children);
    }
    for (const auto& w : dep.workers) {
      Child c;
      c.name = w.host;
      c.is_worker = true;
      c.log_path = run_dir + "/" + c.name + ".log";
      std::vector<std::string> args = {"--internal-worker",
                                       run_dir + "/" + w.host + ".plan.json",
                                       "--internal-vdev",
                                       w.vdev,
                                       "--internal-prefix",
                                       prefix_of(c.name),
                                       "--seed",
                                       std::to_string(opt.seed),
                                       "--elems",
                                       std::to_string(opt.elems),
                                       "--iterations",
                                       std::to_string(opt.iterations)};
      if (opt.ring_baseline) {
        // Neighbours in rank order within the job.
        auto mac_of_rank = [&](uint32_t rank) {
          for (const auto& o : dep.workers) {
            if (o.plan.job_id == w.plan.job_id && o.plan.rank == rank)
              return config::format_mac(o.plan.local_mac);
          }
          return std::string();
        };
        const uint32_t n = w.plan.world_size;
        args.insert(args.end(), {"--ring-left", mac_of_rank((w.plan.rank + n - 1) % n), "--ring-right",
                                 mac_of_rank((w.plan.rank + 1) % n)});
      }
      c.pid = spawn(self_exe, args, c.log_path, &c.out_fd);
      children.push_back(c);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-cluster: %s\n", e.what());
    rc = 1;
  }

  // ---------------------------------------------------------------- watch
  const auto start = Clock::now();
  auto last_progress = start;
  uint64_t last_total = 0;
  auto last_print = start;
  const bool tty = isatty(STDERR_FILENO) != 0;
  bool interrupted = false, stalled = false;
  const double total_bytes = size_bytes * opt.iterations * static_cast<double>(dep.workers.size());
  while (rc == 0) {
    std::vector<pollfd> pfds;
    for (Child& c : children) {
      if (c.is_worker && c.out_fd >= 0) pfds.push_back(pollfd{c.out_fd, POLLIN, 0});
    }
    poll(pfds.data(), pfds.size(), 100);
    bool workers_left = false;
    uint64_t done_bytes = 0;
    for (Child& c : children) {
      if (c.is_worker && c.out_fd >= 0) read_lines(c);
      if (!c.exited && waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        if (c.out_fd >= 0) read_lines(c);
        if (!c.is_worker) {
          std::fprintf(stderr, "\npanama-cluster: PSwitch %s exited early:\n%s\n", c.name.c_str(),
                       tail_of(c.log_path).c_str());
          rc = 1;
        }
      }
      if (c.is_worker) {
        workers_left = workers_left || !c.exited;
        done_bytes += static_cast<uint64_t>(c.iteration * size_bytes) + (c.exited ? 0 : c.bytes);
      }
    }
    const auto now = Clock::now();
    if (done_bytes != last_total) {
      last_total = done_bytes;
      last_progress = now;
    }
    if (opt.progress && (now - last_print > std::chrono::milliseconds(500) || !workers_left)) {
      last_print = now;
      const double el = std::chrono::duration<double>(now - start).count();
      std::fprintf(stderr, "\r  progress %5.1f%%  %s of %s  %.1fs   ", 100.0 * done_bytes / total_bytes,
                   human_bytes(static_cast<double>(done_bytes)).c_str(), human_bytes(total_bytes).c_str(),
                   el);
    }
    if (!workers_left) break;
    if (g_signal.load() != 0) {
      interrupted = true;
      break;
    }
    if (std::chrono::duration<double>(now - last_progress).count() > opt.stall_timeout_s) {
      stalled = true;
      break;
    }
  }
  if (opt.progress && tty) std::fprintf(stderr, "\n");
  if (interrupted) std::fprintf(stderr, "panama-cluster: interrupted, stopping every process\n");
  if (stalled) {
    std::fprintf(stderr, "panama-cluster: no progress for %.0f s, stopping (see the logs in %s)\n",
                 opt.stall_timeout_s, run_dir.c_str());
  }
  stop_children(children, true, 2.0);
  stop_children(children, false, 5.0);  // PSwitches write their final counters on SIGTERM
  for (Child& c : children) {
    if (c.out_fd >= 0) close(c.out_fd);
  }
  for (const Child& c : children) {
    std::error_code ec;
    std::filesystem::remove_all("/var/run/dpdk/" + prefix_of(c.name), ec);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);

  // ---------------------------------------------------------------- summarise
  json summary = {{"baseline", opt.ring_baseline ? "ring" : "none"},
                  {"topology", opt.topology},
                  {"workers_per_job", opt.workers},
                  {"jobs", opt.jobs},
                  {"trees", opt.trees},
                  {"bytes", opt.elems * 4},
                  {"iterations", opt.iterations},
                  {"link_gbps", opt.link_gbps},
                  {"workers", json::array()},
                  {"pswitches", json::array()}};
  uint64_t mismatches = 0;
  uint32_t failed = 0;
  for (Child& c : children) {
    if (!c.is_worker) continue;
    json r = c.report.is_null() ? json{{"ok", false}, {"error", "no report (process died?)"}} : c.report;
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
  // Goodput per job: tensor bytes over the slowest worker's time per iteration.
  for (uint32_t j = 1; j <= opt.jobs; ++j) {
    std::vector<double> worst(opt.iterations, 0.0);
    const json* rank0 = nullptr;
    uint64_t retrans = 0, timeouts = 0;
    for (const json& r : summary["workers"]) {
      if (r.value("job", 0u) != j || !r.contains("seconds")) continue;
      if (r.value("rank", 1u) == 0) rank0 = &r;
      retrans += r.value("retransmissions", uint64_t{0});
      timeouts += r.value("timeouts", uint64_t{0});
      for (size_t i = 0; i < r["seconds"].size() && i < worst.size(); ++i) {
        worst[i] = std::max(worst[i], r["seconds"][i].get<double>());
      }
    }
    double total_s = 0;
    std::printf("job %u:", j);
    for (double s : worst) {
      total_s += s;
      std::printf(" %.3fs", s);
    }
    const double gbps = total_s > 0 ? size_bytes * opt.iterations * 8 / total_s / 1e9 : 0.0;
    double best = 0;
    for (double s : worst) best = s > 0 ? std::max(best, size_bytes * 8 / s / 1e9) : best;
    std::printf(
        "\n  goodput %.3f Gbit/s mean, %.3f best (%.1f%% of the %.3g Gbit/s link); retransmissions %llu, "
        "timeouts %llu (all workers)\n",
        gbps, best, opt.link_gbps > 0 ? 100.0 * gbps / opt.link_gbps : 0.0, opt.link_gbps,
        static_cast<unsigned long long>(retrans), static_cast<unsigned long long>(timeouts));
    summary["goodput_gbps"][std::to_string(j)] = gbps;
    if (rank0) {
      for (const json& t : (*rank0)["trees"]) {
        std::printf(
            "  tree %u: cwnd %.1f (max %.1f, cap %u), alpha %.3f, CE results %llu, cwnd cuts %llu, "
            "retransmissions %llu, srtt %.0f us\n",
            t.value("tree", 0u), t.value("cwnd", 0.0), t.value("max_cwnd", 0.0), t.value("cwnd_cap", 0u),
            t.value("alpha", 0.0), static_cast<unsigned long long>(t.value("results_ce", uint64_t{0})),
            static_cast<unsigned long long>(t.value("cwnd_reductions", uint64_t{0})),
            static_cast<unsigned long long>(t.value("retransmissions", uint64_t{0})),
            t.value("srtt_us", 0.0));
      }
    }
  }
  for (const auto& s : dep.switches) {
    const std::string path = run_dir + "/" + s.node.node + ".stats.json";
    std::ifstream f(path);
    if (!f) continue;
    try {
      const json st = json::parse(f);
      summary["pswitches"].push_back(st);
      std::printf("PSwitch %s:\n", s.node.node.c_str());
      for (const json& p : st["ports"]) {
        std::printf(
            "  port %-7s rx %9llu tx %9llu  ecn %7llu  qdrop %5llu  maxq %6.0f KiB  inj loss/dup/reo "
            "%llu/%llu/%llu\n",
            p["name"].get<std::string>().c_str(), (unsigned long long)p["rx_frames"].get<uint64_t>(),
            (unsigned long long)p["tx_frames"].get<uint64_t>(),
            (unsigned long long)p["ecn_marked"].get<uint64_t>(),
            (unsigned long long)p["queue_tail_drops"].get<uint64_t>(),
            p["max_queue_bytes"].get<uint64_t>() / 1024.0,
            (unsigned long long)p["injected_loss"].get<uint64_t>(),
            (unsigned long long)p["injected_dup"].get<uint64_t>(),
            (unsigned long long)p["injected_reorder"].get<uint64_t>());
      }
      for (const json& t : st["trees"]) {
        const json& e = t["engine"];
        std::printf(
            "  job %u tree %u: aggregated %llu, emitted %llu, duplicates %llu, retrans served %llu, "
            "ecn in %llu, seq-window drops %llu\n",
            t["job"].get<unsigned>(), t["tree"].get<unsigned>(),
            (unsigned long long)e.value("aggregated", uint64_t{0}),
            (unsigned long long)e.value("emitted", uint64_t{0}),
            (unsigned long long)e.value("duplicates", uint64_t{0}),
            (unsigned long long)e.value("retrans_served", uint64_t{0}),
            (unsigned long long)e.value("ecn_marked", uint64_t{0}),
            (unsigned long long)e.value("drop_seq_window", uint64_t{0}));
      }
    } catch (const json::exception&) {
      std::printf("PSwitch %s: unreadable counters file %s\n", s.node.node.c_str(), path.c_str());
    }
  }
  const bool ok = rc == 0 && !interrupted && !stalled && failed == 0 && mismatches == 0;
  summary["ok"] = ok;
  summary["mismatches"] = mismatches;
  if (ok) {
    std::printf("RESULT: all %zu x %u allreduces bit-exact against the local reference\n", dep.workers.size(),
                opt.iterations);
  } else {
    std::printf("RESULT: FAILED (%u worker(s) failed, %llu mismatching elements%s)\n", failed,
                static_cast<unsigned long long>(mismatches),
                interrupted ? ", interrupted" : (stalled ? ", stalled" : ""));
  }
  std::fflush(stdout);
  if (!opt.summary_path.empty()) {
    std::ofstream f(opt.summary_path);
    f << summary.dump(2) << "\n";
  }
  // A failed run keeps its logs for a look; an interrupted one does not.
  if (!opt.keep && opt.run_dir.empty() && (ok || interrupted)) {
    std::filesystem::remove_all(run_dir);
  } else {
    std::fprintf(stderr, "panama-cluster: configs, plans, logs and counters kept in %s\n", run_dir.c_str());
  }
  if (interrupted) return 130;
  return ok ? 0 : 1;
}

}  // namespace panama::cluster
