// Controller unit tests: trees, fan-ins, child ids, shares, addresses,
// output files and rejected inputs. Expected values are worked out by hand
// from the rules in docs/controller.md.
#include <catch2/catch.hpp>
#include <filesystem>
#include <set>

#include "controller/plan_lookup.hpp"
#include "panama/controller/controller.hpp"
#include "panama/runtime/plan_file.hpp"

using namespace panama;
using namespace panama::controller;
using namespace panama::controller::test;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using nlohmann::json;

namespace {

json one_job(uint32_t workers, uint32_t trees) {
  json ws = json::array();
  for (uint32_t i = 0; i < workers; ++i) ws.push_back("w" + std::to_string(i));
  return {{"jobs", json::array({{{"id", 1}, {"workers", ws}, {"trees", trees}}})}};
}

}  // namespace

TEST_CASE("single PSwitch: every tree is rooted at it, equal shares, multicast results") {
  const Deployment d = run(single_switch_cluster(4, 10.0), one_job(4, 2));
  REQUIRE(d.switches.size() == 1);
  REQUIRE(d.trees.size() == 2);
  CHECK(d.trees[0].root == "s0");
  CHECK(d.trees[1].root == "s0");
  const auto& s0 = sw(d, "s0");
  REQUIRE(s0.node.entries.size() == 2);
  for (uint32_t t = 0; t < 2; ++t) {
    const auto& e = s0.node.entries[t];
    CHECK(e.job == 1);
    CHECK(e.tree == t);
    CHECK(e.root);
    CHECK(e.fan_in == 4);
    CHECK(e.children == std::vector<uint8_t>{0, 1, 2, 3});
    CHECK(e.slot_count == 256);  // 512 slots / 2 entries
    CHECK(e.slot_base == 256 * t);
    CHECK(e.ip_dst == ((239u << 24) | (1u << 8) | t));  // 239.0.1.t
    CHECK(e.eth_dst == config::MacAddress{0x01, 0x00, 0x5e, 0x00, 0x01, static_cast<uint8_t>(t)});
    CHECK(s0.settings.trees[t].parent == -1);
    CHECK(s0.settings.trees[t].children == std::vector<uint32_t>{0, 1, 2, 3});
  }
  for (uint32_t r = 0; r < 4; ++r) {
    const auto& w = worker(d, "w" + std::to_string(r));
    CHECK(w.plan.rank == r);
    CHECK(w.plan.world_size == 4);
    REQUIRE(w.plan.trees.size() == 2);
    CHECK(w.plan.trees[1].child_id == r);
    CHECK(w.plan.trees[1].dst_mac == config::MacAddress{0x02, 0, 0, 0x02, 0, 0});  // s0's automatic MAC
    CHECK(w.plan.trees[1].initial_cwnd_cap == 256);
    CHECK_THAT(w.vdev, Contains("role=client") && Contains("s0-w" + std::to_string(r) + ".sock"));
  }
}

TEST_CASE("two-tier: trees rooted at distinct spines, leaves aggregate their workers") {
  // w0,w2 under leaf0; w1,w3 under leaf1 (round-robin).
  const Deployment d = run(two_tier_cluster(4, 2, 2, 25.0), one_job(4, 2));
  REQUIRE(d.trees.size() == 2);
  CHECK(d.trees[0].root == "spine0");
  CHECK(d.trees[1].root == "spine1");
  const auto& leaf0 = sw(d, "leaf0");
  const auto& leaf1 = sw(d, "leaf1");
  const auto& spine0 = sw(d, "spine0");
  REQUIRE(leaf0.node.entries.size() == 2);
  REQUIRE(spine0.node.entries.size() == 1);
  for (const auto& e : leaf0.node.entries) {
    CHECK_FALSE(e.root);
    CHECK(e.fan_in == 2);
    CHECK(e.out_child_id == 0);  // leaf0 is child 0 of both roots
    CHECK(e.slot_count == 256);
  }
  CHECK(leaf1.node.entries[0].out_child_id == 1);
  CHECK(leaf0.node.entries[0].eth_dst == sw(d, "spine0").node.entries[0].eth_src);
  CHECK(leaf0.node.entries[1].eth_dst == sw(d, "spine1").node.entries[0].eth_src);
  const auto& root = spine0.node.entries[0];
  CHECK(root.root);
  CHECK(root.fan_in == 2);
  CHECK(root.slot_count == 512);
  // leaf0's ports: w0, w2, spine0, spine1 (link order); tree 1 goes up to spine1.
  const auto& tp = leaf0.settings.trees[1];
  CHECK(tp.parent == 3);
  CHECK(tp.children == std::vector<uint32_t>{0, 1});
  CHECK(leaf0.settings.ports[3].uplink);
  CHECK_FALSE(leaf0.settings.ports[0].uplink);
  CHECK(leaf0.settings.ports[0].rate_gbps == 25.0);
  CHECK(worker(d, "w2").plan.trees[0].child_id == 1);
  CHECK(worker(d, "w3").plan.trees[0].child_id == 1);
  CHECK(worker(d, "w1").plan.trees[0].dst_ip == leaf1.node.entries[0].ip_src);
  CHECK(worker(d, "w1").plan.trees[0].initial_cwnd_cap == 256);  // min(leaf 256, spine 512)
}

TEST_CASE("a job under one leaf of a two-tier fabric is aggregated at that leaf") {
  json jobs = {{"jobs", json::array({{{"id", 3}, {"workers", {"w0", "w2"}}, {"trees", 2}}})}};
  const Deployment d = run(two_tier_cluster(4, 2, 2, 10.0), jobs);
  CHECK(d.trees[0].root == "leaf0");
  CHECK(d.trees[1].root == "leaf0");
  CHECK(sw(d, "spine0").node.entries.empty());
}

TEST_CASE("shares: equal per (job, tree) entry by default, by weight on request") {
  json cluster = single_switch_cluster(6, 10.0);
  json jobs = {{"jobs", json::array({{{"id", 1}, {"workers", {"w0", "w1", "w2"}}, {"weight", 3}},
                                     {{"id", 2}, {"workers", {"w3", "w4", "w5"}}, {"weight", 1}}})}};
  Deployment d = run(cluster, jobs);
  auto& e = sw(d, "s0").node.entries;
  REQUIRE(e.size() == 2);
  CHECK(e[0].slot_count == 256);
  CHECK(e[1].slot_count == 256);
  CHECK(worker(d, "w4").plan.trees[0].child_id == 1);
  CHECK(worker(d, "w4").plan.rank == 1);

  jobs["shares"] = "weighted";
  d = run(cluster, jobs);
  CHECK(sw(d, "s0").node.entries[0].slot_count == 384);  // 512 * 3/4
  CHECK(sw(d, "s0").node.entries[1].slot_count == 128);
  CHECK(sw(d, "s0").node.entries[1].slot_base == 384);

  cluster["packet_memory"] = 100;
  jobs["shares"] = "equal";
  jobs["jobs"][0]["trees"] = 3;  // 4 entries: 25 slots each
  d = run(cluster, jobs);
  for (const auto& en : sw(d, "s0").node.entries) CHECK(en.slot_count == 25);
}

TEST_CASE("written files read back through the config and plan parsers") {
  const Deployment d = run(two_tier_cluster(4, 2, 2, 10.0), one_job(4, 2));
  const std::string dir = (std::filesystem::temp_directory_path() / "panama-test-controller").string();
  std::filesystem::remove_all(dir);
  write_deployment(d, dir);
  for (const auto& s : d.switches) {
    const config::NodeConfig back = config::load_node_config(dir + "/" + s.node.node + ".json");
    CHECK(back.entries.size() == s.node.entries.size());
    const pswitch::PswitchSettings ps = pswitch::settings_from_json(back.pswitch);
    CHECK(pswitch::settings_to_json(ps) == s.node.pswitch);
  }
  for (const auto& w : d.workers) CHECK(runtime::load_plan(dir + "/" + w.host + ".plan.json") == w.plan);
  CHECK(std::filesystem::exists(dir + "/deployment.json"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("invalid topologies and jobs are rejected with a clear message") {
  const json good = single_switch_cluster(4, 10.0);
  auto err = [](const json& c, const json& j) { return [c, j] { run(c, j); }; };
  json c = good;
  c["links"].push_back({{"a", "w9"}, {"b", "s0"}});
  CHECK_THROWS_WITH(err(c, one_job(4, 1))(), Contains("unknown node 'w9'"));
  c = good;
  c["pswitches"].push_back("s1");
  c["pswitches"].push_back("s2");
  c["links"].push_back({{"a", "w0"}, {"b", "s1"}});
  c["links"].push_back({{"a", "w0"}, {"b", "s2"}});
  CHECK_THROWS_WITH(err(c, one_job(4, 1))(), Contains("host 'w0' has a third link"));
  c = good;
  c["hosts"].push_back("w4");
  CHECK_THROWS_WITH(err(c, one_job(4, 1))(), Contains("host 'w4' has no link"));
  c = good;
  c["links"].push_back({{"a", "w0"}, {"b", "w1"}});
  CHECK_THROWS_WITH(err(c, one_job(4, 1))(), Contains("not to each other"));
  c = good;
  c["pswitches"].push_back("s1");
  c["hosts"].push_back("w4");
  c["links"].push_back({{"a", "w4"}, {"b", "s1"}});
  c["links"].push_back({{"a", "s0"}, {"b", "s1"}});
  CHECK_THROWS_WITH(err(c, one_job(4, 1))(), Contains("joins two leaf PSwitches"));
  CHECK_THROWS_WITH(err(good, one_job(5, 1))(), Contains("worker 'w4' is not a host"));
  CHECK_THROWS_WITH(err(good, one_job(4, 0))(), Contains("trees"));
  json jobs = one_job(4, 1);
  jobs["jobs"].push_back({{"id", 1}, {"workers", {"w0"}}});
  CHECK_THROWS_WITH(err(good, jobs)(), Contains("job id 1 is used twice"));
  jobs["jobs"][1]["id"] = 2;
  CHECK_THROWS_WITH(err(good, jobs)(), Contains("host 'w0' already runs a worker"));
  c = good;
  c["packet_memory"] = 3;
  CHECK_THROWS_WITH(err(c, one_job(4, 4))(), Contains("no slot"));
  c = good;
  c["lnks"] = json::array();
  CHECK_THROWS_WITH(
      err(c, one_job(4, 1))(),
      StartsWith("cluster: lnks: unknown key (known keys here: name, hosts, pswitches, links,"));
  // Two leaves and a spine that reaches only one of them.
  json t = two_tier_cluster(4, 2, 1, 10.0);
  t["links"].erase(t["links"].size() - 1);  // drop leaf1 - spine0
  CHECK_THROWS_WITH(err(t, one_job(4, 1))(), Contains("no spine PSwitch is linked to all of them"));
  json bad_prob = good;
  bad_prob["port_defaults"] = {{"loss", 1.5}};
  CHECK_THROWS_WITH(err(bad_prob, one_job(4, 1))(),
                    Equals("cluster: port_defaults.loss: out of range: 1.5 is not in 0..1"));
  json bad_epp = one_job(4, 1);
  bad_epp["elems_per_packet"] = 100000;
  CHECK_THROWS_WITH(err(good, bad_epp)(), Contains("elems_per_packet"));
}

TEST_CASE("engine capacities come from the cluster description, per PSwitch or for all") {
  // A fabric whose spine has a small engine: 2 entries, 64 slots of 512 elements.
  json c = two_tier_cluster(4, 2, 1, 10.0);
  for (auto& s : c["pswitches"]) {
    if (s == "spine0")
      s = {{"name", "spine0"}, {"table_entries", 2}, {"packet_memory", 64}, {"slot_elems", 512}};
  }
  json jobs = one_job(4, 2);
  jobs["elems_per_packet"] = 512;
  Deployment d = run(c, jobs);
  for (const auto& e : sw(d, "spine0").node.entries) CHECK(e.slot_count == 32);  // 64 / 2 entries
  for (const auto& e : sw(d, "leaf0").node.entries) CHECK(e.slot_count == 256);  // default 512 / 2

  jobs["jobs"][0]["trees"] = 3;  // 3 entries on a 2-entry spine
  CHECK_THROWS_WITH(run(c, jobs),
                    Contains("PSwitch 'spine0': 3 (job, tree) entries exceed its 2-entry table"));
  jobs["jobs"][0]["trees"] = 2;
  jobs["elems_per_packet"] = 513;  // fits the leaves' slots, not the spine's
  CHECK_THROWS_WITH(run(c, jobs), Contains("do not fit a slot of PSwitch 'spine0' (512 elements)"));

  json all = single_switch_cluster(4, 10.0);
  all["table_entries"] = 1;
  CHECK_THROWS_WITH(run(all, one_job(4, 2)), Contains("exceed its 1-entry table"));
  all["table_entries"] = 300;
  CHECK_THROWS_WITH(run(all, one_job(4, 1)),
                    Equals("cluster: table_entries: out of range: 300 is not in 1..256"));
}

TEST_CASE("the engine queue's CE threshold comes from the cluster description") {
  json c = two_tier_cluster(4, 2, 1, 10.0);
  Deployment d = run(c, one_job(4, 1));
  CHECK(sw(d, "leaf0").settings.engine_ecn_k_bytes == 262144);  // the default, 256 KiB
  c["engine_ecn_k_bytes"] = 1048576;
  d = run(c, one_job(4, 1));
  for (const char* s : {"leaf0", "leaf1", "spine0"}) CHECK(sw(d, s).settings.engine_ecn_k_bytes == 1048576);
  c["engine_ecn_k_bytes"] = 0;  // marking off
  CHECK(sw(run(c, one_job(4, 1)), "spine0").settings.engine_ecn_k_bytes == 0);
  c["engine_ecn_k_bytes"] = "1M";
  CHECK_THROWS_WITH(run(c, one_job(4, 1)),
                    StartsWith("cluster: engine_ecn_k_bytes: wrong type: expected an integer"));
}

TEST_CASE("backup trees: each tree has a standby on another spine, in the engines and the plans") {
  json jobs = one_job(4, 2);
  jobs["jobs"][0]["backup_trees"] = true;
  const Deployment d = run(two_tier_cluster(4, 2, 2, 10.0), jobs);
  REQUIRE(d.trees.size() == 4);
  // Tree t on spine t mod 2; its standby (tree 2 + t) on the other spine.
  CHECK(d.trees[0].root == "spine0");
  CHECK(d.trees[1].root == "spine1");
  CHECK(d.trees[2].root == "spine1");
  CHECK(d.trees[3].root == "spine0");
  CHECK(d.trees[0].backup_for == -1);
  CHECK(d.trees[2].backup_for == 0);
  CHECK(d.trees[3].backup_for == 1);
  const auto& leaf0 = sw(d, "leaf0");
  REQUIRE(leaf0.node.entries.size() == 4);  // the standby trees hold entries (and shares) too
  CHECK(leaf0.node.entries[2].tree == 2);
  CHECK(leaf0.node.entries[2].slot_count == 128);                                   // 512 / 4
  CHECK(leaf0.node.entries[2].eth_dst == sw(d, "spine1").node.entries[0].eth_src);  // up to spine1
  CHECK(sw(d, "spine0").node.entries.size() == 2);                                  // trees 0 and 3
  CHECK(leaf0.settings.trees[2].parent == static_cast<int>(3));                     // port of spine1
  const auto& p = worker(d, "w1").plan;
  REQUIRE(p.trees.size() == 4);
  CHECK(p.trees[0].backup_for == -1);
  CHECK(p.trees[2].backup_for == 0);
  CHECK(p.trees[3].backup_for == 1);
  CHECK(p.trees[3].child_id == p.trees[1].child_id);
  CHECK_NOTHROW(runtime::validate_plan(p));
  CHECK(runtime::parse_plan(runtime::plan_to_json(p)) == p);
}

TEST_CASE("backup trees need two candidate roots") {
  json jobs = one_job(4, 2);
  jobs["jobs"][0]["backup_trees"] = true;
  CHECK_THROWS_WITH(run(single_switch_cluster(4, 10.0), jobs), Contains("two candidate roots"));
  CHECK_THROWS_WITH(run(two_tier_cluster(4, 2, 1, 10.0), jobs), Contains("two candidate roots"));
  jobs["jobs"][0]["trees"] = 128;
  CHECK_THROWS_WITH(run(two_tier_cluster(4, 2, 2, 10.0), jobs), Contains("at most 127"));
}

TEST_CASE("dual-homed workers: trees alternate between a worker's two leaves, standbys take the other") {
  // Two leaves, no spine, every worker linked to both (dual-ToR): each tree
  // is aggregated at one leaf, and a standby at the other one.
  const Deployment d = [] {
    json jobs = one_job(3, 2);
    jobs["jobs"][0]["backup_trees"] = true;
    return run(two_tier_cluster(3, 2, 0, 10.0, true), jobs);
  }();
  REQUIRE(d.trees.size() == 4);
  CHECK(d.trees[0].root == "leaf0");
  CHECK(d.trees[1].root == "leaf1");
  CHECK(d.trees[2].root == "leaf1");  // standby of tree 0: the other uplink
  CHECK(d.trees[3].root == "leaf0");  // standby of tree 1
  const auto& leaf0 = sw(d, "leaf0");
  REQUIRE(leaf0.node.entries.size() == 2);
  CHECK(leaf0.node.entries[0].tree == 0);
  CHECK(leaf0.node.entries[1].tree == 3);
  CHECK(leaf0.node.entries[0].fan_in == 3);
  CHECK(leaf0.node.entries[0].root);
  for (uint32_t r = 0; r < 3; ++r) {
    const auto& w = worker(d, "w" + std::to_string(r));
    REQUIRE(w.plan.trees.size() == 4);
    CHECK(w.plan.devices == std::vector<std::string>{"net_memif0", "net_memif1"});
    REQUIRE(w.vdevs.size() == 2);
    CHECK_THAT(w.vdevs[0], Contains("net_memif0,") && Contains("leaf0-w" + std::to_string(r) + ".sock"));
    CHECK_THAT(w.vdevs[1], Contains("net_memif1,") && Contains("leaf1-w" + std::to_string(r) + ".sock"));
    const uint8_t uplinks[4] = {0, 1, 1, 0};
    for (size_t t = 0; t < 4; ++t) {
      CHECK(w.plan.trees[t].uplink == uplinks[t]);
      CHECK(w.plan.trees[t].dst_mac == sw(d, uplinks[t] ? "leaf1" : "leaf0").node.entries[0].eth_src);
      CHECK(w.plan.trees[t].child_id == r);
    }
    CHECK(runtime::parse_plan(runtime::plan_to_json(w.plan)) == w.plan);
  }
}

TEST_CASE("dual-homed two-tier: a leaf's death leaves a plane with a live tree and standby") {
  // 4 leaves in two planes (leaf0, leaf1 | leaf2, leaf3), 2 spines.
  json jobs = one_job(4, 2);
  jobs["jobs"][0]["backup_trees"] = true;
  const Deployment d = run(two_tier_cluster(4, 4, 2, 10.0, true), jobs);
  REQUIRE(d.trees.size() == 4);
  // Which leaves each tree passes through, from the engines' tables.
  auto leaves_of = [&](uint8_t tree) {
    std::set<std::string> s;
    for (const auto& so : d.switches) {
      for (const auto& e : so.node.entries) {
        if (e.tree == tree && !e.root) s.insert(so.node.node);
      }
    }
    return s;
  };
  CHECK(leaves_of(0) == std::set<std::string>{"leaf0", "leaf1"});
  CHECK(leaves_of(1) == std::set<std::string>{"leaf2", "leaf3"});
  CHECK(leaves_of(2) == std::set<std::string>{"leaf2", "leaf3"});  // standby of 0: the other plane
  CHECK(leaves_of(3) == std::set<std::string>{"leaf0", "leaf1"});
  CHECK(d.trees[0].root == "spine0");
  CHECK(d.trees[2].root == "spine1");  // and another spine
  // A worker's child id may differ per tree (its position under that tree's leaf).
  CHECK(worker(d, "w2").plan.trees[0].child_id == 1);  // w0, w2 under leaf0
  CHECK(worker(d, "w2").plan.trees[1].child_id == 1);  // w0, w2 under leaf2
}

// A child id indexes a 64-bit mask, wherever it comes from: a spine's leaves
// get out_child_id = their position, so a spine with more than 64 leaves is
// refused before any id above 63 could be written; the node configuration
// and plan files refuse ids above 63 on their own (tests/config, tests/runtime).
TEST_CASE("controller: no child id above 63 can come out of a plan", "[isolation]") {
  const json c = two_tier_cluster(65, 65, 1, 10.0);
  json ws = json::array();
  for (int i = 0; i < 65; ++i) ws.push_back("w" + std::to_string(i));
  const json jobs = {{"jobs", {{{"id", 1}, {"workers", ws}}}}};
  CHECK_THROWS_WITH(plan_deployment(parse_cluster(c), parse_jobs(jobs)), Contains("more than 64 ports"));
  config::NodeConfig cfg;
  cfg.node = "x";
  config::EntryConfig e;
  e.fan_in = 1;
  e.children = {0};
  e.slot_count = 1;
  e.out_child_id = 64;  // a non-root entry
  e.eth_src = {2, 0, 0, 0, 0, 1};
  e.eth_dst = {2, 0, 0, 0, 0, 2};
  cfg.entries.push_back(e);
  CHECK_THROWS_WITH(config::validate_node_config(cfg, "x"), Contains("child id 64 is over 63"));
}

TEST_CASE("priorities by GPU intensity: levels, DSCP, weights and the least loaded roots first") {
  // Intensity = compute per gradient byte: job 2 (100 ms / 1e8 B) > job 1
  // (100 ms / 1e9 B) > job 3 (50 ms / 1e9 B). Two levels over three jobs:
  // ranks 0, 1, 2 -> levels 0, 0, 1 (rank x levels / jobs).
  json jobs = {
      {"priorities", {{"levels", 2}, {"dscp", {46, 10}}}},
      {"jobs",
       json::array({{{"id", 1}, {"workers", {"w0", "w1"}}, {"compute_ms", 100}, {"gradient_bytes", 1e9}},
                    {{"id", 2}, {"workers", {"w2", "w3"}}, {"compute_ms", 100}, {"gradient_bytes", 1e8}},
                    {{"id", 3}, {"workers", {"w4", "w5"}}, {"compute_ms", 50}, {"gradient_bytes", 1e9}}})}};
  const JobsDesc planned = apply_priorities(parse_jobs(jobs));
  REQUIRE(planned.jobs.size() == 3);
  CHECK(planned.jobs[0].id == 2);
  CHECK(planned.jobs[1].id == 1);
  CHECK(planned.jobs[2].id == 3);
  CHECK(planned.jobs[0].priority_level == 0);
  CHECK(planned.jobs[1].priority_level == 0);
  CHECK(planned.jobs[2].priority_level == 1);
  const Deployment d = run(two_tier_cluster(6, 2, 2, 10.0), jobs);
  std::map<uint16_t, std::string> root;
  for (const auto& t : d.trees) root[t.job] = t.root;
  // Demand (bytes per ms of compute): job 2 1e6 takes spine0 first; job 1
  // (1e7) the emptier spine1; job 3 (2e7) then spine0 (1e6 < 1e7). Without
  // priorities the trees go round robin in job order: 1 spine0, 2 spine1, 3 spine0.
  CHECK(root == std::map<uint16_t, std::string>{{1, "spine1"}, {2, "spine0"}, {3, "spine0"}});
  for (const auto& s : d.switches) {
    for (const auto& e : s.node.entries) {
      INFO(s.node.node << " job " << e.job);
      CHECK(e.dscp == (e.job == 3 ? 10 : 46));
    }
  }
  // Weighted shares: weight x (levels - level): 2, 2, 1 on the spine job 2 and 3 share.
  jobs["shares"] = "weighted";
  const Deployment w = run(two_tier_cluster(6, 2, 2, 10.0), jobs);
  uint32_t slots2 = 0, slots3 = 0;
  for (const auto& e : sw(w, "spine0").node.entries) (e.job == 2 ? slots2 : slots3) = e.slot_count;
  CHECK(slots2 == 341);  // 512 x 2/3, rounded down
  CHECK(slots3 == 170);  // 512 x 1/3

  json bad = jobs;
  bad["jobs"][0].erase("compute_ms");
  CHECK_THROWS_WITH(parse_jobs(bad), Contains("priorities need every job's compute_ms and gradient_bytes"));
  bad = jobs;
  bad["jobs"][1]["dscp"] = 8;
  CHECK_THROWS_WITH(parse_jobs(bad), Contains("set by the priority level"));
  bad = jobs;
  bad["priorities"]["dscp"] = {46};
  CHECK_THROWS_WITH(parse_jobs(bad), Contains("one DSCP value per level (2), got 1"));
  bad = jobs;
  bad["priorities"]["dscp"] = {46, 46};
  CHECK_THROWS_WITH(parse_jobs(bad), Contains("priorities.dscp[1]: DSCP 46 is given to two levels"));
}
