// Two tiers in one process: the controller's deployment on the in-memory
// fabric (panama/fabric/fabric.hpp: one SwitchCore around the HLS engine per
// PSwitch, one AllreduceCore per worker), frames delivered in FIFO order on a
// virtual clock, losses chosen by a seeded rule. It checks that a result lost
// on its way to one worker is always recovered (the worker retransmits, its
// leaf re-emits its stored partial, the spine re-emits the result to that
// leaf only, the leaf replicates it), and that 8 workers under 10% loss on
// every hop finish every allreduce bit-exact. Chain trees (CINA's shape):
// partial sums from leaf to leaf through spines that only pass them on,
// results back down the chain, exact without and with loss, and beside a
// spine-rooted job whose bindings the chain's hops cross.
//
// Seed: PANAMA_TEST_SEED (printed).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "panama/controller/controller.hpp"
#include "panama/engine.hpp"
#include "panama/fabric/deployment.hpp"
#include "panama/fabric/fabric.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "support/frames.hpp"

using namespace panama;
using nlohmann::json;

namespace {

using Frame = std::vector<uint8_t>;
using FabricEngine = Engine<8, 64, 16>;  // 8 entries, 64 slots of 256 elements

controller::Deployment deployment(const json& cluster, uint32_t workers_n, uint32_t trees,
                                  uint32_t rto_min_us) {
  json ws = json::array();
  for (uint32_t i = 0; i < workers_n; ++i) ws.push_back("w" + std::to_string(i));
  json c = cluster;
  c["packet_memory"] = 64;
  const json jobs = {{"jobs", json::array({{{"id", 3}, {"workers", ws}, {"trees", trees}}})},
                     {"elems_per_packet", 32},
                     {"congestion", {{"rto_min_us", rto_min_us}, {"rto_initial_us", rto_min_us}}}};
  return controller::plan_deployment(controller::parse_cluster(c), controller::parse_jobs(jobs));
}

// Frames cross links at once and in order; a step moves time on by 10 us, or
// to the next retransmission timer when nothing can be sent.
fabric::Options fifo_links() {
  fabric::Options o;
  o.make_engine = [] { return std::make_unique<ModelBackend<FabricEngine>>(); };
  o.link_delay_ns = 0;
  o.min_step_ns = 10000;
  o.poll_budget = 64;
  return o;
}

struct TwoTiers {
  fabric::Fabric net;
  // Decides whether a frame from `from` to `to` is lost.
  std::function<bool(const std::string& from, const std::string& to, const Frame&)> lose =
      [](auto&, auto&, auto&) { return false; };

  TwoTiers(const json& cluster, uint32_t workers_n, uint32_t trees, uint32_t rto_min_us)
      : TwoTiers(deployment(cluster, workers_n, trees, rto_min_us)) {}
  explicit TwoTiers(const controller::Deployment& d) : net(fabric::topology_of(d), fifo_links()) {
    net.on_arrival = [this](fabric::Endpoint from, fabric::Endpoint to, Frame& f) {
      return !lose(net.name(from), net.name(to), f);
    };
  }

  runtime::AllreduceCore& worker(const std::string& host) {
    return net.worker(static_cast<size_t>(net.worker_index(host)));
  }
  EngineBackend& engine(const std::string& sw) {
    return net.engine(static_cast<size_t>(net.switch_index(sw)));
  }
  const pswitch::TreeSwitchCounters& tree_counters(const std::string& sw, uint32_t tree_index) {
    return net.core(static_cast<size_t>(net.switch_index(sw))).tree_counters(tree_index);
  }
};

float value(uint32_t rank, uint32_t op, size_t i) {
  return static_cast<float>(static_cast<int>((rank * 37 + op * 11 + i * 5) % 301) - 150);
}

// Runs `ops` allreduces of `elems` on every worker (of every job); returns
// mismatching elements.
size_t run_ops(TwoTiers& f, uint32_t ops, size_t elems, uint64_t max_steps) {
  const uint32_t world = static_cast<uint32_t>(f.net.worker_count());
  std::vector<std::vector<std::vector<float>>> bufs(world);
  std::vector<std::vector<runtime::OpId>> ids(world);
  for (uint32_t k = 0; k < world; ++k) {
    runtime::AllreduceCore& w = f.net.worker(k);
    for (uint32_t op = 0; op < ops; ++op) {
      std::vector<float> b(elems);
      for (size_t i = 0; i < elems; ++i) b[i] = value(w.plan().rank, op, i);
      bufs[k].push_back(std::move(b));
    }
    for (uint32_t op = 0; op < ops; ++op) ids[k].push_back(w.start(bufs[k][op].data(), elems, f.net.now()));
  }
  auto pending = [&] {
    size_t n = 0;
    for (uint32_t k = 0; k < world; ++k) n += f.net.worker(k).failed() ? 0 : f.net.worker(k).pending_ops();
    return n;
  };
  for (uint64_t s = 0; s < max_steps && pending() > 0; ++s) f.net.step();
  size_t wrong = 0;
  for (uint32_t k = 0; k < world; ++k) {
    runtime::AllreduceCore& w = f.net.worker(k);
    INFO("worker " << f.net.host(k) << ": " << w.failure());
    REQUIRE_FALSE(w.failed());
    for (uint32_t op = 0; op < ops; ++op) {
      REQUIRE(w.status(ids[k][op]) == runtime::OpStatus::kDone);
      for (size_t i = 0; i < elems; ++i) {
        float sum = 0;  // over the ranks of the worker's job
        for (uint32_t r = 0; r < w.plan().world_size; ++r) sum += value(r, op, i);
        wrong += bufs[k][op][i] != sum;
      }
    }
  }
  return wrong;
}

// Seed 12 by default: it once gave a schedule (on this test's earlier
// harness) that failed before the retry budget waited for the tree's
// silence: one worker used up its retransmissions while its chunk waited for
// another worker's late contribution, then lost the result's re-sent copies
// too.
uint64_t seed_from_env() {
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return 12;
}

// Every frame on every hop, either way, is lost with probability p; `dropped` counts them.
void lose_at_random(TwoTiers& f, std::mt19937_64& rng, double p, uint64_t& dropped) {
  f.lose = [&rng, &dropped, drop = std::bernoulli_distribution(p)](const std::string&, const std::string&,
                                                                   const Frame&) mutable {
    const bool d = drop(rng);
    dropped += d;
    return d;
  };
}

}  // namespace

TEST_CASE("two tiers: a result lost to one worker only is recovered through its leaf and the spine") {
  TwoTiers f(controller::two_tier_cluster(4, 2, 1, 10.0), 4, 1, 1000);
  // w0 sits under leaf0 with w2; the spine's result of sequence 3 reaches
  // leaf0, which replicates it; the copy to w0 is lost (once).
  bool lost = false;
  f.lose = [&](const std::string& from, const std::string& to, const Frame& fr) {
    if (!lost && from == "leaf0" && to == "w0" &&
        fr[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown) &&
        wire::load_be32(fr.data() + wire::kPanamaSeq) == 3) {
      lost = true;
      return true;
    }
    return false;
  };
  CHECK(run_ops(f, 1, 32 * 20, 100000) == 0);
  REQUIRE(lost);
  // w0 retransmitted; leaf0 re-emitted its stored partial up; the spine sent
  // the stored result back to leaf0 only, and leaf0 to both its workers.
  CHECK(f.worker("w0").stats().retransmissions >= 1);
  CHECK(f.engine("leaf0").entry_counter(0, regmap::kEcRetransServed) >= 1);
  CHECK(f.tree_counters("spine0", 0).results_resent >= 1);
  CHECK(f.worker("w2").stats().duplicate_results >= 1);  // w2 got the re-sent copy too
  CHECK(f.worker("w1").stats().duplicate_results == 0);  // leaf1's workers did not
}

TEST_CASE("two tiers, 8 workers, 10% loss on every hop in both directions: every allreduce exact") {
  const uint64_t seed = seed_from_env();
  std::cout << "test_cluster_two_tier: 10% loss, seed " << seed << " (PANAMA_TEST_SEED to reproduce)\n";
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (int run = 0; run < 6; ++run) {
    INFO("run " << run);
    TwoTiers f(controller::two_tier_cluster(8, 2, 2, 10.0), 8, 2, 1000);
    uint64_t dropped = 0;
    lose_at_random(f, rng, 0.1, dropped);
    CHECK(run_ops(f, 3, 32 * 200 + 7, 400000) == 0);
    CHECK(dropped > 0);
  }
}

namespace {

// Chain trees: `jobs` on the 4-leaf, 2-spine fabric of 8 hosts (wi under
// leaf i mod 4), less the hosts without a worker (the fabric runs a worker
// on every host port).
controller::Deployment chain_deployment(const json& jobs) {
  const json full = controller::two_tier_cluster(8, 4, 2, 10.0);
  std::set<std::string> used;
  for (const json& j : jobs) {
    for (const json& w : j["workers"]) used.insert(w.get<std::string>());
  }
  json c = full;
  c["hosts"] = json::array();
  c["links"] = json::array();
  for (const json& h : full["hosts"]) {
    if (used.count(h.get<std::string>())) c["hosts"].push_back(h);
  }
  for (const json& l : full["links"]) {
    const std::string a = l["a"].get<std::string>();
    if (a[0] != 'w' || used.count(a)) c["links"].push_back(l);
  }
  c["packet_memory"] = 64;
  json j = {{"jobs", jobs},
            {"elems_per_packet", 32},
            {"congestion", {{"rto_min_us", 1000}, {"rto_initial_us", 1000}}}};
  return controller::plan_deployment(controller::parse_cluster(c), controller::parse_jobs(j));
}

}  // namespace

TEST_CASE("chain trees: leaf to leaf through spines that only pass them on, every allreduce exact") {
  // Three racks (leaf0: w0 w4, leaf1: w1 w5, leaf3: w3), three trees:
  // leaf0 -spine0-> leaf1 -spine1-> leaf3, leaf1 -spine1-> leaf3 -spine0->
  // leaf0, leaf3 -spine0-> leaf0 -spine1-> leaf1 (docs/controller.md).
  const json jobs = json::array(
      {{{"id", 3}, {"workers", {"w1", "w3", "w5", "w0", "w4"}}, {"trees", 3}, {"shape", "chain"}}});
  TwoTiers f(chain_deployment(jobs));
  // What arrives where: frames into a spine are addressed to a leaf (the
  // next one up, or a result to the previous one); results reach the
  // workers addressed to the tree's group.
  uint64_t to_spines = 0, not_to_a_leaf = 0, results_to_workers = 0, not_to_group = 0;
  f.net.on_arrival = [&](fabric::Endpoint, fabric::Endpoint to, Frame& fr) {
    const uint32_t dst = wire::load_be32(fr.data() + wire::kIpDst);
    if (!to.is_worker() && f.net.name(to).rfind("spine", 0) == 0) {
      ++to_spines;
      not_to_a_leaf += (dst >> 8) != ((10u << 16) | (2u << 8)) || (dst & 0xFF) < 1 || (dst & 0xFF) > 4;
    }
    if (to.is_worker() && fr[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown)) {
      ++results_to_workers;
      not_to_group += dst != ((239u << 24) | (3u << 8) | fr[wire::kPanamaTreeId]);
    }
    return true;
  };
  const uint32_t ops = 2;
  const uint64_t chunks = 20;  // 640 elements of 32 per packet
  CHECK(run_ops(f, ops, 32 * chunks, 100000) == 0);
  for (size_t k = 0; k < f.net.worker_count(); ++k) {
    INFO(f.net.host(k));
    CHECK(f.net.worker(k).stats().retransmissions == 0);
    CHECK(f.net.worker(k).stats().duplicate_results == 0);  // nothing flooded, nothing twice
  }
  // Each spine carries three hops (one of every tree), each hop one
  // aggregate up and one result down per chunk of its tree: 2 x every chunk.
  for (const char* spine : {"spine0", "spine1"}) {
    INFO(spine);
    const auto& sc = f.net.core(static_cast<size_t>(f.net.switch_index(spine)));
    CHECK(sc.counters().transit == 2 * chunks * ops);
    CHECK(sc.counters().binding_drops == 0);
    CHECK(sc.counters().hairpin_drops == 0);
  }
  CHECK(to_spines == 4 * chunks * ops);
  CHECK(not_to_a_leaf == 0);
  CHECK(results_to_workers == 5 * chunks * ops);
  CHECK(not_to_group == 0);
  // Tree t's root emits a result per chunk k with k mod 3 = t (7, 7, 6 of 20).
  const std::vector<std::pair<const char*, uint32_t>> roots = {{"leaf3", 0}, {"leaf0", 1}, {"leaf1", 2}};
  for (const auto& [leaf, t] : roots) {
    INFO(leaf);
    CHECK(f.tree_counters(leaf, t).results_emitted == (chunks + 2 - t) / 3 * ops);
  }
}

TEST_CASE("chain trees beside a spine-rooted job: the hops cross the spines' bound ports, both exact") {
  // Job 1 (spine trees, roots spine0 and spine1) binds every leaf port of
  // both spines; job 2's chain passes through them by its hops.
  const json jobs =
      json::array({{{"id", 1}, {"workers", {"w0", "w1", "w2", "w3"}}, {"trees", 2}},
                   {{"id", 2}, {"workers", {"w4", "w5", "w6", "w7"}}, {"trees", 2}, {"shape", "chain"}}});
  TwoTiers f(chain_deployment(jobs));
  CHECK(run_ops(f, 2, 32 * 30, 100000) == 0);
  for (const char* spine : {"spine0", "spine1"}) {
    INFO(spine);
    const auto& sc = f.net.core(static_cast<size_t>(f.net.switch_index(spine)));
    CHECK(sc.counters().transit > 0);
    CHECK(sc.counters().binding_drops == 0);
  }
}

TEST_CASE("chain trees, 10% loss on every hop in both directions: every allreduce exact") {
  const uint64_t seed = seed_from_env();
  std::cout << "test_cluster_two_tier: chain, 10% loss, seed " << seed
            << " (PANAMA_TEST_SEED to reproduce)\n";
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const json jobs = json::array({{{"id", 3},
                                  {"workers", {"w0", "w1", "w2", "w3", "w4", "w5", "w6"}},
                                  {"trees", 2},
                                  {"shape", "chain"}}});
  for (int run = 0; run < 4; ++run) {
    INFO("run " << run);
    TwoTiers f(chain_deployment(jobs));
    uint64_t dropped = 0;
    lose_at_random(f, rng, 0.1, dropped);
    CHECK(run_ops(f, 3, 32 * 100 + 7, 400000) == 0);
    CHECK(dropped > 0);
  }
}
