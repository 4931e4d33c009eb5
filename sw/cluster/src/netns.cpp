// Network namespaces, veth links and their clean-up for --nodes netns
// (netns.hpp).
#include "panama/cluster/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "panama/runtime/eal_runtime_dir.hpp"

namespace panama::cluster::netns {

namespace fs = std::filesystem;

namespace {

// The pid a name "pnm<pid>-..." carries; false for any other name.
bool tag_pid(const std::string& name, long& pid) {
  if (name.rfind("pnm", 0) != 0) return false;
  size_t i = 3;
  long v = 0;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) v = v * 10 + (name[i++] - '0');
  if (i == 3 || i >= name.size() || name[i] != '-') return false;
  pid = v;
  return true;
}

// A launcher still running: the pid exists and runs a PANAMA program.
bool launcher_alive(long pid) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  if (ec) return true;  // cannot tell: leave it alone
  return exe.filename().string().rfind("panama", 0) == 0;
}

// Enters a network namespace on this thread and returns to the original
// one when destroyed.
class EnterNamespace {
 public:
  explicit EnterNamespace(const std::string& ns) {
    self_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = open((std::string(kNetnsDir) + "/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    ok_ = self_ >= 0 && target >= 0 && setns(target, CLONE_NEWNET) == 0;
    if (target >= 0) close(target);
  }
  ~EnterNamespace() {
    if (ok_) setns(self_, CLONE_NEWNET);
    if (self_ >= 0) close(self_);
  }
  bool ok() const { return ok_; }

 private:
  int self_ = -1;
  bool ok_ = false;
};

void write_file(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
}

std::string format_rate(double gbps) {
  char s[48];
  std::snprintf(s, sizeof s, "%.0fbit", gbps * 1e9);
  return s;
}

}  // namespace

std::string run_tag(pid_t pid) {
  return "pnm" + std::to_string(pid);
}

std::string namespace_name(const std::string& tag, const std::string& node) {
  return tag + "-" + node;
}

CommandResult run_command(const std::vector<std::string>& argv) {
  CommandResult r;
  int p[2];
  if (argv.empty() || pipe2(p, O_CLOEXEC) != 0) return r;
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return r;
  }
  if (pid == 0) {
    dup2(p[1], STDOUT_FILENO);
    dup2(p[1], STDERR_FILENO);
    const int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(p[1]);
  char buf[4096];
  for (;;) {
    const ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0) {
      r.output.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(p[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

void run_or_throw(const std::vector<std::string>& argv) {
  const CommandResult r = run_command(argv);
  if (r.status == 0) return;
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  throw std::runtime_error("`" + cmd + "` failed (status " + std::to_string(r.status) + "): " + out);
}

std::string unavailable_reason() {
  if (geteuid() != 0)
    return "network namespaces need root (this process runs as uid " + std::to_string(geteuid()) + ")";
  const std::string ns = namespace_name(run_tag(getpid()), "probe");
  const CommandResult add = run_command({"ip", "netns", "add", ns});
  if (add.status != 0) {
    return "`ip netns add` failed (status " + std::to_string(add.status) + "): " + add.output;
  }
  const CommandResult veth =
      run_command({"ip", "-n", ns, "link", "add", "pa", "type", "veth", "peer", "name", "pb"});
  delete_namespace(ns);
  if (veth.status != 0)
    return "cannot create a veth pair (status " + std::to_string(veth.status) + "): " + veth.output;
  if (run_command({"tc", "-V"}).status != 0) return "no `tc` (iproute2) to shape the links";
  return {};
}

KernelQdiscs probe_qdiscs(const std::string& tag) {
  KernelQdiscs q;
  const std::string ns = namespace_name(tag, "qdisc-probe");
  delete_namespace(ns);
  if (run_command({"ip", "netns", "add", ns}).status != 0) return q;
  auto tc = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"tc", "-n", ns, "qdisc"});
    return run_command(args).status == 0;
  };
  if (run_command({"ip", "-n", ns, "link", "add", "pa", "type", "veth", "peer", "name", "pb"}).status == 0) {
    q.tbf = tc(
        {"add", "dev", "pa", "root", "handle", "1:", "tbf", "rate", "1gbit", "burst", "32k", "limit", "1m"});
    // The markers a switch would use, as a child of the shaper.
    LinkShape red;
    red.rate_gbps = 1;
    red.ecn_qdisc = "red";
    red.ecn_k_bytes = 65536;
    const auto red_cmds = shape_commands("pa", red);
    if (q.tbf && tc({red_cmds.back().begin() + 1, red_cmds.back().end()})) {
      q.ecn = "red";
    } else {
      LinkShape codel = red;
      codel.ecn_qdisc = "fq_codel";
      const auto codel_cmds = shape_commands("pa", codel);
      if (q.tbf && tc({codel_cmds.back().begin() + 1, codel_cmds.back().end()})) q.ecn = "fq_codel";
    }
    tc({"del", "dev", "pa", "root"});
    q.netem = tc({"add", "dev", "pa", "root", "handle", "1:", "netem", "delay", "1ms"});
    std::string missing;
    if (q.ecn.empty()) missing += "red (ecn) and fq_codel (ce_threshold)";
    if (!q.netem) missing += std::string(missing.empty() ? "" : ", ") + "netem";
    q.missing = missing;
  }
  delete_namespace(ns);
  return q;
}

std::vector<std::vector<std::string>> shape_commands(const std::string& iface, const LinkShape& s) {
  std::vector<std::vector<std::string>> out;
  if (s.rate_gbps <= 0 && s.delay_ms <= 0) return out;
  std::string parent = "root";
  int handle = 1;
  if (s.delay_ms > 0) {
    char d[32];
    std::snprintf(d, sizeof d, "%.3fms", s.delay_ms);
    out.push_back(
        {"qdisc", "add", "dev", iface, "root", "handle", "1:", "netem", "delay", d, "limit", "100000"});
    parent = "1:1";
    handle = 2;
  }
  if (s.rate_gbps > 0) {
    // A burst of at least two jumbo frames (and 100 us at the rate), as the
    // PSwitch's token bucket saves; the queue's limit as its output queue.
    const double bytes_per_s = s.rate_gbps * 1e9 / 8;
    const uint64_t burst = std::max<uint64_t>(
        s.burst_bytes, std::max<uint64_t>(2 * 9216 + 2 * s.overhead_bytes,
                                          static_cast<uint64_t>(std::llround(bytes_per_s * 100e-6))));
    std::vector<std::string> tbf = {"qdisc", "add", "dev", iface};
    if (parent == "root") {
      tbf.push_back("root");
    } else {
      tbf.insert(tbf.end(), {"parent", parent});
    }
    tbf.insert(tbf.end(), {"handle", std::to_string(handle) + ":", "tbf", "rate", format_rate(s.rate_gbps),
                           "burst", std::to_string(burst), "limit", std::to_string(s.queue_bytes), "overhead",
                           std::to_string(s.overhead_bytes)});
    out.push_back(tbf);
    const std::string child_parent = std::to_string(handle) + ":1";
    const std::string child = std::to_string(handle + 10) + ":";
    if (s.ecn_qdisc == "red") {
      // DCTCP-style: mark every ECT frame once the queue holds K bytes
      // (max just above min, probability 1, the average following the
      // instantaneous queue).
      const uint64_t k = std::max<uint64_t>(s.ecn_k_bytes, 9216);
      out.push_back({"qdisc",
                     "add",
                     "dev",
                     iface,
                     "parent",
                     child_parent,
                     "handle",
                     child,
                     "red",
                     "limit",
                     std::to_string(std::max<uint64_t>(s.queue_bytes, 4 * k)),
                     "min",
                     std::to_string(k),
                     "max",
                     std::to_string(k + 4200),
                     "avpkt",
                     "4200",
                     "burst",
                     std::to_string(k / 4200 + 1),
                     "probability",
                     "1.0",
                     "bandwidth",
                     format_rate(std::max(s.rate_gbps, 0.001)),
                     "ecn"});
    } else if (s.ecn_qdisc == "fq_codel") {
      // CE above a sojourn time of K bytes at the link's rate.
      char t[32];
      std::snprintf(
          t, sizeof t, "%.0fus",
          std::max(10.0, static_cast<double>(std::max<uint64_t>(s.ecn_k_bytes, 9216)) / bytes_per_s * 1e6));
      out.push_back({"qdisc", "add", "dev", iface, "parent", child_parent, "handle", child, "fq_codel",
                     "ce_threshold", t, "ecn"});
    }
  }
  return out;
}

Fabric::Fabric(std::string tag) : tag_(std::move(tag)) {}

Fabric::~Fabric() {
  remove();
}

void Fabric::run(const std::vector<std::string>& argv) {
  ++commands_;
  run_or_throw(argv);
}

void Fabric::add_node(const std::string& name) {
  const std::string n = ns(name);
  run({"ip", "netns", "add", n});
  nodes_.push_back(name);
  EnterNamespace in(n);
  if (!in.ok()) throw std::runtime_error("cannot enter network namespace " + n + ": " + std::strerror(errno));
  // No IPv6 on the links (no router solicitations, no MLD): only the run's
  // own frames cross them.
  write_file("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
  write_file("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
}

void Fabric::add_link(const std::string& a, const std::string& b, const LinkShape& a_to_b,
                      const LinkShape& b_to_a, unsigned mtu) {
  // Each end named after the node at the other end, created in its namespace.
  run({"ip", "link", "add", "name", b, "netns", ns(a), "type", "veth", "peer", "name", a, "netns", ns(b)});
  links_.emplace_back(a, b);
  for (const auto& [node, iface] : {std::make_pair(a, b), std::make_pair(b, a)}) {
    run({"ip", "-n", ns(node), "link", "set", "dev", iface, "mtu", std::to_string(mtu), "up"});
    for (std::vector<std::string> c : shape_commands(iface, node == a ? a_to_b : b_to_a)) {
      c.insert(c.begin(), {"tc", "-n", ns(node)});
      run(c);
    }
  }
}

std::vector<std::string> Fabric::interfaces(const std::string& node) const {
  std::vector<std::string> out;
  for (const auto& [a, b] : links_) {
    if (a == node) out.push_back(b);
    if (b == node) out.push_back(a);
  }
  return out;
}

void Fabric::set_links_down(const std::string& node) {
  for (const std::string& i : interfaces(node)) run({"ip", "-n", ns(node), "link", "set", "dev", i, "down"});
}

void Fabric::add_bridge(const std::string& node) {
  run({"ip", "-n", ns(node), "link", "add", "br0", "type", "bridge"});
  for (const std::string& i : interfaces(node))
    run({"ip", "-n", ns(node), "link", "set", "dev", i, "master", "br0"});
  run({"ip", "-n", ns(node), "link", "set", "dev", "br0", "up"});
}

void Fabric::add_address(const std::string& node, const std::string& iface, const std::string& cidr) {
  run({"ip", "-n", ns(node), "addr", "add", cidr, "dev", iface});
}

void Fabric::remove() {
  if (removed_) return;
  removed_ = true;
  for (const std::string& n : nodes_) delete_namespace(ns(n));
}

bool delete_namespace(const std::string& name) {
  const std::string path = std::string(kNetnsDir) + "/" + name;
  struct stat ns_st {};
  if (stat(path.c_str(), &ns_st) != 0) {
    // A file that is not (or no longer) a namespace mount: remove the name.
    return unlink(path.c_str()) == 0;
  }
  // Whatever still runs inside (a node whose parent died before it did).
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    struct stat st {};
    if (stat(("/proc/" + pid + "/ns/net").c_str(), &st) != 0) continue;
    if (st.st_ino == ns_st.st_ino && st.st_dev == ns_st.st_dev)
      kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
  }
  umount2(path.c_str(), MNT_DETACH);
  unlink(path.c_str());
  return true;
}

std::vector<std::string> remove_run(const std::string& tag, const std::string& run_dir) {
  std::vector<std::string> removed;
  const std::string prefix = tag + "-";
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kNetnsDir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) names.push_back(n);
  }
  for (const std::string& n : names) {
    if (delete_namespace(n)) removed.push_back("namespace " + n);
  }
  const std::string base = runtime::eal_runtime_base_dir();
  for (const auto& e : fs::directory_iterator(base, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) != 0) continue;
    std::error_code rm;
    fs::remove_all(e.path(), rm);
    if (!rm) removed.push_back("DPDK folder " + e.path().string());
  }
  if (!run_dir.empty() && fs::exists(run_dir, ec)) {
    std::error_code rm;
    fs::remove_all(run_dir, rm);
    if (!rm) removed.push_back("run directory " + run_dir);
  }
  return removed;
}

std::vector<std::string> stale_runs() {
  std::vector<std::string> tags;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kNetnsDir, ec)) {
    long pid = 0;
    if (!tag_pid(e.path().filename().string(), pid) || launcher_alive(pid)) continue;
    const std::string tag = run_tag(static_cast<pid_t>(pid));
    if (std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.push_back(tag);
  }
  return tags;
}

std::vector<std::string> remove_stale_runs() {
  std::vector<std::string> removed;
  for (const std::string& tag : stale_runs()) {
    for (std::string& r : remove_run(tag)) removed.push_back(std::move(r));
  }
  for (const std::string& d : runtime::remove_stale_eal_runtime_dirs(runtime::eal_runtime_base_dir()))
    removed.push_back("DPDK folder " + d);
  return removed;
}

Reaper::Reaper(const std::string& tag, const std::string& run_dir) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Its own session: out of reach of signals to the launcher's group and
    // terminal; nothing of the launcher's kept open but the pipe (a reader
    // of the launcher's output must not wait for this process).
    setsid();
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) signal(sig, SIG_IGN);
    dup2(p[0], 3);
    const int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    close_range(4, ~0u, 0);
    // 'r': the launcher cleaned up and keeps its run directory as it
    // decided; the end of the pipe without it: the launcher died.
    bool released = false;
    char c;
    for (;;) {
      const ssize_t n = read(3, &c, 1);
      if (n == 1 && c == 'r') released = true;
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    remove_run(tag, released ? std::string() : run_dir);
    _exit(0);
  }
  close(p[0]);
  pid_ = pid;
  fd_ = p[1];
}

Reaper::~Reaper() {
  release();
}

void Reaper::release() {
  if (fd_ >= 0) {
    const char r = 'r';
    if (write(fd_, &r, 1) != 1) {
      // The reaper is gone already; nothing to tell it.
    }
    close(fd_);
  }
  fd_ = -1;
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

}  // namespace panama::cluster::netns
