// panama-cluster --nodes netns (docs/cluster.md, "Namespaces and veths"):
// every node in its own network namespace, joined by veth pairs shaped with
// tc, ports net_af_packet. End-to-end runs (bit-exact with 4 workers and on
// two tiers, the ring baseline, a PSwitch's links taken down mid-run) and
// the clean-up (nothing left after a run, after SIGKILL of the launcher,
// after `panama-cluster --cleanup`).
//
// Needs root and a kernel that lets it create network namespaces and veth
// pairs: where it cannot, every case tagged [netns] prints
// "SKIPPED: network namespaces ..." with the reason and returns, and CTest
// reports the test as skipped (SKIP_REGULAR_EXPRESSION), never as passed.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/cluster/netns.hpp"

using Catch::Matchers::Contains;
using nlohmann::json;
namespace netns = panama::cluster::netns;

namespace {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("PANAMA_TEST_SEED");
    return s ? std::strtoull(s, nullptr, 0) : 20240611ull;
  }();
  return seed;
}

// "" when namespaces can be made here, else why not (printed once per case).
bool skip_without_namespaces() {
  static const std::string why = netns::unavailable_reason();
  if (why.empty()) return false;
  std::cout << "SKIPPED: network namespaces cannot be created here, so --nodes netns cannot run: " << why
            << std::endl;
  return true;
}

struct Run {
  int exit_code = -1;
  std::string output;
  json summary;
};

Run run_command(const std::string& cmd) {
  Run r;
  const std::string out_path =
      (std::filesystem::temp_directory_path() / ("panama-netns-" + std::to_string(getpid()) + ".out"))
          .string();
  const int st = std::system((cmd + " > " + out_path + " 2>&1").c_str());
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(out_path);
  r.output.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::filesystem::remove(out_path);
  return r;
}

Run cluster(const std::string& args) {
  const std::string summary =
      (std::filesystem::temp_directory_path() / ("panama-netns-" + std::to_string(getpid()) + ".json"))
          .string();
  std::filesystem::remove(summary);
  const std::string cmd = std::string(PANAMA_CLUSTER_EXE) + " --nodes netns --no-progress --seed " +
                          std::to_string(test_seed()) + " --summary-json " + summary + " " + args;
  UNSCOPED_INFO("seed " << test_seed() << " (override with PANAMA_TEST_SEED); command: " << cmd);
  Run r = run_command(cmd);
  UNSCOPED_INFO(r.output);
  std::ifstream f(summary);
  if (f) r.summary = json::parse(f);
  std::filesystem::remove(summary);
  return r;
}

// Names under `dir` that start with `prefix`.
std::vector<std::string> names_with_prefix(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) out.push_back(n);
  }
  return out;
}

// Namespaces "pnm<pid>-..." whose launcher pid is not running: left behind.
std::vector<std::string> orphaned_namespaces() {
  std::vector<std::string> out;
  for (const std::string& n : names_with_prefix(netns::kNetnsDir, "pnm")) {
    const long pid = std::strtol(n.c_str() + 3, nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) out.push_back(n);
  }
  return out;
}

// Processes whose command line holds `needle`.
std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream f(e.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    if (cmd.find(needle) != std::string::npos) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid);
  return ppid;
}

size_t root_veths() {
  const Run r = run_command("ip -o link show type veth");
  return static_cast<size_t>(std::count(r.output.begin(), r.output.end(), '\n'));
}

const json& pswitch_named(const json& summary, const std::string& name) {
  for (const json& s : summary["pswitches"]) {
    if (s["name"] == name) return s;
  }
  FAIL("no PSwitch " << name);
  throw;
}

void require_all_ok(const Run& r, size_t workers) {
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.summary.value("ok", false));
  CHECK(r.summary["mismatches"] == 0);
  CHECK(r.summary["nodes"] == "netns");
  REQUIRE(r.summary["workers"].size() == workers);
  for (const json& w : r.summary["workers"]) CHECK(w["ok"] == true);
  CHECK_THAT(r.output, Contains("bit-exact"));
  // The run removed its namespaces (and with them its veths).
  CHECK(orphaned_namespaces().empty());
}

uint64_t chunks_of_tree(uint64_t elems, uint64_t epp, uint64_t trees, uint64_t tree) {
  const uint64_t chunks = (elems + epp - 1) / epp;
  return chunks / trees + (tree < chunks % trees ? 1 : 0);
}

}  // namespace

TEST_CASE("netns: the tc commands that shape a veth", "[netns-tc]") {
  netns::LinkShape s;
  CHECK(netns::shape_commands("w0", s).empty());  // unshaped
  s.rate_gbps = 1;
  s.queue_bytes = 4u << 20;
  auto c = netns::shape_commands("w0", s);
  REQUIRE(c.size() == 1);
  const std::vector<std::string> tbf = {
      "qdisc", "add",           "dev",   "w0",    "root",  "handle",  "1:",       "tbf",
      "rate",  "1000000000bit", "burst", "18480", "limit", "4194304", "overhead", "24"};
  CHECK(c[0] == tbf);
  // 10 Gbit/s: the burst covers 100 us at the rate; a larger one on request.
  s.rate_gbps = 10;
  c = netns::shape_commands("s0", s);
  CHECK(c[0][11] == "125000");
  s.burst_bytes = 2500000;
  CHECK(netns::shape_commands("s0", s)[0][11] == "2500000");
  s.burst_bytes = 0;
  // Delay: netem at the root, the shaper below it; a marking child below that.
  s.delay_ms = 0.5;
  s.ecn_qdisc = "red";
  s.ecn_k_bytes = 65536;
  c = netns::shape_commands("s0", s);
  REQUIRE(c.size() == 3);
  CHECK(c[0][7] == "netem");
  CHECK(c[0][9] == "0.500ms");
  CHECK(c[1][4] == "parent");
  CHECK(c[1][5] == "1:1");
  CHECK(c[1][8] == "tbf");
  CHECK(c[2][5] == "2:1");
  CHECK(c[2][8] == "red");
  CHECK(c[2].back() == "ecn");
  s.ecn_qdisc = "fq_codel";
  s.delay_ms = 0;
  c = netns::shape_commands("s0", s);
  REQUIRE(c.size() == 2);
  CHECK(c[1][8] == "fq_codel");
  CHECK(c[1][9] == "ce_threshold");
  CHECK(c[1][10] == "52us");  // 64 KiB at 10 Gbit/s
}

TEST_CASE("netns cluster: 4 workers, one PSwitch, bit-exact over shaped veths, nothing left", "[netns]") {
  if (skip_without_namespaces()) return;
  const size_t veths_before = root_veths();
  const uint64_t elems = (2u << 20) / 4, epp = 1024;
  const Run r = cluster("--workers 4 --trees 2 --size 2MiB --iterations 2 --link-rate 1");
  require_all_ok(r, 4);
  CHECK_THAT(r.output, Contains("network namespace pnm"));
  CHECK_THAT(r.output, Contains("net_af_packet"));
  CHECK(r.summary["pmd"] == "af_packet");
  const json& s0 = pswitch_named(r.summary, "s0");
  for (uint64_t t = 0; t < 2; ++t) {
    const json& e = s0["trees"][t]["engine"];
    CHECK(e["emitted"] == 2 * chunks_of_tree(elems, epp, 2, t));
    CHECK(e["aggregated"].get<uint64_t>() >= 4 * 2 * chunks_of_tree(elems, epp, 2, t));
  }
  // Every frame crossed a veth: the PSwitch received every worker's contributions.
  for (const json& p : s0["ports"]) CHECK(p["rx_frames"].get<uint64_t>() >= elems / epp * 2);
  CHECK(root_veths() == veths_before);  // the veths never were in the host's namespace
}

TEST_CASE("netns cluster: two tiers, 8 workers, bit-exact", "[netns]") {
  if (skip_without_namespaces()) return;
  const Run r = cluster("--topology two-tier --workers 8 --trees 2 --size 1MiB --iterations 2 --link-rate 1");
  require_all_ok(r, 8);
  REQUIRE(r.summary["pswitches"].size() == 4);
  const uint64_t elems = (1u << 20) / 4, epp = 1024;
  CHECK(pswitch_named(r.summary, "spine0")["trees"][0]["engine"]["emitted"] ==
        2 * chunks_of_tree(elems, epp, 2, 0));
  CHECK(pswitch_named(r.summary, "spine1")["trees"][0]["engine"]["emitted"] ==
        2 * chunks_of_tree(elems, epp, 2, 1));
}

TEST_CASE("netns cluster: the ring baseline over the same veths is exact", "[netns]") {
  if (skip_without_namespaces()) return;
  const Run r = cluster("--baseline ring --workers 4 --size 512KiB --iterations 2 --link-rate 1");
  require_all_ok(r, 4);
  CHECK(r.summary["baseline"] == "ring");
}

TEST_CASE("netns cluster: a spine's links taken down mid-run, its tree fails over, all exact", "[netns]") {
  if (skip_without_namespaces()) return;
  const Run r = cluster(
      "--topology two-tier --workers 4 --trees 2 --backup-trees --failover-after 8 --size 2MiB "
      "--iterations 4 --link-rate 1 --fail-switch spine0:DOWN");
  require_all_ok(r, 4);
  CHECK_THAT(r.output, Contains("links of PSwitch spine0 taken down"));
  CHECK(r.summary["failure_injected"]["how"] == "DOWN");
  // Tree 0 (rooted at spine0) is dead on every worker, its standby carried the rest.
  for (const json& w : r.summary["workers"]) {
    bool dead = false;
    for (const json& t : w["trees"]) dead = dead || (t["tree"] == 0 && t["state"] == "dead");
    CHECK(dead);
  }
  CHECK(r.summary["failover"]["1"].size() == 1);
}

TEST_CASE("netns cluster: the only PSwitch's links taken down, the job fails as documented", "[netns]") {
  if (skip_without_namespaces()) return;
  // No standby: every worker gives up after its retry budget, status 1.
  const Run r = cluster(
      "--workers 4 --size 1MiB --iterations 4 --link-rate 1 --retry-budget 4 "
      "--fail-switch s0:DOWN");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("links of PSwitch s0 taken down"));
  CHECK_THAT(r.output, Contains("the job cannot finish"));
  CHECK_THAT(r.output, Contains("RESULT: FAILED"));
  CHECK(orphaned_namespaces().empty());
  // A failed run keeps its run directory for a look; remove it.
  const size_t at = r.output.find("kept in ");
  if (at != std::string::npos) {
    const std::string dir = r.output.substr(at + 8, r.output.find('\n', at) - at - 8);
    if (dir.rfind("/tmp/panama-cluster-", 0) == 0) std::filesystem::remove_all(dir);
  }
}

TEST_CASE("netns cluster: options the mode cannot honour are refused", "[netns]") {
  if (skip_without_namespaces()) return;
  // 2288 fp32 elements make 9216-byte frames: more than a veth of MTU 9000 carries.
  Run r = cluster("--elems-per-packet 2288 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("exceed the 9000 bytes"));
  r = cluster("--baseline gloo --topology two-tier --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("loop-free"));
  CHECK(orphaned_namespaces().empty());
}

TEST_CASE("netns cluster: SIGKILL of the launcher leaves no namespace, veth, process or DPDK folder",
          "[netns]") {
  if (skip_without_namespaces()) return;
  const size_t veths_before = root_veths();
  // Once with the launcher's reaper at work; once with the reaper killed
  // too, when `panama-cluster --cleanup` is the documented step.
  for (const bool kill_reaper : {false, true}) {
    INFO("reaper killed too: " << kill_reaper);
    const std::string run_dir =
        (std::filesystem::temp_directory_path() /
         ("panama-netns-kill-" + std::to_string(getpid()) + (kill_reaper ? "b" : "a")))
            .string();
    std::filesystem::remove_all(run_dir);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      setpgid(0, 0);
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
      execl(PANAMA_CLUSTER_EXE, PANAMA_CLUSTER_EXE, "--nodes", "netns", "--no-progress", "--iterations",
            "1000", "--size", "16MiB", "--link-rate", "1", "--run-dir", run_dir.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    // A failed REQUIRE below must not leave the launcher running.
    struct KillOnExit {
      pid_t pid;
      ~KillOnExit() {
        if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
      }
    } guard{pid};
    const std::string tag = netns::run_tag(pid);
    // Wait for the PSwitch and the four workers, each in its namespace.
    for (int i = 0; i < 300 && (processes_with(run_dir + "/nodes/").size() < 5 ||
                                names_with_prefix("/var/run/dpdk", tag + "-").size() < 5);
         ++i)
      usleep(50000);
    const std::vector<pid_t> nodes = processes_with(run_dir + "/nodes/");
    REQUIRE(nodes.size() == 5);
    CHECK(names_with_prefix(netns::kNetnsDir, tag + "-").size() == 5);
    CHECK(names_with_prefix("/var/run/dpdk", tag + "-").size() == 5);
    // The reaper: the launcher's child that is not a node.
    pid_t reaper = -1;
    for (pid_t p : processes_with(run_dir)) {
      if (p != pid && parent_of(p) == pid && std::find(nodes.begin(), nodes.end(), p) == nodes.end())
        reaper = p;
    }
    REQUIRE(reaper > 0);
    if (kill_reaper) kill(reaper, SIGKILL);
    usleep(200000);
    kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    guard.pid = -1;
    CHECK(WIFSIGNALED(status));
    if (kill_reaper) {
      // The nodes died with the launcher (PR_SET_PDEATHSIG); its namespaces stay.
      for (int i = 0; i < 100 && !processes_with(run_dir + "/nodes/").empty(); ++i) usleep(50000);
      CHECK(processes_with(run_dir + "/nodes/").empty());
      CHECK(names_with_prefix(netns::kNetnsDir, tag + "-").size() == 5);
      const Run c = run_command(std::string(PANAMA_CLUSTER_EXE) + " --cleanup");
      INFO(c.output);
      CHECK(c.exit_code == 0);
      CHECK_THAT(c.output, Contains("removed namespace " + tag + "-s0"));
    } else {
      for (int i = 0; i < 200 && !names_with_prefix(netns::kNetnsDir, tag + "-").empty(); ++i) usleep(50000);
    }
    CHECK(names_with_prefix(netns::kNetnsDir, tag + "-").empty());
    CHECK(names_with_prefix("/var/run/dpdk", tag + "-").empty());
    for (int i = 0; i < 100 && !processes_with(run_dir).empty(); ++i) usleep(50000);
    CHECK(processes_with(run_dir).empty());  // no node, no reaper
    CHECK(root_veths() == veths_before);
    std::filesystem::remove_all(run_dir);
  }
}

TEST_CASE("netns cluster: Gloo ranks over the same veths, every result exact", "[netns-gloo]") {
  if (skip_without_namespaces()) return;
  const char* py = std::getenv("PANAMA_PYTHON");
  if (run_command(std::string(py && *py ? py : "python3") + " -c 'import torch.distributed'").exit_code !=
          0 &&
      run_command("/usr/bin/python3 -c 'import torch.distributed'").exit_code != 0) {
    std::cout << "SKIPPED: network namespaces test without PyTorch: no Python with torch.distributed"
              << std::endl;
    return;
  }
  const Run r = cluster("--baseline gloo --workers 2 --size 1MiB --iterations 2 --link-rate 1");
  require_all_ok(r, 2);
  CHECK(r.summary["baseline"] == "gloo");
  CHECK(r.summary["pswitches"].empty());  // bridges, not PSwitches
  CHECK_THAT(r.output, Contains("Linux bridge"));
}
