// A virtual-cluster worker (worker.hpp): one Communicator on its port(s),
// `iterations` allreduces of exact-summing data, each checked bit for bit
// (fp32: against the exact sum; bf16 / fp16: against its rounding to the
// type, test_data.hpp).
#include "panama/cluster/worker.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "panama/cluster/pool_stats_json.hpp"
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
          {"bytes_sent", t.bytes_sent},
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

nlohmann::json worker_loop(const WorkerOptions& opt, const runtime::Plan& plan, runtime::Communicator& comm,
                           const WorkerProgress& progress, nlohmann::json report);

}  // namespace

nlohmann::json worker_iterations(const WorkerOptions& opt, runtime::Runtime* shared_rt,
                                 const std::vector<std::string>& devices, const WorkerProgress& progress) {
  nlohmann::json report;
  try {
    runtime::Plan plan = runtime::load_plan(opt.plan_path);
    // In a shared runtime the uplinks are its ports, not the plan's memif devices.
    if (shared_rt && devices.size() > 1 && plan.devices.size() == devices.size()) {
      plan.devices = devices;
      plan.device = devices[0];
    }
    report["job"] = plan.job_id;
    report["rank"] = plan.rank;
    if (plan.world_size > kMaxExactWorkers)
      throw std::runtime_error("too many workers for exact reference data");
    std::unique_ptr<runtime::Runtime> own_rt;
    if (!shared_rt) {
      runtime::RuntimeOptions ro;
      ro.port.link_wait_ms = 10000;
      ro.idle = opt.idle;
      ro.streaming_copy_bytes = opt.streaming_copy_bytes;
      ro.port.mbufs = port_mbufs(opt.vdevs);
      // A dual-homed worker has two uplinks, hence two vdevs.
      own_rt = runtime::Runtime::create(node_eal_args(opt.vdevs, 512, opt.file_prefix), ro);
    }
    auto comm = (shared_rt ? shared_rt : own_rt.get())->communicator(plan, shared_rt ? devices.at(0) : "");
    return worker_loop(opt, plan, *comm, progress, report);
  } catch (const std::exception& e) {
    report["ok"] = false;
    report["error"] = e.what();
    std::fprintf(stderr, "worker: error: %s\n", e.what());
  }
  return report;
}

namespace {

nlohmann::json worker_loop(const WorkerOptions& opt, const runtime::Plan& plan,
                           runtime::Communicator& comm_ref, const WorkerProgress& progress,
                           nlohmann::json report) {
  auto* comm = &comm_ref;
  try {
    const bool fp32 = opt.dtype == wire::ElemType::kFloat32;
    std::vector<float> data(fp32 ? opt.elems : 0), ref(fp32 ? opt.elems : 0);
    std::vector<uint16_t> data16(fp32 ? 0 : opt.elems);
    std::vector<double> seconds;
    uint64_t mismatches = 0, rounded = 0, ties = 0, checked = 0;
    // Per-tree maxima over the run: cwnd never exceeds cwnd_cap.
    std::vector<double> max_cwnd(plan.trees.size(), 0.0);
    std::vector<uint32_t> cap_violations(plan.trees.size(), 0);
    for (uint32_t it = 0; it < opt.iterations; ++it) {
      if (fp32) {
        fill_tensor(data.data(), data.size(), opt.seed, it, plan.rank);
      } else {
        fill_tensor16(data16.data(), data16.size(), opt.dtype, opt.seed, it, plan.rank);
      }
      // Every rank has checked the previous result and generated this
      // iteration's data before any of them starts: on shared CPUs, no
      // rank's test-data work runs while another one's allreduce is timed.
      iteration_barrier(opt.plan_path, plan.job_id, plan.rank, plan.world_size, it);
      // Statistics count bytes since the communicator was created; progress
      // is reported per iteration.
      const uint64_t completed_before = comm->stats().bytes_completed;
      const auto t0 = std::chrono::steady_clock::now();
      auto h = fp32 ? comm->allreduce_async(data.data(), data.size())
                    : comm->allreduce_async(data16.data(), data16.size(), opt.dtype);
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
      size_t bad = 0;
      if (fp32) {
        reference_sum(ref.data(), ref.size(), opt.seed, it, plan.world_size);
        size_t first = 0;
        bad = count_mismatches(data.data(), ref.data(), data.size(), &first);
        if (bad != 0) {
          std::fprintf(stderr,
                       "worker job %u rank %u iteration %u: %zu elements differ, first at %zu: %a != %a\n",
                       plan.job_id, plan.rank, it, bad, first, data[first], ref[first]);
        }
      } else {
        const Check16 c = check_tensor16(data16.data(), data16.size(), opt.dtype, opt.seed, it,
                                         plan.world_size, opt.leaf_of_rank);
        bad = c.mismatches;
        if (bad != 0) {
          std::fprintf(stderr,
                       "worker job %u rank %u iteration %u: %zu %s elements differ, first at %zu: 0x%04x != "
                       "0x%04x\n",
                       plan.job_id, plan.rank, it, bad, dtype_name(opt.dtype), c.first, c.first_got,
                       c.first_want);
        }
        rounded += c.rounded;
        ties += c.ties;
        checked += data16.size();
      }
      mismatches += bad;
      progress(it + 1, 0);
    }
    // What the other workers still need from this one (pooled mode: the
    // ring frames that finish their last groups, acknowledgements, the
    // last release) goes out before the worker exits.
    report["settled"] = comm->settle(std::chrono::seconds(5));
    const runtime::CommStats s = comm->stats();
    report["seconds"] = seconds;
    report["mismatches"] = mismatches;
    report["dtype"] = dtype_name(opt.dtype);
    report["payload_bytes_sent"] = s.bytes_sent;
    report["payload_bytes_completed"] = s.bytes_completed;
    if (!fp32) {
      report["checked_elements"] = checked;
      report["rounded_elements"] = rounded;
      report["tie_elements"] = ties;
    }
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
      if (plan.pooled) tj["pool"] = pool_stats_json(s.trees[t].pool);
      report["trees"].push_back(tj);
    }
    if (plan.pooled) report["pool"] = pool_stats_json(s.pool);
    report["ok"] = mismatches == 0;
  } catch (const std::exception& e) {
    report["ok"] = false;
    report["error"] = e.what();
    std::fprintf(stderr, "worker: error: %s\n", e.what());
  }
  return report;
}

}  // namespace

void run_worker(const WorkerOptions& opt) {
  std::signal(SIGINT, SIG_IGN);  // the cluster's parent decides when to stop
  const nlohmann::json report = worker_iterations(opt, nullptr, {}, print_progress_line);
  print_report_line(report.dump());
  // Exit without running destructors of DPDK state still polled by threads.
  std::_Exit(report.value("ok", false) ? 0 : 1);
}

}  // namespace panama::cluster
