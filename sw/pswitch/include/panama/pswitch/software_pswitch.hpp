// The software PSwitch over DPDK: the engine (hw/hls, programmed from the node
// config through sw/config), the switch logic (switch_core.hpp) and, per
// port, a DpdkPort, a paced ECN output queue and a fault injector.
//
// Set-up (constructor), the polling loop (poll/run) and tear-down
// (destructor) are separate; poll() works on bursts and does not allocate
// besides mbufs. One thread drives one SoftwarePswitch.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/config/node_config.hpp"
#include "panama/pswitch/settings.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/idle_backoff.hpp"

namespace panama::pswitch {

class SoftwarePswitch {
 public:
  // Programs a new engine from `cfg.entries` and opens the ports. A port's
  // DPDK device is `device_names[i]` when given, else the device name of its
  // "vdev" (the text before the first comma). Throws SettingsError,
  // config::ConfigError or runtime::DpdkError with a clear message.
  SoftwarePswitch(const config::NodeConfig& cfg, std::shared_ptr<runtime::DpdkEal> eal,
                  const std::vector<std::string>& device_names = {});
  ~SoftwarePswitch();
  SoftwarePswitch(const SoftwarePswitch&) = delete;
  SoftwarePswitch& operator=(const SoftwarePswitch&) = delete;

  // One pass over every port: receive and switch a burst, send what the
  // queues release by `now_ns`. Returns the number of frames handled.
  uint32_t poll(uint64_t now_ns);

  // Polls until `stop` is set. When idle it backs off as `idle` says
  // (runtime::IdlePolicy: busy polls and yields, the right setting with a
  // core per PSwitch; balanced and handoff sleep, for machines whose cores
  // are shared with the workers).
  void run(const std::atomic<bool>& stop, const runtime::IdlePolicy& idle = runtime::IdlePolicy::busy());

  // Polls until no frame has come for `quiet_ns`, or for `limit_ns` at
  // most: what the peers sent before they stopped (a worker's last
  // release, a result on its way down) is switched and counted before the
  // final counters are read. Returns the frames handled.
  uint64_t drain(uint64_t quiet_ns, uint64_t limit_ns);

  const PswitchSettings& settings() const;
  const std::string& name() const;

  // Per port, per (job, tree), switch and engine counters.
  nlohmann::json counters_json();
  // A short human-readable table of the same.
  std::string counters_table();

  static uint64_t now_ns();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// EAL arguments for a PSwitch process: no hugepages, no PCI, its own file
// prefix, one --vdev per port that names one.
std::vector<std::string> pswitch_eal_args(const PswitchSettings& s, const std::string& file_prefix);

}  // namespace panama::pswitch
