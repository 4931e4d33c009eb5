// panama-pswitch: a software PSwitch process. Reads a node config (engine
// table + "pswitch" section), opens its ports as DPDK virtual devices and
// switches until SIGINT/SIGTERM, then prints (and optionally writes) its
// counters. docs/pswitch.md describes the options and the counters.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <stdexcept>

#include "panama/pswitch/pswitch_process.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
  g_stop.store(true);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"panama-pswitch: software PSwitch (engine + switch) over DPDK virtual devices"};
  panama::pswitch::PswitchProcessOptions opt;
  app.add_option("-c,--config", opt.config_path, "node config JSON with a \"pswitch\" section")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--stats", opt.stats_path, "write counters as JSON to this file (periodically and at exit)");
  app.add_option("--stats-interval", opt.stats_interval, "seconds between stats file updates")
      ->check(CLI::PositiveNumber);
  app.add_option("--file-prefix", opt.file_prefix, "DPDK --file-prefix (default: pswitch-<name>-<pid>)");
  app.add_option("--eal", opt.extra_eal, "extra EAL argument (repeatable)");
  app.add_option("--duration", opt.duration, "stop after this many seconds (0: run until SIGINT/SIGTERM)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("-q,--quiet", opt.quiet, "do not print the counters at exit");
  std::string poll = "busy";
  app.add_option("--poll", poll,
                 "how the loop waits when idle: busy (never sleep: a core per PSwitch), balanced (sleep up "
                 "to 50 us: cores shared with workers) or handoff (poll 2 ms, then as balanced); overrides "
                 "after a comma, e.g. balanced,sleep=20 (docs/pswitch.md)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    opt.idle = panama::runtime::IdlePolicy::parse(poll);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "panama-pswitch: --poll: %s\n", e.what());
    return 2;
  }

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_signal);
  return panama::pswitch::run_pswitch_process(opt, g_stop);
}
