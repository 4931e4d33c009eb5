// Runs one PSwitch process (see pswitch_process.hpp).
#include "panama/pswitch/pswitch_process.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "panama/pswitch/software_pswitch.hpp"
#include "panama/runtime/idle_backoff.hpp"

namespace panama::pswitch {

namespace {

// Socket files of the ports this process serves (memif role=server).
std::vector<std::string> server_sockets(const PswitchSettings& s) {
  std::vector<std::string> out;
  for (const auto& p : s.ports) {
    if (p.vdev.find("role=server") == std::string::npos) continue;
    const size_t at = p.vdev.find("socket=");
    if (at == std::string::npos) continue;
    out.push_back(p.vdev.substr(at + 7, p.vdev.find(',', at) - (at + 7)));
  }
  return out;
}

void write_stats(const std::string& path, const nlohmann::json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << j.dump(2) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());  // readers never see half a file
}

}  // namespace

int run_pswitch_process(const PswitchProcessOptions& opt, const std::atomic<bool>& stop) {
  std::vector<std::string> sockets;
  int rc = 0;
  try {
    const config::NodeConfig cfg = config::load_node_config(opt.config_path);
    if (cfg.pswitch.is_null()) {
      throw SettingsError(opt.config_path + ": no \"pswitch\" section (is this a PSwitch's config?)");
    }
    const PswitchSettings settings = settings_from_json(cfg.pswitch);
    check_trees_against_entries(settings, cfg.entries);
    const std::string prefix = opt.file_prefix.empty()
                                   ? "pswitch-" + settings.name + "-" + std::to_string(getpid())
                                   : opt.file_prefix;
    sockets = server_sockets(settings);
    for (const std::string& s : sockets) ::unlink(s.c_str());  // stale sockets from a killed run
    std::vector<std::string> eal_args = pswitch_eal_args(settings, prefix);
    eal_args.insert(eal_args.end(), opt.extra_eal.begin(), opt.extra_eal.end());
    auto eal = runtime::DpdkEal::initialize(eal_args);
    SoftwarePswitch sw(cfg, eal);
    if (!opt.quiet) {
      std::fprintf(stderr, "panama-pswitch %s: %zu ports, %zu trees, running\n", settings.name.c_str(),
                   settings.ports.size(), settings.trees.size());
    }
    const uint64_t start = SoftwarePswitch::now_ns();
    uint64_t next_stats = start;
    // Idle back-off (runtime::IdlePolicy): busy-poll and yield by default;
    // other presets sleep when idle, for cores shared with workers.
    runtime::IdleBackoff backoff(opt.idle.backoff());
    while (!stop.load(std::memory_order_relaxed)) {
      const uint64_t now = SoftwarePswitch::now_ns();
      backoff.after_poll(sw.poll(now));
      if (!opt.stats_path.empty() && now >= next_stats) {
        write_stats(opt.stats_path, sw.counters_json());
        next_stats = now + static_cast<uint64_t>(opt.stats_interval * 1e9);
      }
      if (opt.duration > 0 && now - start >= static_cast<uint64_t>(opt.duration * 1e9)) break;
    }
    // Frames the peers sent before they stopped are switched and counted
    // (20 ms without a frame, half a second at most).
    sw.drain(20'000'000, 500'000'000);
    if (!opt.stats_path.empty()) write_stats(opt.stats_path, sw.counters_json());
    if (!opt.quiet) std::fprintf(stderr, "%s", sw.counters_table().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-pswitch: error: %s\n", e.what());
    rc = 1;
  }
  for (const std::string& s : sockets) ::unlink(s.c_str());
  return rc;
}

}  // namespace panama::pswitch
