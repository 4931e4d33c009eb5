// DPDK runtime folders are removed on every exit path: a process removes its
// own at a normal exit, and the next PANAMA process to start removes those
// of PANAMA processes that died without exiting (SIGKILL). Only folders with
// PANAMA's prefixes, of dead pids, that no running EAL holds, are touched.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/eal_runtime_dir.hpp"

namespace fs = std::filesystem;
using namespace panama::runtime;

namespace {

// A pid that is certainly not running: a child that has exited and been reaped.
long dead_pid() {
  const pid_t p = fork();
  if (p == 0) _exit(0);
  int st = 0;
  waitpid(p, &st, 0);
  return p;
}

void make_runtime_dir(const fs::path& d) {
  fs::create_directories(d);
  std::ofstream(d / "config") << "x";
}

// Runs `body` in a child process and returns its wait status.
template <class F>
int in_child(F body) {
  const pid_t p = fork();
  if (p == 0) {
    body();
    _exit(0);
  }
  int st = 0;
  waitpid(p, &st, 0);
  return st;
}

std::vector<std::string> eal_args(const std::string& prefix) {
  return {"--no-huge",
          "-m",
          "64",
          "--no-pci",
          "--no-telemetry",
          "-l",
          "0",
          "--log-level=lib.eal:error",
          "--file-prefix=" + prefix};
}

}  // namespace

TEST_CASE("PANAMA's EAL file prefixes and the pid each names", "[eal]") {
  long pid = 0;
  CHECK((panama_prefix_pid("pnm_rt_1234", pid) && pid == 1234));
  CHECK((panama_prefix_pid("pnm4321-w0", pid) && pid == 4321));
  CHECK((panama_prefix_pid("pnm4321-leaf-1", pid) && pid == 4321));
  CHECK((panama_prefix_pid("pswitch-s0-77", pid) && pid == 77));
  CHECK((panama_prefix_pid("pswitch-my-switch-78", pid) && pid == 78));
  CHECK((panama_prefix_pid("panama-torch-79", pid) && pid == 79));
  for (const char* other : {"rte", "pnm_rt_example", "pnm-w0", "pnmx1-w0", "pnm12", "pswitch-s0", "w0",
                            "pnm_rt_", "pswitch--", "mydpdk_1234", "panama-torch", "panama-x-y"}) {
    INFO(other);
    CHECK_FALSE(panama_prefix_pid(other, pid));
  }
}

TEST_CASE("stale folders: only PANAMA prefixes of dead, unlocked processes are removed", "[eal]") {
  const fs::path base = fs::temp_directory_path() / ("panama-eal-test-" + std::to_string(getpid()));
  fs::remove_all(base);
  const long dead = dead_pid();
  const std::string d = std::to_string(dead);
  for (const std::string& n : {"pnm_rt_" + d, "pnm" + d + "-w0", "pnm" + d + "-s0", "pswitch-s0-" + d})
    make_runtime_dir(base / n);
  const std::string self = "pnm_rt_" + std::to_string(getpid());
  const std::string parent = "pnm" + std::to_string(getppid()) + "-w1";
  const std::vector<std::string> kept = {self, parent, "rte", "other_" + d, "pnm_rt_example"};
  for (const std::string& n : kept) make_runtime_dir(base / n);
  // A dead parent's folder still held by a running primary (an orphaned node): its config is locked.
  const std::string held = "pnm" + std::to_string(dead_pid()) + "-w2";
  make_runtime_dir(base / held);
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t holder = fork();
  if (holder == 0) {
    const int fd = open((base / held / "config").c_str(), O_RDWR);
    struct flock lk {};
    lk.l_type = F_WRLCK;
    lk.l_whence = SEEK_SET;
    const bool locked = fcntl(fd, F_SETLK, &lk) == 0;
    const char c = locked ? 1 : 0;
    (void)!write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  REQUIRE(c == 1);

  std::vector<std::string> removed = remove_stale_eal_runtime_dirs(base.string(), "pnm_rt_keep");
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected = {"pnm_rt_" + d, "pnm" + d + "-w0", "pnm" + d + "-s0",
                                       "pswitch-s0-" + d};
  std::sort(expected.begin(), expected.end());
  CHECK(removed == expected);
  for (const std::string& n : expected) CHECK_FALSE(fs::exists(base / n));
  for (const std::string& n : kept) CHECK(fs::exists(base / n / "config"));
  CHECK(fs::exists(base / held / "config"));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  // Once the holder is gone, its folder is stale too.
  CHECK(remove_stale_eal_runtime_dirs(base.string()) == std::vector<std::string>{held});
  fs::remove_all(base);
}

TEST_CASE("a process removes its EAL runtime folder at exit; after SIGKILL the next start removes it",
          "[eal][dpdk]") {
  const fs::path base = eal_runtime_base_dir();
  // A normal exit: the folder existed while the EAL ran and is gone afterwards.
  int st = in_child([&] {
    const std::string prefix = "pnm_rt_" + std::to_string(getpid());
    DpdkEal::initialize(eal_args(prefix));
    const bool there = fs::exists(base / prefix / "config");
    std::exit(there ? 0 : 3);
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);

  // SIGKILL: nothing runs at exit, the folder stays behind...
  const pid_t killed = fork();
  if (killed == 0) {
    DpdkEal::initialize(eal_args("pnm_rt_" + std::to_string(getpid())));
    raise(SIGKILL);
    _exit(0);
  }
  REQUIRE(waitpid(killed, &st, 0) == killed);
  REQUIRE(WIFSIGNALED(st));
  REQUIRE(fs::exists(base / ("pnm_rt_" + std::to_string(killed)) / "config"));
  // ... until the next PANAMA process starts its EAL.
  st = in_child([&] {
    DpdkEal::initialize(eal_args("pnm_rt_" + std::to_string(getpid())));
    std::exit(0);
  });
  REQUIRE(WIFEXITED(st));
  CHECK_FALSE(fs::exists(base / ("pnm_rt_" + std::to_string(killed))));
}
