// DPDK's runtime folders (/var/run/dpdk/<file-prefix>: the shared config,
// the memory-segment arrays, the multi-process socket; about 13 MB of RAM
// each without hugepages) outlive the process that made them. PANAMA's
// processes remove their own at exit and, at start-up, those of PANAMA
// processes that died without exiting (SIGKILL, a crash): DpdkEal::initialize
// calls both.
#pragma once

#include <string>
#include <vector>

namespace panama::runtime {

// Where the EAL puts runtime folders for this user (/var/run/dpdk as root,
// else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk), as eal_create_runtime_dir does.
std::string eal_runtime_base_dir();

// The PANAMA file prefixes and the pid each names: "pnm<pid>-<node>" (a
// virtual cluster's nodes, named by the parent), "pnm_rt_<pid>" (runtime
// tests), "pswitch-<name>-<pid>" (a standalone panama-pswitch) and
// "panama-<what>-<pid>" (e.g. panama-torch-<pid>, the PyTorch backend's).
// Returns false for any other name, which is never touched.
bool panama_prefix_pid(const std::string& prefix, long& pid);

// Removes every folder under `base_dir` whose name is a PANAMA prefix whose
// pid is not running and whose EAL config file no live process holds locked
// (a DPDK primary keeps a lock on it while it runs), except `keep`. Returns
// the names removed. Never throws.
std::vector<std::string> remove_stale_eal_runtime_dirs(const std::string& base_dir,
                                                       const std::string& keep = "");

// Removes `dir` (the EAL's runtime folder of this process) when the process
// exits normally (exit, return from main). Registered once per process.
void remove_eal_runtime_dir_at_exit(const std::string& dir);

}  // namespace panama::runtime
