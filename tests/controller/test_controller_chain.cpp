// Chain trees (CINA's shape, docs/controller.md "Chain trees"): only the
// job's leaves aggregate, each adds its rack to the previous leaf's partial
// and sends it on through a spine; the last leaf is the root. Expected
// values are worked out by hand from the rules in docs/controller.md.
#include <catch2/catch.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "controller/plan_lookup.hpp"
#include "panama/controller/controller.hpp"

using namespace panama;
using namespace panama::controller;
using namespace panama::controller::test;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using nlohmann::json;

namespace {

// The automatic addresses of PSwitch i (docs/controller.md): 02:00:00:02:00:i, 10.2.0.<i+1>.
config::MacAddress sw_mac(uint8_t i) {
  return {0x02, 0x00, 0x00, 0x02, 0x00, i};
}
uint32_t sw_ip(uint8_t i) {
  return (10u << 24) | (2u << 16) | (i + 1u);
}

// What the rules give for one leaf's entry of one tree.
struct Want {
  std::string leaf;
  bool root;
  uint32_t fan_in;
  int parent_port;                 // -1 at the root
  uint8_t parent_leaf;             // PSwitch index of the next leaf (not at the root)
  uint16_t out_child_id;           // the leaf's child id at the next leaf
  std::vector<uint32_t> children;  // ports
  int relay_port;                  // the previous leaf's spine port; -1 for the first leaf
  uint8_t relay_leaf;              // PSwitch index of the previous leaf
};

}  // namespace

TEST_CASE("chain trees: 3 racks of a 4-leaf, 2-spine fabric, every entry, hop and plan by hand") {
  // Workers w0..w7, wi under leaf (i mod 4). Switch indices: leaf0..leaf3 =
  // 0..3, spine0 = 4, spine1 = 5. Each leaf's ports in link order: its two
  // hosts, spine0, spine1; each spine's: leaf0..leaf3.
  // The job: ranks w1 (leaf1), w3 (leaf3), w5 (leaf1), w0 (leaf0), w4 (leaf0):
  // three racks, listed out of order. Child ids under a leaf in rank order:
  // leaf0 w0 0, w4 1; leaf1 w1 0, w5 1; leaf3 w3 0.
  const json jobs = {
      {"jobs",
       json::array(
           {{{"id", 1}, {"workers", {"w1", "w3", "w5", "w0", "w4"}}, {"trees", 3}, {"shape", "chain"}}})}};
  const Deployment d = run(two_tier_cluster(8, 4, 2, 10.0), jobs);

  // Leaves in PSwitch order [leaf0, leaf1, leaf3], tree t starts at leaf
  // (t mod 3); hop k of tree t crosses spine ((t + k) mod 2):
  //   tree 0: leaf0 -spine0-> leaf1 -spine1-> leaf3 (root)
  //   tree 1: leaf1 -spine1-> leaf3 -spine0-> leaf0 (root)
  //   tree 2: leaf3 -spine0-> leaf0 -spine1-> leaf1 (root)
  REQUIRE(d.trees.size() == 3);
  CHECK(d.trees[0].root == "leaf3");
  CHECK(d.trees[1].root == "leaf0");
  CHECK(d.trees[2].root == "leaf1");
  // Child id of the previous leaf at a leaf: after its workers (leaf0 and
  // leaf1 have 2, leaf3 has 1); ports: host 0, host 1, spine0 2, spine1 3.
  const std::vector<std::vector<Want>> want = {
      {{"leaf0", false, 2, 2, 1, 2, {0, 1}, -1, 0},
       {"leaf1", false, 3, 3, 3, 1, {0, 1, 2}, 2, 0},
       {"leaf3", true, 2, -1, 0, 0, {0, 3}, 3, 1}},
      {{"leaf1", false, 2, 3, 3, 1, {0, 1}, -1, 0},
       {"leaf3", false, 2, 2, 0, 2, {0, 3}, 3, 1},
       {"leaf0", true, 3, -1, 0, 0, {0, 1, 2}, 2, 3}},
      {{"leaf3", false, 1, 2, 0, 2, {0}, -1, 0},
       {"leaf0", false, 3, 3, 1, 2, {0, 1, 2}, 2, 3},
       {"leaf1", true, 3, -1, 0, 0, {0, 1, 3}, 3, 0}},
  };
  for (uint8_t t = 0; t < 3; ++t) {
    const uint32_t group = (239u << 24) | (1u << 8) | t;
    const config::MacAddress group_mac{0x01, 0x00, 0x5e, 0x00, 0x01, t};
    for (const Want& w : want[t]) {
      INFO("tree " << int(t) << ", " << w.leaf);
      const SwitchOutput& s = sw(d, w.leaf);
      // Every leaf holds one entry per tree, in tree order: 512 / 3 slots each.
      REQUIRE(s.node.entries.size() == 3);
      const config::EntryConfig& e = s.node.entries[t];
      CHECK(e.job == 1);
      CHECK(e.tree == t);
      CHECK(e.root == w.root);
      CHECK(e.fan_in == w.fan_in);
      std::vector<uint8_t> ids;
      for (uint8_t k = 0; k < w.fan_in; ++k) ids.push_back(k);
      CHECK(e.children == ids);
      CHECK(e.slot_count == 170);
      CHECK(e.slot_base == 170u * t);
      if (w.root) {
        CHECK(e.ip_dst == group);
        CHECK(e.eth_dst == group_mac);
      } else {
        // Two hops away: addressed to the next leaf, leaving by a spine port.
        CHECK(e.ip_dst == sw_ip(w.parent_leaf));
        CHECK(e.eth_dst == sw_mac(w.parent_leaf));
        CHECK(e.out_child_id == w.out_child_id);
      }
      const pswitch::TreePorts* tp = s.settings.find_tree(1, t);
      REQUIRE(tp != nullptr);
      CHECK(tp->parent == w.parent_port);
      CHECK(tp->children == w.children);
      CHECK(tp->child_ids == std::vector<uint16_t>(ids.begin(), ids.end()));
      if (w.relay_port < 0) {
        CHECK(tp->relays.empty());
      } else {
        REQUIRE(tp->relays.size() == 1);
        CHECK(tp->relays[0].port == static_cast<uint32_t>(w.relay_port));
        CHECK(tp->relays[0].mac == sw_mac(w.relay_leaf));
        CHECK(tp->relays[0].ip == sw_ip(w.relay_leaf));
      }
      // Results reach a leaf below the root addressed to it: its workers get
      // them with the group's address again.
      CHECK(tp->group_ip == (w.root ? 0u : group));
      if (!w.root) CHECK(tp->group_mac == group_mac);
    }
  }
  // The job has no worker under leaf2: it holds nothing. The spines hold no
  // entry, only the hops they pass on: (tree, child port, parent port) =
  // the leaves' positions on the spine.
  CHECK(sw(d, "leaf2").node.entries.empty());
  struct Hop {
    uint8_t tree;
    uint32_t child, parent;
  };
  const std::vector<std::pair<std::string, std::vector<Hop>>> hops = {
      {"spine0", {{0, 0, 1}, {1, 3, 0}, {2, 3, 0}}}, {"spine1", {{0, 1, 3}, {1, 1, 3}, {2, 0, 1}}}};
  for (const auto& [name, hs] : hops) {
    INFO(name);
    const SwitchOutput& s = sw(d, name);
    CHECK(s.node.entries.empty());
    CHECK(s.settings.trees.empty());
    REQUIRE(s.settings.transit.size() == hs.size());
    for (size_t i = 0; i < hs.size(); ++i) {
      CHECK(s.settings.transit[i].job == 1);
      CHECK(s.settings.transit[i].tree == hs[i].tree);
      CHECK(s.settings.transit[i].child == hs[i].child);
      CHECK(s.settings.transit[i].parent == hs[i].parent);
    }
    // Frames addressed to a leaf leave by that leaf's port (the MAC table).
    for (uint8_t l = 0; l < 4; ++l) {
      bool found = false;
      for (const auto& r : s.settings.mac_table) found = found || (r.mac == sw_mac(l) && r.port == l);
      CHECK(found);
    }
  }
  // The workers send every tree to their own leaf with their child id there;
  // the first cwnd_cap is the smallest share on the chain (170 everywhere).
  const std::vector<std::tuple<std::string, uint32_t, uint8_t, uint16_t>> workers = {
      {"w1", 0, 1, 0}, {"w3", 1, 3, 0}, {"w5", 2, 1, 1}, {"w0", 3, 0, 0}, {"w4", 4, 0, 1}};
  for (const auto& [host, rank, leaf, child] : workers) {
    INFO(host);
    const WorkerOutput& w = worker(d, host);
    CHECK(w.plan.rank == rank);
    CHECK(w.plan.world_size == 5);
    REQUIRE(w.plan.trees.size() == 3);
    for (uint8_t t = 0; t < 3; ++t) {
      CHECK(w.plan.trees[t].tree_id == t);
      CHECK(w.plan.trees[t].child_id == child);
      CHECK(w.plan.trees[t].dst_ip == sw_ip(leaf));
      CHECK(w.plan.trees[t].dst_mac == sw_mac(leaf));
      CHECK(w.plan.trees[t].initial_cwnd_cap == 170);
    }
  }
  // The "pswitch" sections read back as written (relays, group, transit).
  for (const SwitchOutput& s : d.switches) {
    INFO(s.node.node);
    const pswitch::PswitchSettings back = pswitch::settings_from_json(s.node.pswitch);
    CHECK(pswitch::settings_to_json(back) == s.node.pswitch);
    CHECK_NOTHROW(pswitch::check_trees_against_entries(back, s.node.entries));
  }
}

TEST_CASE("chain trees: roots spread over jobs; one rack is one leaf; one spine carries every hop") {
  // Two jobs of one tree each over all four leaves: job 2's tree starts one
  // leaf later (o = 1 tree planned before it), so the roots differ.
  const json jobs = {
      {"jobs", json::array({{{"id", 1}, {"workers", {"w0", "w1", "w2", "w3"}}, {"shape", "chain"}},
                            {{"id", 2}, {"workers", {"w4", "w5", "w6", "w7"}}, {"shape", "chain"}}})}};
  const Deployment d = run(two_tier_cluster(8, 4, 2, 10.0), jobs);
  REQUIRE(d.trees.size() == 2);
  CHECK(d.trees[0].root == "leaf3");  // leaf0 -> leaf1 -> leaf2 -> leaf3
  CHECK(d.trees[1].root == "leaf0");  // leaf1 -> leaf2 -> leaf3 -> leaf0
  // Job 2's hops: spines (1 + k) mod 2: leaf1 -spine1-> leaf2 -spine0-> leaf3 -spine1-> leaf0.
  const pswitch::TreePorts* l2 = sw(d, "leaf2").settings.find_tree(2, 0);
  REQUIRE(l2 != nullptr);
  CHECK(l2->parent == 2);                              // to leaf3 through spine0
  CHECK(l2->children == std::vector<uint32_t>{1, 3});  // w6, and leaf1 behind spine1
  CHECK(sw(d, "leaf0").node.entries[1].fan_in == 2);   // job 2's root: w4, and leaf3
  CHECK(sw(d, "leaf0").node.entries[1].root);

  // A job under one leaf: that leaf alone, as with spine trees.
  const json one_rack = {
      {"jobs", json::array({{{"id", 5}, {"workers", {"w0", "w4"}}, {"trees", 2}, {"shape", "chain"}}})}};
  const Deployment r = run(two_tier_cluster(8, 4, 2, 10.0), one_rack);
  CHECK(r.trees[0].root == "leaf0");
  CHECK(r.trees[1].root == "leaf0");
  CHECK(sw(r, "leaf0").settings.trees[0].relays.empty());
  CHECK(sw(r, "spine0").settings.transit.empty());
  // One PSwitch: the one switch is every tree's root.
  const Deployment s =
      run(single_switch_cluster(4, 10.0),
          {{"jobs", json::array({{{"id", 1}, {"workers", {"w0", "w1", "w2", "w3"}}, {"shape", "chain"}}})}});
  CHECK(s.trees[0].root == "s0");
  CHECK(sw(s, "s0").node.entries[0].fan_in == 4);

  // One spine: every hop crosses it, so a leaf's parent port is also the
  // port its previous leaf's partial arrives by, a relay port (results
  // leave it readdressed to the previous leaf).
  const json three = {
      {"jobs", json::array({{{"id", 1}, {"workers", {"w0", "w1", "w2"}}, {"shape", "chain"}}})}};
  const Deployment o = run(two_tier_cluster(3, 3, 1, 10.0), three);
  const pswitch::TreePorts* mid = sw(o, "leaf1").settings.find_tree(1, 0);
  REQUIRE(mid != nullptr);
  CHECK(mid->parent == 1);
  CHECK(mid->children == std::vector<uint32_t>{0, 1});
  REQUIRE(mid->relays.size() == 1);
  CHECK(mid->relays[0].port == 1);
  const auto& spine = sw(o, "spine0").settings;
  REQUIRE(spine.transit.size() == 2);
  CHECK(spine.transit[0].child == 0);
  CHECK(spine.transit[0].parent == 1);
  CHECK(spine.transit[1].child == 1);
  CHECK(spine.transit[1].parent == 2);
  for (const SwitchOutput& x : o.switches) {
    const pswitch::PswitchSettings back = pswitch::settings_from_json(x.node.pswitch);
    CHECK(pswitch::settings_to_json(back) == x.node.pswitch);
  }
}

TEST_CASE("chain trees: bad shapes and fabrics without a common spine are rejected") {
  json jobs = {{"jobs", json::array({{{"id", 1}, {"workers", {"w0", "w1"}}, {"shape", "ring"}}})}};
  CHECK_THROWS_WITH(parse_jobs(jobs, "jobs.json"),
                    Equals("jobs.json: jobs[0].shape: must be \"spine\" or \"chain\" (got \"ring\")"));
  jobs["jobs"][0]["shape"] = 3;
  CHECK_THROWS_AS(parse_jobs(jobs, "jobs.json"), ControllerError);
  CHECK_THROWS_WITH(parse_jobs(jobs, "jobs.json"), Contains("jobs[0].shape"));
  jobs["jobs"][0].erase("shape");
  CHECK(parse_jobs(jobs).jobs[0].shape == TreeShape::kSpine);

  // A leaf that no spine links to all the others.
  json c = two_tier_cluster(4, 2, 1, 10.0);
  c["links"].erase(c["links"].size() - 1);  // drop leaf1 - spine0
  const json chain = {{"jobs", json::array({{{"id", 1}, {"workers", {"w0", "w1"}}, {"shape", "chain"}}})}};
  CHECK_THROWS_WITH(run(c, chain),
                    Contains("job 1: a chain over its 2 leaves needs a spine PSwitch linked to all"));
}
