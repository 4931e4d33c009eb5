// Parsing, validation and serialisation of the "pswitch" section.
#include "panama/pswitch/settings.hpp"

#include <algorithm>
#include <set>
#include <type_traits>

namespace panama::pswitch {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) {
  throw SettingsError("pswitch section: " + what);
}

template <class T>
T get_or(const json& j, const char* key, T dflt, const std::string& where) {
  if (!j.contains(key)) return dflt;
  if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
    // get<uint64_t>() would turn -1 into 2^64-1.
    const json& v = j.at(key);
    if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0)) {
      fail(where + "." + key + " must be a non-negative integer");
    }
  }
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    fail(where + "." + key + " has the wrong type");
  }
}

void check_probability(double p, const std::string& where) {
  if (!(p >= 0.0 && p <= 1.0)) fail(where + " must be a probability in [0, 1]");
}

}  // namespace

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

PswitchSettings settings_from_json(const json& j) {
  if (!j.is_object()) fail("must be a JSON object");
  PswitchSettings s;
  s.name = get_or<std::string>(j, "name", s.name, "pswitch");
  s.seed = get_or<uint64_t>(j, "seed", s.seed, "pswitch");
  s.engine = get_or<std::string>(j, "engine", s.engine, "pswitch");
  if (s.engine != "model" && s.engine != "rtl") fail("\"engine\" must be \"model\" or \"rtl\"");
  s.engine_queue_bytes = get_or<uint64_t>(j, "engine_queue_bytes", s.engine_queue_bytes, "pswitch");
  if (s.engine_queue_bytes < 9216) fail("engine_queue_bytes must hold at least one 9216-byte frame");
  s.engine_ecn_k_bytes = get_or<uint64_t>(j, "engine_ecn_k_bytes", s.engine_ecn_k_bytes, "pswitch");
  if (!j.contains("ports") || !j["ports"].is_array() || j["ports"].empty()) {
    fail("\"ports\" must be a non-empty array");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < j["ports"].size(); ++i) {
    const json& pj = j["ports"][i];
    const std::string where = "ports[" + std::to_string(i) + "]";
    if (!pj.is_object()) fail(where + " must be an object");
    PortSettings p;
    p.name = get_or<std::string>(pj, "name", "", where);
    if (p.name.empty()) fail(where + ".name is missing");
    if (!names.insert(p.name).second) fail("port name '" + p.name + "' appears twice");
    p.vdev = get_or<std::string>(pj, "vdev", "", where);
    p.rate_gbps = get_or<double>(pj, "rate_gbps", p.rate_gbps, where);
    if (!(p.rate_gbps >= 0.0)) fail(where + ".rate_gbps must be >= 0 (0 = unlimited)");
    p.queue_bytes = get_or<uint64_t>(pj, "queue_bytes", p.queue_bytes, where);
    if (p.queue_bytes < 9216) fail(where + ".queue_bytes must hold at least one 9216-byte frame");
    p.ecn_k_bytes = get_or<uint64_t>(pj, "ecn_k_bytes", p.ecn_k_bytes, where);
    p.uplink = get_or<bool>(pj, "uplink", false, where);
    p.loss = get_or<double>(pj, "loss", 0.0, where);
    p.dup = get_or<double>(pj, "dup", 0.0, where);
    p.reorder = get_or<double>(pj, "reorder", 0.0, where);
    check_probability(p.loss, where + ".loss");
    check_probability(p.dup, where + ".dup");
    check_probability(p.reorder, where + ".reorder");
    s.ports.push_back(p);
  }
  auto port_ref = [&](const json& v, const std::string& where) -> uint32_t {
    if (!v.is_string()) fail(where + " must be a port name");
    const int idx = s.port_index(v.get<std::string>());
    if (idx < 0) fail(where + " names unknown port '" + v.get<std::string>() + "'");
    return static_cast<uint32_t>(idx);
  };
  if (j.contains("trees")) {
    if (!j["trees"].is_array()) fail("\"trees\" must be an array");
    for (size_t i = 0; i < j["trees"].size(); ++i) {
      const json& tj = j["trees"][i];
      const std::string where = "trees[" + std::to_string(i) + "]";
      if (!tj.is_object() || !tj.contains("job") || !tj.contains("tree")) fail(where + " needs job and tree");
      TreePorts t;
      const uint64_t job = get_or<uint64_t>(tj, "job", 0, where);
      const uint64_t tree = get_or<uint64_t>(tj, "tree", 0, where);
      if (job > 0xFFFF) fail(where + ".job must fit 16 bits");
      if (tree > 0xFF) fail(where + ".tree must fit 8 bits");
      t.job = static_cast<uint16_t>(job);
      t.tree = static_cast<uint8_t>(tree);
      if (s.find_tree(t.job, t.tree))
        fail(where + " repeats job " + std::to_string(job) + " tree " + std::to_string(tree));
      if (tj.contains("parent") && !tj["parent"].is_null())
        t.parent = static_cast<int>(port_ref(tj["parent"], where + ".parent"));
      if (!tj.contains("children") || !tj["children"].is_array() || tj["children"].empty()) {
        fail(where + ".children must be a non-empty array of port names");
      }
      for (const json& c : tj["children"]) {
        const uint32_t p = port_ref(c, where + ".children");
        if (static_cast<int>(p) == t.parent) fail(where + ": a port cannot be both parent and child");
        if (std::find(t.children.begin(), t.children.end(), p) != t.children.end()) {
          fail(where + ".children lists port '" + s.ports[p].name +
               "' twice (it would receive every result twice)");
        }
        t.children.push_back(p);
      }
      if (tj.contains("child_ids")) {
        const json& ids = tj["child_ids"];
        if (!ids.is_array() || ids.size() != t.children.size()) {
          fail(where + ".child_ids must be an array with one child id per entry of \"children\"");
        }
        for (size_t k = 0; k < ids.size(); ++k) {
          const json& v = ids[k];
          if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
              v.get<int64_t>() > int64_t{config::kMaxChildId}) {
            fail(where + ".child_ids[" + std::to_string(k) + "] must be a child id in 0..63");
          }
          const uint16_t id = static_cast<uint16_t>(v.get<uint64_t>());
          if (std::find(t.child_ids.begin(), t.child_ids.end(), id) != t.child_ids.end()) {
            fail(where + ".child_ids lists child id " + std::to_string(id) + " twice");
          }
          t.child_ids.push_back(id);
        }
      } else {
        if (t.children.size() > config::kMaxChildId + 1) fail(where + ".children: more than 64 children");
        for (size_t k = 0; k < t.children.size(); ++k) t.child_ids.push_back(static_cast<uint16_t>(k));
      }
      s.trees.push_back(t);
    }
  }
  if (j.contains("mac_table")) {
    if (!j["mac_table"].is_array()) fail("\"mac_table\" must be an array");
    for (size_t i = 0; i < j["mac_table"].size(); ++i) {
      const json& mj = j["mac_table"][i];
      const std::string where = "mac_table[" + std::to_string(i) + "]";
      if (!mj.is_object() || !mj.contains("mac") || !mj.contains("port")) fail(where + " needs mac and port");
      MacRoute r;
      if (!mj["mac"].is_string() || !config::parse_mac(mj["mac"].get<std::string>(), r.mac)) {
        fail(where + ".mac must be a MAC address like 02:00:00:00:01:0a");
      }
      r.port = port_ref(mj["port"], where + ".port");
      s.mac_table.push_back(r);
    }
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
    j["trees"].push_back(tj);
  }
  j["mac_table"] = json::array();
  for (const MacRoute& r : s.mac_table) {
    j["mac_table"].push_back({{"mac", config::format_mac(r.mac)}, {"port", s.ports[r.port].name}});
  }
  return j;
}

void check_trees_against_entries(const PswitchSettings& s, const std::vector<config::EntryConfig>& entries) {
  for (size_t i = 0; i < s.trees.size(); ++i) {
    const TreePorts& t = s.trees[i];
    const std::string where = "trees[" + std::to_string(i) + "] (job " + std::to_string(t.job) + " tree " +
                              std::to_string(t.tree) + ")";
    const config::EntryConfig* e = nullptr;
    for (const config::EntryConfig& c : entries) {
      if (c.job == t.job && c.tree == t.tree) e = &c;
    }
    if (!e) fail(where + " has no engine entry with that (job, tree)");
    if (e->root != (t.parent < 0)) {
      fail(where + (e->root ? " has a parent port but its engine entry is a root"
                            : " has no parent port but its engine entry is not a root"));
    }
    if (t.child_ids.size() != t.children.size()) fail(where + ": child_ids and children differ in length");
    for (size_t k = 0; k < t.child_ids.size(); ++k) {
      if (std::find(e->children.begin(), e->children.end(), t.child_ids[k]) == e->children.end()) {
        fail(where + ": port '" + s.ports[t.children[k]].name + "' is bound to child id " +
             std::to_string(t.child_ids[k]) + ", which the engine entry does not allow");
      }
    }
  }
  for (const config::EntryConfig& e : entries) {
    if (!s.find_tree(e.job, e.tree)) {
      fail("engine entry for job " + std::to_string(e.job) + " tree " + std::to_string(e.tree) +
           " has no tree in \"trees\" (its results would have nowhere to go)");
    }
  }
}

}  // namespace panama::pswitch
