// Pooled jobs in the controller (docs/controller.md, "Pooled jobs"): the
// pool sections of the PSwitches, the pooled trees' template entries, the
// fixed shares kept out of the pool, claim caps weighted as shares are, the
// plans' `pooled` object, and the errors. Expected values are worked out by
// hand from the rules.
#include <catch2/catch.hpp>

#include "controller/plan_lookup.hpp"
#include "panama/controller/controller.hpp"
#include "panama/controller/fat_tree.hpp"
#include "panama/pswitch/settings.hpp"

using namespace panama;
using namespace panama::controller;
using namespace panama::controller::test;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json workers(uint32_t first, uint32_t n) {
  json ws = json::array();
  for (uint32_t i = first; i < first + n; ++i) ws.push_back("w" + std::to_string(i));
  return ws;
}

const pswitch::PooledTree* pooled(const SwitchOutput& s, uint16_t job, uint8_t tree) {
  return s.settings.pool ? s.settings.pool->find(job, tree) : nullptr;
}

// Job 1 pooled (w0..w3, one tree), job 2 with fixed shares (w4..w7, two
// trees), one PSwitch, a pool of 128 slots.
json pooled_next_to_fixed() {
  return {{"pool", {{"slots", 128}, {"lease_us", 5000}}},
          {"jobs",
           {{{"id", 1}, {"workers", workers(0, 4)}, {"memory", "pooled"}},
            {{"id", 2}, {"workers", workers(4, 4)}, {"trees", 2}}}}};
}

}  // namespace

TEST_CASE("pool: a pooled job next to a fixed-share one on one PSwitch") {
  const Deployment d = run(single_switch_cluster(8, 10.0), pooled_next_to_fixed());
  const SwitchOutput& s0 = sw(d, "s0");
  // Entries in planning order: job 1 tree 0 (the pooled template), job 2 trees 0 and 1.
  REQUIRE(s0.node.entries.size() == 3);
  const config::EntryConfig& tmpl = s0.node.entries[0];
  CHECK(tmpl.index == 0);
  CHECK(tmpl.job == 1);
  CHECK(tmpl.tree == 0);
  CHECK(tmpl.root);
  CHECK(tmpl.fan_in == 4);
  CHECK(tmpl.children == std::vector<uint8_t>{0, 1, 2, 3});
  CHECK(tmpl.slot_base == 0);  // a pool slot of its own; never committed
  CHECK(tmpl.slot_count == 1);
  CHECK(tmpl.ip_dst == ((239u << 24) | (1u << 8)));  // results to the group, as a share's
  // The fixed shares divide what the pool leaves: (512 - 128) / 2 = 192 from slot 128.
  for (uint32_t t = 0; t < 2; ++t) {
    const config::EntryConfig& e = s0.node.entries[1 + t];
    CHECK(e.index == 1 + t);
    CHECK(e.job == 2);
    CHECK(e.tree == t);
    CHECK(e.slot_base == 128 + 192 * t);
    CHECK(e.slot_count == 192);
  }
  REQUIRE(s0.settings.pool);
  const pswitch::PoolSettings& p = *s0.settings.pool;
  CHECK(p.base == 0);
  CHECK(p.size == 128);
  CHECK(p.lease_ns == 5000000);
  // Claim entries after the switch's 3 entries: 128 slots / G 8 = 16 groups at once.
  CHECK(p.table_base == 3);
  CHECK(p.table_count == 16);
  CHECK(p.claim_job == 0xFFFF);
  REQUIRE(p.trees.size() == 1);
  CHECK(p.trees[0].job == 1);
  CHECK(p.trees[0].tree == 0);
  CHECK(p.trees[0].group_size == 8);   // default: min(8, the cap)
  CHECK(p.trees[0].claim_cap == 128);  // the only pooled tree: the whole pool
  CHECK_FALSE(pooled(s0, 2, 0));
  // The written section reads back as it was planned, and fits its entries.
  const pswitch::PswitchSettings back = pswitch::settings_from_json(s0.node.pswitch);
  REQUIRE(back.pool);
  CHECK(back.pool->size == 128);
  CHECK(back.pool->table_base == 3);
  CHECK(back.pool->trees.size() == 1);
  pswitch::check_trees_against_entries(back, s0.node.entries);

  // Plans: job 1's workers are pooled; all under one PSwitch, the ring is
  // in rank order.
  for (uint32_t r = 0; r < 4; ++r) {
    const runtime::Plan& plan = worker(d, "w" + std::to_string(r)).plan;
    REQUIRE(plan.pooled);
    CHECK(plan.pooled->group_size == 8);
    CHECK(plan.pooled->ring_position == std::optional<uint32_t>(r));
    const uint8_t next = static_cast<uint8_t>((r + 1) % 4), prev = static_cast<uint8_t>((r + 3) % 4);
    CHECK(plan.pooled->next_mac == config::MacAddress{0x02, 0, 0, 0x01, 0, next});
    CHECK(plan.pooled->next_ip == ((10u << 24) | (1u << 16) | (next + 1u)));
    CHECK(plan.pooled->prev_mac == config::MacAddress{0x02, 0, 0, 0x01, 0, prev});
    CHECK(plan.pooled->prev_ip == ((10u << 24) | (1u << 16) | (prev + 1u)));
    CHECK(plan.pooled->ring_port == 0);         // udp_port + 1
    CHECK_FALSE(plan.pooled->ring_congestion);  // not asked for in the pool description
    REQUIRE(plan.trees.size() == 1);
    CHECK(plan.trees[0].initial_cwnd_cap == 128);  // the claim cap
  }
  for (uint32_t r = 4; r < 8; ++r) {
    const runtime::Plan& plan = worker(d, "w" + std::to_string(r)).plan;
    CHECK_FALSE(plan.pooled);
    CHECK(plan.trees[0].initial_cwnd_cap == 192);
  }
}

TEST_CASE("pool: ring_congestion in the pool description reaches every pooled plan") {
  json jobs = pooled_next_to_fixed();
  jobs["pool"]["ring_congestion"] = true;
  const Deployment d = run(single_switch_cluster(8, 10.0), jobs);
  for (uint32_t r = 0; r < 4; ++r) {
    const runtime::Plan& plan = worker(d, "w" + std::to_string(r)).plan;
    REQUIRE(plan.pooled);
    CHECK(plan.pooled->ring_congestion);
  }
  for (uint32_t r = 4; r < 8; ++r) CHECK_FALSE(worker(d, "w" + std::to_string(r)).plan.pooled);
  jobs["pool"]["ring_congestion"] = "yes";
  CHECK_THROWS_WITH(run(single_switch_cluster(8, 10.0), jobs), Catch::Contains("pool.ring_congestion"));
}

TEST_CASE("pool: claim caps weighted as shares are, overcommitted, at most the pool") {
  // Two pooled jobs of weights 1 and 3 share a pool of 64 slots, overcommit 2:
  // caps 2 * 64 * 1/4 = 32 and min(64, 2 * 64 * 3/4 = 96) = 64.
  json jobs = {{"shares", "weighted"},
               {"pool", {{"slots", 64}, {"overcommit", 2}}},
               {"jobs",
                {{{"id", 1}, {"workers", workers(0, 2)}, {"memory", "pooled"}, {"weight", 1}},
                 {{"id", 2}, {"workers", workers(2, 2)}, {"memory", "pooled"}, {"weight", 3}, {"group", 16}},
                 {{"id", 3}, {"workers", workers(4, 2)}, {"weight", 2}}}}};
  const Deployment d = run(single_switch_cluster(6, 10.0), jobs);
  const SwitchOutput& s0 = sw(d, "s0");
  REQUIRE(pooled(s0, 1, 0));
  REQUIRE(pooled(s0, 2, 0));
  CHECK(pooled(s0, 1, 0)->claim_cap == 32);
  CHECK(pooled(s0, 1, 0)->group_size == 8);
  CHECK(pooled(s0, 2, 0)->claim_cap == 64);
  CHECK(pooled(s0, 2, 0)->group_size == 16);
  // Templates on pool slots 0 and 1; job 3, the only fixed share, gets the
  // 448 slots the pool leaves (weights divide only the fixed shares).
  REQUIRE(s0.node.entries.size() == 3);
  CHECK(s0.node.entries[0].slot_base == 0);
  CHECK(s0.node.entries[1].slot_base == 1);
  CHECK(s0.node.entries[2].slot_base == 64);
  CHECK(s0.node.entries[2].slot_count == 448);
  // Claim entries: 64 slots / the least G (8) = 8.
  CHECK(s0.settings.pool->table_base == 3);
  CHECK(s0.settings.pool->table_count == 8);
  CHECK(worker(d, "w0").plan.trees[0].initial_cwnd_cap == 32);
  CHECK(worker(d, "w2").plan.trees[0].initial_cwnd_cap == 64);
  CHECK(worker(d, "w2").plan.pooled->group_size == 16);

  // Without overcommit the caps split the pool: 16 and 48; G 16 still fits.
  jobs["pool"].erase("overcommit");
  const Deployment d1 = run(single_switch_cluster(6, 10.0), jobs);
  CHECK(pooled(sw(d1, "s0"), 1, 0)->claim_cap == 16);
  CHECK(pooled(sw(d1, "s0"), 2, 0)->claim_cap == 48);
  // Equal shares: equal caps, 32 each.
  jobs["shares"] = "equal";
  const Deployment d2 = run(single_switch_cluster(6, 10.0), jobs);
  CHECK(pooled(sw(d2, "s0"), 1, 0)->claim_cap == 32);
  CHECK(pooled(sw(d2, "s0"), 2, 0)->claim_cap == 32);
}

TEST_CASE("pool: priorities weight the claim caps as they weight shares") {
  // Job 1 is the more GPU-intensive (10 ms per MB against 1): level 0, weight
  // 1 x 2; job 2 level 1, weight 1 x 1. Caps 60 * 2/3 = 40 and 60 * 1/3 = 20.
  const json jobs = {{"shares", "weighted"},
                     {"priorities", {{"levels", 2}, {"dscp", {46, 0}}}},
                     {"pool", {{"slots", 60}}},
                     {"jobs",
                      {{{"id", 1},
                        {"workers", workers(0, 2)},
                        {"memory", "pooled"},
                        {"compute_ms", 10},
                        {"gradient_bytes", 1e6}},
                       {{"id", 2},
                        {"workers", workers(2, 2)},
                        {"memory", "pooled"},
                        {"compute_ms", 1},
                        {"gradient_bytes", 1e6}}}}};
  const Deployment d = run(single_switch_cluster(4, 10.0), jobs);
  CHECK(pooled(sw(d, "s0"), 1, 0)->claim_cap == 40);
  CHECK(pooled(sw(d, "s0"), 2, 0)->claim_cap == 20);
  CHECK(worker(d, "w0").plan.dscp == 46);
  CHECK(worker(d, "w2").plan.trees[0].initial_cwnd_cap == 20);
}

TEST_CASE("pool: two tiers, a pool on every PSwitch of the pooled job's tree only") {
  // w0, w2 (job 1), w4, w6 (job 2) under leaf0; w1, w3, w5, w7 under leaf1.
  // Job 1 (pooled) is rooted at spine0, job 2 (fixed share) at spine1.
  const json jobs = {{"pool", {{"slots", 64}, {"table_entries", 4}}},
                     {"jobs",
                      {{{"id", 1}, {"workers", workers(0, 4)}, {"memory", "pooled"}, {"group", 4}},
                       {{"id", 2}, {"workers", workers(4, 4)}}}}};
  const Deployment d = run(two_tier_cluster(8, 2, 2, 10.0), jobs);
  REQUIRE(d.trees.size() == 2);
  CHECK(d.trees[0].root == "spine0");
  CHECK(d.trees[1].root == "spine1");
  for (const char* leaf : {"leaf0", "leaf1"}) {
    const SwitchOutput& l = sw(d, leaf);
    REQUIRE(pooled(l, 1, 0));
    CHECK(pooled(l, 1, 0)->group_size == 4);
    CHECK(pooled(l, 1, 0)->claim_cap == 64);
    CHECK(l.settings.pool->table_base == 2);
    CHECK(l.settings.pool->table_count == 4);
    REQUIRE(l.node.entries.size() == 2);
    CHECK_FALSE(l.node.entries[0].root);
    CHECK(l.node.entries[0].fan_in == 2);
    CHECK(l.node.entries[0].slot_base == 0);
    CHECK(l.node.entries[1].slot_base == 64);  // job 2's share, out of the pool
    CHECK(l.node.entries[1].slot_count == 448);
  }
  REQUIRE(pooled(sw(d, "spine0"), 1, 0));
  CHECK(sw(d, "spine0").node.entries[0].fan_in == 2);
  // spine1 serves only job 2: no pool, all its memory is the share.
  CHECK_FALSE(sw(d, "spine1").settings.pool);
  CHECK(sw(d, "spine1").node.entries[0].slot_base == 0);
  CHECK(sw(d, "spine1").node.entries[0].slot_count == 512);
  // Ring frames for job 1's workers under the other leaf go up to the root
  // (leaf0's ports: w0, w2, w4, w6, spine0, spine1), not flooded; job 2's
  // workers get no such route.
  auto route = [](const SwitchOutput& s, uint8_t host) -> int {
    for (const pswitch::MacRoute& r : s.settings.mac_table) {
      if (r.mac == config::MacAddress{0x02, 0, 0, 0x01, 0, host}) return static_cast<int>(r.port);
    }
    return -1;
  };
  CHECK(route(sw(d, "leaf0"), 0) == 0);
  CHECK(route(sw(d, "leaf0"), 1) == 4);
  CHECK(route(sw(d, "leaf0"), 3) == 4);
  CHECK(route(sw(d, "leaf0"), 5) == -1);
  CHECK(route(sw(d, "leaf1"), 2) == 4);   // leaf1: w1, w3, w5, w7, spine0, spine1
  CHECK(route(sw(d, "spine1"), 1) == 1);  // every host is below a spine anyway
  // The ring by leaf, by rank within a leaf: w0 -> w2 (leaf0) -> w1 -> w3 (leaf1) -> w0.
  CHECK(worker(d, "w0").plan.pooled->ring_position == std::optional<uint32_t>(0));
  CHECK(worker(d, "w2").plan.pooled->ring_position == std::optional<uint32_t>(1));
  CHECK(worker(d, "w1").plan.pooled->ring_position == std::optional<uint32_t>(2));
  CHECK(worker(d, "w3").plan.pooled->ring_position == std::optional<uint32_t>(3));
  CHECK(worker(d, "w1").plan.pooled->next_ip == ((10u << 24) | (1u << 16) | 4u));
  CHECK(worker(d, "w1").plan.pooled->prev_ip == ((10u << 24) | (1u << 16) | 3u));
  CHECK(worker(d, "w3").plan.pooled->next_ip == ((10u << 24) | (1u << 16) | 1u));
  CHECK(worker(d, "w0").plan.pooled->prev_mac == config::MacAddress{0x02, 0, 0, 0x01, 0, 3});
}

TEST_CASE("pool: the ring of a pooled job over two leaves goes by leaf, then by rank") {
  // w0, w2, .., w14 under leaf0; w1, w3, .., w15 under leaf1. Job 1's ranks
  // in a mixed order of hosts, so that rank order alternates between leaves.
  const std::vector<std::string> hosts = {"w3", "w0", "w6",  "w5",  "w2",  "w1",  "w4",  "w7",
                                          "w8", "w9", "w11", "w10", "w13", "w15", "w12", "w14"};
  const json jobs = {{"pool", {{"slots", 64}}},
                     {"jobs", {{{"id", 1}, {"workers", hosts}, {"memory", "pooled"}}}}};
  const Deployment d = run(two_tier_cluster(16, 2, 2, 10.0), jobs);
  const uint32_t n = static_cast<uint32_t>(hosts.size());
  auto host_of_ip = [](uint32_t ip) { return (ip & 0xFF) - 1; };  // 10.1.0.(i + 1) is w<i>
  auto index_of = [](const std::string& h) { return static_cast<uint32_t>(std::stoul(h.substr(1))); };
  std::vector<int> at(n, -1);  // ring position -> host index
  uint32_t crossings = 0;
  for (uint32_t r = 0; r < n; ++r) {
    INFO("rank " << r << " (" << hosts[r] << ")");
    const runtime::Plan& plan = worker(d, hosts[r]).plan;
    REQUIRE(plan.rank == r);
    REQUIRE(plan.pooled);
    REQUIRE(plan.pooled->ring_position);
    const uint32_t pos = *plan.pooled->ring_position;
    REQUIRE(pos < n);
    CHECK(at[pos] == -1);  // every position taken once: a permutation
    at[pos] = static_cast<int>(index_of(hosts[r]));
    // Leaf0's workers first (positions 0..7), then leaf1's.
    CHECK(pos / 8 == index_of(hosts[r]) % 2);
    const uint32_t next = host_of_ip(plan.pooled->next_ip), prev = host_of_ip(plan.pooled->prev_ip);
    CHECK(plan.pooled->next_mac == config::MacAddress{0x02, 0, 0, 0x01, 0, static_cast<uint8_t>(next)});
    CHECK(plan.pooled->prev_mac == config::MacAddress{0x02, 0, 0, 0x01, 0, static_cast<uint8_t>(prev)});
    if (next % 2 != index_of(hosts[r]) % 2) ++crossings;
  }
  CHECK(crossings == 2);  // the ring leaves each leaf once
  // Within a leaf by rank: leaf0 holds ranks 1 (w0), 2 (w6), 4 (w2), 6 (w4),
  // 8 (w8), 11 (w10), 14 (w12), 15 (w14); leaf1 ranks 0 (w3), 3 (w5), 5 (w1),
  // 7 (w7), 9 (w9), 10 (w11), 12 (w13), 13 (w15).
  CHECK(at == std::vector<int>{0, 6, 2, 4, 8, 10, 12, 14, 3, 5, 1, 7, 9, 11, 13, 15});
  // Each worker's next is the worker at the next position, its previous the one before.
  for (uint32_t r = 0; r < n; ++r) {
    const runtime::Plan& plan = worker(d, hosts[r]).plan;
    const uint32_t pos = *plan.pooled->ring_position;
    CHECK(static_cast<int>(host_of_ip(plan.pooled->next_ip)) == at[(pos + 1) % n]);
    CHECK(static_cast<int>(host_of_ip(plan.pooled->prev_ip)) == at[(pos + n - 1) % n]);
  }
}

TEST_CASE("pool: three tiers, pools on the leaves, the middles and the core of the tree") {
  // k=4: w0 under edge0 (pod 0), w4 under edge2 (pod 1); the tree is rooted at
  // core0 through agg0 and agg2.
  const json jobs = {{"pool", {{"slots", 16}}},
                     {"jobs", {{{"id", 1}, {"workers", {"w0", "w4"}}, {"memory", "pooled"}}}}};
  const Deployment d = run(fat_tree_cluster(4, 10.0), jobs);
  REQUIRE(d.trees.size() == 1);
  CHECK(d.trees[0].root == "core0");
  for (const char* name : {"edge0", "agg0", "core0", "agg2", "edge2"}) {
    INFO(name);
    REQUIRE(pooled(sw(d, name), 1, 0));
    CHECK(pooled(sw(d, name), 1, 0)->claim_cap == 16);
    CHECK(pooled(sw(d, name), 1, 0)->group_size == 8);
  }
  for (const char* name : {"edge1", "agg1", "core1", "agg3"}) CHECK_FALSE(sw(d, name).settings.pool);
  // w4's ring frames from w0 go up: edge0 (ports w0, w1, agg0, agg1) to
  // agg0, agg0 (edge0, edge1, core0, core1) to core0.
  auto route = [](const SwitchOutput& s, uint8_t host) -> int {
    for (const pswitch::MacRoute& r : s.settings.mac_table) {
      if (r.mac == config::MacAddress{0x02, 0, 0, 0x01, 0, host}) return static_cast<int>(r.port);
    }
    return -1;
  };
  CHECK(route(sw(d, "edge0"), 4) == 2);
  CHECK(route(sw(d, "agg0"), 4) == 2);
  CHECK(route(sw(d, "edge2"), 0) == 2);
  CHECK(route(sw(d, "agg2"), 0) == 2);
  CHECK(worker(d, "w0").plan.pooled->next_mac == config::MacAddress{0x02, 0, 0, 0x01, 0, 4});
}

TEST_CASE("pool: the claim entries' job id is one no job uses") {
  const json jobs = {{"pool", {{"slots", 32}}},
                     {"jobs",
                      {{{"id", 65535}, {"workers", workers(0, 2)}, {"memory", "pooled"}},
                       {{"id", 65534}, {"workers", workers(2, 2)}}}}};
  const Deployment d = run(single_switch_cluster(4, 10.0), jobs);
  CHECK(sw(d, "s0").settings.pool->claim_job == 65533);
}

TEST_CASE("pool: errors") {
  const json cluster = single_switch_cluster(8, 10.0);
  auto fails = [&](const json& c, const json& jobs, const std::string& what) {
    INFO(jobs.dump());
    REQUIRE_THROWS_WITH(run(c, jobs), Contains(what));
  };
  json base = pooled_next_to_fixed();

  json j = base;
  j["pool"]["slots"] = 600;
  fails(cluster, j, "jobs: pool.slots: out of range: 600 is not in 1..512");
  json small = cluster;
  small["packet_memory"] = 64;
  fails(small, base, "PSwitch 's0': the pool of 128 slots is larger than its packet memory of 64 slots");
  small["packet_memory"] = 128;
  fails(small, base,
        "PSwitch 's0': the pool of 128 slots leaves no packet memory for its 2 fixed-share entries");

  j = base;
  j["jobs"][0]["group"] = 200;
  fails(
      cluster, j,
      "job 1: group 200 is larger than what fits: its claim cap on PSwitch 's0' is 128 slots (pool of 128)");
  j = base;
  j["jobs"][0]["backup_trees"] = true;
  fails(cluster, j, "jobs: jobs[0].backup_trees: a pooled job has no standby trees");
  j = base;
  j["jobs"][0]["shape"] = "chain";
  fails(cluster, j, "jobs: jobs[0].shape: chain trees are not supported in pooled mode");
  j = base;
  j.erase("pool");
  fails(cluster, j, "jobs: jobs[0].memory: a pooled job needs the engines' pool (the top-level \"pool\")");
  j = base;
  j["jobs"][1]["group"] = 4;
  fails(cluster, j, "jobs: jobs[1].group: applies only to a pooled job");
  j = base;
  j["jobs"][0]["memory"] = "shared";
  fails(cluster, j, "jobs: jobs[0].memory: must be \"share\" or \"pooled\" (got \"shared\")");
  j = base;
  j["jobs"][0].erase("memory");
  fails(cluster, j, "jobs: pool: no job is pooled");
  j = base;
  j["pool"]["table_entries"] = 62;
  fails(cluster, j,
        "PSwitch 's0': its 64-entry table holds 3 (job, tree) entries and leaves 61 for the pool's claim "
        "entries (pool.table_entries is 62)");
  j = base;
  j["pool"]["overcommit"] = 0.5;
  fails(cluster, j, "jobs: pool.overcommit: out of range");
  j = base;
  j["pool"]["bogus"] = 1;
  fails(cluster, j, "jobs: pool.bogus: unknown key");
  // Weighted caps that leave a job no slot.
  j = {{"shares", "weighted"},
       {"pool", {{"slots", 4}}},
       {"jobs",
        {{{"id", 1}, {"workers", workers(0, 2)}, {"memory", "pooled"}, {"weight", 1}},
         {{"id", 2}, {"workers", workers(2, 2)}, {"memory", "pooled"}, {"weight", 9}}}}};
  fails(cluster, j, "PSwitch 's0': its pool of 4 slots gives job 1 tree 0 a claim cap of no slot");
  // More pooled trees than pool slots (each template needs one).
  j = {{"pool", {{"slots", 2}, {"overcommit", 4}}},
       {"jobs", {{{"id", 1}, {"workers", workers(0, 2)}, {"memory", "pooled"}, {"trees", 3}}}}};
  fails(cluster, j, "PSwitch 's0': the pool of 2 slots is smaller than its 3 pooled trees");
}
