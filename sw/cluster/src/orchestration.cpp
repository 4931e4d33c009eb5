// The steps of a virtual-cluster run (plan, bring-up of the PSwitches, start
// of the nodes, supervision, collection, tear-down), used by panama-cluster
// and panama-torchrun.
#include "panama/cluster/orchestration.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "panama/cluster/node_spec.hpp"
#include "panama/cluster/test_data.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::atomic<int> g_signal{0};
void on_signal(int sig) {
  g_signal.store(sig);
}

struct sigaction g_old_int {};
struct sigaction g_old_term {};

// Reads what is available on `fd` into `buffer` and hands out complete lines.
void drain(Node& node, int fd, std::string& buffer, bool is_stderr, const LineHandler& on_line) {
  if (fd < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    buffer.append(buf, static_cast<size_t>(n));
  }
  size_t nl;
  while ((nl = buffer.find('\n')) != std::string::npos) {
    const std::string line = buffer.substr(0, nl);
    buffer.erase(0, nl + 1);
    if (on_line) on_line(node, line, is_stderr);
  }
}

// Waits until PSwitch `ready` has written its first counters file, which it
// does once every port has started. (A memif server socket exists earlier, at
// device probe; a client that connects before the server port is started is
// turned away and does not retry.)
void wait_until_ready(const Node& ready, const std::string& stats_path, std::vector<Node>& nodes) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(stats_path)) {
    for (Node& c : nodes) {
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

}  // namespace

// ------------------------------------------------------------------ 1. plan

PlannedRun plan_run(const ClusterOptions& opt) {
  json cluster_desc;
  const uint32_t hosts = opt.workers * opt.jobs;
  if (opt.pool_slots > 0 && opt.dtype != wire::ElemType::kFloat32 && opt.topology != "single") {
    // A 16-bit sum is rounded at every engine that emits it (each leaf's
    // partial, then the root's) but once on the ring: with more than one
    // leaf the two ways give different bits, and the workers' reference
    // cannot tell which way each group went.
    throw SetupError("--pool with --dtype " + std::string(dtype_name(opt.dtype)) +
                     " needs --topology single (a 16-bit group summed on the ring is rounded once, in the "
                     "network at every leaf too)");
  }
  if (opt.topology == "single") {
    cluster_desc = controller::single_switch_cluster(hosts, opt.link_gbps);
  } else if (opt.topology == "two-tier") {
    if (opt.dual_homed && (opt.leaves < 2 || opt.leaves % 2 != 0))
      throw SetupError("--topology dual-homed needs an even number of leaves (two planes)");
    cluster_desc = controller::two_tier_cluster(hosts, opt.leaves, opt.spines, opt.link_gbps, opt.dual_homed);
  } else {
    throw SetupError("--topology must be single or two-tier");
  }
  cluster_desc["packet_memory"] = opt.packet_memory;
  cluster_desc["engine_ecn_k_bytes"] = opt.engine_ecn_k_bytes;
  cluster_desc["port_defaults"] = {{"queue_bytes", opt.queue_bytes},
                                   {"ecn_k_bytes", opt.ecn_k_bytes},
                                   {"loss", opt.loss},
                                   {"dup", opt.dup},
                                   {"reorder", opt.reorder},
                                   {"seed", opt.seed}};
  json congestion = {{"rto_min_us", opt.rto_min_us}, {"rto_initial_us", std::max(opt.rto_min_us, 5000u)}};
  if (opt.retry_budget > 0) congestion["retry_budget"] = opt.retry_budget;
  if (opt.failover_after > 0) congestion["failover_after"] = opt.failover_after;
  json jobs_desc = {{"jobs", json::array()},
                    {"elems_per_packet", opt.elems_per_packet},
                    {"shares", opt.shares},
                    {"congestion", congestion}};
  for (uint32_t j = 0; j < opt.jobs; ++j) {
    json ws = json::array();
    // Interleave jobs over hosts so that on two tiers every job spans the leaves.
    for (uint32_t w = 0; w < opt.workers; ++w) ws.push_back("w" + std::to_string(w * opt.jobs + j));
    jobs_desc["jobs"].push_back({{"id", j + 1}, {"workers", ws}, {"trees", opt.trees}, {"weight", j + 1}});
    if (opt.backup_trees) jobs_desc["jobs"].back()["backup_trees"] = true;
    const bool pooled = opt.pool_slots > 0 &&
                        (opt.pooled_jobs.empty() || std::find(opt.pooled_jobs.begin(), opt.pooled_jobs.end(),
                                                              j + 1) != opt.pooled_jobs.end());
    if (pooled) {
      jobs_desc["jobs"].back()["memory"] = "pooled";
      if (opt.pool_group > 0) jobs_desc["jobs"].back()["group"] = opt.pool_group;
    }
  }
  if (opt.pool_slots > 0) {
    json pool = {{"slots", opt.pool_slots}, {"overcommit", opt.pool_overcommit}};
    if (opt.pool_ring_cc) pool["ring_congestion"] = true;
    if (opt.pool_lease_us > 0) pool["lease_us"] = opt.pool_lease_us;
    jobs_desc["pool"] = pool;
  }

  PlannedRun run;
  run.run_dir = opt.run_dir;
  if (run.run_dir.empty()) {
    char tmpl[] = "/tmp/panama-cluster-XXXXXX";
    if (!mkdtemp(tmpl))
      throw std::runtime_error(std::string("cannot create a run directory: ") + std::strerror(errno));
    run.run_dir = tmpl;
    run.own_run_dir = true;
  }
  try {
    controller::ClusterDesc cd = controller::parse_cluster(cluster_desc);
    cd.run_dir = run.run_dir;
    run.dep = controller::plan_deployment(cd, controller::parse_jobs(jobs_desc));
    controller::write_deployment(run.dep, run.run_dir);
  } catch (const std::exception& e) {
    if (run.own_run_dir) std::filesystem::remove_all(run.run_dir);
    throw SetupError(std::string("invalid set-up: ") + e.what());
  }
  return run;
}

// ------------------------------------------------------------- processes

NodeSet::NodeSet(std::string run_dir) : run_dir_(std::move(run_dir)) {
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
}

NodeSet::~NodeSet() {
  tear_down();
}

std::string NodeSet::dpdk_prefix(const std::string& name) const {
  return "pnm" + std::to_string(getpid()) + "-" + name;
}

Node& NodeSet::start(const NodeSpec& spec) {
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (spec.capture_stdout && pipe(out) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (spec.capture_stderr && pipe(err) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  Node n;
  n.name = spec.name;
  n.log_path = run_dir_ + "/" + spec.name + ".log";
  n.dpdk_prefix = spec.dpdk_prefix;
  n.own_process_group = spec.own_process_group;
  // Everything the child needs is prepared before fork (no allocation after it).
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const std::string& kv : spec.env) {
    const std::string key = kv.substr(0, kv.find('=') + 1);
    env_store.erase(std::remove_if(env_store.begin(), env_store.end(),
                                   [&](const std::string& s) { return s.rfind(key, 0) == 0; }),
                    env_store.end());
    env_store.push_back(kv);
  }
  std::vector<char*> envp, argv;
  for (std::string& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  argv.push_back(const_cast<char*>(spec.exe.c_str()));
  for (const std::string& a : spec.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // Its network namespace (--nodes netns), opened before fork.
  std::string netns = spec.netns;
  if (netns.empty()) {
    if (auto it = netns_.find(spec.name); it != netns_.end()) netns = it->second;
  }
  int netns_fd = -1;
  if (!netns.empty()) {
    netns_fd = open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0)
      throw std::runtime_error("network namespace " + netns + " of " + spec.name + ": " +
                               std::strerror(errno));
  }

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    if (netns_fd >= 0) close(netns_fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Die with the parent, whatever kills it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) {
      std::fprintf(stderr, "setns %s: %s\n", netns.c_str(), std::strerror(errno));
      _exit(127);
    }
    if (spec.own_process_group) setpgid(0, 0);
    const int log = open(n.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (spec.capture_stdout) {
      dup2(out[1], STDOUT_FILENO);
    } else if (log >= 0) {
      dup2(log, STDOUT_FILENO);
    }
    if (spec.capture_stderr) {
      dup2(err[1], STDERR_FILENO);
    } else if (log >= 0) {
      dup2(log, STDERR_FILENO);
    }
    for (int fd : {out[0], out[1], err[0], err[1], log}) {
      if (fd > STDERR_FILENO) close(fd);
    }
    // The parent handles SIGINT/SIGTERM; the child starts with the defaults.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execvpe(spec.exe.c_str(), argv.data(), envp.data());
    std::fprintf(stderr, "exec %s: %s\n", spec.exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  if (spec.own_process_group) setpgid(pid, pid);  // also here: no race with the first kill()
  if (netns_fd >= 0) close(netns_fd);
  n.pid = pid;
  if (spec.capture_stdout) {
    close(out[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    n.out_fd = out[0];
  }
  if (spec.capture_stderr) {
    close(err[1]);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    n.err_fd = err[0];
  }
  nodes_.push_back(std::move(n));
  return nodes_.back();
}

void NodeSet::start_switches(const controller::Deployment& dep, const std::string& pswitch_exe,
                             const runtime::IdlePolicy& poll) {
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
    const std::string name = s->node.node;
    const std::string stats = run_dir_ + "/" + name + ".stats.json";
    NodeSpecFile file;
    file.role = NodeSpecFile::Role::kPswitch;
    file.name = name;
    file.dpdk_prefix = dpdk_prefix(name);
    file.poll = poll;
    file.config_path = run_dir_ + "/" + name + ".json";
    file.stats_path = stats;
    const std::string file_path = node_spec_path(run_dir_, name);
    write_node_spec(file_path, file);
    NodeSpec spec;
    spec.name = name;
    spec.exe = pswitch_exe;
    spec.dpdk_prefix = file.dpdk_prefix;
    spec.args = {"--node", file_path};
    Node& n = start(spec);
    n.is_switch = true;
    wait_until_ready(n, stats, nodes_);
  }
}

void NodeSet::poll(int timeout_ms, const LineHandler& on_line) {
  std::vector<pollfd> pfds;
  for (const Node& n : nodes_) {
    if (n.out_fd >= 0) pfds.push_back(pollfd{n.out_fd, POLLIN, 0});
    if (n.err_fd >= 0) pfds.push_back(pollfd{n.err_fd, POLLIN, 0});
  }
  ::poll(pfds.data(), pfds.size(), timeout_ms);
  for (Node& n : nodes_) {
    drain(n, n.out_fd, n.out_buffer, false, on_line);
    drain(n, n.err_fd, n.err_buffer, true, on_line);
    if (!n.exited && waitpid(n.pid, &n.status, WNOHANG) == n.pid) {
      n.exited = true;
      drain(n, n.out_fd, n.out_buffer, false, on_line);
      drain(n, n.err_fd, n.err_buffer, true, on_line);
      // A last line without a newline.
      if (on_line && !n.out_buffer.empty()) on_line(n, n.out_buffer, false);
      if (on_line && !n.err_buffer.empty()) on_line(n, n.err_buffer, true);
      n.out_buffer.clear();
      n.err_buffer.clear();
    }
  }
}

bool NodeSet::signalled() const {
  return g_signal.load() != 0;
}

const Node* NodeSet::exited_switch() const {
  for (const Node& n : nodes_) {
    if (n.is_switch && n.exited) return &n;
  }
  return nullptr;
}

bool NodeSet::non_switch_running() const {
  for (const Node& n : nodes_) {
    if (!n.is_switch && !n.exited) return true;
  }
  return false;
}

void NodeSet::stop(bool switches, double grace_s) {
  auto signal_node = [](const Node& n, int sig) {
    if (n.own_process_group) kill(-n.pid, sig);
    kill(n.pid, sig);
  };
  for (Node& n : nodes_) {
    if (!n.exited && n.is_switch == switches) {
      signal_node(n, SIGTERM);
      signal_node(n, SIGCONT);  // a stopped process handles SIGTERM only once continued
    }
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_s);
  for (;;) {
    bool left = false;
    for (Node& n : nodes_) {
      if (n.exited || n.is_switch != switches) continue;
      if (waitpid(n.pid, &n.status, WNOHANG) == n.pid) {
        n.exited = true;
      } else {
        left = true;
      }
    }
    if (!left) break;
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (Node& n : nodes_) {
    if (n.is_switch != switches) continue;
    if (!n.exited) {
      signal_node(n, SIGKILL);
      waitpid(n.pid, &n.status, 0);
      n.exited = true;
    } else if (n.own_process_group) {
      kill(-n.pid, SIGKILL);  // whatever the command left behind in its group
    }
  }
}

void NodeSet::stop_non_switches(double grace_s) {
  stop(false, grace_s);
}

void NodeSet::tear_down(double worker_grace_s, double switch_grace_s) {
  if (torn_down_) return;
  torn_down_ = true;
  stop(false, worker_grace_s);
  stop(true, switch_grace_s);  // PSwitches write their final counters on SIGTERM
  for (Node& n : nodes_) {
    if (n.out_fd >= 0) close(n.out_fd);
    if (n.err_fd >= 0) close(n.err_fd);
    n.out_fd = n.err_fd = -1;
    if (!n.dpdk_prefix.empty()) {
      std::error_code ec;
      std::filesystem::remove_all("/var/run/dpdk/" + n.dpdk_prefix, ec);
    }
  }
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

// --------------------------------------------------------------- 5. collect

std::vector<json> collect_switch_counters(const PlannedRun& run) {
  std::vector<json> out;
  for (const auto& s : run.dep.switches) {
    const std::string path = run.run_dir + "/" + s.node.node + ".stats.json";
    std::ifstream f(path);
    if (!f) continue;
    try {
      out.push_back(json::parse(f));
    } catch (const json::exception&) {
      out.push_back({{"node", s.node.node}, {"error", "unreadable counters file " + path}});
    }
  }
  return out;
}

void finish_run_dir(const PlannedRun& run, bool remove, const char* tool) {
  if (remove && run.own_run_dir) {
    std::filesystem::remove_all(run.run_dir);
  } else {
    std::fprintf(stderr, "%s: configs, plans, logs and counters kept in %s\n", tool, run.run_dir.c_str());
  }
}

std::string tail_of(const std::string& path, size_t max_bytes) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.size() > max_bytes ? "..." + s.substr(s.size() - max_bytes) : s;
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

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = 0;
  return buf;
}

std::vector<uint32_t> leaf_of_rank(const controller::Deployment& dep, uint16_t job) {
  std::vector<uint32_t> out;
  for (const auto& w : dep.workers) {
    if (w.plan.job_id != job) continue;
    if (out.size() < w.plan.world_size) out.resize(w.plan.world_size, 0);
    for (size_t s = 0; s < dep.switches.size(); ++s) {
      const auto& ports = dep.switches[s].settings.ports;
      if (std::any_of(ports.begin(), ports.end(), [&](const auto& p) { return p.name == w.host; })) {
        out.at(w.plan.rank) = static_cast<uint32_t>(s);
        break;
      }
    }
  }
  return out;
}

int plan_run_or_report(const ClusterOptions& opt, PlannedRun& run, const char* tool) {
  try {
    run = plan_run(opt);
    return 0;
  } catch (const SetupError& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
    return 1;
  }
}

// ---------------------------------------------------------------- 6. report

json summary_header(const ClusterOptions& opt, bool in_process) {
  json summary = {{"baseline", opt.ring_baseline ? "ring" : (opt.gloo_baseline ? "gloo" : "none")},
                  {"topology", opt.topology},
                  {"workers_per_job", opt.workers},
                  {"jobs", opt.jobs},
                  {"trees", opt.trees},
                  {"dtype", dtype_name(opt.dtype)},
                  {"elem_bytes", wire::elem_bytes(static_cast<uint8_t>(opt.dtype))},
                  {"elements", opt.elems},
                  {"bytes", tensor_bytes(opt)},
                  {"iterations", opt.iterations},
                  {"link_gbps", opt.link_gbps},
                  {"workers", json::array()},
                  {"pswitches", json::array()}};
  if (in_process) summary["in_process"] = true;
  summary["nodes"] = in_process ? "threads" : (opt.netns ? "netns" : "processes");
  if (opt.netns) {
    summary["pmd"] = opt.pmd;
    summary["link_delay_ms"] = opt.link_delay_ms;
  }
  return summary;
}

void report_jobs(const ClusterOptions& opt, json& summary) {
  const double size_bytes = static_cast<double>(tensor_bytes(opt));
  // Goodput per job: tensor bytes over the slowest worker's time per iteration.
  for (uint32_t j = 1; j <= opt.jobs; ++j) {
    std::vector<double> worst(opt.iterations, 0.0);
    const json* rank0 = nullptr;
    uint64_t retrans = 0, timeouts = 0, sent = 0, received = 0, rounded = 0, ties = 0, checked = 0;
    for (const json& r : summary["workers"]) {
      if (r.value("job", 0u) != j || !r.contains("seconds")) continue;
      if (r.value("rank", 1u) == 0) rank0 = &r;
      retrans += r.value("retransmissions", uint64_t{0});
      timeouts += r.value("timeouts", uint64_t{0});
      sent += r.value("payload_bytes_sent", uint64_t{0});
      received += r.value("payload_bytes_completed", uint64_t{0});
      rounded += r.value("rounded_elements", uint64_t{0});
      ties += r.value("tie_elements", uint64_t{0});
      checked += r.value("checked_elements", uint64_t{0});
      for (size_t i = 0; i < r["seconds"].size() && i < worst.size(); ++i) {
        worst[i] = std::max(worst[i], r["seconds"][i].get<double>());
      }
    }
    double total_s = 0;
    uint32_t completed = 0;
    std::printf("job %u:", j);
    for (double s : worst) {
      if (s <= 0) continue;  // not finished (a run cut short)
      total_s += s;
      ++completed;
      std::printf(" %.3fs", s);
    }
    if (completed < opt.iterations)
      std::printf(" (%u of %u allreduces completed)", completed, opt.iterations);
    const double gbps = total_s > 0 ? size_bytes * completed * 8 / total_s / 1e9 : 0.0;
    double best = 0;
    for (double s : worst) best = s > 0 ? std::max(best, size_bytes * 8 / s / 1e9) : best;
    std::printf(
        "\n  goodput %.3f Gbit/s mean, %.3f best (%.1f%% of the %.3g Gbit/s link); retransmissions %llu, "
        "timeouts %llu (all workers)\n",
        gbps, best, opt.link_gbps > 0 ? 100.0 * gbps / opt.link_gbps : 0.0, opt.link_gbps,
        static_cast<unsigned long long>(retrans), static_cast<unsigned long long>(timeouts));
    summary["goodput_gbps"][std::to_string(j)] = gbps;
    // Payload bytes of the job's frames, all workers: up (contributions,
    // retransmissions included) and down (results taken into the buffers).
    std::printf(
        "  payload %s sent up, %s of results taken (all workers; %llu elements of %s per allreduce)\n",
        human_bytes(static_cast<double>(sent)).c_str(), human_bytes(static_cast<double>(received)).c_str(),
        static_cast<unsigned long long>(opt.elems), dtype_name(opt.dtype));
    summary["payload_bytes"][std::to_string(j)] = {{"sent", sent}, {"completed", received}};
    // Pooled mode: how the job's groups finished (every worker finishes a
    // group the same way; rank 0's counts) and what its ring carried.
    if (rank0 && rank0->contains("pool")) {
      const json& p = (*rank0)["pool"];
      uint64_t ring_bytes = 0;
      for (const json& r : summary["workers"]) {
        if (r.value("job", 0u) == j && r.contains("pool"))
          ring_bytes += r["pool"].value("ring_bytes_sent", uint64_t{0});
      }
      std::printf(
          "  pooled: %llu groups, %llu finished in the network, %llu on the ring (granted %llu, denied %llu, "
          "expired %llu; rank 0); ring payload %s sent (all workers)\n",
          static_cast<unsigned long long>(p.value("groups", uint64_t{0})),
          static_cast<unsigned long long>(p.value("in_network", uint64_t{0})),
          static_cast<unsigned long long>(p.value("on_ring", uint64_t{0})),
          static_cast<unsigned long long>(p.value("granted", uint64_t{0})),
          static_cast<unsigned long long>(p.value("denied", uint64_t{0})),
          static_cast<unsigned long long>(p.value("expired", uint64_t{0})),
          human_bytes(static_cast<double>(ring_bytes)).c_str());
      summary["pool"][std::to_string(j)] = {{"groups", p.value("groups", uint64_t{0})},
                                            {"in_network", p.value("in_network", uint64_t{0})},
                                            {"on_ring", p.value("on_ring", uint64_t{0})},
                                            {"ring_bytes_sent", ring_bytes}};
    }
    if (opt.dtype != wire::ElemType::kFloat32 && checked > 0) {
      // The workers' check: every element against the exact sum rounded to
      // nearest even (each leaf's partial sum first, on two tiers).
      std::printf(
          "  %s rounding: %llu of %llu result elements checked needed it (%llu ties to even; reference: "
          "%s)\n",
          dtype_name(opt.dtype), static_cast<unsigned long long>(rounded),
          static_cast<unsigned long long>(checked), static_cast<unsigned long long>(ties),
          opt.topology == "single"
              ? "the exact sum rounded to nearest even"
              : "each leaf's exact sum rounded to nearest even, their sum rounded again");
      summary["rounding"][std::to_string(j)] = {{"checked", checked}, {"rounded", rounded}, {"ties", ties}};
    }
    // Tree failover: per dead tree, over the job's workers, the time from its
    // last result to the worker declaring it dead and to the agreed restart
    // (the first result on the standby tree): the time to recover.
    std::map<unsigned, std::vector<const json*>> dead;
    for (const json& r : summary["workers"]) {
      if (r.value("job", 0u) != j || !r.contains("trees")) continue;
      for (const json& t : r["trees"]) {
        if (t.value("state", std::string()) == "dead") dead[t.value("tree", 0u)].push_back(&t);
      }
    }
    for (const auto& [tree, ts] : dead) {
      double detect = 0, recover = 0;
      uint64_t kept = 0, unanswered = 0;
      bool agreed = true;
      for (const json* t : ts) {
        const double last = static_cast<double>(t->value("last_result_ns", uint64_t{0}));
        detect = std::max(detect, (static_cast<double>(t->value("dead_at_ns", uint64_t{0})) - last) / 1e6);
        const uint64_t at = t->value("agreed_at_ns", uint64_t{0});
        agreed = agreed && at > 0;
        recover = std::max(recover, (static_cast<double>(at) - last) / 1e6);
        kept += t->value("replayed_kept", uint64_t{0});
        unanswered += t->value("replayed_unanswered", uint64_t{0});
      }
      std::printf(
          "  tree %u failed over on %zu worker(s): detected %.1f ms after its last result, restart agreed "
          "%s%.1f ms after it (time to recover, slowest worker); sequence %u; re-sent %llu kept + %llu "
          "unanswered contributions\n",
          tree, ts.size(), detect, agreed ? "" : "(NOT on every worker) ", recover,
          ts.front()->value("restart_seq", 0u), static_cast<unsigned long long>(kept),
          static_cast<unsigned long long>(unanswered));
      summary["failover"][std::to_string(j)].push_back(
          {{"tree", tree}, {"workers", ts.size()}, {"detect_ms", detect}, {"recover_ms", recover}});
    }
    if (rank0 && rank0->contains("trees")) {  // a worker cut short has no per-tree report
      for (const json& t : (*rank0)["trees"]) {
        std::printf(
            "  tree %u: cwnd %.1f (max %.1f, cap %u), alpha %.3f, CE results %llu, cwnd cuts %llu, "
            "retransmissions %llu, srtt %.0f us%s\n",
            t.value("tree", 0u), t.value("cwnd", 0.0), t.value("max_cwnd", 0.0), t.value("cwnd_cap", 0u),
            t.value("alpha", 0.0), static_cast<unsigned long long>(t.value("results_ce", uint64_t{0})),
            static_cast<unsigned long long>(t.value("cwnd_reductions", uint64_t{0})),
            static_cast<unsigned long long>(t.value("retransmissions", uint64_t{0})), t.value("srtt_us", 0.0),
            t.value("state", std::string("active")) == "active"
                ? ""
                : (" [" + t.value("state", std::string()) + "]").c_str());
      }
    }
  }
}

void report_switches(const std::vector<json>& switch_counters, json& summary) {
  for (const json& st : switch_counters) {
    if (st.contains("error")) {
      std::printf("PSwitch %s: %s\n", st.value("name", "?").c_str(), st["error"].get<std::string>().c_str());
      continue;
    }
    try {
      summary["pswitches"].push_back(st);
      std::printf("PSwitch %s:\n", st.value("name", "?").c_str());
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
        if (p.value("no_mbuf_drops", uint64_t{0}) > 0) {
          std::printf("    %llu frame(s) lost: the port's mbuf pool was empty\n",
                      (unsigned long long)p["no_mbuf_drops"].get<uint64_t>());
        }
      }
      for (const json& t : st["trees"]) {
        if (t.contains("pool")) {
          // A pooled tree has no engine entry of its own: its groups' claim entries come and go.
          const json& p = t["pool"];
          uint64_t denied = 0;
          for (const auto& [reason, n] : p["denied"].items()) denied += n.get<uint64_t>();
          std::printf(
              "  job %u tree %u (pooled): claims %llu, granted %llu, denied %llu (%s), expired %llu, "
              "emitted %llu, released groups %llu, drops: no claim %llu, stale group %llu, bad child %llu\n",
              t["job"].get<unsigned>(), t["tree"].get<unsigned>(),
              (unsigned long long)p.value("claims_in", uint64_t{0}),
              (unsigned long long)p.value("granted", uint64_t{0}), (unsigned long long)denied,
              p["denied"].dump().c_str(), (unsigned long long)p.value("expired", uint64_t{0}),
              (unsigned long long)p.value("emissions", uint64_t{0}),
              (unsigned long long)p.value("released_groups", uint64_t{0}),
              (unsigned long long)p.value("drop_no_claim", uint64_t{0}),
              (unsigned long long)p.value("drop_stale_group", uint64_t{0}),
              (unsigned long long)p.value("drop_bad_child", uint64_t{0}));
          continue;
        }
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
      if (st.contains("pool")) {
        const json& p = st["pool"];
        std::printf(
            "  pool: %llu slots free at the end (high water %llu held), claim entries committed %llu\n",
            (unsigned long long)p.value("free_slots", uint64_t{0}),
            (unsigned long long)p.value("slots_high_water", uint64_t{0}),
            (unsigned long long)p.value("entry_commits", uint64_t{0}));
      }
      if (st.contains("engine_queue")) {
        const json& q = st["engine_queue"];
        std::printf(
            "  engine queue: frames %llu, CE marked %llu, tail drops %llu, max %.0f KiB; shared result "
            "copies %llu\n",
            (unsigned long long)q.value("frames", uint64_t{0}),
            (unsigned long long)q.value("ecn_marked", uint64_t{0}),
            (unsigned long long)q.value("tail_drops", uint64_t{0}),
            q.value("max_queue_bytes", uint64_t{0}) / 1024.0,
            (unsigned long long)st["switch"].value("shared_copies", uint64_t{0}));
        const uint64_t split = st["switch"].value("split_frames", uint64_t{0});
        const uint64_t staged = st["switch"].value("staged_emissions", uint64_t{0});
        if (split != 0 || staged != 0) {
          std::printf(
              "  frames added from the workers' buffers %llu, emissions written into their mbufs %llu\n",
              (unsigned long long)split, (unsigned long long)staged);
        }
      }
    } catch (const json::exception&) {
      std::printf("PSwitch %s: incomplete counters\n", st.value("name", "?").c_str());
    }
  }
}

bool report_result(const ClusterOptions& opt, json& summary, bool ran, uint32_t failed, uint64_t mismatches,
                   const char* why) {
  const bool ok = ran && failed == 0 && mismatches == 0;
  summary["ok"] = ok;
  summary["mismatches"] = mismatches;
  if (ok) {
    std::printf("RESULT: all %zu x %u allreduces bit-exact against the local reference\n",
                summary["workers"].size(), opt.iterations);
  } else {
    std::printf("RESULT: FAILED (%u worker(s) failed, %llu mismatching elements%s)\n", failed,
                static_cast<unsigned long long>(mismatches), why);
  }
  std::fflush(stdout);
  if (!opt.summary_path.empty()) {
    std::ofstream f(opt.summary_path);
    f << summary.dump(2) << "\n";
  }
  return ok;
}

}  // namespace panama::cluster
