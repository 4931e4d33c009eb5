// panama-netsim: one simulation run from the command line (docs/network-simulation.md).
#include <cstdio>
#include <exception>
#include <string>

#include "panama/netsim/simulation.hpp"

int main(int argc, char** argv) {
  panama::netsim::Options o;
  try {
    int code = 0;
    if (!panama::netsim::parse_command_line(argc, argv, o, code)) return code;
  } catch (const panama::netsim::OptionError& e) {
    std::fprintf(stderr, "panama-netsim: %s\n", e.what());
    return 2;
  }
  try {
    if (o.progress) {
      char shape[96];
      if (o.topology == panama::netsim::Topology::kFatTree) {
        std::snprintf(shape, sizeof shape, "fat-tree k=%u: %u edges x %u", o.k, o.num_racks(), o.rack_size());
      } else {
        std::snprintf(shape, sizeof shape, "%u racks x %u, %u spines", o.racks, o.hosts_per_rack, o.spines);
      }
      const std::string jobs = o.job_workers.empty() ? std::to_string(o.jobs) + " jobs x " +
                                                           std::to_string(o.workers_per_job) + " workers"
                                                     : std::to_string(o.jobs) + " jobs from " + o.jobs_file;
      std::fprintf(stderr, "[netsim] %u hosts (%s), scheme %s, %s, load %.2f, seed %llu%s\n", o.hosts(),
                   shape, panama::netsim::scheme_name(o.scheme), jobs.c_str(), o.load,
                   static_cast<unsigned long long>(o.seed), o.lossless ? ", lossless (PFC)" : "");
    }
    const panama::netsim::RunResult r = panama::netsim::run_simulation(o);
    panama::netsim::write_outputs(o, r);
    const auto& s = r.summary;
    const auto& fct = s["background"]["fct_slowdown"];
    std::printf("scheme %s  load %.2f  seed %llu  sim %.3f ms  wall %.1f s  (%s)\n",
                panama::netsim::scheme_name(o.scheme), o.load, static_cast<unsigned long long>(o.seed),
                s["sim_time_ms"].get<double>(), s["performance"]["wall_s"].get<double>(),
                s["stop_reason"].get<std::string>().c_str());
    std::printf(
        "background flows: %llu measured, FCT slowdown mean %.2f p99 %.2f; small (<100KB) mean %.2f p99 "
        "%.2f\n",
        s["background"]["flows_measured"].get<unsigned long long>(), fct["all"]["mean"].get<double>(),
        fct["all"]["p99"].get<double>(), fct["small_lt_100KB"]["mean"].get<double>(),
        fct["small_lt_100KB"]["p99"].get<double>());
    bool exact = true;
    for (const auto& j : s["jobs"]) {
      std::printf("job %d %-10s training %.3f ms  goodput %.2f Gb/s  bit-exact %s\n", j["id"].get<int>(),
                  j["model"].get<std::string>().c_str(), j["training_time_ms"].get<double>(),
                  j["allreduce_goodput_gbps"].get<double>(), j["bit_exact"].dump().c_str());
      if (j.contains("pool")) {
        const auto& p = j["pool"];
        std::printf(
            "  pooled: %llu groups, %llu in the network, %llu on the ring (expired %llu); ring %llu bytes\n",
            p["groups"].get<unsigned long long>(), p["in_network"].get<unsigned long long>(),
            p["on_ring"].get<unsigned long long>(), p["expired"].get<unsigned long long>(),
            p["ring_bytes_sent"].get<unsigned long long>());
      }
      if (j["bit_exact"].is_boolean() && !j["bit_exact"].get<bool>() && o.verify) exact = false;
    }
    std::printf(
        "fabric: %llu bytes switch-to-switch, %llu drops, %llu CE marks; engine drops %llu; %.0f events, "
        "%.2f M "
        "events/s\n",
        s["fabric"]["leaf_spine_bytes"].get<unsigned long long>(),
        s["fabric"]["drops"].get<unsigned long long>(), s["fabric"]["ce_marked"].get<unsigned long long>(),
        s["engine_drops_total"].get<unsigned long long>(), s["performance"]["events"].get<double>(),
        s["performance"]["events_per_s"].get<double>() / 1e6);
    if (o.lossless) {
      std::printf(
          "pfc: %llu pause frames, %llu resumes, %.1f us paused in all (tcp %.1f, panama %.1f), %llu "
          "headroom drops\n",
          s["pfc"]["pause_frames"].get<unsigned long long>(),
          s["pfc"]["resume_frames"].get<unsigned long long>(), s["pfc"]["paused_us"].get<double>(),
          s["pfc"]["paused_us_by_class"]["tcp"].get<double>(),
          s["pfc"]["paused_us_by_class"]["panama"].get<double>(),
          s["pfc"]["headroom_drops"].get<unsigned long long>());
    }
    if (!exact) {
      std::fprintf(stderr, "panama-netsim: an allreduce result differs from the reference\n");
      return 1;
    }
  } catch (const panama::netsim::OptionError& e) {
    std::fprintf(stderr, "panama-netsim: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-netsim: %s\n", e.what());
    return 1;
  }
  return 0;
}
