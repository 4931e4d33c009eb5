// The outputs of a run: summary.json (docs/network-simulation.md, "Outputs"),
// flows.csv, iterations.csv and buckets.csv.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "panama/claim.hpp"
#include "panama/cluster/pool_stats_json.hpp"
#include "panama/engine/counters.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/pswitch/pool_json.hpp"
#include "sim.hpp"

namespace panama::netsim {
namespace detail {

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

nlohmann::json stats_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return {{"count", v.size()},
          {"mean", v.empty() ? 0.0 : sum / static_cast<double>(v.size())},
          {"p50", percentile(v, 50)},
          {"p99", percentile(v, 99)},
          {"max", v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())}};
}

// ------------------------------------------------------------------ report

nlohmann::json options_json(const Options& o) {
  nlohmann::json flows = nlohmann::json::array();
  for (const ManualFlow& f : o.flows)
    flows.push_back({{"src", f.src}, {"dst", f.dst}, {"bytes", f.bytes}, {"start_us", f.start_us}});
  const bool ft = o.topology == Topology::kFatTree;
  return {{"topology", topology_name(o.topology)},
          {"k", ft ? nlohmann::json(o.k) : nlohmann::json(nullptr)},
          {"racks", o.num_racks()},
          {"hosts_per_rack", o.rack_size()},
          {"spines", ft ? nlohmann::json(nullptr) : nlohmann::json(o.spines)},
          {"hosts", o.hosts()},
          {"host_gbps", o.host_gbps},
          {"fabric_gbps", o.fabric_gbps},
          {"link_delay_us", o.link_delay_us},
          {"mtu", o.mtu},
          {"background_mtu", o.background_mtu},
          {"buffer_kb", o.buffer_kb},
          {"ecn_k_kb", o.ecn_k_kb},
          {"lossless", o.lossless},
          {"pfc_xoff_kb", o.lossless ? nlohmann::json(o.pfc_xoff_kb) : nlohmann::json(nullptr)},
          {"pfc_xon_kb", o.lossless ? nlohmann::json(o.pfc_xon_kb) : nlohmann::json(nullptr)},
          {"pfc_headroom_kb", o.lossless ? nlohmann::json(o.pfc_headroom_kb) : nlohmann::json(nullptr)},
          {"engine_gbps", o.engine_gbps},
          {"engine_latency_us", o.engine_latency_us},
          {"packet_memory", o.packet_memory},
          {"elems_per_packet", o.elems_per_packet},
          {"dtype", o.dtype},
          {"scheme", scheme_name(o.scheme)},
          {"trees", o.scheme == Scheme::kSingleTree ? 1u : o.trees},
          {"tree_shape", o.tree_shape},
          {"priorities", o.priorities},
          {"pool", o.pool_slots == 0 ? nlohmann::json(nullptr)
                                     : nlohmann::json{{"slots", o.pool_slots},
                                                      {"pooled_jobs", o.pooled_jobs},
                                                      {"group", o.pool_group},
                                                      {"lease_us", o.pool_lease_us},
                                                      {"overcommit", o.pool_overcommit},
                                                      {"ring_cc", o.pool_ring_cc}}},
          {"jobs", o.jobs},
          {"workers_per_job", o.workers_per_job},
          {"jobs_file", o.jobs_file},
          {"job_workers", o.job_workers},
          {"models", o.models},
          {"workload", o.workload == "h100" ? default_workload_path() : o.workload},
          {"precision", o.workload == "v100" ? nlohmann::json(nullptr) : nlohmann::json(o.precision)},
          {"bucket_mib", o.workload == "v100" ? nlohmann::json(nullptr) : nlohmann::json(o.bucket_mib)},
          {"scale", o.scale},
          {"iterations", o.iterations},
          {"gpus_per_host", o.gpus_per_host},
          {"intra_host_gbps", o.intra_host_gbps},
          {"verify", o.verify},
          {"ring_segment_kb", o.ring_segment_kb},
          {"placement", o.placement},
          {"ring_order", o.ring_order},
          {"ring_tcp", o.ring_tcp},
          {"ring_ecn", o.ring_ecn},
          {"ring_sockbuf_kb", o.ring_sockbuf_kb},
          {"ring_channels", o.ring_channels},
          {"load", o.load},
          {"cdf", o.cdf_path.empty() ? default_cdf_path() : o.cdf_path},
          {"duration_ms", o.duration_ms},
          {"flows", flows},
          {"seed", o.seed},
          {"max_time_ms", o.max_time_ms},
          {"queue_sample_us", o.queue_sample_us}};
}

}  // namespace

RunResult Sim::report(double wall_s) {
  RunResult r;
  nlohmann::json& j = r.summary;
  const double sim_ns = static_cast<double>(ns3::Simulator::Now().GetNanoSeconds());
  j["options"] = options_json(o_);
  j["sim_time_ms"] = sim_ns / 1e6;
  j["finished"] = finished_;
  j["stop_reason"] = finished_ ? "all jobs and measured flows done" : "--max-time-ms reached";
  j["background"] = report_background(r.flows);
  j["jobs"] = report_jobs(r.iterations);
  for (const auto& w : workers_)
    r.buckets.insert(r.buckets.end(), w->bucket_log.begin(), w->bucket_log.end());
  report_fabric(j, sim_ns);
  report_pswitches(j);
  j["unknown_panama_frames"] = unknown_panama_frames_;
  j["ring_connect_failures"] = ring_connect_failures_;
  j["flow_connect_failures"] = flow_connect_failures_;

  const double events = static_cast<double>(ns3::Simulator::GetEventCount());
  j["performance"] = {{"events", events},
                      {"wall_s", wall_s},
                      {"events_per_s", wall_s > 0 ? events / wall_s : 0.0},
                      {"sim_over_wall", wall_s > 0 ? sim_ns / 1e9 / wall_s : 0.0}};
  return r;
}

// Background flows: every flow into `flows`, the slowdowns of the measured ones.
nlohmann::json Sim::report_background(std::vector<FlowRecord>& flows) const {
  std::vector<double> all, small, medium, large, manual;
  uint64_t measured = 0, unfinished = 0;
  for (const auto& f : flows_) {
    flows.push_back(f->rec);
    if (!f->rec.measured) continue;
    ++measured;
    if (f->rec.fct_us < 0) {
      ++unfinished;
      continue;
    }
    const double sd = f->rec.fct_us / f->rec.ideal_us;
    (f->rec.manual ? manual : all).push_back(sd);
    if (f->rec.manual) continue;
    (f->rec.bytes < kShortFlowBytes ? small : f->rec.bytes <= 10000000 ? medium : large).push_back(sd);
  }
  return {{"flows_started", flows_started_},
          {"flows_measured", measured},
          {"short_flows_started", short_started_},
          {"measured_unfinished", unfinished},
          {"mean_size_bytes", cdf_.mean()},
          {"fct_slowdown",
           {{"all", stats_of(all)},
            {"small_lt_100KB", stats_of(small)},
            {"medium_100KB_10MB", stats_of(medium)},
            {"large_gt_10MB", stats_of(large)},
            {"manual", stats_of(manual)}}}};
}

// Jobs: per job its iterations (also into `iterations`, for iterations.csv),
// training time, goodput, trees and workers.
nlohmann::json Sim::report_jobs(std::vector<std::vector<std::pair<double, double>>>& iterations) const {
  nlohmann::json jobs = nlohmann::json::array();
  for (const Job& job : jobs_) {
    nlohmann::json jj;
    jj["id"] = job.id;
    jj["model"] = job.model;
    jj["gradient_bytes"] = job.elems * job.elem_bytes;
    jj["compute_ms"] = static_cast<double>(job.compute_ns) / 1e6;
    jj["forward_ms"] = static_cast<double>(job.forward_ns) / 1e6;
    jj["backward_ms"] = static_cast<double>(job.backward_ns) / 1e6;
    jj["buckets"] = job.buckets.size();
    jj["dscp"] = job.dscp;
    jj["start_ms"] = job.start_ns / 1e6;
    uint32_t its = UINT32_MAX;  // --iterations, fewer after --duration-ms, more with --min-short-flows
    for (uint32_t wi : job.workers)
      its = std::min<uint32_t>(its, static_cast<uint32_t>(workers_[wi]->finish_ns.size()));
    std::vector<std::pair<double, double>> iters;
    double prev = job.start_ns;
    std::vector<double> iter_ms;
    for (uint32_t it = 0; it < its; ++it) {
      double end = 0;
      for (uint32_t wi : job.workers) end = std::max(end, workers_[wi]->finish_ns[it]);
      iters.emplace_back(prev / 1e6, end / 1e6);
      iter_ms.push_back((end - prev) / 1e6);
      prev = end;
    }
    iterations.push_back(iters);
    jj["iterations_done"] = its;
    jj["iteration_ms"] = iter_ms;
    double iter_sum = 0;
    for (double m : iter_ms) iter_sum += m;
    jj["iteration_mean_ms"] = iter_ms.empty() ? 0.0 : iter_sum / static_cast<double>(iter_ms.size());
    jj["finished"] = job.end_ns >= 0;
    jj["training_time_ms"] = job.end_ns >= 0 ? (job.end_ns - job.start_ns) / 1e6 : -1.0;
    double comm_ms = 0;
    for (double m : iter_ms) comm_ms += m - static_cast<double>(job.compute_ns) / 1e6;
    jj["allreduce_goodput_gbps"] =
        comm_ms > 0 ? static_cast<double>(job.elems * job.elem_bytes) * 8 * its / (comm_ms * 1e6) : 0.0;
    uint64_t mism = 0;
    for (uint32_t wi : job.workers) mism += workers_[wi]->mismatches;
    jj["bit_exact"] =
        host_reduces(o_.scheme) ? nlohmann::json(nullptr) : nlohmann::json(mism == 0 && o_.verify);
    jj["mismatches"] = mism;
    if (o_.job_pooled(job.id)) jj["pool"] = report_job_pool(job);
    jj["trees"] = report_job_trees(job);
    jj["workers"] = report_job_workers(job);
    jobs.push_back(jj);
  }
  return jobs;
}

// A pooled job's groups: how they finished (every worker finishes a group
// the same way; rank 0's counts, and whether all workers agree) and the
// ring payload bytes all its workers sent.
nlohmann::json Sim::report_job_pool(const Job& job) const {
  nlohmann::json pj = nlohmann::json::object();
  if (job.workers.empty() || !workers_[job.workers[0]]->core) return pj;
  const runtime::PoolStats p0 = workers_[job.workers[0]]->core->stats().pool;
  uint64_t ring_bytes = 0;
  bool agree = true;
  for (uint32_t wi : job.workers) {
    const runtime::PoolStats p = workers_[wi]->core->stats().pool;
    ring_bytes += p.ring_bytes_sent;
    agree = agree && p.groups == p0.groups && p.in_network == p0.in_network && p.on_ring == p0.on_ring;
  }
  pj = {{"groups", p0.groups},    {"in_network", p0.in_network},  {"on_ring", p0.on_ring},
        {"granted", p0.granted},  {"denied", p0.denied},          {"expired", p0.expired},
        {"workers_agree", agree}, {"ring_bytes_sent", ring_bytes}};
  return pj;
}

// A job's workers: per worker its protocol statistics, per tree and in all
// (PANAMA), or the bytes it sent and received (ring).
nlohmann::json Sim::report_job_workers(const Job& job) const {
  nlohmann::json ws = nlohmann::json::array();
  for (uint32_t wi : job.workers) {
    const Worker& w = *workers_[wi];
    nlohmann::json wj = {{"rank", w.rank}, {"host", hosts_[w.host].name}, {"mismatches", w.mismatches}};
    if (w.core) {
      const runtime::CommStats st = w.core->stats();
      nlohmann::json tj = nlohmann::json::array();
      for (size_t t = 0; t < st.trees.size(); ++t) {
        const runtime::TreeStats& ts = st.trees[t];
        tj.push_back({{"tree", ts.tree_id},
                      {"results_ce", ts.results_ce},
                      {"cwnd_reductions", ts.cwnd_reductions},
                      {"cwnd", ts.cwnd},
                      {"cwnd_cap", ts.cwnd_cap},
                      {"max_in_flight", w.max_in_flight[t]},
                      {"max_window", w.max_window[t]},
                      {"min_cwnd_cap", w.min_cap[t]},
                      {"retransmissions", ts.retransmissions},
                      {"timeouts", ts.timeouts},
                      {"packets_sent", ts.packets_sent}});
      }
      wj["trees"] = tj;
      wj["results_ce"] = st.results_ce;
      wj["retransmissions"] = st.retransmissions;
      wj["duplicate_results"] = st.duplicate_results;
      wj["unexpected_results"] = st.unexpected_results;
      wj["malformed_results"] = st.malformed_results;
      if (w.core->plan().pooled) wj["pool"] = cluster::pool_stats_json(st.pool);
    } else {
      wj["ring_bytes_sent"] = w.links[0].sent + w.links[1].sent;
      wj["ring_bytes_received"] = w.links[0].recv + w.links[1].recv;
    }
    ws.push_back(wj);
  }
  return ws;
}

// A job's trees (PANAMA): root, final window and cap as the first worker
// sees them, the CE fraction of its results, retransmissions of all workers.
nlohmann::json Sim::report_job_trees(const Job& job) const {
  nlohmann::json trees = nlohmann::json::array();
  if (job.workers.empty() || !workers_[job.workers[0]]->core) return trees;
  const runtime::CommStats st0 = workers_[job.workers[0]]->core->stats();
  for (size_t t = 0; t < st0.trees.size(); ++t) {
    const runtime::TreeStats& ts = st0.trees[t];
    const uint64_t fresh = ts.packets_received - ts.duplicate_results - ts.unexpected_results;
    uint64_t retrans = 0;
    for (uint32_t wi : job.workers) retrans += workers_[wi]->core->stats().trees[t].retransmissions;
    std::string root;
    for (const controller::TreeInfo& ti : job.trees) {
      if (ti.tree == ts.tree_id) root = ti.root;
    }
    trees.push_back(
        {{"tree", ts.tree_id},
         {"root", root},
         {"cwnd_final", ts.cwnd},
         {"cwnd_cap", ts.cwnd_cap},
         {"ce_fraction", fresh ? static_cast<double>(ts.results_ce) / static_cast<double>(fresh) : 0.0},
         {"cwnd_reductions", ts.cwnd_reductions},
         {"retransmissions_all_workers", retrans}});
  }
  return trees;
}

// The fabric: every switch port's link and queue, PFC in all.
void Sim::report_fabric(nlohmann::json& j, double sim_ns) const {
  nlohmann::json links = nlohmann::json::array();
  uint64_t egress = 0, core_bytes = 0, drops = 0, marks = 0, host_tx = 0;
  std::vector<double> qsamples;
  uint64_t pause_frames[kClasses] = {0, 0}, resume_frames[kClasses] = {0, 0}, paused_ns[kClasses] = {0, 0};
  uint64_t in_max[kClasses] = {0, 0}, host_paused_ns = 0, headroom = 0;
  for (const SwitchNode& sw : switches_) {
    for (const Port& p : sw.ports) {
      for (int c = 0; c < kClasses; ++c) {
        pause_frames[c] += p.xoff_sent[c];
        resume_frames[c] += p.xon_sent[c];
        paused_ns[c] += p.queue->paused_ns(c);
        in_max[c] = std::max(in_max[c], p.in_max[c]);
      }
      headroom = std::max(headroom, p.headroom);
      const ns3::QueueDisc::Stats& st = p.queue->GetStats();
      egress += st.nTotalDequeuedBytes;
      if (p.fabric) core_bytes += st.nTotalDequeuedBytes;
      drops += st.nTotalDroppedPackets;
      marks += st.nTotalMarkedPackets;
      std::vector<double> q(p.samples.begin(), p.samples.end());
      qsamples.insert(qsamples.end(), q.begin(), q.end());
      links.push_back(
          {{"from", sw.name},
           {"to", p.peer},
           {"bytes", st.nTotalDequeuedBytes},
           {"utilisation",
            sim_ns > 0 ? static_cast<double>(st.nTotalDequeuedBytes) * 8 / (p.gbps * sim_ns) : 0.0},
           {"ce_marked", st.nTotalMarkedPackets},
           {"drops", st.nTotalDroppedPackets},
           {"queue_p99_bytes", percentile(q, 99)},
           {"queue_max_bytes", p.queue->max_seen()},
           {"pauses_received", p.queue->pauses(kClassTcp) + p.queue->pauses(kClassPanama)},
           {"paused_us",
            static_cast<double>(p.queue->paused_ns(kClassTcp) + p.queue->paused_ns(kClassPanama)) / 1e3}});
    }
  }
  for (const HostNode& h : hosts_) {
    const ns3::QueueDisc::Stats& st = h.nic.queue->GetStats();
    host_tx += st.nTotalDequeuedBytes;
    drops += st.nTotalDroppedPackets;
    for (int c = 0; c < kClasses; ++c) {
      paused_ns[c] += h.nic.queue->paused_ns(c);
      host_paused_ns += h.nic.queue->paused_ns(c);
    }
  }
  drops += pfc_drops_;
  auto per_class = [](const uint64_t* v, double scale) {
    return nlohmann::json{{"tcp", static_cast<double>(v[kClassTcp]) * scale},
                          {"panama", static_cast<double>(v[kClassPanama]) * scale}};
  };
  j["pfc"] = {{"enabled", o_.lossless},
              {"xoff_bytes", o_.lossless ? uint64_t{o_.pfc_xoff_kb} * 1000 : 0},
              {"xon_bytes", o_.lossless ? uint64_t{o_.pfc_xon_kb} * 1000 : 0},
              {"headroom_bytes_max", o_.lossless ? headroom : 0},
              {"pause_frames", pause_frames[0] + pause_frames[1]},
              {"resume_frames", resume_frames[0] + resume_frames[1]},
              {"pause_frames_by_class", per_class(pause_frames, 1)},
              {"paused_us", static_cast<double>(paused_ns[0] + paused_ns[1]) / 1e3},
              {"paused_us_by_class", per_class(paused_ns, 1e-3)},
              {"host_nic_paused_us", static_cast<double>(host_paused_ns) / 1e3},
              {"max_ingress_bytes_by_class", per_class(in_max, 1)},
              {"headroom_drops", pfc_drops_}};
  j["fabric"] = {{"switch_egress_bytes", egress},
                 {"leaf_spine_bytes", core_bytes},  // every switch-to-switch link (fat-tree: both tiers)
                 {"host_tx_bytes", host_tx},
                 {"drops", drops},
                 {"ce_marked", marks},
                 {"queue_bytes",
                  {{"p50", percentile(qsamples, 50)},
                   {"p99", percentile(qsamples, 99)},
                   {"max", percentile(qsamples, 100)}}},
                 {"links", links}};
}

// The PSwitches: their engines' counters and the accelerators' backlog.
void Sim::report_pswitches(nlohmann::json& j) const {
  nlohmann::json psws = nlohmann::json::array();
  uint64_t engine_drops = 0;
  for (const SwitchNode& sw : switches_) {
    if (!sw.psw) continue;
    EngineRegisters<SimEngine> regs(*sw.psw->engine);
    const config::CounterSnapshot snap = config::read_counters(regs, sw.psw->node_cfg.entries);
    uint64_t d = 0;
    for (uint32_t c = regmap::kGcDropOversize; c < regmap::kNumGlobalCounters; ++c) d += snap.global[c];
    engine_drops += d;
    psws.push_back({{"name", sw.name},
                    {"frames_to_pswitch", sw.psw->frames_in},
                    {"aggregated", snap.global[regmap::kGcAggregated]},
                    {"emitted", snap.global[regmap::kGcEmitted]},
                    {"duplicates", snap.global[regmap::kGcDuplicates]},
                    {"drops", d},
                    {"drop_seq_window", snap.global[regmap::kGcDropSeqWindow]},
                    {"switch_engine_drops", sw.psw->core->counters().engine_drops},
                    {"accelerator_max_backlog_bytes", sw.psw->max_backlog_bytes},
                    {"counters", config::counters_to_json(snap)}});
    if (const pswitch::ClaimPool* pool = sw.psw->core->pool()) {
      // Pooled mode: the pool's counters, summed and per pooled tree.
      nlohmann::json pj = pswitch::pool_counters_json(sw.psw->core->pool_counters(), pool->counters());
      pj["free_slots"] = pool->free_slots();
      pj["holding_groups"] = pool->holding_groups();
      nlohmann::json trees = nlohmann::json::array();
      for (uint32_t t = 0; t < sw.psw->settings.trees.size(); ++t) {
        const int e = sw.psw->core->pool_entry(t);
        if (e < 0) continue;
        nlohmann::json tj = {{"job", sw.psw->settings.trees[t].job},
                             {"tree", sw.psw->settings.trees[t].tree}};
        tj.update(pswitch::pool_counters_json(sw.psw->core->pool_tree_counters(t),
                                              pool->entry_counters(static_cast<uint32_t>(e))));
        trees.push_back(tj);
      }
      pj["trees"] = trees;
      psws.back()["pool"] = pj;
    }
  }
  j["pswitches"] = psws;
  j["engine_drops_total"] = engine_drops;
}

}  // namespace detail

void write_outputs(const Options& o, const RunResult& r) {
  if (o.out_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) throw std::runtime_error("cannot create '" + o.out_dir + "': " + ec.message());
  {
    std::ofstream f(o.out_dir + "/summary.json");
    f << r.summary.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/summary.json");
  }
  {
    std::ofstream f(o.out_dir + "/flows.csv");
    f << "id,src,dst,bytes,start_us,fct_us,ideal_us,slowdown,measured,manual\n";
    for (const FlowRecord& x : r.flows) {
      f << x.id << ',' << x.src << ',' << x.dst << ',' << x.bytes << ',' << x.start_us << ',' << x.fct_us
        << ',' << x.ideal_us << ',' << (x.fct_us >= 0 ? x.fct_us / x.ideal_us : -1.0) << ',' << x.measured
        << ',' << x.manual << "\n";
    }
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/flows.csv");
  }
  {
    std::ofstream f(o.out_dir + "/iterations.csv");
    f << "job,iteration,start_ms,end_ms\n";
    for (size_t j = 0; j < r.iterations.size(); ++j) {
      for (size_t i = 0; i < r.iterations[j].size(); ++i) {
        f << j + 1 << ',' << i << ',' << r.iterations[j][i].first << ',' << r.iterations[j][i].second << "\n";
      }
    }
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/iterations.csv");
  }
  {
    std::ofstream f(o.out_dir + "/buckets.csv");
    f << "job,rank,iteration,bucket,elems,backward_ms,ready_ms,start_ms,end_ms\n";
    for (const BucketRecord& b : r.buckets) {
      f << b.job << ',' << b.rank << ',' << b.iteration << ',' << b.bucket << ',' << b.elems << ','
        << b.backward_ns / 1e6 << ',' << b.ready_ns / 1e6 << ',' << b.start_ns / 1e6 << ',' << b.end_ns / 1e6
        << "\n";
    }
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/buckets.csv");
  }
}

}  // namespace panama::netsim
