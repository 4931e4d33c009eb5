// A whole PSwitch process: load the node config, start the EAL with the
// ports' virtual devices, switch until told to stop, report counters, clean
// up its memif sockets. Shared by panama-pswitch and the virtual cluster.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "panama/runtime/idle_backoff.hpp"

namespace panama::pswitch {

struct PswitchProcessOptions {
  std::string config_path;  // node config with a "pswitch" section
  std::string stats_path;   // counters JSON, rewritten every stats_interval s and at exit
  std::string file_prefix;  // DPDK --file-prefix; default pswitch-<name>-<pid>
  std::vector<std::string> extra_eal;
  double stats_interval = 1.0;
  double duration = 0.0;  // seconds; 0 = until `stop`
  bool quiet = false;     // no counter table on stderr at exit
  // How the polling loop waits when idle (runtime::IdlePolicy): busy by
  // default (a core per PSwitch, real NICs); balanced or handoff where cores
  // are shared with the workers.
  runtime::IdlePolicy idle = runtime::IdlePolicy::busy();
};

// Returns the process exit code (0 ok, 1 error, message on stderr).
int run_pswitch_process(const PswitchProcessOptions& opt, const std::atomic<bool>& stop);

}  // namespace panama::pswitch
