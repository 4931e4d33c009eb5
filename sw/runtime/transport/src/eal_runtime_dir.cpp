// Removal of DPDK runtime folders: our own at exit, dead processes' at start-up.
#include "panama/runtime/eal_runtime_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace panama::runtime {

namespace {

namespace fs = std::filesystem;

bool parse_pid(const std::string& s, long& pid) {
  if (s.empty() || s.size() > 10) return false;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v <= 0) return false;
  pid = v;
  return true;
}

bool process_alive(long pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

// True when some process holds a lock on <dir>/config (a running primary).
bool config_locked(const fs::path& dir) {
  const int fd = ::open((dir / "config").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // no config file: nothing can be using the folder as a primary
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  probe.l_start = 0;
  probe.l_len = 0;
  const bool locked = ::fcntl(fd, F_GETLK, &probe) != 0 || probe.l_type != F_UNLCK;
  ::close(fd);
  return locked;
}

std::mutex g_exit_mu;
std::string g_exit_dir;

void remove_at_exit() {
  std::lock_guard<std::mutex> lock(g_exit_mu);
  if (g_exit_dir.empty()) return;
  std::error_code ec;
  fs::remove_all(g_exit_dir, ec);
  g_exit_dir.clear();
}

}  // namespace

std::string eal_runtime_base_dir() {
  if (::getuid() == 0) return "/var/run/dpdk";
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  return std::string(xdg && *xdg ? xdg : "/tmp") + "/dpdk";
}

bool panama_prefix_pid(const std::string& p, long& pid) {
  if (p.rfind("pnm_rt_", 0) == 0) return parse_pid(p.substr(7), pid);
  if (p.rfind("pnm", 0) == 0) {
    const size_t dash = p.find('-');
    return dash != std::string::npos && dash + 1 < p.size() && parse_pid(p.substr(3, dash - 3), pid);
  }
  for (const char* named : {"pswitch-", "panama-"}) {  // pswitch-<name>-<pid>, panama-torch-<pid>, ...
    const size_t n = std::strlen(named);
    if (p.rfind(named, 0) != 0) continue;
    const size_t dash = p.rfind('-');
    return dash >= n && parse_pid(p.substr(dash + 1), pid);
  }
  return false;
}

std::vector<std::string> remove_stale_eal_runtime_dirs(const std::string& base_dir, const std::string& keep) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(base_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    long pid = 0;
    if (name == keep || !panama_prefix_pid(name, pid)) continue;
    std::error_code sec;
    if (!it->is_directory(sec) || it->is_symlink(sec)) continue;
    if (pid == static_cast<long>(::getpid()) || process_alive(pid) || config_locked(it->path())) continue;
    std::error_code rec;
    fs::remove_all(it->path(), rec);
    if (!rec) removed.push_back(name);
  }
  return removed;
}

void remove_eal_runtime_dir_at_exit(const std::string& dir) {
  static std::once_flag registered;
  {
    std::lock_guard<std::mutex> lock(g_exit_mu);
    g_exit_dir = dir;
  }
  std::call_once(registered, [] { std::atexit(remove_at_exit); });
}

}  // namespace panama::runtime
