// Tests of the ns-3 network simulation on small fabrics and short runs:
// allreduce results bit for bit through simulated PSwitches (one, two and
// three tiers), ECN reaching the workers, cwnd_cap and engine slots,
// idle-network FCT, flow-level ECMP over spines and fat-tree cores, PFC
// (lossless: pauses, no drops), determinism, option validation, and
// measured workloads (DDP buckets overlapped with backward) against
// hand-computed timelines, and pooled mode (claims, leases, ring fallback).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-socket-state.h"
#include "panama/netsim/simulation.hpp"
#include "panama/netsim/tcp_bounds.hpp"
#include "support/temp_dir.hpp"
#include "wire/seeded_rng.hpp"

using panama::netsim::BucketRecord;
using panama::netsim::OptionError;
using panama::netsim::Options;
using panama::netsim::RunResult;
using panama::netsim::Scheme;
using panama::netsim::Topology;

namespace {

Options small_fabric(uint64_t seed) {
  Options o;
  o.racks = 2;
  o.hosts_per_rack = 2;
  o.spines = 2;
  o.jobs = 1;
  o.workers_per_job = 4;
  o.iterations = 2;
  o.scale = 0.001;  // resnet50: 102 KB of gradients, 0.19 ms of compute
  o.seed = seed;
  return o;
}

uint64_t chunks_of(const Options& o, const nlohmann::json& job) {
  const uint64_t elems = job["gradient_bytes"].get<uint64_t>() / (o.dtype == "fp32" ? 4 : 2);
  return (elems + o.elems_per_packet - 1) / o.elems_per_packet;
}

const nlohmann::json& pswitch(const RunResult& r, const std::string& name) {
  for (const auto& p : r.summary["pswitches"]) {
    if (p["name"] == name) return p;
  }
  FAIL("no PSwitch " << name << " in the summary");
  throw std::logic_error("unreachable");
}

uint64_t link_bytes(const RunResult& r, const std::string& from, const std::string& to) {
  for (const auto& l : r.summary["fabric"]["links"]) {
    if (l["from"] == from && l["to"] == to) return l["bytes"].get<uint64_t>();
  }
  FAIL("no link " << from << " -> " << to);
  return 0;
}

void require_all_exact(const Options& o, const RunResult& r) {
  REQUIRE(r.summary["finished"].get<bool>());
  for (const auto& job : r.summary["jobs"]) {
    INFO("job " << job["id"]);
    CHECK(job["iterations_done"].get<uint32_t>() == o.iterations);
    CHECK(job["mismatches"].get<uint64_t>() == 0);
    CHECK(job["bit_exact"].get<bool>());
  }
  CHECK(r.summary["engine_drops_total"].get<uint64_t>() == 0);
  CHECK(r.summary["unknown_panama_frames"].get<uint64_t>() == 0);
}

}  // namespace

TEST_CASE("allreduce is bit-exact through one PSwitch, several jobs and trees", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim one tier"));
  o.racks = 1;
  o.hosts_per_rack = 6;
  o.jobs = 3;
  o.workers_per_job = 2;
  o.trees = 3;
  o.models = {"resnet50", "vgg16"};
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  // The leaf is every tree's root: it emits one result per chunk and iteration.
  uint64_t expected = 0;
  for (const auto& job : r.summary["jobs"]) expected += chunks_of(o, job) * o.iterations;
  CHECK(pswitch(r, "leaf0")["emitted"].get<uint64_t>() == expected);
}

TEST_CASE("allreduce is bit-exact through two tiers of PSwitches, several jobs and trees", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim two tiers"));
  o.racks = 3;
  o.hosts_per_rack = 2;
  o.spines = 2;
  o.jobs = 2;
  o.workers_per_job = 3;  // each job has one worker in every rack
  o.trees = 2;
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  // Trees 0 and 1 of each job are rooted at spine0 and spine1: each spine
  // emits one result per chunk of its tree (chunk k goes to tree k mod 2).
  uint64_t spine0 = 0, spine1 = 0;
  for (const auto& job : r.summary["jobs"]) {
    const uint64_t c = chunks_of(o, job);
    spine0 += (c + 1) / 2 * o.iterations;
    spine1 += c / 2 * o.iterations;
    REQUIRE(job["trees"].size() == 2);
    CHECK(job["trees"][0]["root"] == "spine0");
    CHECK(job["trees"][1]["root"] == "spine1");
  }
  CHECK(pswitch(r, "spine0")["emitted"].get<uint64_t>() == spine0);
  CHECK(pswitch(r, "spine1")["emitted"].get<uint64_t>() == spine1);
  // Every leaf sends one aggregate per chunk up: leaf-spine traffic is
  // (leaves x chunks) packets up plus as many results down, not per worker.
  CHECK(pswitch(r, "leaf0")["emitted"].get<uint64_t>() == spine0 + spine1);
}

TEST_CASE("bf16 and fp16 jobs: bit-exact with a rounding at every engine level, half the bytes",
          "[network]") {
  // Two workers of the job in each rack: each leaf sums two contributions and
  // rounds its partial sum before the spine adds the leaves' partials.
  const uint64_t seed = panama::test::test_seed("netsim 16-bit");
  std::map<std::string, uint64_t> bytes, grad;
  for (const std::string dtype : {"fp32", "bf16", "fp16"}) {
    INFO(dtype);
    Options o = small_fabric(seed);
    o.dtype = dtype;
    o.trees = 2;
    const RunResult r = panama::netsim::run_simulation(o);
    require_all_exact(o, r);
    CHECK(r.summary["options"]["dtype"] == dtype);
    grad[dtype] = r.summary["jobs"][0]["gradient_bytes"].get<uint64_t>();
    bytes[dtype] = link_bytes(r, "leaf0", "spine0") + link_bytes(r, "leaf0", "spine1");
    // The same chunks (in elements) whatever the type.
    CHECK(pswitch(r, "leaf0")["emitted"].get<uint64_t>() ==
          chunks_of(o, r.summary["jobs"][0]) * o.iterations);
  }
  CHECK(grad["bf16"] * 2 == grad["fp32"]);
  CHECK(grad["fp16"] * 2 == grad["fp32"]);
  // Leaf to spine: the same packets, 64 + 2 x 256 instead of 64 + 4 x 256
  // bytes each (plus the link layer's own bytes): a little over half.
  for (const std::string dtype : {"bf16", "fp16"}) {
    INFO(dtype << " " << bytes[dtype] << " vs fp32 " << bytes["fp32"]);
    CHECK(2 * bytes[dtype] > bytes["fp32"]);
    CHECK(10 * bytes[dtype] < 6 * bytes["fp32"]);
  }
}

TEST_CASE("chain trees: leaf to leaf through spines that route them on, bit-exact, the bytes of a chain",
          "[network]") {
  // Three racks of two, one worker per host (spread: ranks h0 h2 h4 h1 h3
  // h5), one tree: leaf0 -spine0-> leaf1 -spine1-> leaf2, the root
  // (docs/controller.md, "Chain trees"). The spines hold no PSwitch: they
  // route the frames addressed to the next leaf (and the results to the
  // previous one) like any other packet.
  Options o = small_fabric(panama::test::test_seed("netsim chain"));
  o.racks = 3;
  o.hosts_per_rack = 2;
  o.workers_per_job = 6;
  o.trees = 1;
  o.tree_shape = "chain";
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  CHECK(r.summary["options"]["tree_shape"] == "chain");
  const auto& job = r.summary["jobs"][0];
  REQUIRE(job["trees"].size() == 1);
  CHECK(job["trees"][0]["root"] == "leaf2");
  REQUIRE(job["trees"][0]["retransmissions_all_workers"].get<uint64_t>() == 0);
  for (const auto& p : r.summary["pswitches"]) CHECK(p["name"].get<std::string>().rfind("leaf", 0) == 0);
  // Every worker sent each chunk once: P bytes each. Each hop carries every
  // chunk's partial up and its result back down once, P bytes each way on
  // each of its two links; the links off the chain carry nothing.
  const uint64_t p = r.summary["fabric"]["host_tx_bytes"].get<uint64_t>() / 6;
  REQUIRE(p > 0);
  for (const auto& [a, b] :
       std::vector<std::pair<std::string, std::string>>{{"leaf0", "spine0"}, {"leaf1", "spine1"}}) {
    const std::string next = a == "leaf0" ? "leaf1" : "leaf2";
    INFO(a << " -" << b << "-> " << next);
    CHECK(link_bytes(r, a, b) == p);     // the partial up
    CHECK(link_bytes(r, b, next) == p);  // on to the next leaf
    CHECK(link_bytes(r, next, b) == p);  // the result back
    CHECK(link_bytes(r, b, a) == p);
  }
  for (const auto& [a, b] :
       std::vector<std::pair<std::string, std::string>>{{"leaf0", "spine1"}, {"leaf2", "spine0"}}) {
    CHECK(link_bytes(r, a, b) == 0);
    CHECK(link_bytes(r, b, a) == 0);
  }
  CHECK(link_bytes(r, "leaf1", "spine0") == p);
  CHECK(r.summary["fabric"]["leaf_spine_bytes"].get<uint64_t>() == 8 * p);
  // The same job with spine trees: each leaf sends P up and gets P back, 6P
  // in all, against the chain's 4 x (3 - 1) hops x P.
  o.tree_shape = "spine";
  const RunResult s = panama::netsim::run_simulation(o);
  require_all_exact(o, s);
  CHECK(s.summary["fabric"]["host_tx_bytes"].get<uint64_t>() == 6 * p);
  CHECK(s.summary["fabric"]["leaf_spine_bytes"].get<uint64_t>() == 6 * p);

  // Two trees: the second starts at leaf1 and is rooted at leaf0; still exact.
  o.tree_shape = "chain";
  o.trees = 2;
  const RunResult t = panama::netsim::run_simulation(o);
  require_all_exact(o, t);
  CHECK(t.summary["jobs"][0]["trees"][0]["root"] == "leaf2");
  CHECK(t.summary["jobs"][0]["trees"][1]["root"] == "leaf0");

  // bf16: every leaf rounds its partial in turn, in each tree's own chain
  // order (leaf0, leaf1, leaf2 and leaf1, leaf2, leaf0), over DDP buckets:
  // bit-exact against that reference, checked by every worker.
  o.dtype = "bf16";
  o.workload = "h100";
  o.models = {"vgg16"};
  o.scale = 0.0005;
  const RunResult b = panama::netsim::run_simulation(o);
  require_all_exact(o, b);
  CHECK(b.summary["jobs"][0]["buckets"].get<uint64_t>() > 1);
}

TEST_CASE(
    "several GPUs per host: each bucket reduced to the master and back inside the host, for every scheme",
    "[network]") {
  // No background. PANAMA: the network part of every bucket is the same run
  // shifted by the reduce inside the host, so each bucket takes exactly two
  // of those longer: 2 x 2(G-1)/G x its bytes at the intra-host link's rate.
  // The ring's TCP connections see other timings, so there each bucket
  // takes at least the two steps inside the host, and longer on average.
  for (const Scheme scheme : {Scheme::kPanama, Scheme::kRing}) {
    Options o = small_fabric(panama::test::test_seed("netsim gpus per host"));
    o.scheme = scheme;
    o.workload = "h100";
    o.models = {"vgg16"};
    o.scale = 0.0005;
    o.dtype = "bf16";
    const RunResult one = panama::netsim::run_simulation(o);
    o.gpus_per_host = 8;
    o.intra_host_gbps = 8;  // as slow as a host link, so that it shows in the ring's timings
    const RunResult eight = panama::netsim::run_simulation(o);
    if (scheme == Scheme::kPanama) {
      require_all_exact(o, one);
      require_all_exact(o, eight);
    }
    CHECK(eight.summary["options"]["gpus_per_host"] == 8);
    REQUIRE(one.buckets.size() == eight.buckets.size());
    REQUIRE(one.buckets.size() > 4);
    double longer = 0, steps = 0;
    for (size_t i = 0; i < one.buckets.size(); ++i) {
      const BucketRecord &a = one.buckets[i], &b = eight.buckets[i];
      INFO(scheme_name(scheme) << " job " << a.job << " rank " << a.rank << " iteration " << a.iteration
                               << " bucket " << a.bucket);
      const int64_t intra = std::llround(2.0 * 7 / 8 * static_cast<double>(a.elems * 2 * 8) / 8);
      REQUIRE(a.elems == b.elems);
      const int64_t da = static_cast<int64_t>(a.end_ns - a.start_ns),
                    db = static_cast<int64_t>(b.end_ns - b.start_ns);
      if (scheme == Scheme::kPanama) CHECK(db - da == 2 * intra);
      CHECK(db >= 2 * intra);
      longer += static_cast<double>(db - da);
      steps += 2.0 * static_cast<double>(intra);
    }
    CHECK(longer > 0.5 * steps);
  }
}

TEST_CASE("allreduce is bit-exact through three tiers of a fat-tree, several jobs and trees", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim fat-tree"));
  o.topology = Topology::kFatTree;
  o.k = 4;  // 16 hosts: edge e holds hosts 2e, 2e+1; pod p = edges 2p, 2p+1
  o.jobs = 2;
  o.workers_per_job = 4;  // slot 0 of edges 0-3 (pods 0, 1) and of edges 4-7 (pods 2, 3)
  o.trees = 4;
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  CHECK(r.summary["fabric"]["drops"].get<uint64_t>() == 0);
  // Job 1's trees take cores 0-3, job 2's (4 trees later) cores 0-3 again.
  // Tree t gets chunks k with k mod 4 == t; core t emits one result per
  // such chunk of either job. Aggregation switch i of a pod carries the
  // trees rooted at cores 2i, 2i+1 and emits one aggregate per chunk of them.
  uint64_t core[4] = {0, 0, 0, 0};
  for (const auto& job : r.summary["jobs"]) {
    const uint64_t c = chunks_of(o, job);
    REQUIRE(job["trees"].size() == 4);
    for (uint32_t t = 0; t < 4; ++t) {
      CHECK(job["trees"][t]["root"] == "core" + std::to_string(t));
      core[t] += (c + 3 - t) / 4 * o.iterations;
    }
  }
  for (int t = 0; t < 4; ++t)
    CHECK(pswitch(r, "core" + std::to_string(t))["emitted"].get<uint64_t>() == core[t]);
  const uint64_t c1 = chunks_of(o, r.summary["jobs"][0]), c2 = chunks_of(o, r.summary["jobs"][1]);
  auto trees01 = [&](uint64_t c) { return ((c + 3) / 4 + (c + 2) / 4) * o.iterations; };
  CHECK(pswitch(r, "agg0")["emitted"].get<uint64_t>() == trees01(c1));  // pod 0, job 1
  CHECK(pswitch(r, "agg2")["emitted"].get<uint64_t>() == trees01(c1));  // pod 1, job 1
  CHECK(pswitch(r, "agg4")["emitted"].get<uint64_t>() == trees01(c2));  // pod 2, job 2
  CHECK(pswitch(r, "agg3")["emitted"].get<uint64_t>() == c1 * o.iterations - trees01(c1));
  CHECK(pswitch(r, "edge5")["emitted"].get<uint64_t>() == c2 * o.iterations);  // every chunk, once
}

TEST_CASE("fat-tree: flow-level ECMP spreads flows over the cores; a lone flow takes one", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim fat-tree ecmp"));
  o.topology = Topology::kFatTree;
  o.k = 4;
  o.jobs = 0;
  o.link_delay_us = 2;
  // Core c is reached from pod 0 through agg(c / 2): agg0 - core0, core1; agg1 - core2, core3.
  auto to_core = [](const RunResult& r, int c) {
    return link_bytes(r, "agg" + std::to_string(c / 2), "core" + std::to_string(c));
  };
  o.flows = {{0, 9, 10000, 0}};  // pod 0 to pod 2
  {
    const RunResult r = panama::netsim::run_simulation(o);
    int used = 0;
    for (int c = 0; c < 4; ++c) used += to_core(r, c) > 0 ? 1 : 0;
    CHECK(used == 1);
    // Six links host - edge - agg - core - agg - edge - host on an idle network: its ideal time.
    REQUIRE(r.flows.size() == 1);
    const auto& f = r.flows[0];
    CHECK(f.ideal_us == Approx(panama::netsim::ideal_fct_path_us(o, 10000, 4)));
    CHECK(std::fabs(f.fct_us - f.ideal_us) <= 6 * 54 * 8 / 10.0 / 1e3);
  }
  o.flows.clear();
  for (uint32_t i = 0; i < 64; ++i) o.flows.push_back({i % 4, 4 + (i * 7) % 12, 20000, 5.0 * i});
  const RunResult r = panama::netsim::run_simulation(o);
  uint64_t total = 0, most = 0;
  for (int c = 0; c < 4; ++c) {
    const uint64_t b = to_core(r, c);
    INFO("core" << c << ": " << b << " bytes from pod 0");
    CHECK(b > 0);
    total += b;
    most = std::max(most, b);
  }
  CHECK(most < total / 2);
}

TEST_CASE("lossless: PFC pauses the upstream instead of dropping under incast", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim pfc"));
  o.racks = 2;
  o.hosts_per_rack = 3;
  o.spines = 1;
  o.jobs = 0;
  // Four senders (three across the spine, one in the rack) to host 3.
  o.flows = {{0, 3, 300000, 0}, {1, 3, 300000, 0}, {2, 3, 300000, 0}, {4, 3, 300000, 0}};
  // Without PFC: a 30 KB buffer and no ECN marking in practice, the incast's
  // first windows overflow it.
  o.buffer_kb = 30;
  o.ecn_k_kb = 29;
  {
    const RunResult r = panama::netsim::run_simulation(o);
    CHECK(r.summary["fabric"]["drops"].get<uint64_t>() > 0);
    CHECK_FALSE(r.summary["pfc"]["enabled"].get<bool>());
    CHECK(r.summary["pfc"]["pause_frames"].get<uint64_t>() == 0);
  }
  o.lossless = true;
  o.ecn_k_kb = 10000;  // no ECN: only pauses hold the senders back
  o.pfc_xoff_kb = 20;
  o.pfc_xon_kb = 10;
  const RunResult r = panama::netsim::run_simulation(o);
  const auto& pfc = r.summary["pfc"];
  INFO(pfc.dump());
  REQUIRE(r.summary["finished"].get<bool>());
  for (const auto& f : r.flows) CHECK(f.fct_us > 0);
  CHECK(r.summary["fabric"]["drops"].get<uint64_t>() == 0);
  CHECK(pfc["headroom_drops"].get<uint64_t>() == 0);
  CHECK(pfc["pause_frames"].get<uint64_t>() > 0);
  CHECK(pfc["pause_frames_by_class"]["tcp"].get<uint64_t>() == pfc["pause_frames"].get<uint64_t>());
  CHECK(pfc["resume_frames"].get<uint64_t>() ==
        pfc["pause_frames"].get<uint64_t>());  // all released at the end
  CHECK(pfc["paused_us"].get<double>() > 0);
  // The pause spreads back to the senders: leaf1 pauses the spine and host 4,
  // the spine pauses leaf0, leaf0 pauses hosts 0-2.
  CHECK(pfc["host_nic_paused_us"].get<double>() > 0);
  uint64_t spine_paused = 0;
  for (const auto& l : r.summary["fabric"]["links"]) {
    if (l["from"] == "spine0" || l["from"] == "leaf0") spine_paused += l["pauses_received"].get<uint64_t>();
  }
  CHECK(spine_paused > 0);
  // What an ingress port held stayed within XOFF + headroom.
  CHECK(pfc["max_ingress_bytes_by_class"]["tcp"].get<double>() >= 20000);
  CHECK(pfc["max_ingress_bytes_by_class"]["tcp"].get<double>() <=
        20000 + pfc["headroom_bytes_max"].get<double>());
  // Pauses and resumes are events like any other: the run is deterministic.
  nlohmann::json again = panama::netsim::run_simulation(o).summary, first = r.summary;
  again.erase("performance");
  first.erase("performance");
  CHECK(again == first);
}

TEST_CASE("lossless: a slow accelerator pauses the aggregation class only; results stay exact", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim pfc panama"));
  o.lossless = true;
  o.engine_gbps = 2;  // the leaves' accelerators take 2 Gb/s of 20 Gb/s of contributions
  o.pfc_xoff_kb = 8;
  o.pfc_xon_kb = 4;
  o.trees = 2;
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  const auto& pfc = r.summary["pfc"];
  INFO(pfc.dump());
  CHECK(r.summary["fabric"]["drops"].get<uint64_t>() == 0);
  CHECK(pfc["pause_frames_by_class"]["panama"].get<uint64_t>() > 0);
  CHECK(pfc["pause_frames_by_class"]["tcp"].get<uint64_t>() == 0);
  CHECK(pfc["paused_us_by_class"]["panama"].get<double>() > 0);
}

TEST_CASE("ECN marks at a congested port reach every worker and cut the windows", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim ecn"));
  o.spines = 1;
  o.fabric_gbps = 2;  // the leaf-spine links are the bottleneck
  o.ecn_k_kb = 4;
  o.trees = 2;
  o.scale = 0.005;
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  CHECK(r.summary["fabric"]["ce_marked"].get<uint64_t>() > 0);
  const auto& workers = r.summary["jobs"][0]["workers"];
  REQUIRE(workers.size() == 4);
  for (const auto& w : workers) {
    INFO("rank " << w["rank"]);
    for (size_t t = 0; t < w["trees"].size(); ++t) {
      INFO("tree " << t);
      CHECK(w["trees"][t]["results_ce"].get<uint64_t>() > 0);
      CHECK(w["trees"][t]["cwnd_reductions"].get<uint64_t>() > 0);
      // All workers of a tree see the same result stream: identical CE counts.
      CHECK(w["trees"][t]["results_ce"] == workers[0]["trees"][t]["results_ce"]);
      CHECK(w["trees"][t]["cwnd_reductions"] == workers[0]["trees"][t]["cwnd_reductions"]);
    }
  }
}

TEST_CASE("windows stay within cwnd_cap and no engine slot overflows", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim cwnd_cap"));
  o.packet_memory = 8;  // a leaf holds 2 entries (2 trees): share 4; a spine holds 1: share 8
  o.trees = 2;
  o.fabric_gbps = 40;  // no congestion: windows grow until the cap stops them
  o.scale = 0.005;
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  const uint32_t cap = 8 / 2;
  for (const auto& w : r.summary["jobs"][0]["workers"]) {
    for (const auto& t : w["trees"]) {
      INFO("rank " << w["rank"] << " tree " << t["tree"]);
      CHECK(t["min_cwnd_cap"].get<uint32_t>() == cap);
      CHECK(t["max_in_flight"].get<uint32_t>() == cap);  // reached, never exceeded
      CHECK(t["max_window"].get<uint32_t>() <= cap);
      CHECK(t["retransmissions"].get<uint64_t>() == 0);
    }
  }
  for (const auto& p : r.summary["pswitches"]) {
    INFO(p["name"]);
    CHECK(p["drop_seq_window"].get<uint64_t>() == 0);
    CHECK(p["drops"].get<uint64_t>() == 0);
  }
}

TEST_CASE("a flow on an idle network finishes in its ideal time", "[network]") {
  Options o = small_fabric(1);
  o.jobs = 0;
  o.host_gbps = 10;
  o.fabric_gbps = 40;
  o.link_delay_us = 2;
  // Flows one at a time: another rack, same rack, then larger.
  o.flows = {{0, 2, 10000, 0}, {1, 0, 5000, 200}, {3, 1, 14480, 400}};
  const RunResult r = panama::netsim::run_simulation(o);
  REQUIRE(r.flows.size() == 3);
  for (const auto& f : r.flows) {
    const bool same_rack = f.src / 2 == f.dst / 2;
    // Expected from first principles: SYN and SYN-ACK (62 bytes on the wire
    // each: IPv4 20 + TCP with options 40 + PPP 2) over every link and back,
    // then the first segment (payload + 54 bytes of headers) crossing every
    // link, then the rest at the host rate (the slowest link).
    const std::vector<double> gbps =
        same_rack ? std::vector<double>{10, 10} : std::vector<double>{10, 40, 40, 10};
    const uint64_t segs = (f.bytes + 1447) / 1448;
    const double first = static_cast<double>(std::min<uint64_t>(f.bytes, 1448) + 54);
    double ns = 0;
    for (double g : gbps) ns += 2 * (2000 + 62 * 8 / g) + 2000 + first * 8 / g;
    ns += (static_cast<double>(f.bytes + 54 * segs) - first) * 8 / 10;
    // Tolerance: the pure ACK that precedes the first data segment on the
    // sender's link (54 bytes), once per link.
    const double tol = static_cast<double>(gbps.size()) * 54 * 8 / 10;
    INFO("flow " << f.id << " bytes " << f.bytes << " fct " << f.fct_us * 1e3 << " ns, expected " << ns);
    CHECK(std::fabs(f.fct_us * 1e3 - ns) <= tol);
    CHECK(std::fabs(f.ideal_us * 1e3 - ns) <= tol);
  }
}

TEST_CASE("jumbo frames: background segments of --background-mtu, in their ideal time", "[network]") {
  Options o = small_fabric(1);
  o.jobs = 0;
  o.host_gbps = 10;
  o.fabric_gbps = 40;
  o.link_delay_us = 2;
  o.mtu = 9000;
  o.background_mtu = 9000;
  o.flows = {{0, 2, 50000, 0}, {1, 3, 8948, 300}, {3, 0, 100000, 600}};
  const RunResult r = panama::netsim::run_simulation(o);
  REQUIRE(r.flows.size() == 3);
  for (const auto& f : r.flows) {
    // As for the 1500-byte MTU above, with segments of 9000 - 52 bytes.
    const std::vector<double> gbps = {10, 40, 40, 10};
    const uint64_t segs = (f.bytes + 8947) / 8948;
    const double first = static_cast<double>(std::min<uint64_t>(f.bytes, 8948) + 54);
    double ns = 0;
    for (double g : gbps) ns += 2 * (2000 + 62 * 8 / g) + 2000 + first * 8 / g;
    ns += (static_cast<double>(f.bytes + 54 * segs) - first) * 8 / 10;
    const double tol = static_cast<double>(gbps.size()) * 54 * 8 / 10;
    INFO("flow " << f.id << " bytes " << f.bytes << " fct " << f.fct_us * 1e3 << " ns, expected " << ns);
    CHECK(std::fabs(f.fct_us * 1e3 - ns) <= tol);
    CHECK(std::fabs(f.ideal_us * 1e3 - ns) <= tol);
  }
}

TEST_CASE("jumbo frames: PANAMA packets of 2048 elements and the ring's 8948-byte segments, exact",
          "[network]") {
  for (const char* dtype : {"fp32", "bf16"}) {
    Options o = small_fabric(panama::test::test_seed("netsim jumbo"));
    o.racks = 2;
    o.hosts_per_rack = 4;
    o.jobs = 2;
    o.workers_per_job = 4;
    o.models = {"resnet50", "vgg16"};
    o.mtu = 9000;
    o.elems_per_packet = 2048;
    o.dtype = dtype;
    INFO(dtype);
    const RunResult r = panama::netsim::run_simulation(o);
    require_all_exact(o, r);
    // Each root emits one result per chunk of 2048 elements and iteration.
    uint64_t chunks = 0, emitted = 0;
    for (const auto& job : r.summary["jobs"]) chunks += chunks_of(o, job) * o.iterations;
    for (const auto& p : r.summary["pswitches"]) emitted += p["emitted"].get<uint64_t>();
    CHECK(emitted >= chunks);
    CHECK(r.summary["options"]["mtu"].get<uint32_t>() == 9000);
  }
  // The ring: a job's link to a host of the other rack carries its bytes
  // in segments of 9000 - 52 bytes, each with 54 bytes of headers.
  Options o = small_fabric(1);
  o.racks = 2;
  o.hosts_per_rack = 1;
  o.spines = 1;
  o.workers_per_job = 2;
  o.scheme = Scheme::kRing;
  o.ring_order = "flat";
  for (uint32_t mtu : {1500u, 9000u}) {
    o.mtu = mtu;
    const RunResult r = panama::netsim::run_simulation(o);
    REQUIRE(r.summary["finished"].get<bool>());
    const uint64_t sent = r.summary["jobs"][0]["workers"][0]["ring_bytes_sent"].get<uint64_t>();
    // leaf0 -> spine0 carries rank 0's data and its ACKs of rank 1's data;
    // the data alone: sent + 54 per segment (segments are full but the last
    // of each send).
    const uint64_t on_link = link_bytes(r, "leaf0", "spine0");
    const double mss = mtu - 52.0;
    const double data_min = static_cast<double>(sent) * (1 + 54 / mss);
    INFO("MTU " << mtu << ": " << sent << " bytes sent, " << on_link << " on leaf0 -> spine0");
    CHECK(static_cast<double>(on_link) >= data_min);
    // ACKs (54 bytes, one per segment with DelAckCount 1) and the
    // handshake add at most 2 x 60 bytes per segment of the peer.
    CHECK(static_cast<double>(on_link) <= data_min + 2 * 60 * (static_cast<double>(sent) / mss + 64));
  }
}

TEST_CASE("ring channels: the stream striped over several connections arrives whole", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim ring channels"));
  o.racks = 2;
  o.hosts_per_rack = 4;
  o.jobs = 2;
  o.workers_per_job = 4;
  o.models = {"resnet50", "vgg16"};
  o.scheme = Scheme::kRing;
  o.ring_segment_kb = 4;  // stripes of 4 KiB: every bucket spans several
  o.load = 0.3;
  o.duration_ms = 0;
  for (uint32_t channels : {1u, 3u, 4u}) {
    o.ring_channels = channels;
    INFO(channels << " channels");
    const RunResult r = panama::netsim::run_simulation(o);
    REQUIRE(r.summary["finished"].get<bool>());
    CHECK(r.summary["options"]["ring_channels"].get<uint32_t>() == channels);
    for (const auto& job : r.summary["jobs"]) {
      CHECK(job["iterations_done"].get<uint32_t>() == o.iterations);
      const uint64_t n = job["workers"].size();
      const uint64_t chunk = (job["gradient_bytes"].get<uint64_t>() + n - 1) / n;
      for (const auto& w : job["workers"]) {
        // What each worker sends and receives is the ring's, whatever the striping.
        CHECK(w["ring_bytes_sent"].get<uint64_t>() == o.iterations * 2 * (n - 1) * chunk);
        CHECK(w["ring_bytes_received"].get<uint64_t>() == o.iterations * 2 * (n - 1) * chunk);
      }
    }
  }
}

TEST_CASE("flow-level ECMP keeps a flow on one spine and spreads flows over all", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim ecmp"));
  o.racks = 2;
  o.hosts_per_rack = 4;
  o.spines = 4;
  o.jobs = 0;
  o.flows = {{0, 4, 200000, 0}};
  {
    const RunResult r = panama::netsim::run_simulation(o);
    int used = 0;
    for (int s = 0; s < 4; ++s) used += link_bytes(r, "leaf0", "spine" + std::to_string(s)) > 0 ? 1 : 0;
    CHECK(used == 1);  // every packet of the flow took the same spine
  }
  o.flows.clear();
  for (uint32_t i = 0; i < 64; ++i) o.flows.push_back({i % 4, 4 + (i / 4) % 4, 20000, 5.0 * i});
  const RunResult r = panama::netsim::run_simulation(o);
  uint64_t total = 0, most = 0;
  for (int s = 0; s < 4; ++s) {
    const uint64_t b = link_bytes(r, "leaf0", "spine" + std::to_string(s));
    INFO("spine" << s << ": " << b << " bytes");
    CHECK(b > 0);
    total += b;
    most = std::max(most, b);
  }
  // 64 equal flows over 4 spines: a hash that spreads puts well under half on one.
  CHECK(most < total / 2);
}

TEST_CASE("a run is deterministic for a seed", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim determinism"));
  o.racks = 3;
  o.jobs = 2;
  o.workers_per_job = 3;
  o.load = 0.3;
  o.scale = 0.002;
  auto strip = [](nlohmann::json j) {
    j.erase("performance");
    return j;
  };
  const RunResult a = panama::netsim::run_simulation(o);
  const RunResult b = panama::netsim::run_simulation(o);
  REQUIRE(a.summary["background"]["flows_started"].get<uint64_t>() > 0);
  CHECK(strip(a.summary) == strip(b.summary));
  o.scheme = Scheme::kRing;
  const RunResult c = panama::netsim::run_simulation(o);
  const RunResult d = panama::netsim::run_simulation(o);
  CHECK(strip(c.summary) == strip(d.summary));
  // The ring moved exactly 2(N-1) chunks of ceil(bytes / N) per iteration, each way.
  REQUIRE(c.summary["finished"].get<bool>());
  for (const auto& job : c.summary["jobs"]) {
    const uint64_t n = o.workers_per_job;
    const uint64_t chunk = (job["gradient_bytes"].get<uint64_t>() + n - 1) / n;
    CHECK(job["iterations_done"].get<uint32_t>() == o.iterations);
    for (const auto& w : job["workers"]) {
      CHECK(w["ring_bytes_sent"].get<uint64_t>() == o.iterations * 2 * (n - 1) * chunk);
      CHECK(w["ring_bytes_received"].get<uint64_t>() == o.iterations * 2 * (n - 1) * chunk);
    }
  }
  o.seed += 1;
  const RunResult e = panama::netsim::run_simulation(o);
  CHECK(strip(e.summary) != strip(d.summary));
}

namespace {
std::string parse_error(std::vector<const char*> args) {
  args.insert(args.begin(), "panama-netsim");
  Options o;
  int code = 0;
  try {
    panama::netsim::parse_command_line(static_cast<int>(args.size()), args.data(), o, code);
  } catch (const OptionError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("bad options and input files are rejected with a clear message", "[network]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(parse_error({"--load", "1.5"}), Contains("--load"));
  CHECK_THAT(parse_error({"--scheme", "tree"}), Contains("unknown scheme 'tree'"));
  CHECK_THAT(parse_error({"--jobs", "5", "--workers-per-job", "4"}), Contains("do not fit on 16 hosts"));
  CHECK_THAT(parse_error({"--models", "resnet50,alexnet"}), Contains("unknown model 'alexnet'"));
  CHECK_THAT(parse_error({"--flow", "3:3:100"}), Contains("same host"));
  CHECK_THAT(parse_error({"--flow", "3:99:100"}), Contains("host index"));
  CHECK_THAT(parse_error({"--flow", "garbage"}), Contains("expected <src host>"));
  CHECK_THAT(parse_error({"--ecn-k-kb", "2000"}), Contains("below the buffer"));
  CHECK_THAT(parse_error({"--elems-per-packet", "400"}),
             Contains("1..362 (a fp32 PANAMA packet fits the 1500-byte MTU"));
  CHECK(parse_error({"--elems-per-packet", "725", "--dtype", "bf16"}).empty());
  CHECK_THAT(parse_error({"--elems-per-packet", "726", "--dtype", "bf16"}), Contains("1..725"));
  CHECK(parse_error({"--mtu", "9000", "--elems-per-packet", "2237"}).empty());
  CHECK_THAT(parse_error({"--mtu", "9000", "--elems-per-packet", "2238"}), Contains("1..2237"));
  CHECK_THAT(parse_error({"--mtu", "9000", "--elems-per-packet", "4000", "--dtype", "fp16"}),
             Contains("1..2304 (a fp16 PANAMA packet fits the 9000-byte MTU and an engine slot of 2304"));
  CHECK_THAT(parse_error({"--mtu", "1400"}), Contains("--mtu: 1500..9000"));
  CHECK_THAT(parse_error({"--mtu", "9001"}), Contains("--mtu: 1500..9000"));
  CHECK_THAT(parse_error({"--background-mtu", "9000"}), Contains("--background-mtu: 1500..--mtu"));
  CHECK_THAT(parse_error({"--mtu", "9000", "--buffer-kb", "8", "--ecn-k-kb", "4"}),
             Contains("--buffer-kb: at least one full-size packet (10 KB)"));
  CHECK_THAT(parse_error({"--scheme", "ring", "--ring-channels", "0"}), Contains("--ring-channels: 1..16"));
  CHECK_THAT(parse_error({"--scheme", "ring", "--ring-channels", "17"}), Contains("--ring-channels: 1..16"));
  CHECK_THAT(parse_error({"--gpus-per-host", "0"}), Contains("--gpus-per-host: 1..64"));
  CHECK_THAT(parse_error({"--gpus-per-host", "65"}), Contains("--gpus-per-host: 1..64"));
  CHECK_THAT(parse_error({"--intra-host-gbps", "0"}), Contains("--intra-host-gbps"));
  CHECK_THAT(parse_error({"--workers-per-job", "1"}), Contains("at least 2"));
  CHECK(parse_error({"--racks", "2", "--load", "0.5", "--scheme", "ring"}).empty());
  CHECK_THAT(parse_error({"--topology", "fat-tree", "--k", "5"}),
             Contains("--k: the fat-tree arity must be even"));
  CHECK_THAT(parse_error({"--topology", "fat-tree", "--k", "64"}), Contains("--k: 2..62"));
  CHECK_THAT(parse_error({"--topology", "torus"}), Contains("unknown topology 'torus'"));
  CHECK_THAT(parse_error({"--topology", "fat-tree", "--racks", "4"}),
             Contains("--racks: not an option of --topology fat-tree"));
  CHECK_THAT(parse_error({"--k", "4"}), Contains("--k: only with --topology fat-tree"));
  CHECK_THAT(parse_error({"--tree-shape", "ring"}), Contains("--tree-shape: spine or chain, not 'ring'"));
  CHECK_THAT(parse_error({"--topology", "fat-tree", "--k", "4", "--jobs", "5"}),
             Contains("do not fit on 16 hosts"));
  CHECK(
      parse_error({"--topology", "fat-tree", "--k", "8", "--jobs", "4", "--workers-per-job", "32"}).empty());
  CHECK_THAT(parse_error({"--pfc-xoff-kb", "50"}), Contains("--pfc-xoff-kb: only with --lossless"));
  CHECK_THAT(parse_error({"--lossless", "--pfc-xoff-kb", "50", "--pfc-xon-kb", "50"}),
             Contains("below --pfc-xoff-kb"));
  CHECK_THAT(parse_error({"--lossless", "--pfc-xoff-kb", "1"}),
             Contains("at least one full-size packet (2 KB)"));

  const std::string dir = panama::test::temp_dir("netsim-cdf");
  const std::string path = dir + "/bad.txt";
  {
    std::ofstream f(path);
    f << "# size prob\n100 0.2\n50 0.5\n200 1\n";
  }
  CHECK_THROWS_WITH(panama::netsim::load_size_cdf(path), Contains("bad.txt:3") && Contains("must increase"));
  CHECK_THROWS_WITH(panama::netsim::load_size_cdf(dir + "/none.txt"), Contains("cannot open"));
  const panama::netsim::SizeCdf web = panama::netsim::load_size_cdf(panama::netsim::default_cdf_path());
  // Mean of the bundled web-search CDF, linear between its points, by hand:
  // sum of (p_i - p_i-1) x (b_i + b_i-1) / 2 over its 11 segments.
  CHECK(web.mean() ==
        Approx(750 + 750 + 2500 + 4000 + 8450 + 9800 + 60000 + 150000 + 350000 + 525000 + 600000));
  CHECK(web.sample(0.15) == Approx(10000));
  CHECK(web.sample(0.465) == Approx(50000 + 0.5 * 30000));
  CHECK(web.sample(0.999999) == Approx(30e6).epsilon(1e-4));
}

// ------------------------------------------------------------ measured workloads

namespace {

// A workload file in the measurements' format: one model, forward 0.2 ms,
// backward 1.0 ms, three gradients ready at 0.1, 0.5 and 0.9 ms.
std::string toy_workload(const std::string& dir) {
  const std::string path = dir + "/toy.json";
  std::ofstream f(path);
  f << R"({"info": {"gpu": "hand-written"}, "results": [
    {"model": "toy", "precision": "bf16", "fwd_ms": 0.2, "bwd_ms": 1.0, "grad_bytes_fp32": 2000000,
     "grad_ready_ms_bytes": [[0.1, 1200000], [0.5, 400000], [0.9, 400000]]}]})";
  return path;
}

Options toy_options(const std::string& workload, uint64_t seed) {
  Options o = small_fabric(seed);
  o.workload = workload;
  o.models = {"toy"};
  o.scale = 1;
  o.bucket_mib = 0.3;  // first bucket 1 MiB: gradient 0 alone; then 0.3 MiB: gradients 1 and 2 each
  o.iterations = 3;
  return o;
}

// The iteration structure of every worker's bucket log, for any scheme:
// readiness from the hand-computed offsets, each bucket started when it is
// ready and the one before it is done, the next forward after backward and
// the last bucket.
void check_timeline(const RunResult& r, const Options& o, const std::vector<uint64_t>& ready_offsets_ns,
                    const std::vector<uint64_t>& elems, uint64_t fwd_ns, uint64_t bwd_ns) {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<BucketRecord>> by_worker;
  for (const BucketRecord& b : r.buckets) by_worker[{b.job, b.rank}].push_back(b);
  REQUIRE(by_worker.size() == o.jobs * o.workers_per_job);
  const size_t nb = ready_offsets_ns.size();
  for (const auto& [who, log] : by_worker) {
    INFO("job " << who.first << " rank " << who.second);
    REQUIRE(log.size() == o.iterations * nb);
    for (size_t i = 0; i < log.size(); ++i) {
      const BucketRecord& b = log[i];
      INFO("iteration " << b.iteration << " bucket " << b.bucket);
      CHECK(b.iteration == i / nb);
      CHECK(b.bucket == i % nb);
      CHECK(b.elems == elems[b.bucket]);
      CHECK(b.ready_ns - b.backward_ns == ready_offsets_ns[b.bucket]);
      CHECK(b.end_ns > b.start_ns);
      if (b.bucket == 0) {
        CHECK(b.start_ns == b.ready_ns);
        if (i > 0) {
          const BucketRecord& last = log[i - 1];
          CHECK(b.backward_ns == std::max(last.end_ns, last.backward_ns + bwd_ns) + fwd_ns);
        }
      } else {
        CHECK(b.start_ns == std::max(b.ready_ns, log[i - 1].end_ns));
        CHECK(b.backward_ns == log[i - 1].backward_ns);
      }
    }
  }
}

}  // namespace

TEST_CASE("DDP buckets of a measured workload, by hand", "[network]") {
  panama::netsim::Workload w;
  w.model = "hand";
  w.bwd_ms = 5;
  const double mib = 1024.0 * 1024;
  w.ready = {{1.0, 0.5 * mib}, {2.0, 0.75 * mib}, {3.0, 10 * mib}, {4.0, 20 * mib}, {5.0, 5 * mib}};
  w.grad_bytes = 36.25 * mib;
  const uint64_t elems = static_cast<uint64_t>(w.grad_bytes / 4);  // 9502720
  // First bucket up to 1 MiB: closes at gradient 1 (1.25 MiB); then 25 MiB:
  // gradients 2 and 3 (30 MiB); the rest.
  auto b = panama::netsim::make_buckets(w, elems, 1.0, mib, 25 * mib);
  REQUIRE(b.size() == 3);
  CHECK(b[0].ready_ns == 2000000);
  CHECK(b[1].ready_ns == 4000000);
  CHECK(b[2].ready_ns == 5000000);
  CHECK(b[0].elem_begin == 0);
  CHECK(b[0].elems == 327680);  // 1.25 MiB / 4
  CHECK(b[1].elem_begin == 327680);
  CHECK(b[1].elems == 7864320);  // 30 MiB / 4
  CHECK(b[2].elem_begin == 8192000);
  CHECK(b[2].elems == 1310720);  // 5 MiB / 4
  // Scaled by 1/1000: times and caps shrink with the bytes, the same buckets.
  auto s = panama::netsim::make_buckets(w, elems / 1000, 0.001, mib, 25 * mib);
  REQUIRE(s.size() == 3);
  CHECK(s[0].ready_ns == 2000);
  CHECK(s[2].ready_ns == 5000);
  CHECK(s[0].elems + s[1].elems + s[2].elems == elems / 1000);
  // Cap 0: one bucket at the end of backward.
  auto one = panama::netsim::make_buckets(w, elems, 1.0, mib, 0);
  REQUIRE(one.size() == 1);
  CHECK(one[0].ready_ns == 5000000);
  CHECK(one[0].elems == elems);
  // The bundled measurements load; every entry's gradients sum to its bytes.
  const auto h100 = panama::netsim::load_workloads("h100");
  CHECK(h100.rows.size() == 14);
  const auto& bert = panama::netsim::find_workload(h100, "bert-large", "bf16");
  CHECK(bert.bwd_ms > 80);
  CHECK(bert.ready.size() == 394);
  const auto buckets =
      panama::netsim::make_buckets(bert, static_cast<uint64_t>(bert.grad_bytes / 4), 1.0, mib, 25 * mib);
  CHECK(buckets.size() == 38);  // 1.34 GB in 25 MiB buckets (some larger: one tensor is 125 MB)
  CHECK(buckets.back().ready_ns <= static_cast<uint64_t>(bert.bwd_ms * 1e6) + 1);
}

TEST_CASE("a measured workload: buckets overlap backward, exact, on the hand-computed timeline",
          "[network]") {
  const std::string dir = panama::test::temp_dir("netsim-workload");
  Options o = toy_options(toy_workload(dir), panama::test::test_seed("netsim buckets"));
  // 2,000,000 fp32 bytes = 500,000 elements: gradient 0 is 300,000 of them, 1 and 2 100,000 each.
  const std::vector<uint64_t> ready = {100000, 500000, 900000};
  const std::vector<uint64_t> elems = {300000, 100000, 100000};
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  check_timeline(r, o, ready, elems, 200000, 1000000);
  CHECK(r.summary["jobs"][0]["buckets"] == 3);
  CHECK(r.summary["jobs"][0]["compute_ms"].get<double>() == Approx(1.2));

  // The same without overlap (one bucket after backward): every iteration
  // is longer, by about the time the first buckets' allreduces hid.
  Options no = o;
  no.bucket_mib = 0;
  const RunResult n = panama::netsim::run_simulation(no);
  require_all_exact(no, n);
  check_timeline(n, no, {1000000}, {500000}, 200000, 1000000);
  const double with = r.summary["jobs"][0]["iteration_mean_ms"].get<double>();
  const double without = n.summary["jobs"][0]["iteration_mean_ms"].get<double>();
  INFO("iteration with buckets " << with << " ms, without " << without << " ms");
  CHECK(with < without);
  CHECK(with > 1.2);  // forward + backward at least

  // The ring: the same buckets, in order, each a ring of its own.
  Options ring = o;
  ring.scheme = Scheme::kRing;
  const RunResult g = panama::netsim::run_simulation(ring);
  REQUIRE(g.summary["finished"].get<bool>());
  check_timeline(g, ring, ready, elems, 200000, 1000000);
  const uint64_t nw = ring.workers_per_job;
  uint64_t per_iteration = 0;
  for (uint64_t e : elems) per_iteration += 2 * (nw - 1) * ((e * 4 + nw - 1) / nw);
  for (const auto& w : g.summary["jobs"][0]["workers"]) {
    CHECK(w["ring_bytes_sent"].get<uint64_t>() == ring.iterations * per_iteration);
    CHECK(w["ring_bytes_received"].get<uint64_t>() == ring.iterations * per_iteration);
  }
}

TEST_CASE("measured workloads: bf16 jobs on the H100 timeline, exact; bad workload files are refused",
          "[network]") {
  using Catch::Matchers::Contains;
  Options o = small_fabric(panama::test::test_seed("netsim h100"));
  o.workload = "h100";
  o.models = {"vgg16"};
  o.dtype = "bf16";
  o.scale = 0.0005;
  o.iterations = 2;
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  CHECK(r.summary["jobs"][0]["buckets"].get<uint32_t>() >= 2);
  CHECK(r.summary["options"]["precision"] == "bf16");

  const std::string dir = panama::test::temp_dir("netsim-badworkload");
  auto refused = [&](const std::string& body) {
    const std::string path = dir + "/w.json";
    std::ofstream(path) << body;
    Options b = small_fabric(1);
    b.workload = path;
    b.models = {"m"};
    try {
      panama::netsim::validate(b);
    } catch (const OptionError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(refused("{"), Contains("not JSON"));
  CHECK_THAT(refused(R"({"results": [{"model": "m", "precision": "bf16", "fwd_ms": 1, "bwd_ms": 2,
      "grad_bytes_fp32": 8, "grad_ready_ms_bytes": [[1, 4], [0.5, 4]]}]})"),
             Contains("times must not decrease"));
  CHECK_THAT(refused(R"({"results": [{"model": "m", "precision": "bf16", "fwd_ms": 1, "bwd_ms": 2,
      "grad_bytes_fp32": 12, "grad_ready_ms_bytes": [[1, 4], [1.5, 4]]}]})"),
             Contains("sum to 8 bytes, grad_bytes_fp32 says 12"));
  CHECK_THAT(refused(R"({"results": [{"model": "m", "precision": "bf16", "bwd_ms": 2,
      "grad_bytes_fp32": 8, "grad_ready_ms_bytes": [[1, 8]]}]})"),
             Contains("results[0].fwd_ms: missing"));
  CHECK_THAT(refused(R"({"results": [{"model": "m", "precision": "fp32", "fwd_ms": 1, "bwd_ms": 2,
      "grad_bytes_fp32": 8, "grad_ready_ms_bytes": [[1, 8]]}]})"),
             Contains("unknown model 'm' in bf16"));
  CHECK_THAT(parse_error({"--workload", "/nonexistent.json"}), Contains("--workload: cannot open"));
  CHECK_THAT(parse_error({"--bucket-mib", "10"}), Contains("--bucket-mib: only with a measured workload"));
  CHECK_THAT(parse_error({"--workload", "h100", "--precision", "fp16"}),
             Contains("--precision: fp32 or bf16"));
  CHECK(parse_error({"--workload", "h100", "--models", "gpt2-xl,llama-1b,vit_b_16"}).empty());
}

// ------------------------------------------------------------ placement and the ring

namespace {

// Each job's workers' host indices, in rank order, from the summary.
std::vector<std::vector<uint32_t>> hosts_of_jobs(const RunResult& r) {
  std::vector<std::vector<uint32_t>> out;
  for (const auto& job : r.summary["jobs"]) {
    out.emplace_back();
    for (const auto& w : job["workers"])
      out.back().push_back(std::stoul(w["host"].get<std::string>().substr(1)));
  }
  return out;
}

}  // namespace

TEST_CASE("placement: spread, packed and random put the workers where they say; trees follow", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim placement"));
  o.racks = 2;
  o.hosts_per_rack = 4;  // hosts 0-3 in rack 0, 4-7 in rack 1
  o.jobs = 2;
  o.workers_per_job = 4;
  o.iterations = 1;
  o.placement = "spread";
  const RunResult spread = panama::netsim::run_simulation(o);
  require_all_exact(o, spread);
  CHECK(hosts_of_jobs(spread) == std::vector<std::vector<uint32_t>>{{0, 4, 1, 5}, {2, 6, 3, 7}});
  o.placement = "packed";
  const RunResult packed = panama::netsim::run_simulation(o);
  require_all_exact(o, packed);
  CHECK(hosts_of_jobs(packed) == std::vector<std::vector<uint32_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}});
  // A packed job lives in one rack: its leaf is its only engine and nothing crosses the spines.
  CHECK(packed.summary["fabric"]["leaf_spine_bytes"].get<uint64_t>() == 0);
  CHECK(spread.summary["fabric"]["leaf_spine_bytes"].get<uint64_t>() > 0);
  o.placement = "random";
  const RunResult a = panama::netsim::run_simulation(o);
  require_all_exact(o, a);
  std::vector<uint32_t> all;
  for (const auto& j : hosts_of_jobs(a)) all.insert(all.end(), j.begin(), j.end());
  std::sort(all.begin(), all.end());
  CHECK(all == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(hosts_of_jobs(panama::netsim::run_simulation(o)) == hosts_of_jobs(a));  // the seed decides
  bool differs = false;
  for (uint64_t k = 1; k <= 4 && !differs; ++k) {
    Options b = o;
    b.seed = o.seed + k;
    differs = hosts_of_jobs(panama::netsim::run_simulation(b)) != hosts_of_jobs(a);
  }
  CHECK(differs);
}

TEST_CASE("the rack-aware ring crosses the fabric once per rack; each ring transport runs", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim rack ring"));
  o.racks = 2;
  o.hosts_per_rack = 4;
  o.jobs = 1;
  o.workers_per_job = 4;  // spread: ranks in racks 0, 1, 0, 1
  o.iterations = 2;
  o.scheme = Scheme::kRing;
  const RunResult flat = panama::netsim::run_simulation(o);
  o.ring_order = "rack";
  const RunResult rack = panama::netsim::run_simulation(o);
  for (const RunResult* r : {&flat, &rack}) {
    REQUIRE(r->summary["finished"].get<bool>());
    const auto& job = r->summary["jobs"][0];
    const uint64_t n = o.workers_per_job;
    const uint64_t chunk = (job["gradient_bytes"].get<uint64_t>() + n - 1) / n;
    for (const auto& w : job["workers"])
      CHECK(w["ring_bytes_sent"].get<uint64_t>() == o.iterations * 2 * (n - 1) * chunk);
  }
  // The flat ring's 4 hops all cross the spines, the rack-aware ring's 2
  // (0 -> 2 -> 1 -> 3 -> 0 in ranks: racks 0, 0, 1, 1): half the bytes there.
  const double f = flat.summary["fabric"]["leaf_spine_bytes"].get<double>();
  const double k = rack.summary["fabric"]["leaf_spine_bytes"].get<double>();
  INFO("leaf-spine bytes: flat " << f << ", rack-aware " << k);
  CHECK(k / f == Approx(0.5).margin(0.03));

  // Every transport of the ring finishes with its bytes; without ECN the
  // ring's packets are not ECN-capable, so a congested queue marks none.
  o.workers_per_job = 8;
  o.jobs = 1;
  o.ring_order = "flat";
  o.ecn_k_kb = 8;
  o.fabric_gbps = 2.5;  // the spines are the bottleneck
  for (const char* cc : {"dctcp", "cubic", "newreno"}) {
    for (bool ecn : {true, false}) {
      if (std::string(cc) == "dctcp" && !ecn) continue;
      Options t = o;
      t.ring_tcp = cc;
      t.ring_ecn = ecn;
      INFO("ring over " << cc << (ecn ? " with ECN" : " without ECN"));
      const RunResult r = panama::netsim::run_simulation(t);
      REQUIRE(r.summary["finished"].get<bool>());
      CHECK(r.summary["jobs"][0]["iterations_done"].get<uint32_t>() == t.iterations);
      if (ecn) {
        CHECK(r.summary["fabric"]["ce_marked"].get<uint64_t>() > 0);
      } else {
        CHECK(r.summary["fabric"]["ce_marked"].get<uint64_t>() == 0);
      }
    }
  }
  CHECK_THAT(parse_error({"--scheme", "ring", "--ring-tcp", "cubic", "--ring-ecn", "off"}),
             Catch::Matchers::Equals(""));
  CHECK_THAT(parse_error({"--scheme", "ring", "--ring-ecn", "off"}),
             Catch::Matchers::Contains("DCTCP needs ECN"));
  CHECK_THAT(parse_error({"--ring-order", "rack"}), Catch::Matchers::Contains("only with --scheme ring"));
  CHECK_THAT(parse_error({"--placement", "clustered"}),
             Catch::Matchers::Contains("spread, packed or random"));
}

// ------------------------------------------------------------ TCP that cannot stall

TEST_CASE("DCTCP keeps at least two segments of threshold, as Linux does", "[network]") {
  // ns-3's TcpDctcp returns cwnd x (1 - alpha/2) with alpha starting at 1:
  // half a segment from a one-segment window (the stall's first half).
  auto tcb = ns3::CreateObject<ns3::TcpSocketState>();
  tcb->m_segmentSize = 1448;
  tcb->m_cWnd = 1448;
  auto upstream = ns3::CreateObject<ns3::TcpDctcp>();
  CHECK(upstream->GetSsThresh(tcb, 1448) == 724);
  auto bounded = ns3::CreateObject<panama::netsim::TcpDctcpLinux>();
  CHECK(bounded->GetSsThresh(tcb, 1448) == 2 * 1448);
  tcb->m_cWnd = 100 * 1448;
  CHECK(bounded->GetSsThresh(tcb, 100 * 1448) == upstream->GetSsThresh(tcb, 100 * 1448));  // 50 segments
  CHECK(bounded->Fork()->GetName() == "TcpDctcpLinux");
}

TEST_CASE("ring allreduces beside background traffic finish: no TCP connection stalls for good", "[stall]") {
  // The reproducer: 32 hosts (4 racks of 8, 2 spines, 2.5 Gbit/s, 4 us
  // links), 4 ring jobs of 8 workers, 30% web-search background. With ns-3's
  // DCTCP (seed 2: a window of half a segment after a timeout and a CE
  // mark) and PRR (seed 3: a window of 38 bytes at the end of a
  // CE-triggered reduction) one ring connection stopped sending with its
  // data in the socket and nothing in flight, and the run idled to the hard
  // stop with a job unfinished. Every iteration of every job must finish.
  for (uint64_t seed : {2, 3}) {
    Options o;
    o.racks = 4;
    o.hosts_per_rack = 8;
    o.spines = 2;
    o.host_gbps = 2.5;
    o.fabric_gbps = 2.5;
    o.link_delay_us = 4;
    o.jobs = 4;
    o.workers_per_job = 8;
    o.scheme = Scheme::kRing;
    o.load = 0.3;
    o.scale = 0.005;
    o.iterations = 3;
    o.max_time_ms = 1000;  // the runs take 280 and 500 ms of simulated time
    o.seed = seed;
    INFO("seed " << seed);
    const RunResult r = panama::netsim::run_simulation(o);
    CHECK(r.summary["finished"].get<bool>());
    for (const auto& job : r.summary["jobs"]) CHECK(job["iterations_done"].get<uint32_t>() == o.iterations);
  }
}

TEST_CASE("--min-short-flows keeps the jobs iterating until enough short flows started", "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim short flows"));
  o.iterations = 1;
  o.load = 0.3;
  const RunResult base = panama::netsim::run_simulation(o);
  require_all_exact(o, base);
  const uint64_t few = base.summary["background"]["short_flows_started"].get<uint64_t>();
  o.min_short_flows = static_cast<uint32_t>(few + 40);
  const RunResult more = panama::netsim::run_simulation(o);
  REQUIRE(more.summary["finished"].get<bool>());
  const auto& bg = more.summary["background"];
  INFO("short flows started: " << few << " without the option, " << bg["short_flows_started"] << " with "
                               << o.min_short_flows);
  CHECK(bg["short_flows_started"].get<uint64_t>() >= o.min_short_flows);
  CHECK(bg["fct_slowdown"]["small_lt_100KB"]["count"].get<uint64_t>() >= o.min_short_flows);
  for (const auto& job : more.summary["jobs"]) {
    CHECK(job["iterations_done"].get<uint32_t>() > 1);
    CHECK(job["mismatches"].get<uint64_t>() == 0);
  }
  CHECK_THAT(parse_error({"--min-short-flows", "100"}), Catch::Matchers::Contains("needs background flows"));
}

TEST_CASE("the hierarchical baseline: rings in the racks, shards across them; its bytes by hand",
          "[network]") {
  Options o = small_fabric(panama::test::test_seed("netsim hierarchical"));
  o.racks = 2;
  o.hosts_per_rack = 4;
  o.jobs = 1;
  o.workers_per_job = 8;  // c = 4 in each of k = 2 racks
  o.iterations = 2;
  o.scheme = Scheme::kHierarchical;
  const RunResult h = panama::netsim::run_simulation(o);
  REQUIRE(h.summary["finished"].get<bool>());
  const auto& job = h.summary["jobs"][0];
  CHECK(job["iterations_done"].get<uint32_t>() == o.iterations);
  const uint64_t bytes = job["gradient_bytes"].get<uint64_t>(), c = 4, k = 2;
  const uint64_t shard = (bytes + c - 1) / c;
  // Reduce-scatter and all-gather in the rack, the shard's allreduce across.
  const uint64_t per_iteration = 2 * (c - 1) * shard + 2 * (k - 1) * ((shard + k - 1) / k);
  for (const auto& w : job["workers"]) {
    CHECK(w["ring_bytes_sent"].get<uint64_t>() == o.iterations * per_iteration);
    CHECK(w["ring_bytes_received"].get<uint64_t>() == o.iterations * per_iteration);
  }
  CHECK(job["bit_exact"].is_null());
  // Only the shards cross the spines: 8 x 2(k-1) x B/8 = 2B per iteration,
  // against 2 crossings x 2(n-1) x B/8 = 3.5B for the rack-aware ring.
  Options r = o;
  r.scheme = Scheme::kRing;
  r.ring_order = "rack";
  const RunResult ring = panama::netsim::run_simulation(r);
  REQUIRE(ring.summary["finished"].get<bool>());
  const double hb = h.summary["fabric"]["leaf_spine_bytes"].get<double>();
  const double rb = ring.summary["fabric"]["leaf_spine_bytes"].get<double>();
  INFO("leaf-spine bytes: hierarchical " << hb << ", rack-aware ring " << rb);
  CHECK(hb / rb == Approx(2.0 / 3.5).margin(0.03));

  // Unequal racks are refused with the reason.
  Options u = o;
  u.workers_per_job = 3;  // spread: 2 in rack 0, 1 in rack 1
  try {
    panama::netsim::run_simulation(u);
    FAIL("a job with 2 and 1 workers per rack was run hierarchically");
  } catch (const OptionError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains("as many in every rack"));
  }
}

TEST_CASE("a job mix from a file: models and worker counts per job, all exact", "[network]") {
  using Catch::Matchers::Contains;
  const std::string dir = panama::test::temp_dir("netsim-jobs");
  const std::string path = dir + "/mix.json";
  std::ofstream(path)
      << R"({"jobs": [{"model": "resnet50", "workers": 2, "count": 2}, {"model": "vgg16", "workers": 4}]})";
  const std::string seed = std::to_string(panama::test::test_seed("netsim jobs file"));
  std::vector<const char*> args = {
      "panama-netsim", "--racks", "2",     "--hosts-per-rack", "4", "--jobs-file",
      path.c_str(),    "--scale", "0.001", "--iterations",     "2", "--seed",
      seed.c_str()};
  Options o;
  int code = 0;
  REQUIRE(panama::netsim::parse_command_line(static_cast<int>(args.size()), args.data(), o, code));
  CHECK(o.jobs == 3);
  const RunResult r = panama::netsim::run_simulation(o);
  require_all_exact(o, r);
  std::vector<std::string> models;
  std::vector<uint64_t> workers;
  for (const auto& job : r.summary["jobs"]) {
    models.push_back(job["model"]);
    workers.push_back(job["workers"].size());
  }
  CHECK(models == std::vector<std::string>{"resnet50", "resnet50", "vgg16"});
  CHECK(workers == std::vector<uint64_t>{2, 2, 4});

  auto refused = [&](const std::string& body) {
    std::ofstream(path) << body;
    return parse_error({"--racks", "2", "--hosts-per-rack", "4", "--jobs-file", path.c_str()});
  };
  CHECK_THAT(refused(R"({"jobs": [{"model": "resnet50", "workers": 1}]})"),
             Contains("jobs[0].workers: 2..128"));
  CHECK_THAT(refused(R"({"jobs": [{"model": "resnet50", "workers": 4, "count": 3}]})"),
             Contains("12 workers do not fit on 8 hosts"));
  CHECK_THAT(refused(R"({"jobs": [{"model": "resnet50", "workers": 2, "gpus": 8}]})"),
             Contains("unknown key 'gpus'"));
  CHECK_THAT(refused(R"({"jobs": [{"model": "alexnet", "workers": 2}]})"),
             Contains("unknown model 'alexnet'"));
  CHECK_THAT(parse_error({"--jobs-file", path.c_str(), "--jobs", "2"}),
             Contains("--jobs: not with --jobs-file"));
}

TEST_CASE("priorities: the more GPU-intensive job's packets carry the higher DSCP and are served first",
          "[network]") {
  // Two jobs across both racks of a fabric with one spine (4:1): VGG-16
  // (290 ms per 553 MB) and ResNet-50 (190 ms per 102 MB, 3.6x as
  // intensive). With two levels ResNet-50 is level 0 (DSCP 16), VGG-16
  // level 1 (DSCP 8), and every queue serves level 0's PANAMA packets first.
  Options o = small_fabric(panama::test::test_seed("netsim priorities"));
  o.racks = 2;
  o.hosts_per_rack = 4;
  o.spines = 1;
  o.fabric_gbps = 10;
  o.jobs = 2;
  o.models = {"vgg16", "resnet50"};
  o.scale = 0.001;
  o.iterations = 3;
  const RunResult off = panama::netsim::run_simulation(o);
  require_all_exact(o, off);
  o.priorities = 2;
  const RunResult on = panama::netsim::run_simulation(o);
  require_all_exact(o, on);
  CHECK(off.summary["jobs"][0]["dscp"] == 0);
  CHECK(off.summary["jobs"][1]["dscp"] == 0);
  CHECK(on.summary["jobs"][0]["dscp"] == 8);   // vgg16, level 1
  CHECK(on.summary["jobs"][1]["dscp"] == 16);  // resnet50, level 0
  const double before = off.summary["jobs"][1]["iteration_mean_ms"].get<double>();
  const double after = on.summary["jobs"][1]["iteration_mean_ms"].get<double>();
  INFO("resnet50 iteration: " << before << " ms without priorities, " << after << " ms with");
  CHECK(after < before);
  CHECK_THAT(parse_error({"--scheme", "ring", "--priorities", "2"}),
             Catch::Matchers::Contains("PANAMA schemes only"));
}

TEST_CASE("pooled mode: two jobs share a pool that fits one group, in the network and on the ring, exact",
          "[network][pool]") {
  // Two racks of two hosts under one spine; each job has a worker in both
  // racks and one tree rooted at the spine. Every PSwitch's pool holds 8
  // slots, one group of G = 8 (each job's claim cap: its half of the pool
  // times 2), so while one job's group holds the pool the other's claims
  // are denied and those groups go round the job's ring: ring frames
  // routed between the hosts of both racks as ordinary traffic.
  Options o = small_fabric(panama::test::test_seed("netsim pool"));
  o.racks = 2;
  o.hosts_per_rack = 2;
  o.spines = 1;
  o.jobs = 2;
  o.workers_per_job = 2;
  o.trees = 1;
  o.pool_slots = 8;
  o.pool_group = 8;
  o.pool_overcommit = 2;
  auto check_pool_free = [&](const RunResult& r) {
    for (const auto& p : r.summary["pswitches"]) {
      INFO("PSwitch " << p["name"]);
      REQUIRE(p.contains("pool"));
      CHECK(p["pool"]["free_slots"].get<uint32_t>() == 8);
      CHECK(p["pool"]["holding_groups"].get<uint32_t>() == 0);
      CHECK(p["pool"]["slots_high_water"].get<uint32_t>() == 8);
      CHECK(p["pool"]["commit_failures"].get<uint64_t>() == 0);
    }
  };
  SECTION("groups finish both ways; the root emits each job's network groups") {
    const RunResult r = panama::netsim::run_simulation(o);
    require_all_exact(o, r);
    check_pool_free(r);
    std::map<uint64_t, uint64_t> in_network;  // job -> groups
    for (const auto& job : r.summary["jobs"]) {
      INFO("job " << job["id"]);
      REQUIRE(job.contains("pool"));
      const auto& p = job["pool"];
      const uint64_t groups_per_iteration = (chunks_of(o, job) + 7) / 8;
      CHECK(p["groups"].get<uint64_t>() == groups_per_iteration * o.iterations);
      CHECK(p["in_network"].get<uint64_t>() + p["on_ring"].get<uint64_t>() == p["groups"].get<uint64_t>());
      CHECK(p["in_network"].get<uint64_t>() > 0);
      CHECK(p["on_ring"].get<uint64_t>() > 0);
      CHECK(p["workers_agree"].get<bool>());
      CHECK(p["ring_bytes_sent"].get<uint64_t>() > 0);
      in_network[job["id"].get<uint64_t>()] = p["in_network"].get<uint64_t>();
      for (const auto& w : job["workers"]) {
        REQUIRE(w.contains("pool"));
        CHECK(w["pool"]["ring_malformed"].get<uint64_t>() == 0);
        CHECK(w["pool"]["ring_frames_received"].get<uint64_t>() > 0);
      }
    }
    // The root's claim entries emit a result per sequence of a group summed
    // in the network: at most G per group (an allreduce's last group may be
    // shorter), and more than G per group less one group per iteration.
    const auto& spine = pswitch(r, "spine0");
    REQUIRE(spine["pool"]["trees"].size() == 2);
    for (const auto& t : spine["pool"]["trees"]) {
      INFO("job " << t["job"]);
      const uint64_t n = in_network.at(t["job"].get<uint64_t>());
      CHECK(t["emissions"].get<uint64_t>() <= n * 8);
      CHECK(t["emissions"].get<uint64_t>() + o.iterations * 8 > n * 8);
      CHECK(t["answers_down"].get<uint64_t>() > 0);
    }
  }
  SECTION("leases shorter than a round trip expire: the granted groups go to the ring, exact") {
    o.pool_lease_us = 3;
    const RunResult r = panama::netsim::run_simulation(o);
    require_all_exact(o, r);
    check_pool_free(r);
    for (const auto& job : r.summary["jobs"]) {
      INFO("job " << job["id"]);
      CHECK(job["pool"]["expired"].get<uint64_t>() > 0);
      CHECK(job["pool"]["on_ring"].get<uint64_t>() == job["pool"]["groups"].get<uint64_t>());
    }
    CHECK(pswitch(r, "spine0")["pool"]["expired"].get<uint64_t>() > 0);
  }
  SECTION("beside background traffic that fills small buffers: exact, the pools free at the end") {
    // Claims, releases, chunks and ring frames may be dropped at the
    // congested ports: retransmissions repair them.
    o.racks = 4;
    o.hosts_per_rack = 2;
    o.spines = 2;
    o.workers_per_job = 4;
    o.load = 0.5;
    o.buffer_kb = 48;
    o.ecn_k_kb = 24;
    o.fabric_gbps = 5;
    const RunResult r = panama::netsim::run_simulation(o);
    require_all_exact(o, r);
    check_pool_free(r);
    INFO("drops " << r.summary["fabric"]["drops"]);
    for (const auto& job : r.summary["jobs"]) CHECK(job["pool"]["workers_agree"].get<bool>());
  }
  SECTION("bf16 and fp16 jobs under one leaf: the ring's owner rounds as the root does, exact") {
    o.racks = 1;
    o.hosts_per_rack = 4;
    for (const char* dt : {"bf16", "fp16"}) {
      INFO(dt);
      o.dtype = dt;
      const RunResult r = panama::netsim::run_simulation(o);
      require_all_exact(o, r);
      check_pool_free(r);
      for (const auto& job : r.summary["jobs"]) {
        CHECK(job["pool"]["in_network"].get<uint64_t>() > 0);
        CHECK(job["pool"]["on_ring"].get<uint64_t>() > 0);
      }
    }
  }
  SECTION("a pooled job beside a fixed-share one: only the pooled job claims") {
    o.pooled_jobs = {2};
    o.pool_slots = 16;
    o.pool_group = 4;
    o.pool_overcommit = 1;
    const RunResult r = panama::netsim::run_simulation(o);
    require_all_exact(o, r);
    CHECK_FALSE(r.summary["jobs"][0].contains("pool"));
    REQUIRE(r.summary["jobs"][1].contains("pool"));
    CHECK(r.summary["jobs"][1]["pool"]["in_network"].get<uint64_t>() > 0);
    for (const auto& t : pswitch(r, "spine0")["pool"]["trees"]) CHECK(t["job"] == 2);
  }
}

TEST_CASE("pooled mode: bad options are rejected with a clear message", "[network][pool]") {
  using Catch::Matchers::Contains;
  CHECK(parse_error({"--pool", "8", "--group", "4"}).empty());
  CHECK_THAT(parse_error({"--group", "4"}), Contains("--group applies only with --pool"));
  CHECK_THAT(parse_error({"--pooled-jobs", "1"}), Contains("--pooled-jobs applies only with --pool"));
  CHECK_THAT(parse_error({"--lease-us", "100"}), Contains("--lease-us applies only with --pool"));
  CHECK_THAT(parse_error({"--overcommit", "2"}), Contains("--overcommit applies only with --pool"));
  CHECK_THAT(parse_error({"--ring-cc"}), Contains("--ring-cc applies only with --pool"));
  CHECK_THAT(parse_error({"--pool", "8", "--scheme", "ring"}), Contains("--pool: PANAMA schemes only"));
  CHECK_THAT(parse_error({"--pool", "8", "--tree-shape", "chain"}), Contains("--pool: spine trees only"));
  CHECK_THAT(parse_error({"--pool", "8", "--dtype", "bf16"}),
             Contains("--pool: a 16-bit job needs one rack"));
  CHECK(parse_error({"--pool", "8", "--dtype", "bf16", "--racks", "1", "--hosts-per-rack", "8"}).empty());
  CHECK_THAT(parse_error({"--pool", "600"}), Contains("--pool: 1..512 slots"));
  CHECK_THAT(parse_error({"--pool", "64", "--packet-memory", "32"}),
             Contains("64 slots do not fit --packet-memory 32"));
  CHECK_THAT(parse_error({"--pool", "8", "--pooled-jobs", "3"}),
             Contains("--pooled-jobs: job 3 is not one of"));
  CHECK_THAT(parse_error({"--pool", "8", "--overcommit", "0.5"}), Contains("--overcommit: at least 1"));
  // What the controller refuses (a group over the claim cap) is an option error too.
  Options o = small_fabric(1);
  o.trees = 2;
  o.pool_slots = 8;
  o.pool_group = 8;
  CHECK_THROWS_WITH(panama::netsim::run_simulation(o),
                    Contains("--pool: the controller refuses the plan") && Contains("larger than what fits"));
}
