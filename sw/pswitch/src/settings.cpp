// Parsing (with the JSON object reader, panama/config/json_reader.hpp),
// validation and serialisation of the "pswitch" section.
#include "panama/pswitch/settings.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "panama/config/json_reader.hpp"
#include "panama/engine_sizes.hpp"
#include "panama/pswitch/claim_pool.hpp"
#include "panama/pswitch/output_queue.hpp"

namespace panama::pswitch {

namespace {

using config::JsonObject;
using config::JsonSource;
using nlohmann::json;

constexpr uint64_t kMaxFrame = 9216;  // a queue holds at least one frame

// A queue size: at least one frame.
uint64_t queue_size(const JsonObject& o, const char* key, uint64_t fallback) {
  const uint64_t v = o.uint(key, 0, UINT64_MAX, fallback);
  if (v < kMaxFrame) {
    o.fail(key, "out of range: " + std::to_string(v) + " is not >= " + std::to_string(kMaxFrame) +
                    " (one 9216-byte frame)");
  }
  return v;
}

// The "pool" object; `s` holds the ports and trees already.
PoolSettings parse_pool(const JsonObject& pj, const PswitchSettings& s) {
  const JsonSource& src = pj.source();
  PoolSettings p;
  p.size = static_cast<uint32_t>(pj.uint("size", 1, ClaimPool::kMaxSlots));
  p.base = static_cast<uint32_t>(pj.uint("base", 0, kEnginePacketSlots - 1));
  if (p.base + p.size > kEnginePacketSlots) {
    pj.fail("size", "slots " + std::to_string(p.base) + ".." + std::to_string(p.base + p.size - 1) +
                        " run past the engine's " + std::to_string(kEnginePacketSlots) + " slots");
  }
  p.lease_ns = pj.uint("lease_ns", 1, UINT64_MAX);
  p.table_base = static_cast<uint32_t>(pj.uint("table_base", 0, kEngineTableEntries - 1));
  p.table_count = static_cast<uint32_t>(pj.uint("table_count", 1, 256));
  if (p.table_base + p.table_count > kEngineTableEntries) {
    pj.fail("table_count", "table entries " + std::to_string(p.table_base) + ".." +
                               std::to_string(p.table_base + p.table_count - 1) + " run past the engine's " +
                               std::to_string(kEngineTableEntries) + " entries");
  }
  p.claim_job = static_cast<uint16_t>(pj.uint("claim_job", 0, 0xFFFF, p.claim_job));
  // A claim entry's key is (claim_job, 0 .. table_count - 1): no tree of this
  // switch, served or passed through, may have one.
  auto claims_key = [&](uint16_t job, uint8_t tree) { return job == p.claim_job && tree < p.table_count; };
  for (const TreePorts& t : s.trees) {
    if (claims_key(t.job, t.tree)) {
      pj.fail("claim_job", "job " + std::to_string(t.job) + " tree " + std::to_string(t.tree) +
                               " of \"trees\" has the key of a claim entry (claim_job " +
                               std::to_string(p.claim_job) + ", trees 0.." +
                               std::to_string(p.table_count - 1) + ")");
    }
  }
  for (const TransitHop& h : s.transit) {
    if (claims_key(h.job, h.tree)) {
      pj.fail("claim_job", "job " + std::to_string(h.job) + " tree " + std::to_string(h.tree) +
                               " of \"transit\" has the key of a claim entry (claim_job " +
                               std::to_string(p.claim_job) + ")");
    }
  }
  const json& trees = pj.array("trees", true);
  for (size_t i = 0; i < trees.size(); ++i) {
    const JsonObject tj(src, trees[i], config::json_path(pj.path("trees"), i),
                        {"job", "tree", "group_size", "claim_cap"});
    PooledTree t;
    t.job = static_cast<uint16_t>(tj.uint("job", 0, 0xFFFF));
    t.tree = static_cast<uint8_t>(tj.uint("tree", 0, 0xFF));
    const std::string name = "job " + std::to_string(t.job) + " tree " + std::to_string(t.tree);
    if (p.find(t.job, t.tree)) tj.fail(name + " is pooled twice");
    const TreePorts* ports = s.find_tree(t.job, t.tree);
    if (!ports) tj.fail(name + " is not in \"trees\" (a pooled tree is one this switch serves)");
    if (ports->children.empty() || ports->children.size() > ClaimPool::kMaxChildren) {
      tj.fail(name + " has " + std::to_string(ports->children.size()) + " children; a pooled tree has 1.." +
              std::to_string(ClaimPool::kMaxChildren));
    }
    t.group_size = static_cast<uint32_t>(tj.uint("group_size", 1, p.size));
    t.claim_cap = static_cast<uint32_t>(tj.uint("claim_cap", 1, UINT32_MAX));
    if (t.claim_cap < t.group_size) {
      tj.fail("claim_cap", "claim cap " + std::to_string(t.claim_cap) + " is below the group size " +
                               std::to_string(t.group_size) + " (no claim could ever be granted)");
    }
    if (t.claim_cap > p.size) {
      tj.fail("claim_cap", "claim cap " + std::to_string(t.claim_cap) + " is larger than the pool (" +
                               std::to_string(p.size) + " slots): the cap would not keep tenants apart");
    }
    p.trees.push_back(t);
  }
  return p;
}

}  // namespace

const PooledTree* PoolSettings::find(uint16_t job, uint8_t tree) const {
  for (const PooledTree& t : trees) {
    if (t.job == job && t.tree == tree) return &t;
  }
  return nullptr;
}

int PswitchSettings::port_index(const std::string& n) const {
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

const TreePorts* PswitchSettings::find_tree(uint16_t job, uint8_t tree) const {
  for (const TreePorts& t : trees) {
    if (t.job == job && t.tree == tree) return &t;
  }
  return nullptr;
}

PswitchSettings settings_from_json(const json& j, const std::string& origin) {
  const JsonSource src(origin, &config::throw_as<SettingsError>);
  const JsonObject top(src, j, "pswitch",
                       {"name", "seed", "engine", "engine_queue_bytes", "engine_ecn_k_bytes", "priority_dscp",
                        "ports", "trees", "transit", "mac_table", "pool"});
  PswitchSettings s;
  s.name = top.string("name", s.name);
  s.seed = top.uint("seed", 0, UINT64_MAX, s.seed);
  s.engine = top.string("engine", s.engine);
  if (s.engine != "model" && s.engine != "rtl") {
    top.fail("engine", "must be \"model\" or \"rtl\" (got \"" + s.engine + "\")");
  }
  s.engine_queue_bytes = queue_size(top, "engine_queue_bytes", s.engine_queue_bytes);
  s.engine_ecn_k_bytes = top.uint("engine_ecn_k_bytes", 0, UINT64_MAX, s.engine_ecn_k_bytes);
  if (top.has("priority_dscp")) {
    const json& levels = top.array("priority_dscp");
    if (levels.size() > kMaxPriorityLevels) {
      top.fail("priority_dscp", "at most " + std::to_string(kMaxPriorityLevels) + " priority levels (got " +
                                    std::to_string(levels.size()) + ")");
    }
    for (size_t l = 0; l < levels.size(); ++l) {
      const std::string path = config::json_path(top.path("priority_dscp"), l);
      const uint8_t d = static_cast<uint8_t>(src.uint(levels[l], path, 0, 63));
      if (std::find(s.priority_dscp.begin(), s.priority_dscp.end(), d) != s.priority_dscp.end()) {
        src.fail(path, "DSCP " + std::to_string(d) + " is listed twice (two levels would share one queue)");
      }
      s.priority_dscp.push_back(d);
    }
  }
  const json& ports = top.array("ports", true);
  for (size_t i = 0; i < ports.size(); ++i) {
    const JsonObject pj(
        src, ports[i], config::json_path(top.path("ports"), i),
        {"name", "vdev", "rate_gbps", "queue_bytes", "ecn_k_bytes", "uplink", "loss", "dup", "reorder"});
    PortSettings p;
    p.name = pj.string("name");
    if (p.name.empty()) pj.fail("name", "must not be empty");
    if (s.port_index(p.name) >= 0) pj.fail("name", "port name '" + p.name + "' appears twice");
    p.vdev = pj.string("vdev", "");
    p.rate_gbps = pj.number("rate_gbps", 0.0, std::numeric_limits<double>::infinity(), p.rate_gbps);
    p.queue_bytes = queue_size(pj, "queue_bytes", p.queue_bytes);
    p.ecn_k_bytes = pj.uint("ecn_k_bytes", 0, UINT64_MAX, p.ecn_k_bytes);
    p.uplink = pj.boolean("uplink", false);
    p.loss = pj.number("loss", 0.0, 1.0, 0.0);
    p.dup = pj.number("dup", 0.0, 1.0, 0.0);
    p.reorder = pj.number("reorder", 0.0, 1.0, 0.0);
    s.ports.push_back(p);
  }
  auto port_ref = [&](const json& v, const std::string& path) -> uint32_t {
    const std::string name = src.string(v, path);
    const int idx = s.port_index(name);
    if (idx < 0) src.fail(path, "no port named '" + name + "'");
    return static_cast<uint32_t>(idx);
  };
  if (top.has("trees")) {
    const json& trees = top.array("trees");
    for (size_t i = 0; i < trees.size(); ++i) {
      const JsonObject tj(src, trees[i], config::json_path(top.path("trees"), i),
                          {"job", "tree", "parent", "children", "child_ids", "relays", "group"});
      TreePorts t;
      t.job = static_cast<uint16_t>(tj.uint("job", 0, 0xFFFF));
      t.tree = static_cast<uint8_t>(tj.uint("tree", 0, 0xFF));
      if (s.find_tree(t.job, t.tree)) {
        tj.fail("repeats job " + std::to_string(t.job) + " tree " + std::to_string(t.tree));
      }
      if (const json* parent = tj.find("parent"); parent != nullptr && !parent->is_null())
        t.parent = static_cast<int>(port_ref(*parent, tj.path("parent")));
      const json& children = tj.array("children", true);
      for (size_t k = 0; k < children.size(); ++k) {
        const std::string path = config::json_path(tj.path("children"), k);
        const uint32_t p = port_ref(children[k], path);
        if (std::find(t.children.begin(), t.children.end(), p) != t.children.end()) {
          src.fail(path,
                   "port '" + s.ports[p].name + "' is listed twice (it would receive every result twice)");
        }
        t.children.push_back(p);
      }
      if (tj.has("relays")) {
        const json& relays = tj.array("relays");
        for (size_t k = 0; k < relays.size(); ++k) {
          const JsonObject rj(src, relays[k], config::json_path(tj.path("relays"), k), {"port", "mac", "ip"});
          RelayChild r;
          r.port = port_ref(rj.require("port"), rj.path("port"));
          if (std::find(t.children.begin(), t.children.end(), r.port) == t.children.end())
            rj.fail("port", "port '" + s.ports[r.port].name + "' is not one of the tree's children");
          for (const RelayChild& o : t.relays) {
            if (o.port == r.port) rj.fail("port", "port '" + s.ports[r.port].name + "' is listed twice");
          }
          r.mac = rj.mac("mac");
          r.ip = rj.ipv4("ip");
          t.relays.push_back(r);
        }
      }
      if (tj.has("group")) {
        const JsonObject gj = tj.object("group", {"mac", "ip"});
        t.group_mac = gj.mac("mac");
        t.group_ip = gj.ipv4("ip");
      }
      // A relay port may be the parent port too (a chain through one spine:
      // results come in from the next leaf and go out, readdressed, to the
      // previous one); any other port cannot.
      for (size_t k = 0; k < t.children.size(); ++k) {
        const bool relay = std::any_of(t.relays.begin(), t.relays.end(),
                                       [&](const RelayChild& r) { return r.port == t.children[k]; });
        if (static_cast<int>(t.children[k]) == t.parent && !relay) {
          src.fail(config::json_path(tj.path("children"), k), "a port cannot be both parent and child");
        }
      }
      if (tj.has("child_ids")) {
        const json& ids = tj.array("child_ids");
        if (ids.size() != t.children.size()) {
          tj.fail("child_ids", "one child id per entry of \"children\" is needed (" +
                                   std::to_string(t.children.size()) + ", got " + std::to_string(ids.size()) +
                                   ")");
        }
        for (size_t k = 0; k < ids.size(); ++k) {
          const std::string path = config::json_path(tj.path("child_ids"), k);
          const uint16_t id = static_cast<uint16_t>(src.uint(ids[k], path, 0, config::kMaxChildId));
          if (std::find(t.child_ids.begin(), t.child_ids.end(), id) != t.child_ids.end()) {
            src.fail(path, "child id " + std::to_string(id) + " is listed twice");
          }
          t.child_ids.push_back(id);
        }
      } else {
        if (t.children.size() > config::kMaxChildId + 1) tj.fail("children", "more than 64 children");
        for (size_t k = 0; k < t.children.size(); ++k) t.child_ids.push_back(static_cast<uint16_t>(k));
      }
      s.trees.push_back(t);
    }
  }
  if (top.has("transit")) {
    const json& transit = top.array("transit");
    for (size_t i = 0; i < transit.size(); ++i) {
      const JsonObject hj(src, transit[i], config::json_path(top.path("transit"), i),
                          {"job", "tree", "child", "parent"});
      TransitHop h;
      h.job = static_cast<uint16_t>(hj.uint("job", 0, 0xFFFF));
      h.tree = static_cast<uint8_t>(hj.uint("tree", 0, 0xFF));
      h.child = port_ref(hj.require("child"), hj.path("child"));
      h.parent = port_ref(hj.require("parent"), hj.path("parent"));
      if (h.child == h.parent) hj.fail("parent", "the same port as \"child\"");
      if (s.find_tree(h.job, h.tree)) {
        hj.fail("job " + std::to_string(h.job) + " tree " + std::to_string(h.tree) +
                " is served here (in \"trees\"); a hop passes a tree this switch does not serve");
      }
      for (const TransitHop& o : s.transit) {
        if (o.job == h.job && o.tree == h.tree && (o.child == h.child || o.parent == h.parent)) {
          hj.fail("repeats a port of another hop of job " + std::to_string(h.job) + " tree " +
                  std::to_string(h.tree) + " in the same role");
        }
      }
      s.transit.push_back(h);
    }
  }
  if (top.has("mac_table")) {
    const json& table = top.array("mac_table");
    for (size_t i = 0; i < table.size(); ++i) {
      const JsonObject mj(src, table[i], config::json_path(top.path("mac_table"), i), {"mac", "port"});
      MacRoute r;
      r.mac = mj.mac("mac");
      r.port = port_ref(mj.require("port"), mj.path("port"));
      s.mac_table.push_back(r);
    }
  }
  if (top.has("pool")) {
    s.pool = parse_pool(
        top.object("pool", {"base", "size", "lease_ns", "table_base", "table_count", "claim_job", "trees"}),
        s);
  }
  return s;
}

json settings_to_json(const PswitchSettings& s) {
  json j;
  j["name"] = s.name;
  j["seed"] = s.seed;
  j["engine"] = s.engine;
  j["engine_queue_bytes"] = s.engine_queue_bytes;
  j["engine_ecn_k_bytes"] = s.engine_ecn_k_bytes;
  // Only with levels: a section without them reads as before.
  if (!s.priority_dscp.empty()) j["priority_dscp"] = s.priority_dscp;
  j["ports"] = json::array();
  for (const PortSettings& p : s.ports) {
    j["ports"].push_back({{"name", p.name},
                          {"vdev", p.vdev},
                          {"rate_gbps", p.rate_gbps},
                          {"queue_bytes", p.queue_bytes},
                          {"ecn_k_bytes", p.ecn_k_bytes},
                          {"loss", p.loss},
                          {"dup", p.dup},
                          {"reorder", p.reorder},
                          {"uplink", p.uplink}});
  }
  j["trees"] = json::array();
  for (const TreePorts& t : s.trees) {
    json tj = {{"job", t.job}, {"tree", t.tree}};
    tj["parent"] = t.parent < 0 ? json(nullptr) : json(s.ports[t.parent].name);
    tj["children"] = json::array();
    for (uint32_t c : t.children) tj["children"].push_back(s.ports[c].name);
    tj["child_ids"] = t.child_ids;
    if (!t.relays.empty()) {
      tj["relays"] = json::array();
      for (const RelayChild& r : t.relays) {
        tj["relays"].push_back({{"port", s.ports[r.port].name},
                                {"mac", config::format_mac(r.mac)},
                                {"ip", config::format_ipv4(r.ip)}});
      }
    }
    if (t.group_ip != 0)
      tj["group"] = {{"mac", config::format_mac(t.group_mac)}, {"ip", config::format_ipv4(t.group_ip)}};
    j["trees"].push_back(tj);
  }
  if (!s.transit.empty()) {
    j["transit"] = json::array();
    for (const TransitHop& h : s.transit) {
      j["transit"].push_back({{"job", h.job},
                              {"tree", h.tree},
                              {"child", s.ports[h.child].name},
                              {"parent", s.ports[h.parent].name}});
    }
  }
  j["mac_table"] = json::array();
  for (const MacRoute& r : s.mac_table) {
    j["mac_table"].push_back({{"mac", config::format_mac(r.mac)}, {"port", s.ports[r.port].name}});
  }
  if (s.pool) {
    const PoolSettings& p = *s.pool;
    json pj = {{"base", p.base},
               {"size", p.size},
               {"lease_ns", p.lease_ns},
               {"table_base", p.table_base},
               {"table_count", p.table_count},
               {"claim_job", p.claim_job}};
    pj["trees"] = json::array();
    for (const PooledTree& t : p.trees) {
      pj["trees"].push_back(
          {{"job", t.job}, {"tree", t.tree}, {"group_size", t.group_size}, {"claim_cap", t.claim_cap}});
    }
    j["pool"] = pj;
  }
  return j;
}

void check_trees_against_entries(const PswitchSettings& s, const std::vector<config::EntryConfig>& entries,
                                 const std::string& origin) {
  const JsonSource src(origin, &config::throw_as<SettingsError>);
  for (size_t i = 0; i < s.trees.size(); ++i) {
    const TreePorts& t = s.trees[i];
    const std::string path = config::json_path("pswitch.trees", i);
    const std::string tree = "job " + std::to_string(t.job) + " tree " + std::to_string(t.tree);
    const config::EntryConfig* e = nullptr;
    for (const config::EntryConfig& c : entries) {
      if (c.job == t.job && c.tree == t.tree) e = &c;
    }
    if (!e) src.fail(path, tree + " has no engine entry with that (job, tree)");
    if (e->root != (t.parent < 0)) {
      src.fail(path, tree + (e->root ? " has a parent port but its engine entry is a root"
                                     : " has no parent port but its engine entry is not a root"));
    }
    if (t.child_ids.size() != t.children.size()) src.fail(path, "child_ids and children differ in length");
    for (size_t k = 0; k < t.child_ids.size(); ++k) {
      if (std::find(e->children.begin(), e->children.end(), t.child_ids[k]) == e->children.end()) {
        src.fail(path, "port '" + s.ports[t.children[k]].name + "' is bound to child id " +
                           std::to_string(t.child_ids[k]) + ", which the engine entry of " + tree +
                           " does not allow");
      }
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const config::EntryConfig& e = entries[i];
    const std::string path = config::json_path("entries", i);
    const std::string tree = "job " + std::to_string(e.job) + " tree " + std::to_string(e.tree);
    if (s.pool) {
      const PoolSettings& p = *s.pool;
      if (e.index >= p.table_base && e.index - p.table_base < p.table_count) {
        src.fail(path, tree + ": table entry " + std::to_string(e.index) +
                           " is one of the pool's claim entries (pswitch.pool.table_base " +
                           std::to_string(p.table_base) + ", table_count " + std::to_string(p.table_count) +
                           ")");
      }
      if (e.job == p.claim_job && e.tree < p.table_count) {
        src.fail(path, tree + " has the key of a claim entry (pswitch.pool.claim_job)");
      }
      if (p.find(e.job, e.tree)) {
        const TreePorts* tp = s.find_tree(e.job, e.tree);
        if (tp && e.fan_in > tp->children.size()) {
          src.fail(path, tree + " is pooled with " + std::to_string(tp->children.size()) +
                             " children but its fan-in is " + std::to_string(e.fan_in));
        }
      } else if (e.slot_base < p.base + p.size && p.base < e.slot_base + e.slot_count) {
        src.fail(path, tree + ": slots " + std::to_string(e.slot_base) + ".." +
                           std::to_string(e.slot_base + e.slot_count - 1) + " reach into the pool (slots " +
                           std::to_string(p.base) + ".." + std::to_string(p.base + p.size - 1) + ")");
      }
    }
    if (!s.find_tree(e.job, e.tree)) {
      src.fail(config::json_path("entries", i),
               "job " + std::to_string(e.job) + " tree " + std::to_string(e.tree) +
                   " has no tree in \"pswitch.trees\" (its results would have "
                   "nowhere to go)");
    }
  }
}

}  // namespace panama::pswitch
