// End-to-end runs of the virtual cluster: panama-cluster starts a software
// PSwitch process per switch and a DPDK worker process per worker (memif
// links), runs allreduces and checks every result bit for bit against a
// locally computed reference (exact-summing data: see
// sw/cluster/include/panama/cluster/test_data.hpp). These tests run
// the binary and assert on its exit code and its JSON summary; the expected
// counter values are computed here from the chunk mapping.
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
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("PANAMA_TEST_SEED");
    return s ? std::strtoull(s, nullptr, 0) : 20240611ull;
  }();
  return seed;
}

struct Run {
  int exit_code = -1;
  std::string output;
  json summary;
};

Run run_command(const std::string& cmd) {
  Run r;
  const std::string out_path =
      (std::filesystem::temp_directory_path() / ("panama-e2e-" + std::to_string(getpid()) + ".out")).string();
  const int st = std::system((cmd + " > " + out_path + " 2>&1").c_str());
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream f(out_path);
  r.output.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::filesystem::remove(out_path);
  return r;
}

Run cluster(const std::string& args) {
  const std::string summary =
      (std::filesystem::temp_directory_path() / ("panama-e2e-" + std::to_string(getpid()) + ".json"))
          .string();
  std::filesystem::remove(summary);
  const std::string cmd = std::string(PANAMA_CLUSTER_EXE) + " --no-progress --seed " +
                          std::to_string(test_seed()) + " --summary-json " + summary + " " + args;
  UNSCOPED_INFO("seed " << test_seed() << " (override with PANAMA_TEST_SEED); command: " << cmd);
  Run r = run_command(cmd);
  UNSCOPED_INFO(r.output);
  std::ifstream f(summary);
  if (f) r.summary = json::parse(f);
  std::filesystem::remove(summary);
  return r;
}

// Chunks of `elems` elements in packets of `epp`, assigned to tree k mod T.
uint64_t chunks_of_tree(uint64_t elems, uint64_t epp, uint64_t trees, uint64_t tree) {
  const uint64_t chunks = (elems + epp - 1) / epp;
  return chunks / trees + (tree < chunks % trees ? 1 : 0);
}

void require_all_ok(const Run& r, size_t workers) {
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.summary.value("ok", false));
  CHECK(r.summary["mismatches"] == 0);
  REQUIRE(r.summary["workers"].size() == workers);
  for (const json& w : r.summary["workers"]) CHECK(w["ok"] == true);
  CHECK_THAT(r.output, Contains("bit-exact"));
}

const json& pswitch_named(const json& summary, const std::string& name) {
  for (const json& s : summary["pswitches"]) {
    if (s["name"] == name) return s;
  }
  FAIL("no PSwitch " << name);
  throw;
}

}  // namespace

TEST_CASE("virtual cluster: a one-element allreduce", "[e2e]") {
  const Run r = cluster("--workers 4 --trees 2 --size 4 --iterations 2");
  require_all_ok(r, 4);
  const json& s0 = pswitch_named(r.summary, "s0");
  // One chunk, on tree 0: one slot completed per iteration.
  CHECK(s0["trees"][0]["engine"]["emitted"] == 2);
  CHECK(s0["trees"][1]["engine"]["emitted"] == 0);
}

TEST_CASE("virtual cluster: a size that is not a multiple of the packet size", "[e2e]") {
  const uint64_t elems = 100003, epp = 256;
  const Run r = cluster("--workers 4 --trees 3 --size 400012 --elems-per-packet 256 --iterations 2");
  require_all_ok(r, 4);
  const json& s0 = pswitch_named(r.summary, "s0");
  for (uint64_t t = 0; t < 3; ++t) {
    const json& e = s0["trees"][t]["engine"];
    CHECK(e["emitted"] == 2 * chunks_of_tree(elems, epp, 3, t));
    CHECK(e["aggregated"] == 4 * 2 * chunks_of_tree(elems, epp, 3, t));
    CHECK(e["drop_seq_window"] == 0);
  }
}

TEST_CASE("virtual cluster: two-tier leaf-spine, trees rooted at distinct spines, a few MiB", "[e2e]") {
  const Run r = cluster("--topology two-tier:2x2 --workers 4 --trees 2 --size 4MiB --iterations 2");
  require_all_ok(r, 4);
  const uint64_t elems = (4u << 20) / 4, epp = 1024;
  // Tree 0 completes at spine0, tree 1 at spine1; each leaf aggregates its two workers.
  const json& spine0 = pswitch_named(r.summary, "spine0");
  const json& spine1 = pswitch_named(r.summary, "spine1");
  REQUIRE(spine0["trees"].size() == 1);
  REQUIRE(spine1["trees"].size() == 1);
  CHECK(spine0["trees"][0]["tree"] == 0);
  CHECK(spine1["trees"][0]["tree"] == 1);
  CHECK(spine0["trees"][0]["engine"]["emitted"] == 2 * chunks_of_tree(elems, epp, 2, 0));
  CHECK(spine1["trees"][0]["engine"]["emitted"] == 2 * chunks_of_tree(elems, epp, 2, 1));
  for (const char* leaf : {"leaf0", "leaf1"}) {
    const json& l = pswitch_named(r.summary, leaf);
    for (uint64_t t = 0; t < 2; ++t) {
      CHECK(l["trees"][t]["engine"]["emitted"] == 2 * chunks_of_tree(elems, epp, 2, t));
      CHECK(l["trees"][t]["engine"]["aggregated"] == 2 * 2 * chunks_of_tree(elems, epp, 2, t));
    }
  }
}

TEST_CASE("virtual cluster: two concurrent jobs share a PSwitch", "[e2e]") {
  const Run r = cluster("--jobs 2 --workers 3 --trees 2 --size 2MiB --iterations 2");
  require_all_ok(r, 6);
  const json& s0 = pswitch_named(r.summary, "s0");
  REQUIRE(s0["trees"].size() == 4);
  const uint64_t elems = (2u << 20) / 4;
  for (const json& t : s0["trees"]) {
    CHECK(t["engine"]["emitted"] == 2 * chunks_of_tree(elems, 1024, 2, t["tree"].get<uint64_t>()));
  }
  // Equal shares: 512 slots / 4 entries; no worker's window went past its cap.
  for (const json& w : r.summary["workers"]) {
    for (const json& t : w["trees"]) {
      CHECK(t["cwnd_cap"] == 128);
      CHECK(t["max_cwnd"].get<double>() <= 128.0);
    }
  }
}

TEST_CASE("virtual cluster: 1% loss, duplication and reordering, every allreduce still exact", "[e2e]") {
  const Run r = cluster("--workers 4 --trees 2 --size 2MiB --iterations 3 --faults 0.01");
  require_all_ok(r, 4);
  uint64_t lost = 0, dup = 0, reordered = 0;
  for (const json& p : pswitch_named(r.summary, "s0")["ports"]) {
    lost += p["injected_loss"].get<uint64_t>();
    dup += p["injected_dup"].get<uint64_t>();
    reordered += p["injected_reorder"].get<uint64_t>();
  }
  CHECK(lost > 0);
  CHECK(dup > 0);
  CHECK(reordered > 0);
  uint64_t retrans = 0;
  for (const json& w : r.summary["workers"]) retrans += w["retransmissions"].get<uint64_t>();
  CHECK(retrans > 0);  // losses were repaired by retransmission
}

TEST_CASE("virtual cluster: 1% faults on every link of a two-tier fabric", "[e2e]") {
  const Run r = cluster(
      "--topology two-tier --workers 4 --trees 2 --size 2MiB --iterations 2 --faults "
      "loss=0.01,dup=0.01,reorder=0.01");
  require_all_ok(r, 4);
  uint64_t injected = 0;
  for (const json& s : r.summary["pswitches"]) {
    for (const json& p : s["ports"]) injected += p["injected_loss"].get<uint64_t>();
  }
  CHECK(injected > 0);
}

TEST_CASE("virtual cluster: Ctrl-C stops every process and leaves no DPDK runtime state", "[e2e]") {
  const std::string run_dir =
      (std::filesystem::temp_directory_path() / ("panama-e2e-int-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(run_dir);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);  // its own group, like a shell job: the "terminal" signals the whole group
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execl(PANAMA_CLUSTER_EXE, PANAMA_CLUSTER_EXE, "--no-progress", "--iterations", "1000", "--size", "16MiB",
          "--run-dir", run_dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  // Wait until the workers run (their plans are written after the PSwitches are up).
  auto processes_using = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::ifstream f(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (cmd.find(run_dir + "/nodes/") != std::string::npos) ++n;
    }
    return n;
  };
  for (int i = 0; i < 200 && processes_using() < 5; ++i) usleep(50000);
  REQUIRE(processes_using() == 5);  // one PSwitch, four workers
  usleep(500000);
  kill(-pid, SIGINT);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK(processes_using() == 0);
  // The DPDK runtime directories of the nodes (/var/run/dpdk/pnm<pid>-<node>) are gone.
  if (std::filesystem::exists("/var/run/dpdk")) {
    for (const auto& e : std::filesystem::directory_iterator("/var/run/dpdk")) {
      CHECK(e.path().filename().string().rfind("pnm" + std::to_string(pid) + "-", 0) != 0);
    }
  }
  std::filesystem::remove_all(run_dir);
}

TEST_CASE("virtual cluster: ECN marks at a slow link make both trees' windows back off", "[e2e]") {
  // 0.1 Gbit/s links (well below what the software engine sustains, so the
  // link is the bottleneck) and K = 16 KiB at the ports: the result queues
  // towards the workers build up and mark CE; every tree must see CE and cut
  // its window. The engine queue does not mark (K 0): on a loaded machine
  // the engine may fall behind, and its marks would leave the ports nothing
  // to mark (a result already CE is not marked again).
  const Run r = cluster("--workers 4 --trees 2 --size 2MiB --iterations 2 --link-rate 0.1 --ecn-k 16384,0");
  require_all_ok(r, 4);
  uint64_t marked = 0;
  for (const json& p : pswitch_named(r.summary, "s0")["ports"]) marked += p["ecn_marked"].get<uint64_t>();
  CHECK(marked > 0);
  for (const json& w : r.summary["workers"]) {
    for (const json& t : w["trees"]) {
      CHECK(t["results_ce"].get<uint64_t>() > 0);
      CHECK(t["cwnd_reductions"].get<uint64_t>() > 0);
    }
  }
}

TEST_CASE("virtual cluster: a small slot share caps the windows and the slot memory never overflows",
          "[e2e]") {
  // 16 slots, 2 trees: share 8 per tree, so cwnd_cap = 8.
  const Run r = cluster("--workers 4 --trees 2 --size 2MiB --iterations 2 --packet-memory 16 --ecn-k 0");
  require_all_ok(r, 4);
  for (const json& w : r.summary["workers"]) {
    for (const json& t : w["trees"]) {
      CHECK(t["cwnd_cap"] == 8);
      CHECK(t["max_cwnd"].get<double>() <= 8.0);
    }
  }
  for (const json& t : pswitch_named(r.summary, "s0")["trees"]) CHECK(t["engine"]["drop_seq_window"] == 0);
}

TEST_CASE("ring-allreduce baseline over the same links is exact too", "[e2e]") {
  // Uneven segments: 100003 elements over 3 ranks, 256 per frame.
  const Run r = cluster("--baseline ring --workers 3 --size 400012 --elems-per-packet 256 --iterations 2");
  require_all_ok(r, 3);
  CHECK(r.summary["baseline"] == "ring");
  // The engine saw none of it: the frames were ordinary traffic, forwarded by MAC.
  const json& s0 = pswitch_named(r.summary, "s0");
  CHECK(s0["engine"]["panama_in"] == 0);
  uint64_t forwarded = 0;
  for (const json& p : s0["ports"]) forwarded += p["forwarded"].get<uint64_t>();
  CHECK(forwarded > 2 * 2 * 2 * 100003 / 3 / 256);  // 2 iterations x 2(N-1) steps x N ranks x frames/segment
}

TEST_CASE("ring baseline: loss, duplication and reordering are repaired, every channel exact", "[e2e]") {
  // 5 ranks, 3 channels, uneven segments; the PSwitch drops, duplicates and
  // reorders 1% of the frames it sends (ring data and credits alike).
  const Run r = cluster(
      "--baseline ring --ring-channels 3 --workers 5 --size 240004 --elems-per-packet 256 --iterations 2 "
      "--faults 0.01");
  require_all_ok(r, 5);
  uint64_t lost = 0;
  for (const json& p : pswitch_named(r.summary, "s0")["ports"]) lost += p["injected_loss"].get<uint64_t>();
  CHECK(lost > 0);
  uint64_t retransmitted = 0, go_backs = 0;
  for (const json& w : r.summary["workers"]) {
    CHECK(w["ring"]["channels"] == 3);
    retransmitted += w["ring"]["retransmitted_frames"].get<uint64_t>();
    go_backs += w["ring"]["go_backs"].get<uint64_t>();
  }
  CHECK(retransmitted > 0);  // the gaps were filled again, not fatal
  CHECK(go_backs > 0);
}

TEST_CASE("ring baseline: fewer elements than ranks and channels", "[e2e]") {
  const Run r = cluster("--baseline ring --ring-channels 4 --workers 4 --size 12 --iterations 2");
  require_all_ok(r, 4);
}

TEST_CASE("in-process cluster: threads over net_ring, exact, same summary", "[e2e]") {
  const uint64_t elems = 100003, epp = 256;
  const Run r =
      cluster("--nodes threads --workers 4 --trees 3 --size 400012 --elems-per-packet 256 --iterations 2");
  require_all_ok(r, 4);
  CHECK(r.summary["in_process"] == true);
  const json& s0 = pswitch_named(r.summary, "s0");
  for (uint64_t t = 0; t < 3; ++t) {
    const json& e = s0["trees"][t]["engine"];
    CHECK(e["emitted"] == 2 * chunks_of_tree(elems, epp, 3, t));
    CHECK(e["aggregated"] == 4 * 2 * chunks_of_tree(elems, epp, 3, t));
  }
}

TEST_CASE("in-process cluster: two-tier fabric with faults, and the ring baseline", "[e2e]") {
  Run r = cluster(
      "--nodes threads --topology two-tier --workers 4 --trees 2 --size 1MiB --iterations 2 --faults "
      "loss=0.01");
  require_all_ok(r, 4);
  r = cluster("--nodes threads --baseline ring --workers 3 --size 400012 --iterations 2");
  require_all_ok(r, 3);
  CHECK(r.summary["baseline"] == "ring");
}

TEST_CASE("bad options and configs are rejected with a clear message", "[e2e]") {
  Run r = cluster("--size 6");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("multiple of 4"));
  r = cluster("--size 12parsecs");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("not a size"));
  r = cluster("--topology ring");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Contains("topology"));
  // 3 trees x 2 jobs on 4 slots: the controller has no slot for one entry.
  r = cluster("--jobs 2 --trees 3 --packet-memory 4 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("no slot"));

  // Options that do not apply to the chosen mode are refused, never ignored;
  // so are bad values. Each case: the arguments and what the message names.
  const std::vector<std::pair<std::string, std::vector<std::string>>> refused = {
      {"--nodes processes --zero-copy-send false --size 4", {"--zero-copy-send", "--nodes processes"}},
      {"--ring-channels 3 --size 4", {"--ring-channels", "--baseline ring"}},
      {"--baseline ring --trees 3 --size 4", {"--trees", "--baseline ring"}},
      {"--failover-after 4 --size 4", {"--backup-trees"}},
      {"--faults loss=0.9 --size 4", {"probability"}},
      {"--poll lazy --size 4", {"busy, balanced, handoff"}},
      {"--fail-switch nowhere --size 4", {"no PSwitch named 'nowhere'"}},
      {"--topology dual-homed:3x1 --size 4", {"even number of leaves"}},
      {"--baseline ring --dtype bf16 --size 4", {"--dtype bf16", "--baseline ring"}},
      {"--dtype fp16 --size 3", {"--size 3", "multiple of 2 bytes (fp16"}},
      {"--dtype fp64 --size 8", {"--dtype"}},
      {"--pmd af_xdp --size 4", {"--pmd", "--nodes netns"}},
      {"--link-delay 1 --size 4", {"--link-delay", "--nodes netns"}},
      {"--baseline gloo --size 4", {"--baseline gloo", "--nodes netns"}},
      {"--fail-switch s0:DOWN --size 4", {"NAME:DOWN", "--nodes netns"}},
      {"--fail-switch s0:SLEEP --size 4", {"STOP", "KILL", "DOWN"}},
      {"--nodes netns --zero-copy-send false --size 4", {"--zero-copy-send", "--nodes netns"}},
      {"--nodes netns --baseline gloo --trees 3 --size 4", {"--trees", "--baseline gloo"}},
      {"--nodes netns --baseline gloo --dtype bf16 --size 4", {"--dtype bf16", "--baseline gloo"}},
  };
  for (const auto& [args, names] : refused) {
    INFO(args);
    r = cluster(args);
    CHECK(r.exit_code == 2);
    for (const std::string& n : names) CHECK_THAT(r.output, Contains(n));
  }

  const std::string dir = (std::filesystem::temp_directory_path() / "panama-e2e-bad").string();
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/no-pswitch.json");
    f << R"({"node": "x", "engine": {"udp_port": 9600}, "entries": []})";
  }
  r = run_command(std::string(PANAMA_PSWITCH_EXE) + " --config " + dir + "/no-pswitch.json");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("no \"pswitch\" section"));
  {
    std::ofstream f(dir + "/bad-port.json");
    f << R"({"node": "x", "engine": {"udp_port": 9600}, "entries": [],
             "pswitch": {"ports": [{"name": "a", "vdev": "net_null0"}],
                         "trees": [{"job": 1, "tree": 0, "children": ["b"]}]}})";
  }
  r = run_command(std::string(PANAMA_PSWITCH_EXE) + " --config " + dir + "/bad-port.json");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("no port named 'b'"));
  {
    std::ofstream f(dir + "/cluster.json");
    f << R"({"hosts": ["w0", "w1"], "pswitches": ["s0"], "links": [{"a": "w0", "b": "s0"}]})";
    std::ofstream j(dir + "/jobs.json");
    j << R"({"jobs": [{"id": 1, "workers": ["w0", "w1"]}]})";
  }
  r = run_command(std::string(PANAMA_CONTROLLER_EXE) + " --cluster " + dir + "/cluster.json --jobs " + dir +
                  "/jobs.json -o " + dir + "/out");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("host 'w1' has no link to a PSwitch"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("node-spec files: a child refuses unknown and missing keys, naming the key and the file", "[e2e]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "panama-e2e-spec").string();
  std::filesystem::create_directories(dir);
  const std::string good = R"({"role": "pswitch", "name": "s0", "dpdk_prefix": "p",
      "poll": {"name": "busy", "spin_polls": 32, "spin_us": 0, "max_sleep_us": 0},
      "config": "/nonexistent/s0.json", "stats": "/nonexistent/s0.stats.json")";
  {
    std::ofstream f(dir + "/extra.json");
    f << good << R"(, "idle_sleep_us": 50})";
  }
  Run r = run_command(std::string(PANAMA_CLUSTER_EXE) + " --node " + dir + "/extra.json");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("unknown key 'idle_sleep_us'") && Contains(dir + "/extra.json"));
  {
    std::ofstream f(dir + "/nested.json");
    std::string bad = good;
    bad.replace(bad.find("\"spin_us\""), 9, "\"spin_ms\"");
    f << bad << "}";
  }
  r = run_command(std::string(PANAMA_CLUSTER_EXE) + " --node " + dir + "/nested.json");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("'spin_us'") && Contains(dir + "/nested.json"));
  {
    std::ofstream f(dir + "/missing.json");
    f << R"({"role": "worker", "name": "w0", "dpdk_prefix": "p",
             "poll": {"name": "busy", "spin_polls": 32, "spin_us": 0, "max_sleep_us": 0}})";
  }
  r = run_command(std::string(PANAMA_CLUSTER_EXE) + " --node " + dir + "/missing.json");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("missing key 'plan'"));
  r = run_command(std::string(PANAMA_CLUSTER_EXE) + " --node threads");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("did you mean --nodes"));
  std::filesystem::remove_all(dir);
}

// Its own CTest entry (test_cluster_dtype): hidden from the default run.
// The same elements in fp32 and in bf16 (threads), then fp16 on two tiers
// (processes): every result bit-exact against round-to-nearest-even of the
// exact sum (per leaf, then at the root), most of them really rounded, and
// the 16-bit runs move half the payload bytes in as many packets.
TEST_CASE("virtual cluster: bf16 and fp16 allreduces, bit-exact after rounding, half the bytes", "[.dtype]") {
  const uint64_t elems = 300001, epp = 512;  // not a multiple of the packet size
  const std::string common = "--workers 4 --trees 2 --elems-per-packet 512 --iterations 2 ";
  const Run fp32 = cluster("--nodes threads " + common + "--size " + std::to_string(4 * elems));
  require_all_ok(fp32, 4);
  const Run bf16 = cluster("--nodes threads " + common + "--dtype bf16 --size " + std::to_string(2 * elems));
  require_all_ok(bf16, 4);
  CHECK(fp32.summary["dtype"] == "fp32");
  CHECK(bf16.summary["dtype"] == "bf16");
  CHECK(fp32.summary["elements"] == elems);
  CHECK(bf16.summary["elements"] == elems);
  CHECK(bf16.summary["bytes"] == 2 * elems);
  CHECK(fp32.summary["bytes"] == 4 * elems);
  // Payload bytes of results taken, all workers and iterations: elements x 2 (x 4 for fp32).
  const uint64_t got16 = bf16.summary["payload_bytes"]["1"]["completed"].get<uint64_t>();
  const uint64_t got32 = fp32.summary["payload_bytes"]["1"]["completed"].get<uint64_t>();
  CHECK(got16 == 2 * elems * 2 * 4);
  CHECK(2 * got16 == got32);
  CHECK(bf16.summary["payload_bytes"]["1"]["sent"].get<uint64_t>() >= got16);
  for (const json& w : bf16.summary["workers"]) CHECK(w["dtype"] == "bf16");
  // Rounding happened, ties included: the check compared rounded sums.
  const json& r = bf16.summary["rounding"]["1"];
  CHECK(r["checked"] == elems * 2 * 4);
  CHECK(r["rounded"].get<uint64_t>() > elems);
  CHECK(r["ties"].get<uint64_t>() > 0);
  CHECK_THAT(bf16.output, Contains("bf16 rounding"));
  // As many packets: sized in elements whatever the type.
  for (uint64_t t = 0; t < 2; ++t) {
    const json& e16 = pswitch_named(bf16.summary, "s0")["trees"][t]["engine"];
    const json& e32 = pswitch_named(fp32.summary, "s0")["trees"][t]["engine"];
    CHECK(e16["emitted"] == 2 * chunks_of_tree(elems, epp, 2, t));
    CHECK(e16["emitted"] == e32["emitted"]);
    CHECK(e16["aggregated"] == e32["aggregated"]);
  }

  // fp16 with a process per node, on two tiers: the leaves round their
  // partial sums before the spines add them.
  const Run fp16 =
      cluster("--topology two-tier --workers 4 --trees 2 --iterations 1 --dtype fp16 --size 256KiB");
  require_all_ok(fp16, 4);
  CHECK(fp16.summary["dtype"] == "fp16");
  CHECK(fp16.summary["payload_bytes"]["1"]["completed"] == (256u << 10) * 4);
  CHECK(fp16.summary["rounding"]["1"]["rounded"].get<uint64_t>() > 0);
}

// Its own CTest entry (test_cluster_failover): hidden from the default run.
TEST_CASE("virtual cluster: a spine PSwitch stops mid-run, its tree fails over to its standby, all exact",
          "[.failover]") {
  const char* sig = std::getenv("PANAMA_TEST_PSWITCH_SIGNAL");  // STOP (default) or KILL
  const std::string signal = sig ? sig : "STOP";
  // Two spines, trees 0 and 1 on spine0 and spine1, standbys 2 (spine1) and 3 (spine0).
  const Run r = cluster(
      "--topology two-tier:2x2 --workers 4 --trees 2 --backup-trees --failover-after 8 --size 4MiB "
      "--iterations 6 --fail-switch spine0:" +
      signal + "@0.3");
  CHECK_THAT(r.output, Contains("SIG" + signal + " to PSwitch spine0"));
  require_all_ok(r, 4);
  // Tree 0 (rooted at spine0) failed over on every worker, at the same restart sequence;
  // tree 1 kept running on spine1 and its standby (on spine0) was never used.
  uint64_t restart = UINT64_MAX;
  for (const json& w : r.summary["workers"]) {
    CHECK(w["failovers"] == 1);
    REQUIRE(w["trees"].size() == 4);
    const json& t0 = w["trees"][0];
    CHECK(t0["state"] == "dead");
    CHECK(t0["agreed_at_ns"].get<uint64_t>() > t0["dead_at_ns"].get<uint64_t>());
    if (restart == UINT64_MAX) restart = t0["restart_seq"].get<uint64_t>();
    CHECK(t0["restart_seq"].get<uint64_t>() == restart);
    CHECK(w["trees"][1]["state"] == "active");
    CHECK(w["trees"][2]["state"] == "active");
    CHECK(w["trees"][2]["backup_for"] == 0);
    CHECK(w["trees"][3]["state"] == "standby");
    CHECK(w["trees"][2]["bytes_completed"].get<uint64_t>() > 0);  // the standby carried tree 0's chunks
  }
  // Tree 0's chunks: the 6 x 4 MiB split over 2 trees; whatever tree 0 finished
  // before it stopped, the rest completed on tree 2.
  const json& w0 = r.summary["workers"][0];
  const uint64_t tree0_bytes = w0["trees"][0]["bytes_completed"].get<uint64_t>();
  const uint64_t tree2_bytes = w0["trees"][2]["bytes_completed"].get<uint64_t>();
  CHECK(tree0_bytes + tree2_bytes == 6ull * 2 * 1024 * 1024);
  REQUIRE(r.summary["failover"]["1"].size() == 1);
  const json& f = r.summary["failover"]["1"][0];
  CHECK(f["tree"] == 0);
  CHECK(f["workers"] == 4);
  std::cout << "test_cluster_failover: SIG" << signal << " to spine0; tree 0 failed over on every worker, "
            << "detected " << f["detect_ms"].get<double>() << " ms and restarted "
            << f["recover_ms"].get<double>() << " ms after its last result (time to recover)\n";
}

// The same with every node a thread (--nodes threads): STOP freezes the
// spine's thread (it stops forwarding), KILL ends it for good.
TEST_CASE("in-process cluster: a spine PSwitch thread stops mid-run, its tree fails over, all exact",
          "[.failover]") {
  for (const std::string how : {"STOP", "KILL"}) {
    DYNAMIC_SECTION("--fail-switch spine0:" << how) {
      const Run r = cluster(
          "--nodes threads --topology two-tier:2x2 --workers 4 --trees 2 --backup-trees --failover-after 8 "
          "--size 4MiB --iterations 6 --fail-switch spine0:" +
          how + "@0.3");
      CHECK_THAT(r.output, Contains("PSwitch spine0's thread"));
      require_all_ok(r, 4);
      CHECK(r.summary["in_process"] == true);
      CHECK(r.summary["failure_injected"]["pswitch"] == "spine0");
      CHECK(r.summary["failure_injected"]["how"] == how);
      uint64_t restart = UINT64_MAX;
      for (const json& w : r.summary["workers"]) {
        CHECK(w["failovers"] == 1);
        REQUIRE(w["trees"].size() == 4);
        const json& t0 = w["trees"][0];
        CHECK(t0["state"] == "dead");
        if (restart == UINT64_MAX) restart = t0["restart_seq"].get<uint64_t>();
        CHECK(t0["restart_seq"].get<uint64_t>() == restart);
        CHECK(w["trees"][1]["state"] == "active");
        CHECK(w["trees"][2]["state"] == "active");
        CHECK(w["trees"][2]["bytes_completed"].get<uint64_t>() > 0);
      }
      const json& w0 = r.summary["workers"][0];
      CHECK(w0["trees"][0]["bytes_completed"].get<uint64_t>() +
                w0["trees"][2]["bytes_completed"].get<uint64_t>() ==
            6ull * 2 * 1024 * 1024);
      REQUIRE(r.summary["failover"]["1"].size() == 1);
      const json& f = r.summary["failover"]["1"][0];
      CHECK(f["tree"] == 0);
      CHECK(f["workers"] == 4);
      std::cout << "test_cluster_failover: --nodes threads, " << how << " to spine0; tree 0 restarted "
                << f["recover_ms"].get<double>() << " ms after its last result (time to recover)\n";
    }
  }
}

TEST_CASE("virtual cluster: dual-homed workers survive a leaf PSwitch stopping mid-run", "[.failover]") {
  // Two leaves, every worker linked to both: tree 0 and tree 1's standby at
  // leaf0, tree 1 and tree 0's standby at leaf1.
  const Run r = cluster(
      "--topology dual-homed:2x1 --workers 4 --trees 2 --backup-trees --failover-after 8 --size 4MiB "
      "--iterations 6 --fail-switch leaf0@0.3");
  CHECK_THAT(r.output, Contains("job 1 tree 0 rooted at leaf0") && Contains("job 1 tree 2 rooted at leaf1"));
  require_all_ok(r, 4);
  for (const json& w : r.summary["workers"]) {
    CHECK(w["failovers"] == 1);
    CHECK(w["trees"][0]["state"] == "dead");
    CHECK(w["trees"][1]["state"] == "active");
    CHECK(w["trees"][2]["state"] == "active");
  }
  REQUIRE(r.summary["failover"]["1"].size() == 1);
  const json& f = r.summary["failover"]["1"][0];
  std::cout << "test_cluster_failover: SIGSTOP to leaf0 (dual-homed workers); tree 0 restarted "
            << f["recover_ms"].get<double>() << " ms after its last result (time to recover)\n";
}

namespace {

// panama-cluster in the background (its own process group), output to a file.
struct BackgroundCluster {
  pid_t pid = -1;
  std::string run_dir, out_path, summary_path;

  explicit BackgroundCluster(const std::string& tag, const std::vector<std::string>& args) {
    const std::string base =
        (std::filesystem::temp_directory_path() / ("panama-e2e-" + tag + "-" + std::to_string(getpid())))
            .string();
    run_dir = base + "-run";
    out_path = base + ".out";
    summary_path = base + ".json";
    std::filesystem::remove_all(run_dir);
    std::filesystem::remove(summary_path);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      setpgid(0, 0);
      const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
      dup2(out, STDERR_FILENO);
      std::vector<std::string> a = {PANAMA_CLUSTER_EXE, "--run-dir", run_dir, "--summary-json", summary_path};
      a.insert(a.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& s : a) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv(PANAMA_CLUSTER_EXE, argv.data());
      _exit(127);
    }
    setpgid(pid, pid);
  }
  ~BackgroundCluster() {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(-pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(run_dir);
    std::filesystem::remove(out_path);
    std::filesystem::remove(summary_path);
  }
  std::string output() const {
    std::ifstream f(out_path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  json summary() const {
    std::ifstream f(summary_path);
    return f ? json::parse(f) : json();
  }
  // Pids of this run's node processes (their command line names the run directory).
  std::vector<pid_t> nodes(const char* kind) const {
    std::vector<pid_t> v;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::ifstream f(e.path() / "cmdline");
      std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      if (cmd.find(kind) != std::string::npos && cmd.find(run_dir) != std::string::npos) {
        v.push_back(static_cast<pid_t>(std::stol(e.path().filename().string())));
      }
    }
    return v;
  }
  // Waits (bounded) until the progress line shows more than 0% done.
  bool wait_for_progress() const {
    for (int i = 0; i < 1200; ++i) {
      const std::string out = output();
      const size_t at = out.rfind("progress");
      if (at != std::string::npos && std::strtod(out.c_str() + at + 8, nullptr) > 0.0) return true;
      if (waitpid(pid, nullptr, WNOHANG) != 0) return false;
      usleep(50000);
    }
    return false;
  }
  int wait() {
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    pid = -1;
    return st;
  }
};

std::vector<std::string> dpdk_dirs_of(pid_t parent) {
  std::vector<std::string> v;
  if (!std::filesystem::exists("/var/run/dpdk")) return v;
  for (const auto& e : std::filesystem::directory_iterator("/var/run/dpdk")) {
    const std::string n = e.path().filename().string();
    if (n.rfind("pnm" + std::to_string(parent) + "-", 0) == 0) v.push_back(n);
  }
  return v;
}

}  // namespace

TEST_CASE("virtual cluster: a SIGKILLed parent's DPDK folders are removed by the next start", "[e2e]") {
  BackgroundCluster bg("kill9", {"--no-progress", "--iterations", "1000", "--size", "4MiB"});
  for (int i = 0; i < 400 && bg.nodes("/nodes/w").size() < 4; ++i) usleep(50000);
  REQUIRE(bg.nodes("/nodes/w").size() == 4);
  const pid_t parent = bg.pid;
  if (getuid() != 0) return;  // the folders below are root's
  // Every node's EAL is up (its runtime folder exists) before the kill.
  for (int i = 0; i < 400 && dpdk_dirs_of(parent).size() < 5; ++i) usleep(50000);
  REQUIRE(dpdk_dirs_of(parent).size() == 5);
  kill(parent, SIGKILL);  // the nodes die with it (parent-death signal): nobody runs exit code
  const int st = bg.wait();
  CHECK(WIFSIGNALED(st));
  for (int i = 0; i < 200 && !bg.nodes("/nodes/").empty(); ++i) usleep(50000);
  REQUIRE(bg.nodes("/nodes/").empty());
  // Nothing could run at the SIGKILL: the nodes' folders are still there...
  CHECK(dpdk_dirs_of(parent).size() == 5);
  // ... and the next PANAMA process to start its EAL removes them; its own are gone after it.
  const Run r = cluster("--workers 2 --size 4 --iterations 1");
  require_all_ok(r, 2);
  CHECK(dpdk_dirs_of(parent).empty());
}

TEST_CASE("standalone panama-pswitch: its DPDK folder is gone after a clean exit", "[e2e]") {
  const std::string dir = (std::filesystem::temp_directory_path() / "panama-e2e-psw").string();
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/s.json");
    f << R"({"node": "x", "engine": {"udp_port": 9600},
             "entries": [{"index": 0, "job": 1, "tree": 0, "root": true, "fan_in": 1, "children": [0],
                          "slot_base": 0, "slot_count": 4, "eth_src": "02:00:00:00:00:10", "eth_dst": "01:00:5e:01:00:00", "ip_src": "10.0.0.10", "ip_dst": "239.1.0.0", "udp_src": 9600, "udp_dst": 9600}],
             "pswitch": {"name": "eal-test", "ports": [{"name": "a", "vdev": "net_null0"}],
                         "trees": [{"job": 1, "tree": 0, "children": ["a"]}]}})";
  }
  const std::string prefix = "pswitch-eal-test-" + std::to_string(getpid());
  const Run r = run_command(std::string(PANAMA_PSWITCH_EXE) + " --quiet --duration 0.2 --file-prefix " +
                            prefix + " --config " + dir + "/s.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists("/var/run/dpdk/" + prefix));
  std::filesystem::remove_all(dir);
}

TEST_CASE("virtual cluster: a killed worker is reported with its signal", "[e2e]") {
  BackgroundCluster bg("killw", {"--iterations", "100000", "--size", "256KiB", "--stall-timeout", "3"});
  REQUIRE(bg.wait_for_progress());
  const std::vector<pid_t> w = bg.nodes("/nodes/w");
  REQUIRE(!w.empty());
  kill(w[0], SIGKILL);
  const int st = bg.wait();
  INFO(bg.output());
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 1);
  const json s = bg.summary();
  REQUIRE(s.contains("workers"));
  int killed = 0;
  for (const json& r : s["workers"]) {
    if (r.value("signal", 0) == SIGKILL) {
      ++killed;
      CHECK_THAT(r["error"].get<std::string>(), Contains("killed by signal 9 (SIGKILL"));
    }
  }
  CHECK(killed == 1);
}

TEST_CASE("virtual cluster: SIGTERM prints what was done (not zeros)", "[e2e]") {
  BackgroundCluster bg("term", {"--iterations", "100000", "--size", "256KiB"});
  REQUIRE(bg.wait_for_progress());
  usleep(300000);
  kill(bg.pid, SIGTERM);
  const int st = bg.wait();
  const std::string out = bg.output();
  INFO(out);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 130);
  const json s = bg.summary();
  REQUIRE(s.contains("workers"));
  uint64_t done = 0;
  for (const json& r : s["workers"]) {
    done += r.value("iterations_done", uint64_t{0});
    if (r.value("iterations_done", uint64_t{0}) > 0) CHECK(!r["seconds"].empty());
  }
  CHECK(done > 0);
  CHECK(s["goodput_gbps"]["1"].get<double>() > 0.0);
  CHECK_THAT(out, Contains("of 100000 allreduces completed"));
}

TEST_CASE("validation gaps: sizes and PSwitch configs are refused with a clear message", "[e2e]") {
  Run r = cluster("--size 99999999999999999999");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("too large"));
  r = cluster("--size 18446744073709551616");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("too large"));
  // 64 GiB in each of 4 workers, twice: more than this machine has available.
  uint64_t avail_kib = 0;
  {
    std::ifstream mi("/proc/meminfo");
    std::string k, unit;
    uint64_t v = 0;
    while (mi >> k >> v >> unit) {
      if (k == "MemAvailable:") avail_kib = v;
    }
  }
  if (avail_kib > 0 && avail_kib < (uint64_t{512} << 20)) {
    r = cluster("--size 64GiB");
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Contains("MemAvailable"));
    CHECK_THAT(r.output, !Contains("bad_alloc"));
  }

  const std::string dir = (std::filesystem::temp_directory_path() / "panama-e2e-gaps").string();
  std::filesystem::create_directories(dir);
  auto pswitch_with = [&](const std::string& name, const std::string& entries, const std::string& trees) {
    std::ofstream f(dir + "/" + name);
    f << R"({"node": "x", "engine": {"udp_port": 9600}, "entries": [)" << entries
      << R"(], "pswitch": {"ports": [{"name": "a", "vdev": "net_null0"}, {"name": "b", "vdev": "net_null1"},
                                   {"name": "up", "vdev": "net_null2"}], "trees": [)"
      << trees << "]}}";
    f.close();
    return run_command(std::string(PANAMA_PSWITCH_EXE) + " --quiet --duration 0.1 --config " + dir + "/" +
                       name);
  };
  const std::string root = R"({"index": 0, "job": 1, "tree": 0, "root": true, "fan_in": 2, "children": [0, 1],
                                "slot_base": 0, "slot_count": 4, "eth_src": "02:00:00:00:00:10", "eth_dst": "01:00:5e:01:00:00", "ip_src": "10.0.0.10", "ip_dst": "239.1.0.0", "udp_src": 9600, "udp_dst": 9600})";
  r = pswitch_with("dup-child.json", root, R"({"job": 1, "tree": 0, "children": ["a", "b", "a"]})");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("port 'a' is listed twice"));
  r = pswitch_with(
      "no-entry.json", root,
      R"({"job": 1, "tree": 0, "children": ["a", "b"]}, {"job": 2, "tree": 0, "children": ["a"]})");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("job 2 tree 0 has no engine entry"));
  r = pswitch_with("child-64.json",
                   R"({"index": 0, "job": 1, "tree": 0, "fan_in": 2, "children": [0, 1], "slot_base": 0,
                       "slot_count": 4, "out_child_id": 64, "eth_src": "02:00:00:00:00:10", "eth_dst": "01:00:5e:01:00:00", "ip_src": "10.0.0.10", "ip_dst": "239.1.0.0", "udp_src": 9600, "udp_dst": 9600})",
                   R"({"job": 1, "tree": 0, "parent": "up", "children": ["a", "b"]})");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Contains("child id 64 is over 63"));
  std::filesystem::remove_all(dir);
}

// ------------------------------------------------------------ pooled jobs

namespace {

// The counters of job `job` tree `tree` at `pswitch`: a pooled tree's, with its "pool".
const json& pool_tree(const json& summary, const std::string& pswitch, uint64_t job, uint64_t tree) {
  for (const json& t : pswitch_named(summary, pswitch)["trees"]) {
    if (t["job"] == job && t["tree"] == tree) {
      REQUIRE(t.contains("pool"));
      return t;
    }
  }
  FAIL("no tree " << job << "/" << tree << " at " << pswitch);
  throw;
}

uint64_t denied_total(const json& pool) {
  uint64_t n = 0;
  for (const auto& [reason, count] : pool["denied"].items()) n += count.get<uint64_t>();
  return n;
}

// How a pooled job's groups finished: the same on every worker (each group
// all in the network or all on the ring), every group one way or the other,
// and per tree the root's emissions are exactly G results per group this
// job finished in the network: no other tenant's results in them, none of
// its own elsewhere. Returns rank 0's (in_network, on_ring).
std::pair<uint64_t, uint64_t> check_pooled_job(const json& summary, uint64_t job, uint64_t trees,
                                               uint64_t groups_per_tree, uint64_t g,
                                               const std::vector<std::string>& roots) {
  const json* rank0 = nullptr;
  for (const json& w : summary["workers"]) {
    if (w["job"] == job && w["rank"] == 0) rank0 = &w;
  }
  REQUIRE(rank0);
  REQUIRE(rank0->contains("pool"));
  for (const json& w : summary["workers"]) {
    if (w["job"] != job) continue;
    REQUIRE(w.contains("pool"));
    CHECK(w["pool"]["in_network"] == (*rank0)["pool"]["in_network"]);
    CHECK(w["pool"]["on_ring"] == (*rank0)["pool"]["on_ring"]);
    CHECK(w["pool"]["ring_malformed"] == 0);
    CHECK(w["pool"]["denied_after_result"] == 0);
  }
  for (uint64_t t = 0; t < trees; ++t) {
    const json& wt = (*rank0)["trees"][t]["pool"];
    CHECK(wt["groups"] == groups_per_tree);
    CHECK(wt["in_network"].get<uint64_t>() + wt["on_ring"].get<uint64_t>() == groups_per_tree);
    const json& root_tree = pool_tree(summary, roots[t], job, t);
    const json& root = root_tree["pool"];
    // Every group finished in the network emitted its G results at the
    // root, and the root emitted for no other group (re-sent results to a
    // retransmitting worker apart).
    CHECK(root_tree["results_emitted"] == g * wt["in_network"].get<uint64_t>());
    CHECK(root["granted"].get<uint64_t>() >= wt["in_network"].get<uint64_t>());
    CHECK(root["granted"].get<uint64_t>() + denied_total(root) == groups_per_tree);
    CHECK(root["drop_bad_child"] == 0);
    CHECK(root["drop_stale_group"] == 0);
    CHECK(root["commit_failures"] == 0);
    CHECK(root["unmapped"] == 0);
  }
  const json& p = summary["pool"][std::to_string(job)];
  CHECK(p["groups"] == trees * groups_per_tree);
  return {p["in_network"].get<uint64_t>(), p["on_ring"].get<uint64_t>()};
}

}  // namespace

// Its own CTest entry (test_cluster_pool): hidden from the default run.
// Two pooled jobs on one PSwitch whose pool holds one group at a time (8
// slots, G = 8, each job's claim cap the whole pool): whichever job's claim
// comes first takes it, the other's groups go to its ring meanwhile. Both
// jobs bit-exact; every group finished one way on every worker; the engine's
// emissions per tree are the job's own network groups; the pool never held
// more than its 8 slots.
TEST_CASE("virtual cluster: two pooled jobs share a pool that fits one group", "[.pool]") {
  const Run r =
      cluster("--jobs 2 --workers 3 --trees 1 --size 1MiB --iterations 2 --pool 8 --group 8 --overcommit 2");
  require_all_ok(r, 6);
  // 262144 elements / 1024 per packet = 256 sequences = 32 groups per allreduce.
  uint64_t in_network = 0, on_ring = 0;
  for (uint64_t job = 1; job <= 2; ++job) {
    const auto [net, ring] = check_pooled_job(r.summary, job, 1, 64, 8, {"s0"});
    in_network += net;
    on_ring += ring;
  }
  CHECK(in_network > 0);
  CHECK(on_ring > 0);
  const json& s0 = pswitch_named(r.summary, "s0");
  REQUIRE(s0.contains("pool"));
  CHECK(s0["pool"]["slots_high_water"].get<uint64_t>() <= 8);
  // Every worker sent its last release before it went idle: every group
  // released, the pool free again.
  CHECK(s0["pool"]["free_slots"] == 8);
  for (uint64_t job = 1; job <= 2; ++job)
    CHECK(pool_tree(r.summary, "s0", job, 0)["pool"]["released_groups"] == 64);
  CHECK(s0["switch"]["binding_drops"] == 0);
  CHECK(s0["switch"]["claim_malformed"] == 0);
  CHECK_THAT(r.output, Contains("pooled: 64 groups"));
  CHECK_THAT(r.output, Contains("(pooled): claims"));
  // Every worker heard the root confirm the last count.
  for (const json& w : r.summary["workers"]) CHECK(w["pool"]["confirmed"] == 64);
}

// The same with congestion control on the ring (--ring-cc): bit-exact, every
// group finished one way on every worker, every group released.
TEST_CASE("virtual cluster: pooled jobs with congestion control on the ring", "[.pool]") {
  const Run r = cluster(
      "--jobs 2 --workers 3 --trees 1 --size 1MiB --iterations 2 --pool 8 --group 8 --overcommit 2 "
      "--ring-cc");
  require_all_ok(r, 6);
  uint64_t on_ring = 0;
  for (uint64_t job = 1; job <= 2; ++job)
    on_ring += check_pooled_job(r.summary, job, 1, 64, 8, {"s0"}).second;
  CHECK(on_ring > 0);
  const json& s0 = pswitch_named(r.summary, "s0");
  CHECK(s0["pool"]["free_slots"] == 8);
  for (const json& w : r.summary["workers"]) {
    CHECK(w["pool"]["confirmed"] == 64);
    CHECK(w["pool"]["ring_malformed"] == 0);
  }
}

// A pooled job next to a fixed-share job, bf16: the pooled job's groups are
// bit-exact whichever way they went (one PSwitch: the network and the ring
// both round the exact sum once), and the fixed-share job's engine counters
// are exactly its own chunks, as without a pool.
TEST_CASE("virtual cluster: a pooled bf16 job next to a fixed-share one", "[.pool]") {
  const Run r = cluster(
      "--jobs 2 --workers 3 --trees 2 --size 1MiB --iterations 2 --dtype bf16 --pool 64 --pooled-jobs 1");
  require_all_ok(r, 6);
  // 524288 bf16 elements / 1024 = 512 chunks, 256 per tree = 32 groups of 8 per allreduce.
  const auto [net, ring] = check_pooled_job(r.summary, 1, 2, 64, 8, {"s0", "s0"});
  CHECK(net + ring == 128);
  CHECK_FALSE(r.summary["pool"].contains("2"));
  for (const json& w : r.summary["workers"]) CHECK(w.contains("pool") == (w["job"] == 1));
  const json& s0 = pswitch_named(r.summary, "s0");
  for (const json& t : s0["trees"]) {
    if (t["job"] != 2) continue;
    CHECK_FALSE(t.contains("pool"));
    const uint64_t tree = t["tree"].get<uint64_t>();
    CHECK(t["engine"]["emitted"] == 2 * chunks_of_tree(524288, 1024, 2, tree));
    CHECK(t["engine"]["aggregated"] == 3 * 2 * chunks_of_tree(524288, 1024, 2, tree));
    CHECK(t["engine"]["drop_seq_window"] == 0);
  }
  CHECK(r.summary["rounding"]["1"]["rounded"].get<uint64_t>() > 0);
  CHECK(r.summary["rounding"]["2"]["rounded"].get<uint64_t>() > 0);
}

// Two tiers: the pooled trees' leaves and spines each keep a pool; ring
// frames between ranks under different leaves go up to the tree's root
// spine by the leaves' MAC routes and down by the spine's, as ordinary
// traffic: no rank receives another pair's ring frames (none malformed).
TEST_CASE("virtual cluster: pooled jobs on two tiers, rings across the leaves", "[.pool]") {
  const Run r = cluster(
      "--topology two-tier:4x2 --jobs 2 --workers 4 --trees 1 --size 1MiB --iterations 2 --pool 8 --group 8 "
      "--overcommit 2");
  require_all_ok(r, 8);
  const auto [net1, ring1] = check_pooled_job(r.summary, 1, 1, 64, 8, {"spine0"});
  const auto [net2, ring2] = check_pooled_job(r.summary, 2, 1, 64, 8, {"spine1"});
  CHECK(net1 + net2 > 0);
  CHECK(ring1 + ring2 > 0);
  // Job 1's ranks sit under leaf0 and leaf2: its ring crossed the spines.
  for (const char* leaf : {"leaf0", "leaf2"})
    CHECK(pool_tree(r.summary, leaf, 1, 0)["pool"]["drop_bad_child"] == 0);
}

TEST_CASE("pooled options are refused where they do not apply", "[e2e]") {
  Run r = cluster("--group 8 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--group applies only with --pool"));
  r = cluster("--pool 8 --pooled-jobs 3 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--pooled-jobs: job 3 is not one of the 1 job(s)"));
  r = cluster("--topology two-tier --pool 8 --dtype bf16 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--pool with --dtype bf16 needs --topology single"));
  r = cluster("--baseline ring --pool 8 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("--pool applies to in-network aggregation only"));
  r = cluster("--pool 8 --group 16 --size 4");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Contains("group 16 is larger than what fits"));
}
