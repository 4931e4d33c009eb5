// A virtual-cluster worker process: one Communicator on one memif port,
// `iterations` allreduces of exact-summing data, each checked bit for bit.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/runtime/runtime.hpp"

namespace panama::cluster {

namespace {

nlohmann::json tree_stats_json(const runtime::TreeStats& t) {
  return {{"tree", t.tree_id},
          {"packets_sent", t.packets_sent},
          {"retransmissions", t.retransmissions},
          {"timeouts", t.timeouts},
          {"results_ce", t.results_ce},
          {"duplicate_results", t.duplicate_results},
          {"cwnd", t.cwnd},
          {"alpha", t.alpha},
          {"cwnd_cap", t.cwnd_cap},
          {"cwnd_reductions", t.cwnd_reductions},
          {"srtt_us", t.srtt_us},
          {"bytes_completed", t.bytes_completed},
          {"state", t.state},
          {"backup_for", t.backup_for},
          {"results_ignored", t.results_ignored},
          {"dead_at_ns", t.dead_at_ns},
          {"agreed_at_ns", t.agreed_at_ns},
          {"last_result_ns", t.last_result_ns},
          {"restart_seq", t.restart_seq},
          {"replayed_kept", t.replayed_kept},
          {"replayed_unanswered", t.replayed_unanswered}};
}

}  // namespace

nlohmann::json worker_loop(const WorkerOptions& opt, const runtime::Plan& plan, runtime::Communicator& comm,
                           const WorkerProgress& progress, nlohmann::json report);

void iteration_barrier(const std::string& plan_path, uint32_t job, uint32_t rank, uint32_t world,
                       uint32_t iteration, double timeout_s, const std::function<void()>& while_waiting) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(plan_path).parent_path();
  auto file_of = [&](uint32_t r) {
    return dir /
           ("barrier-j" + std::to_string(job) + "-i" + std::to_string(iteration) + "-r" + std::to_string(r));
  };
  std::ofstream(file_of(rank)).put('\n');
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (uint32_t r = 0; r < world; ++r) {
    std::error_code ec;
    while (!fs::exists(file_of(r), ec)) {
      if (std::chrono::steady_clock::now() > until)
        throw std::runtime_error("rank " + std::to_string(r) + " did not reach iteration " +
                                 std::to_string(iteration) + " within " + std::to_string(timeout_s) + " s");
      if (while_waiting) while_waiting();
      std::this_thread::sleep_for(std::chrono::microseconds(while_waiting ? 200 : 1000));
    }
  }
}

nlohmann::json worker_iterations(const WorkerOptions& opt, runtime::Runtime* shared_rt,
                                 const std::string& device, const WorkerProgress& progress) {
  nlohmann::json report;
  try {
    const runtime::Plan plan = runtime::load_plan(opt.plan_path);
    report["job"] = plan.job_id;
    report["rank"] = plan.rank;
    if (plan.world_size > kMaxExactWorkers)
      throw std::runtime_error("too many workers for exact reference data");
    std::unique_ptr<runtime::Runtime> own_rt;
    if (!shared_rt) {
      runtime::RuntimeOptions ro;
      ro.port.link_wait_ms = 10000;
      ro.idle_sleep_us = opt.idle_sleep_us;
      ro.idle_spin_us = opt.idle_spin_us;
      ro.streaming_copy_bytes = opt.streaming_copy_bytes;
      std::vector<std::string> eal = node_eal_args(opt.vdev, 512, opt.file_prefix);
      if (!opt.vdev2.empty()) eal.push_back("--vdev=" + opt.vdev2);  // dual-homed
      own_rt = runtime::Runtime::create(eal, ro);
    }
    auto comm = (shared_rt ? shared_rt : own_rt.get())->communicator(plan, device);
    return worker_loop(opt, plan, *comm, progress, report);
  } catch (const std::exception& e) {
    report["ok"] = false;
    report["error"] = e.what();
    std::fprintf(stderr, "worker: error: %s\n", e.what());
  }
  return report;
}

nlohmann::json worker_loop(const WorkerOptions& opt, const runtime::Plan& plan,
                           runtime::Communicator& comm_ref, const WorkerProgress& progress,
                           nlohmann::json report) {
  auto* comm = &comm_ref;
  try {
    std::vector<float> data(opt.elems), ref(opt.elems);
    std::vector<double> seconds;
    uint64_t mismatches = 0;
    // Per-tree maxima over the run: cwnd never exceeds cwnd_cap.
    std::vector<double> max_cwnd(plan.trees.size(), 0.0);
    std::vector<uint32_t> cap_violations(plan.trees.size(), 0);
    for (uint32_t it = 0; it < opt.iterations; ++it) {
      fill_tensor(data.data(), data.size(), opt.seed, it, plan.rank);
      // Every rank has checked the previous result and generated this
      // iteration's data before any of them starts: on shared CPUs, no
      // rank's test-data work runs while another one's allreduce is timed.
      iteration_barrier(opt.plan_path, plan.job_id, plan.rank, plan.world_size, it);
      // Statistics count bytes since the communicator was created; progress
      // is reported per iteration.
      const uint64_t completed_before = comm->stats().bytes_completed;
      const auto t0 = std::chrono::steady_clock::now();
      auto h = comm->allreduce_async(data.data(), data.size());
      while (!h.wait_for(std::chrono::milliseconds(200))) {
        const runtime::CommStats s = comm->stats();
        for (size_t t = 0; t < s.trees.size() && t < max_cwnd.size(); ++t) {
          max_cwnd[t] = std::max(max_cwnd[t], s.trees[t].cwnd);
          if (s.trees[t].cwnd > s.trees[t].cwnd_cap + 1e-9) ++cap_violations[t];
        }
        progress(it, s.bytes_completed - completed_before);
      }
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      seconds.push_back(dt);
      reference_sum(ref.data(), ref.size(), opt.seed, it, plan.world_size);
      size_t first = 0;
      const size_t bad = count_mismatches(data.data(), ref.data(), data.size(), &first);
      if (bad != 0) {
        std::fprintf(stderr,
                     "worker job %u rank %u iteration %u: %zu elements differ, first at %zu: %a != %a\n",
                     plan.job_id, plan.rank, it, bad, first, data[first], ref[first]);
      }
      mismatches += bad;
      progress(it + 1, 0);
    }
    const runtime::CommStats s = comm->stats();
    report["seconds"] = seconds;
    report["mismatches"] = mismatches;
    report["retransmissions"] = s.retransmissions;
    report["timeouts"] = s.timeouts;
    report["results_ce"] = s.results_ce;
    report["failovers"] = s.failovers;
    report["trees"] = nlohmann::json::array();
    for (size_t t = 0; t < s.trees.size(); ++t) {
      nlohmann::json tj = tree_stats_json(s.trees[t]);
      if (t < max_cwnd.size()) {
        tj["max_cwnd"] = std::max(max_cwnd[t], s.trees[t].cwnd);
        tj["cap_violations"] = cap_violations[t];
      }
      report["trees"].push_back(tj);
    }
    report["ok"] = mismatches == 0;
  } catch (const std::exception& e) {
    report["ok"] = false;
    report["error"] = e.what();
    std::fprintf(stderr, "worker: error: %s\n", e.what());
  }
  return report;
}

int run_worker(const WorkerOptions& opt) {
  std::signal(SIGINT, SIG_IGN);  // the cluster's parent decides when to stop
  const nlohmann::json report = worker_iterations(opt, nullptr, "", [](uint32_t it, uint64_t bytes) {
    std::printf("P %u %llu\n", it, static_cast<unsigned long long>(bytes));
    std::fflush(stdout);
  });
  std::printf("R %s\n", report.dump().c_str());
  std::fflush(stdout);
  // Exit without running destructors of DPDK state still polled by threads.
  std::_Exit(report.value("ok", false) ? 0 : 1);
}

}  // namespace panama::cluster
