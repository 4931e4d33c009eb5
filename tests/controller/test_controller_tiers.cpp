// Controller: three-tier (fat-tree) fabrics and the spreading of tree roots
// over spines / cores across jobs. Expected values are worked out by hand
// from the rules in docs/controller.md and the fat-tree wiring of
// fat_tree.hpp.
#include <catch2/catch.hpp>

#include "controller/plan_lookup.hpp"
#include "panama/controller/controller.hpp"
#include "panama/controller/fat_tree.hpp"

using namespace panama;
using namespace panama::controller;
using namespace panama::controller::test;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const config::EntryConfig& entry(const Deployment& d, const std::string& name, uint8_t tree) {
  for (const auto& e : sw(d, name).node.entries) {
    if (e.tree == tree) return e;
  }
  FAIL("no entry for tree " << int(tree) << " on " << name);
  throw;
}

json job(uint16_t id, std::vector<std::string> workers, uint32_t trees) {
  return {{"id", id}, {"workers", workers}, {"trees", trees}};
}

}  // namespace

TEST_CASE("fat-tree k=4: the built-in description has the k-ary wiring") {
  const json j = fat_tree_cluster(4, 10.0);
  CHECK(j["hosts"].size() == 16);
  CHECK(j["pswitches"].size() == 8 + 8 + 4);
  CHECK(j["links"].size() == 16 + 16 + 16);  // hosts, edge-aggregation, aggregation-core
  CHECK_THROWS_WITH(fat_tree_cluster(3, 10.0), Contains("k must be even"));
  CHECK_THROWS_WITH(fat_tree_cluster(0, 10.0), Contains("k must be even"));
}

TEST_CASE("fat-tree: a job across pods gets three-level trees rooted at distinct cores") {
  // k=4: edge e holds w(2e), w(2e+1); pod 0 = edge0, edge1 (agg0, agg1), pod 1 = edge2, edge3 (agg2, agg3).
  // Aggregation i of a pod links to cores 2i, 2i+1.
  const json jobs = {{"jobs", json::array({job(1, {"w0", "w2", "w4", "w6", "w1"}, 4)})}};
  const Deployment d = run(fat_tree_cluster(4, 10.0), jobs);
  REQUIRE(d.trees.size() == 4);
  for (uint8_t t = 0; t < 4; ++t) CHECK(d.trees[t].root == "core" + std::to_string(t));
  // Tree 0 at core0: edge0, edge1 -> agg0; edge2, edge3 -> agg2.
  const auto& root0 = entry(d, "core0", 0);
  CHECK(root0.root);
  CHECK(root0.fan_in == 2);
  const auto& a0 = entry(d, "agg0", 0);
  CHECK_FALSE(a0.root);
  CHECK(a0.fan_in == 2);
  CHECK(a0.out_child_id == 0);
  CHECK(entry(d, "agg2", 0).out_child_id == 1);
  CHECK(a0.eth_dst == root0.eth_src);
  CHECK(entry(d, "edge0", 0).fan_in == 2);  // w0 and w1
  CHECK(entry(d, "edge0", 0).out_child_id == 0);
  CHECK(entry(d, "edge1", 0).fan_in == 1);
  CHECK(entry(d, "edge1", 0).out_child_id == 1);
  CHECK(entry(d, "edge1", 0).eth_dst == a0.eth_src);
  // Trees 2 and 3 (cores 2, 3) go through agg1 and agg3; agg0 carries trees 0 and 1 only.
  CHECK(entry(d, "agg1", 2).fan_in == 2);
  CHECK(entry(d, "agg3", 3).out_child_id == 1);
  CHECK(sw(d, "agg0").node.entries.size() == 2);
  CHECK(sw(d, "core0").node.entries.size() == 1);
  // agg0's ports: edge0, edge1 (edge-aggregation links), core0, core1; tree 1 goes up to core1.
  const auto& agg0 = sw(d, "agg0").settings;
  REQUIRE(agg0.trees.size() == 2);
  CHECK(agg0.trees[1].parent == 3);
  CHECK(agg0.trees[1].children == std::vector<uint32_t>{0, 1});
  CHECK(agg0.ports[2].uplink);
  CHECK_FALSE(agg0.ports[0].uplink);
  CHECK(sw(d, "edge0").settings.ports[2].uplink);  // edge0: w0, w1, agg0, agg1
  // The core reaches pod 0's four hosts through agg0 (plus agg0 itself).
  const auto& core0 = sw(d, "core0").settings;
  size_t via_port0 = 0;
  for (const auto& r : core0.mac_table) via_port0 += r.port == 0;
  CHECK(via_port0 == 1 + 4);
  // Shares: edge0 holds 4 entries (128 slots each), agg0 2 (256), core0 1 (512).
  CHECK(entry(d, "edge0", 0).slot_count == 128);
  CHECK(a0.slot_count == 256);
  for (const auto& w : d.workers) CHECK(w.plan.trees[0].initial_cwnd_cap == 128);
}

TEST_CASE("fat-tree: a job inside one pod is rooted at its aggregation PSwitches") {
  const json jobs = {{"jobs", json::array({job(7, {"w0", "w2", "w3"}, 2)})}};
  const Deployment d = run(fat_tree_cluster(4, 10.0), jobs);
  CHECK(d.trees[0].root == "agg0");
  CHECK(d.trees[1].root == "agg1");
  CHECK(entry(d, "agg1", 1).root);
  CHECK(entry(d, "agg1", 1).fan_in == 2);
  for (const auto& s : d.switches) {
    if (s.node.node.rfind("core", 0) == 0) CHECK(s.node.entries.empty());
  }
}

TEST_CASE("tree roots are spread over the spines across jobs") {
  // 8 workers on 2 leaves, 4 spines; two jobs of two trees. Job 1's trees
  // take spines 0 and 1, job 2's spines 2 and 3 (tree t of the j-th job at
  // candidate (trees before it + t) mod 4), so no spine is left without a root.
  const json jobs = {
      {"jobs", json::array({job(1, {"w0", "w1"}, 2), job(2, {"w2", "w3"}, 2), job(3, {"w4", "w5"}, 3)})}};
  const Deployment d = run(two_tier_cluster(8, 2, 4, 10.0), jobs);
  REQUIRE(d.trees.size() == 7);
  const std::vector<std::string> want = {"spine0", "spine1", "spine2", "spine3",
                                         "spine0", "spine1", "spine2"};
  for (size_t i = 0; i < want.size(); ++i) CHECK(d.trees[i].root == want[i]);
  CHECK(sw(d, "spine3").node.entries.size() == 1);
  CHECK(sw(d, "spine0").node.entries.size() == 2);
}

TEST_CASE("three-tier fabrics: links between non-adjacent tiers are rejected") {
  json c = fat_tree_cluster(4, 10.0);
  c["links"].push_back({{"a", "agg0"}, {"b", "agg2"}});
  CHECK_THROWS_WITH(run(c, {{"jobs", json::array({job(1, {"w0", "w4"}, 1)})}}),
                    Contains("joins two spine PSwitches"));
  c = fat_tree_cluster(4, 10.0);
  c["links"].push_back({{"a", "core0"}, {"b", "core1"}});
  CHECK_THROWS_WITH(
      run(c, {{"jobs", json::array({job(1, {"w0", "w4"}, 1)})}}),
      Contains("PSwitch 'core0' has no hosts and is not linked only to PSwitches one tier below"));
  // A fourth tier: a PSwitch above the cores (core0 is then not linked only to aggregation PSwitches).
  c = fat_tree_cluster(4, 10.0);
  c["pswitches"].push_back("top");
  c["links"].push_back({{"a", "core0"}, {"b", "top"}});
  CHECK_THROWS_WITH(
      run(c, {{"jobs", json::array({job(1, {"w0", "w4"}, 1)})}}),
      Contains("PSwitch 'core0' has no hosts and is not linked only to PSwitches one tier below"));
  // Pods whose aggregation PSwitches share no core.
  c = fat_tree_cluster(4, 10.0);
  json links = json::array();
  for (const auto& l : c["links"]) {
    const std::string a = l["a"], b = l["b"];
    if (a.rfind("agg", 0) == 0 && std::stoi(a.substr(3)) >= 4) continue;  // pods 2, 3 lose their cores
    links.push_back(l);
  }
  c["links"] = links;
  c["pswitches"] = json::array();
  for (int i = 0; i < 8; ++i) c["pswitches"].push_back("edge" + std::to_string(i));
  for (int i = 0; i < 8; ++i) c["pswitches"].push_back("agg" + std::to_string(i));
  for (int i = 0; i < 4; ++i) c["pswitches"].push_back("core" + std::to_string(i));
  CHECK_THROWS_WITH(run(c, {{"jobs", json::array({job(1, {"w0", "w8"}, 1)})}}),
                    Contains("no spine PSwitch is linked to all of them"));
}
