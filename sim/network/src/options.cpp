// Option parsing and validation of panama-netsim, the model table and the
// flow-size distribution (see options.hpp).
#include "panama/netsim/options.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#ifndef PANAMA_NETSIM_DATA_DIR
#define PANAMA_NETSIM_DATA_DIR "."
#endif

namespace panama::netsim {

namespace {
[[noreturn]] void fail(const std::string& what) {
  throw OptionError(what);
}
}  // namespace

Scheme parse_scheme(const std::string& name) {
  if (name == "panama") return Scheme::kPanama;
  if (name == "single-tree") return Scheme::kSingleTree;
  if (name == "fixed-window") return Scheme::kFixedWindow;
  if (name == "ring") return Scheme::kRing;
  if (name == "hierarchical") return Scheme::kHierarchical;
  fail("--scheme: unknown scheme '" + name +
       "' (one of: panama, single-tree, fixed-window, ring, hierarchical)");
}

Topology parse_topology(const std::string& name) {
  if (name == "leaf-spine") return Topology::kLeafSpine;
  if (name == "fat-tree") return Topology::kFatTree;
  fail("--topology: unknown topology '" + name + "' (one of: leaf-spine, fat-tree)");
}

const char* topology_name(Topology t) {
  return t == Topology::kFatTree ? "fat-tree" : "leaf-spine";
}

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::kPanama:
      return "panama";
    case Scheme::kSingleTree:
      return "single-tree";
    case Scheme::kFixedWindow:
      return "fixed-window";
    case Scheme::kRing:
      return "ring";
    case Scheme::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

const std::vector<ModelSpec>& model_table() {
  // fp32 gradient size = 4 bytes x parameters; compute = forward + backward
  // of one iteration on one V100-class GPU (order of magnitude, see the guide).
  static const std::vector<ModelSpec> table = {
      {"resnet50", 102.0, 190.0},     // 25.6 M parameters
      {"vgg16", 553.0, 290.0},        // 138 M parameters
      {"bert-large", 1340.0, 560.0},  // 336 M parameters
  };
  return table;
}

const ModelSpec& find_model(const std::string& name) {
  std::string names;
  for (const ModelSpec& m : model_table()) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  fail("--models: unknown model '" + name + "' (one of: " + names + ")");
}

std::string default_workload_path() {
  return std::string(PANAMA_NETSIM_DATA_DIR) + "/gpu-workloads-h100.json";
}

WorkloadTable load_workloads(const std::string& which) {
  WorkloadTable t;
  t.source = which;
  if (which == "v100") {
    for (const ModelSpec& m : model_table()) {
      Workload w;
      w.model = m.name;
      w.precision = "fp32";
      w.setup = "V100-class, order of magnitude";
      w.bwd_ms = m.compute_ms;
      w.grad_bytes = m.gradient_mb * 1e6;
      w.ready.push_back({m.compute_ms, w.grad_bytes});
      t.rows.push_back(w);
    }
    return t;
  }
  const std::string path = which == "h100" ? default_workload_path() : which;
  std::ifstream in(path);
  if (!in)
    fail("--workload: cannot open '" + path + "' (v100, h100 or a file in the format of " +
         default_workload_path() + ")");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    fail(path + ": expected an object with a \"results\" array");
  for (size_t i = 0; i < j["results"].size(); ++i) {
    const nlohmann::json& r = j["results"][i];
    const std::string at = path + ": results[" + std::to_string(i) + "]";
    auto num = [&](const char* key) {
      if (!r.contains(key) || !r[key].is_number()) fail(at + "." + key + ": missing or not a number");
      const double v = r[key].get<double>();
      if (!(v >= 0) || !std::isfinite(v)) fail(at + "." + key + ": must be a finite number >= 0");
      return v;
    };
    auto str = [&](const char* key) {
      if (!r.contains(key) || !r[key].is_string()) fail(at + "." + key + ": missing or not a string");
      return r[key].get<std::string>();
    };
    Workload w;
    w.model = str("model");
    w.precision = str("precision");
    w.setup = r.contains("setup") && r["setup"].is_string() ? r["setup"].get<std::string>() : "";
    w.fwd_ms = num("fwd_ms");
    w.bwd_ms = num("bwd_ms");
    w.grad_bytes = num("grad_bytes_fp32");
    if (!(w.grad_bytes >= 4)) fail(at + ".grad_bytes_fp32: at least one fp32 element");
    if (!r.contains("grad_ready_ms_bytes") || !r["grad_ready_ms_bytes"].is_array() ||
        r["grad_ready_ms_bytes"].empty())
      fail(at + ".grad_ready_ms_bytes: missing or empty (pairs [ms after backward started, fp32 bytes])");
    double sum = 0, last = 0;
    for (size_t k = 0; k < r["grad_ready_ms_bytes"].size(); ++k) {
      const nlohmann::json& e = r["grad_ready_ms_bytes"][k];
      const std::string ek = at + ".grad_ready_ms_bytes[" + std::to_string(k) + "]";
      if (!e.is_array() || e.size() != 2 || !e[0].is_number() || !e[1].is_number())
        fail(ek + ": expected [ms, bytes]");
      GradReady g{e[0].get<double>(), e[1].get<double>()};
      if (!(g.ms >= last) || !std::isfinite(g.ms)) fail(ek + ": times must not decrease");
      if (g.ms > w.bwd_ms * 1.001 + 1e-3)
        fail(ek + ": ready after backward ended (bwd_ms " + std::to_string(w.bwd_ms) + ")");
      if (!(g.bytes > 0) || !std::isfinite(g.bytes)) fail(ek + ": bytes must be positive");
      last = g.ms;
      sum += g.bytes;
      w.ready.push_back(g);
    }
    if (std::fabs(sum - w.grad_bytes) > 0.5)
      fail(at + ": grad_ready_ms_bytes sum to " + std::to_string(static_cast<uint64_t>(sum)) +
           " bytes, grad_bytes_fp32 says " + std::to_string(static_cast<uint64_t>(w.grad_bytes)));
    for (const Workload& o : t.rows) {
      if (o.model == w.model && o.precision == w.precision)
        fail(at + ": a second entry for " + w.model + " in " + w.precision);
    }
    t.rows.push_back(std::move(w));
  }
  if (t.rows.empty()) fail(path + ": no results");
  return t;
}

const Workload& find_workload(const WorkloadTable& t, const std::string& model,
                              const std::string& precision) {
  std::string names;
  for (const Workload& w : t.rows) {
    if (w.model == model && (t.source == "v100" || w.precision == precision)) return w;
    const std::string n = t.source == "v100" ? w.model : w.model + " (" + w.precision + ")";
    names += (names.empty() ? "" : ", ") + n;
  }
  fail("--models: unknown model '" + model + "'" + (t.source == "v100" ? "" : " in " + precision) +
       " in the workload " + t.source + " (one of: " + names + ")");
}

std::vector<Bucket> make_buckets(const Workload& w, uint64_t elems, double scale, double first_cap_bytes,
                                 double cap_bytes) {
  std::vector<Bucket> out;
  const double total = w.grad_bytes;
  auto ns = [&](double ms) { return static_cast<uint64_t>(std::llround(ms * scale * 1e6)); };
  // Element boundary of a cumulative fp32 byte count (the model's elements,
  // scaled to `elems`).
  auto elem_at = [&](double cum_bytes) {
    return std::min<uint64_t>(
        elems, static_cast<uint64_t>(std::llround(cum_bytes / total * static_cast<double>(elems))));
  };
  if (cap_bytes <= 0) {
    out.push_back({ns(w.bwd_ms), 0, elems});
    return out;
  }
  double cum = 0, in_bucket = 0;
  uint64_t begin = 0;
  for (size_t i = 0; i < w.ready.size(); ++i) {
    cum += w.ready[i].bytes;
    in_bucket += w.ready[i].bytes * scale;
    const double cap = out.empty() ? first_cap_bytes * scale : cap_bytes * scale;
    const bool last = i + 1 == w.ready.size();
    if (in_bucket >= cap || last) {
      const uint64_t end = last ? elems : elem_at(cum);
      if (end > begin) {
        out.push_back({ns(w.ready[i].ms), begin, end - begin});
        begin = end;
        in_bucket = 0;
      }
    }
  }
  if (begin < elems) {  // rounding left elements over: the last bucket takes them
    out.back().elems += elems - begin;
  }
  return out;
}

void load_jobs_file(const std::string& path, Options& o) {
  std::ifstream in(path);
  if (!in) fail("--jobs-file: cannot open '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail(path + ": not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("jobs") || !j["jobs"].is_array() || j["jobs"].empty())
    fail(path + ": expected {\"jobs\": [{\"model\": ..., \"workers\": ..., \"count\": ...}, ...]}");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "jobs") fail(path + ": unknown key '" + it.key() + "' (only \"jobs\")");
  }
  o.models.clear();
  o.job_workers.clear();
  for (size_t i = 0; i < j["jobs"].size(); ++i) {
    const nlohmann::json& e = j["jobs"][i];
    const std::string at = path + ": jobs[" + std::to_string(i) + "]";
    if (!e.is_object()) fail(at + ": expected an object");
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (it.key() != "model" && it.key() != "workers" && it.key() != "count")
        fail(at + ": unknown key '" + it.key() + "' (model, workers, count)");
    }
    if (!e.contains("model") || !e["model"].is_string()) fail(at + ".model: missing or not a string");
    if (!e.contains("workers") || !e["workers"].is_number_unsigned())
      fail(at + ".workers: missing or not a whole number");
    const uint64_t workers = e["workers"].get<uint64_t>();
    if (workers < 2 || workers > 128) fail(at + ".workers: 2..128, not " + std::to_string(workers));
    uint64_t count = 1;
    if (e.contains("count")) {
      if (!e["count"].is_number_unsigned() || e["count"].get<uint64_t>() < 1 ||
          e["count"].get<uint64_t>() > 4096)
        fail(at + ".count: 1..4096");
      count = e["count"].get<uint64_t>();
    }
    for (uint64_t c = 0; c < count; ++c) {
      o.models.push_back(e["model"].get<std::string>());
      o.job_workers.push_back(static_cast<uint32_t>(workers));
    }
  }
  o.jobs = static_cast<uint32_t>(o.models.size());
  o.jobs_file = path;
}

void validate(const Options& o) {
  auto positive = [](double v, const char* name) {
    if (!(v > 0) || !std::isfinite(v)) fail(std::string(name) + ": must be a positive number");
  };
  if (o.topology == Topology::kFatTree) {
    if (o.k % 2 != 0) fail("--k: the fat-tree arity must be even (got " + std::to_string(o.k) + ")");
    if (o.k < 2 || o.k > 62) fail("--k: 2..62 (a switch has k ports, at most 64; k^3/4 hosts)");
  } else {
    if (o.racks < 1) fail("--racks: at least 1 rack");
    if (o.hosts_per_rack < 1) fail("--hosts-per-rack: at least 1 host per rack");
    if (o.hosts_per_rack > 64) fail("--hosts-per-rack: at most 64 (a PSwitch has at most 64 ports)");
    if (o.racks > 1 && o.spines < 1) fail("--spines: more than one rack needs at least 1 spine");
    if (o.racks > 64) fail("--racks: at most 64 (a spine has one port per rack, at most 64)");
    if (o.spines + o.hosts_per_rack > 64) fail("--spines: a leaf has at most 64 ports (hosts + spines)");
    if (o.hosts() > 60000) fail("--racks x --hosts-per-rack: at most 60000 hosts");
  }
  positive(o.host_gbps, "--host-gbps");
  positive(o.fabric_gbps, "--fabric-gbps");
  if (!(o.link_delay_us >= 0) || !std::isfinite(o.link_delay_us)) fail("--link-delay-us: must be >= 0");
  if (o.mtu < 1500 || o.mtu > 9000) fail("--mtu: 1500..9000 bytes");
  if (o.background_mtu < 1500 || o.background_mtu > o.mtu) fail("--background-mtu: 1500..--mtu bytes");
  // A full-size frame (MTU + PPP) must fit every buffer and PFC threshold.
  const uint32_t frame_kb = (o.mtu + 2 + 999) / 1000;
  if (o.buffer_kb < frame_kb)
    fail("--buffer-kb: at least one full-size packet (" + std::to_string(frame_kb) + " KB)");
  if (o.ecn_k_kb >= o.buffer_kb && !o.lossless)
    fail("--ecn-k-kb: the marking threshold must be below the buffer (--buffer-kb)");
  if (o.lossless) {
    if (o.pfc_xoff_kb < frame_kb)
      fail("--pfc-xoff-kb: at least one full-size packet (" + std::to_string(frame_kb) + " KB)");
    if (o.pfc_xon_kb >= o.pfc_xoff_kb) fail("--pfc-xon-kb: must be below --pfc-xoff-kb");
    if (o.pfc_headroom_kb != 0 && o.pfc_headroom_kb < frame_kb)
      fail("--pfc-headroom-kb: at least one full-size packet (" + std::to_string(frame_kb) +
           " KB), or 0 for the computed headroom");
  }
  positive(o.engine_gbps, "--engine-gbps");
  if (!(o.engine_latency_us >= 0) || !std::isfinite(o.engine_latency_us))
    fail("--engine-latency-us: must be >= 0");
  if (o.packet_memory < 1 || o.packet_memory > 512) fail("--packet-memory: 1..512 slots");
  if (o.dtype != "fp32" && o.dtype != "bf16" && o.dtype != "fp16")
    fail("--dtype: fp32, bf16 or fp16, not '" + o.dtype + "'");
  {
    // IPv4 + UDP + PANAMA header, then the elements; at most a slot of the engine.
    const uint32_t elem = o.dtype == "fp32" ? 4 : 2;
    const uint32_t max_elems = std::min(kEngineSlotElems, (o.mtu - kPanamaIpHeaderBytes) / elem);
    if (o.elems_per_packet < 1 || o.elems_per_packet > max_elems)
      fail("--elems-per-packet: 1.." + std::to_string(max_elems) + " (a " + o.dtype +
           " PANAMA packet fits the " + std::to_string(o.mtu) + "-byte MTU and an engine slot of " +
           std::to_string(kEngineSlotElems) + " elements)");
  }
  if (o.trees < 1 || o.trees > 255) fail("--trees: 1..255");
  if (o.tree_shape != "spine" && o.tree_shape != "chain")
    fail("--tree-shape: spine or chain, not '" + o.tree_shape + "'");
  if (o.priorities > 8) fail("--priorities: 0..8 levels");
  if (o.priorities > 0 && host_reduces(o.scheme)) fail("--priorities: PANAMA schemes only");
  if (o.pool_slots == 0) {
    if (!o.pooled_jobs.empty()) fail("--pooled-jobs applies only with --pool");
    if (o.pool_group != 0) fail("--group applies only with --pool");
    if (o.pool_lease_us != 0) fail("--lease-us applies only with --pool");
    if (o.pool_overcommit != 1.0) fail("--overcommit applies only with --pool");
    if (o.pool_ring_cc) fail("--ring-cc applies only with --pool");
  } else {
    if (o.pool_slots > 512) fail("--pool: 1..512 slots");
    if (o.pool_slots > o.packet_memory)
      fail("--pool: " + std::to_string(o.pool_slots) + " slots do not fit --packet-memory " +
           std::to_string(o.packet_memory));
    if (host_reduces(o.scheme)) fail("--pool: PANAMA schemes only (the ring schemes build no trees)");
    if (o.tree_shape != "spine") fail("--pool: spine trees only (the controller refuses pooled chain trees)");
    if (o.dtype != "fp32" && o.num_racks() > 1)
      fail(
          "--pool: a 16-bit job needs one rack (a 16-bit group summed in the network is rounded at each "
          "leaf, on the ring once, so the verification's reference cannot check it over several)");
    if (o.pool_group > 512) fail("--group: 0..512 sequences (0: the controller's default)");
    if (!(o.pool_overcommit >= 1) || !std::isfinite(o.pool_overcommit)) fail("--overcommit: at least 1");
    for (uint32_t j : o.pooled_jobs) {
      if (j < 1 || j > o.jobs)
        fail("--pooled-jobs: job " + std::to_string(j) + " is not one of the " + std::to_string(o.jobs) +
             " job(s)");
    }
  }
  if (o.job_workers.empty()) {
    if (o.jobs > 0 && o.workers_per_job < 2) fail("--workers-per-job: at least 2 workers");
    if (uint64_t{o.jobs} * o.workers_per_job > o.hosts())
      fail("--jobs x --workers-per-job: " + std::to_string(uint64_t{o.jobs} * o.workers_per_job) +
           " workers do not fit on " + std::to_string(o.hosts()) + " hosts (one worker per host)");
    if (o.workers_per_job > 128) fail("--workers-per-job: at most 128 (exact reference data)");
  } else {
    if (o.job_workers.size() != o.jobs || o.models.size() != o.jobs)
      fail("--jobs-file: internal: one model and one worker count per job");
    uint64_t total = 0;
    for (uint32_t w : o.job_workers) total += w;
    if (total > o.hosts())
      fail("--jobs-file: " + std::to_string(total) + " workers do not fit on " + std::to_string(o.hosts()) +
           " hosts (one worker per host)");
  }
  if (o.jobs > 0 && o.models.empty()) fail("--models: at least one model");
  if (o.precision != "fp32" && o.precision != "bf16")
    fail("--precision: fp32 or bf16 (the measured training precision), not '" + o.precision + "'");
  if (!(o.bucket_mib >= 0) || !std::isfinite(o.bucket_mib))
    fail("--bucket-mib: must be >= 0 (0: one bucket)");
  if (o.jobs > 0) {
    const WorkloadTable t = load_workloads(o.workload);
    for (const std::string& m : o.models) find_workload(t, m, o.precision);
  }
  positive(o.scale, "--scale");
  if (o.scale > 1) fail("--scale: at most 1 (1 = full-size models)");
  if (o.jobs > 0 && o.iterations < 1) fail("--iterations: at least 1");
  if (o.ring_segment_kb < 1) fail("--ring-segment-kb: at least 1");
  if (o.gpus_per_host < 1 || o.gpus_per_host > 64) fail("--gpus-per-host: 1..64");
  positive(o.intra_host_gbps, "--intra-host-gbps");
  if (o.placement != "spread" && o.placement != "packed" && o.placement != "random")
    fail("--placement: spread, packed or random, not '" + o.placement + "'");
  if (o.ring_order != "flat" && o.ring_order != "rack")
    fail("--ring-order: flat or rack, not '" + o.ring_order + "'");
  if (o.ring_tcp != "dctcp" && o.ring_tcp != "cubic" && o.ring_tcp != "newreno")
    fail("--ring-tcp: dctcp, cubic or newreno, not '" + o.ring_tcp + "'");
  if (o.ring_tcp == "dctcp" && !o.ring_ecn) fail("--ring-ecn off: DCTCP needs ECN (take cubic or newreno)");
  if (o.ring_sockbuf_kb < 16) fail("--ring-sockbuf-kb: at least 16");
  if (o.ring_channels < 1 || o.ring_channels > 16) fail("--ring-channels: 1..16");
  if (!(o.load >= 0 && o.load < 1)) fail("--load: must be in [0, 1)");
  if (o.load > 0 && o.num_racks() < 2)
    fail("--load: background flows go between racks; needs at least 2 racks");
  if (!(o.duration_ms >= 0) || !std::isfinite(o.duration_ms)) fail("--duration-ms: must be >= 0");
  if (o.min_short_flows > 0 && (o.load == 0 || o.duration_ms > 0 || o.jobs == 0))
    fail("--min-short-flows: needs background flows (--load), jobs and the jobs' window (--duration-ms 0)");
  if (o.jobs == 0 && o.load > 0 && o.duration_ms == 0)
    fail("--duration-ms: background flows without jobs need a measurement window (> 0)");
  positive(o.max_time_ms, "--max-time-ms");
  if (!(o.queue_sample_us >= 0)) fail("--queue-sample-us: must be >= 0");
  for (size_t i = 0; i < o.flows.size(); ++i) {
    const ManualFlow& f = o.flows[i];
    const std::string w = "--flow #" + std::to_string(i + 1) + ": ";
    if (f.src >= o.hosts() || f.dst >= o.hosts())
      fail(w + "host index outside 0.." + std::to_string(o.hosts() - 1));
    if (f.src == f.dst) fail(w + "source and destination are the same host");
    if (f.bytes < 1) fail(w + "at least 1 byte");
    if (!(f.start_us >= 0)) fail(w + "start time must be >= 0");
  }
}

namespace {
ManualFlow parse_flow(const std::string& text) {
  // src:dst:bytes[@start_us]
  ManualFlow f;
  unsigned long src = 0, dst = 0;
  double bytes = 0, start = 0;
  char tail = 0;
  int n = std::sscanf(text.c_str(), "%lu:%lu:%lf@%lf%c", &src, &dst, &bytes, &start, &tail);
  if (n == 5 || n < 3 || !(bytes >= 1)) {
    fail("--flow '" + text + "': expected <src host>:<dst host>:<bytes>[@<start us>]");
  }
  f.src = static_cast<uint32_t>(src);
  f.dst = static_cast<uint32_t>(dst);
  f.bytes = static_cast<uint64_t>(bytes);
  f.start_us = start;
  return f;
}
}  // namespace

bool parse_command_line(int argc, const char* const* argv, Options& o, int& exit_code) {
  CLI::App app{
      "panama-netsim: packet-level simulation (ns-3) of a shared leaf-spine or fat-tree cluster running "
      "data-parallel jobs (PANAMA in-network aggregation, ring allreduce) beside web-search background "
      "traffic"};
  std::string scheme = scheme_name(o.scheme);
  std::string topology = topology_name(o.topology);
  std::string models;
  std::vector<std::string> flows;
  app.add_option("--topology", topology, "leaf-spine | fat-tree")->capture_default_str();
  CLI::Option* k_opt = app.add_option("--k", o.k, "fat-tree arity (even): k pods, (k/2)^2 cores, k^3/4 hosts")
                           ->capture_default_str();
  CLI::Option* racks_opt = app.add_option("--racks", o.racks, "leaf switches (racks)")->capture_default_str();
  CLI::Option* hpr_opt =
      app.add_option("--hosts-per-rack", o.hosts_per_rack, "hosts under each leaf")->capture_default_str();
  CLI::Option* spines_opt = app.add_option("--spines", o.spines, "spine switches, each linked to every leaf")
                                ->capture_default_str();
  app.add_option("--host-gbps", o.host_gbps, "host link rate")->capture_default_str();
  app.add_option("--fabric-gbps", o.fabric_gbps, "leaf-spine link rate")->capture_default_str();
  app.add_option("--link-delay-us", o.link_delay_us, "propagation delay per link")->capture_default_str();
  app.add_option("--mtu", o.mtu,
                 "MTU of every link, 1500..9000; gradient traffic (PANAMA packets, the ring's TCP) uses it")
      ->capture_default_str();
  app.add_option("--background-mtu", o.background_mtu, "MTU the background flows' TCP uses (1500..--mtu)")
      ->capture_default_str();
  app.add_option("--buffer-kb", o.buffer_kb, "output queue capacity per port")->capture_default_str();
  app.add_option("--ecn-k-kb", o.ecn_k_kb, "ECN marking threshold K per port")->capture_default_str();
  app.add_flag("--lossless", o.lossless, "PFC-style pause: no drops (per ingress port and class XOFF/XON)");
  std::vector<CLI::Option*> pfc_opts = {
      app.add_option("--pfc-xoff-kb", o.pfc_xoff_kb, "lossless: pause the upstream at this many bytes held")
          ->capture_default_str(),
      app.add_option("--pfc-xon-kb", o.pfc_xon_kb, "lossless: resume it at or below this many")
          ->capture_default_str(),
      app.add_option("--pfc-headroom-kb", o.pfc_headroom_kb,
                     "lossless: bytes accepted beyond XOFF (0: 2 x delay x rate + 4 packets)")
          ->capture_default_str()};
  app.add_option("--engine-gbps", o.engine_gbps, "accelerator line rate")->capture_default_str();
  app.add_option("--engine-latency-us", o.engine_latency_us, "accelerator latency")->capture_default_str();
  app.add_option("--packet-memory", o.packet_memory, "accelerator slots (1..512)")->capture_default_str();
  app.add_option("--elems-per-packet", o.elems_per_packet,
                 "elements per PANAMA packet (any --dtype; at most what fits --mtu)")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype,
                 "gradient element type of every job: fp32, bf16 or fp16 (16-bit jobs send half the bytes)")
      ->capture_default_str();
  app.add_option("--scheme", scheme, "panama | single-tree | fixed-window | ring | hierarchical")
      ->capture_default_str();
  app.add_option(
         "--priorities", o.priorities,
         "priority levels by GPU intensity: DSCP per level, queues serve higher levels first (0: off)")
      ->capture_default_str();
  app.add_option("--pool", o.pool_slots,
                 "pooled mode: a pool of SLOTS engine slots on every PSwitch serving a pooled job, claimed a "
                 "group at a time; a group the pool denies is reduced on a host ring (0: fixed shares only)")
      ->capture_default_str();
  app.add_option("--pooled-jobs", o.pooled_jobs,
                 "with --pool: the pooled jobs (ids 1..--jobs, comma-separated; default: every job)")
      ->delimiter(',');
  app.add_option("--group", o.pool_group,
                 "with --pool: sequences per group G, pool slots per claim (0: the controller's default)")
      ->capture_default_str();
  app.add_option("--lease-us", o.pool_lease_us,
                 "with --pool: how long a claim that has emitted nothing holds its slots, microseconds (0: "
                 "the controller's default)")
      ->capture_default_str();
  app.add_option(
         "--overcommit", o.pool_overcommit,
         "with --pool: claim caps are the jobs' weighted parts of the pool times this, at most the pool")
      ->capture_default_str();
  app.add_flag("--ring-cc", o.pool_ring_cc,
               "with --pool: congestion control (DCTCP, from the CE marks the acknowledgements echo) on the "
               "ring of denied groups, whose window then paces them instead of the claim-ahead limit");
  app.add_option("--trees", o.trees, "aggregation trees per job (panama, fixed-window)")
      ->capture_default_str();
  app.add_option("--tree-shape", o.tree_shape,
                 "trees: spine (rooted at spines) or chain (leaf to leaf, CINA's)")
      ->capture_default_str();
  app.add_option("--jobs", o.jobs, "data-parallel training jobs")->capture_default_str();
  app.add_option("--workers-per-job", o.workers_per_job, "workers of each job (one per host)")
      ->capture_default_str();
  app.add_option("--models", models,
                 "comma-separated models, job j trains model j mod count (v100: resnet50, vgg16, "
                 "bert-large; h100 also vit_b_16, gpt2-medium, gpt2-xl, llama-1b; default resnet50)");
  CLI::Option* precision_opt =
      app.add_option("--precision", o.precision,
                     "measured workloads: the training precision whose timeline the jobs follow (fp32, bf16)")
          ->capture_default_str();
  CLI::Option* bucket_opt =
      app.add_option(
             "--bucket-mib", o.bucket_mib,
             "measured workloads: DDP bucket cap in MiB (first bucket 1 MiB); 0: one bucket after backward")
          ->capture_default_str();
  app.add_option("--workload", o.workload,
                 "v100 (built-in table: compute, then allreduce), h100 (bundled measurements: buckets "
                 "overlapped with backward) or a file in their format")
      ->capture_default_str();
  CLI::Option* jobs_file_opt =
      app.add_option("--jobs-file", o.jobs_file,
                     "a job mix, {\"jobs\": [{\"model\": M, \"workers\": W, \"count\": C}, ...]}; replaces "
                     "--jobs, --workers-per-job and --models");
  app.add_option("--scale", o.scale, "factor on gradient sizes, compute times and bucket caps")
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "training iterations per job")->capture_default_str();
  app.add_option("--ring-segment-kb", o.ring_segment_kb, "ring allreduce pipelining segment")
      ->capture_default_str();
  app.add_option("--gpus-per-host", o.gpus_per_host,
                 "GPUs per host: each bucket reduced to a master GPU by a ring inside the host before the "
                 "allreduce, the result sent back the same way after it (every scheme)")
      ->capture_default_str();
  app.add_option("--intra-host-gbps", o.intra_host_gbps, "the intra-host link of --gpus-per-host")
      ->capture_default_str();
  app.add_option("--placement", o.placement,
                 "where a job's workers go: spread (one per rack first), packed (fill a rack first), random")
      ->capture_default_str();
  std::vector<CLI::Option*> ring_opts = {
      app.add_option("--ring-order", o.ring_order, "ring: flat (rank order) or rack (ranks grouped by rack)")
          ->capture_default_str(),
      app.add_option("--ring-tcp", o.ring_tcp, "ring: congestion control dctcp, cubic or newreno")
          ->capture_default_str(),
      app.add_option("--ring-ecn", o.ring_ecn, "ring: negotiate ECN (on/off; DCTCP needs it)")
          ->capture_default_str(),
      app.add_option("--ring-sockbuf-kb", o.ring_sockbuf_kb, "ring: TCP send and receive buffer per socket")
          ->capture_default_str(),
      app.add_option("--ring-channels", o.ring_channels,
                     "ring: TCP connections per neighbour, the stream striped over them (1..16)")
          ->capture_default_str()};
  app.add_flag("!--no-verify", o.verify, "skip the bit-exact check of PANAMA allreduce results");
  app.add_option("--load", o.load, "background load, fraction of host capacity [0, 1)")
      ->capture_default_str();
  app.add_option("--cdf", o.cdf_path, "flow-size CDF file (default: bundled web-search CDF)");
  app.add_option("--duration-ms", o.duration_ms,
                 "measurement window: background arrivals, and no job iteration starts after it "
                 "(0: until the first job completes --iterations)")
      ->capture_default_str();
  app.add_option("--min-short-flows", o.min_short_flows,
                 "keep the window open and the jobs iterating until this many short (<100 KB) background "
                 "flows have started in it (0: off)")
      ->capture_default_str();
  app.add_option("--flow", flows, "an extra flow <src>:<dst>:<bytes>[@<start us>] (host indices)");
  app.add_option("--seed", o.seed, "random seed (traffic, placement jitter, data)")->capture_default_str();
  app.add_option("--max-time-ms", o.max_time_ms, "stop at this simulated time")->capture_default_str();
  app.add_option("--queue-sample-us", o.queue_sample_us, "queue-length sampling period (0 = off)")
      ->capture_default_str();
  app.add_option("--out", o.out_dir, "directory for summary.json, flows.csv, iterations.csv");
  app.add_flag("--progress", o.progress, "progress lines on stderr");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    exit_code = app.exit(e);
    if (exit_code != 0) exit_code = 2;
    return false;
  }
  o.scheme = parse_scheme(scheme);
  o.topology = parse_topology(topology);
  if (o.topology == Topology::kFatTree) {
    for (CLI::Option* opt : {racks_opt, hpr_opt, spines_opt}) {
      if (opt->count() > 0)
        fail(opt->get_name() + ": not an option of --topology fat-tree (its size is --k)");
    }
  } else if (k_opt->count() > 0) {
    fail("--k: only with --topology fat-tree");
  }
  for (CLI::Option* opt : pfc_opts) {
    if (opt->count() > 0 && !o.lossless) fail(opt->get_name() + ": only with --lossless");
  }
  if (jobs_file_opt->count() > 0) {
    for (const char* name : {"--jobs", "--workers-per-job", "--models"}) {
      if (app.get_option(name)->count() > 0)
        fail(std::string(name) + ": not with --jobs-file (the file says it)");
    }
    load_jobs_file(o.jobs_file, o);
  } else if (!models.empty()) {
    o.models.clear();
    std::stringstream ss(models);
    std::string m;
    while (std::getline(ss, m, ',')) o.models.push_back(m);
  }
  if (o.workload == "v100") {
    for (CLI::Option* opt : {precision_opt, bucket_opt}) {
      if (opt->count() > 0)
        fail(opt->get_name() +
             ": only with a measured workload (--workload h100 or a file); the v100 table "
             "computes, then allreduces the whole gradient");
    }
  }
  if (!host_reduces(o.scheme)) {
    for (CLI::Option* opt : ring_opts) {
      if (opt->count() > 0) fail(opt->get_name() + ": only with --scheme ring or hierarchical");
    }
  }
  for (const std::string& f : flows) o.flows.push_back(parse_flow(f));
  if (o.scheme == Scheme::kSingleTree) o.trees = 1;
  validate(o);
  return true;
}

double SizeCdf::mean() const {
  double m = 0;
  for (size_t i = 1; i < bytes.size(); ++i) m += (prob[i] - prob[i - 1]) * (bytes[i] + bytes[i - 1]) / 2;
  return m;
}

double SizeCdf::sample(double u) const {
  for (size_t i = 1; i < prob.size(); ++i) {
    if (u < prob[i]) {
      const double f = (u - prob[i - 1]) / (prob[i] - prob[i - 1]);
      return bytes[i - 1] + f * (bytes[i] - bytes[i - 1]);
    }
  }
  return bytes.back();
}

std::string default_cdf_path() {
  return std::string(PANAMA_NETSIM_DATA_DIR) + "/websearch_cdf.txt";
}

SizeCdf load_size_cdf(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("--cdf: cannot open '" + path + "'");
  SizeCdf c;
  std::string line;
  for (int ln = 1; std::getline(in, line); ++ln) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ss(line);
    double b, p;
    if (!(ss >> b)) continue;  // blank or comment
    std::string rest;
    if (!(ss >> p) || (ss >> rest))
      fail(path + ":" + std::to_string(ln) + ": expected '<bytes> <probability>'");
    const std::string at = path + ":" + std::to_string(ln) + ": ";
    if (!(b >= 0) || !(p >= 0 && p <= 1)) fail(at + "size must be >= 0 and probability in [0, 1]");
    if (!c.bytes.empty() && (b <= c.bytes.back() || p < c.prob.back()))
      fail(at + "sizes must increase and probabilities must not decrease");
    c.bytes.push_back(b);
    c.prob.push_back(p);
  }
  if (c.bytes.size() < 2) fail(path + ": needs at least two points");
  if (c.prob.back() != 1.0) fail(path + ": the last probability must be 1");
  if (c.bytes.back() < 1) fail(path + ": the largest size must be at least 1 byte");
  return c;
}

}  // namespace panama::netsim
