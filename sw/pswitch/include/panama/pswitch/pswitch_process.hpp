// A whole PSwitch process: load the node config, start the EAL with the
// ports' virtual devices, switch until told to stop, report counters, clean
// up its memif sockets. Shared by panama-pswitch and the virtual cluster.
#pragma once

#include <atomic>
#include <string>
#include <vector>

namespace panama::pswitch {

struct PswitchProcessOptions {
  std::string config_path;  // node config with a "pswitch" section
  std::string stats_path;   // counters JSON, rewritten every stats_interval s and at exit
  std::string file_prefix;  // DPDK --file-prefix; default pswitch-<name>-<pid>
  std::vector<std::string> extra_eal;
  double stats_interval = 1.0;
  double duration = 0.0;  // seconds; 0 = until `stop`
  bool quiet = false;     // no counter table on stderr at exit
  // Longest idle sleep of the polling loop in microseconds (runtime::IdleBackoff);
  // 0 busy-polls (a core per PSwitch, real NICs).
  uint32_t idle_sleep_us = 0;
  // Keep polling until idle this long before backing off (IdleBackoffConfig::spin_us).
  uint32_t idle_spin_us = 0;
};

// Returns the process exit code (0 ok, 1 error, message on stderr).
int run_pswitch_process(const PswitchProcessOptions& opt, const std::atomic<bool>& stop);

}  // namespace panama::pswitch
