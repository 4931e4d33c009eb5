// Reading and writing job plan files (plan_file.hpp): JSON text <-> Plan,
// every key checked with its path in the message.
#include "panama/runtime/plan_file.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "panama/config/node_config.hpp"
#include "panama/wire.hpp"

namespace panama::runtime {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw PlanError(where.empty() ? what : where + ": " + what);
}

std::string join(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

// Typos in keys would otherwise silently fall back to defaults.
void reject_unknown(const json& obj, const std::string& where, std::initializer_list<const char*> known) {
  std::set<std::string> k;
  for (const char* s : known) k.insert(s);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!k.count(it.key())) fail(join(where, it.key()), "unknown key");
  }
}

const json* find(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const json& require(const json& obj, const std::string& where, const char* key) {
  const json* v = find(obj, key);
  if (!v) fail(join(where, key), "missing (required)");
  return *v;
}

uint64_t get_uint(const json& v, const std::string& where, uint64_t lo, uint64_t hi) {
  if (!v.is_number_integer()) fail(where, "expected an integer, got " + v.dump());
  if (v.is_number_unsigned()) {
    const uint64_t x = v.get<uint64_t>();
    if (x < lo || x > hi)
      fail(where, "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: " + v.dump());
    return x;
  }
  const int64_t x = v.get<int64_t>();
  if (x < 0 || static_cast<uint64_t>(x) < lo || static_cast<uint64_t>(x) > hi) {
    fail(where, "out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: " + v.dump());
  }
  return static_cast<uint64_t>(x);
}

double get_double(const json& v, const std::string& where, double lo, double hi) {
  if (!v.is_number()) fail(where, "expected a number, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    std::ostringstream os;
    os << "out of range [" << lo << ", " << hi << "]: " << v.dump();
    fail(where, os.str());
  }
  return x;
}

std::string get_string(const json& v, const std::string& where) {
  if (!v.is_string()) fail(where, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

template <class T>
void opt_uint(const json& obj, const std::string& where, const char* key, T& out, uint64_t lo, uint64_t hi) {
  if (const json* v = find(obj, key)) out = static_cast<T>(get_uint(*v, join(where, key), lo, hi));
}

void opt_double(const json& obj, const std::string& where, const char* key, double& out, double lo,
                double hi) {
  if (const json* v = find(obj, key)) out = get_double(*v, join(where, key), lo, hi);
}

MacAddress mac_at(const json& v, const std::string& where) {
  const std::string text = get_string(v, where);
  MacAddress m{};
  if (!config::parse_mac(text, m))
    fail(where, "not a MAC address (expected aa:bb:cc:dd:ee:ff): \"" + text + "\"");
  return m;
}

uint32_t ip_at(const json& v, const std::string& where) {
  const std::string text = get_string(v, where);
  uint32_t ip = 0;
  if (!config::parse_ipv4(text, ip)) fail(where, "not an IPv4 address (expected a.b.c.d): \"" + text + "\"");
  return ip;
}

CongestionParams parse_congestion(const json& c, const std::string& where) {
  if (!c.is_object()) fail(where, "expected an object");
  reject_unknown(c, where,
                 {"g", "initial_alpha", "initial_cwnd", "ssthresh", "rto_initial_us", "rto_min_us",
                  "rto_max_us", "rto_backoff", "retry_budget", "failover_after"});
  CongestionParams p;
  opt_double(c, where, "g", p.g, 0.0, 1.0);
  opt_double(c, where, "initial_alpha", p.initial_alpha, 0.0, 1.0);
  opt_double(c, where, "initial_cwnd", p.initial_cwnd, 1.0, 65535.0);
  opt_double(c, where, "ssthresh", p.ssthresh, 1.0, 65535.0);
  opt_uint(c, where, "rto_initial_us", p.rto_initial_us, 1, 60000000);
  opt_uint(c, where, "rto_min_us", p.rto_min_us, 1, 60000000);
  opt_uint(c, where, "rto_max_us", p.rto_max_us, 1, 60000000);
  opt_double(c, where, "rto_backoff", p.rto_backoff, 1.0, 16.0);
  opt_uint(c, where, "retry_budget", p.retry_budget, 0, 1000000);
  opt_uint(c, where, "failover_after", p.failover_after, 1, 1000000);
  return p;
}

TreePlan parse_tree(const json& t, const std::string& where) {
  if (!t.is_object()) fail(where, "expected an object");
  reject_unknown(t, where,
                 {"tree_id", "child_id", "dst_mac", "dst_ip", "initial_cwnd_cap", "backup_for", "uplink"});
  TreePlan p;
  p.tree_id = static_cast<uint8_t>(get_uint(require(t, where, "tree_id"), join(where, "tree_id"), 0, 255));
  p.child_id = static_cast<uint16_t>(get_uint(require(t, where, "child_id"), join(where, "child_id"), 0, 63));
  p.dst_mac = mac_at(require(t, where, "dst_mac"), join(where, "dst_mac"));
  p.dst_ip = ip_at(require(t, where, "dst_ip"), join(where, "dst_ip"));
  opt_uint(t, where, "initial_cwnd_cap", p.initial_cwnd_cap, 1, 0xFFFF);
  opt_uint(t, where, "backup_for", p.backup_for, 0, 255);
  opt_uint(t, where, "uplink", p.uplink, 0, 1);
  return p;
}

}  // namespace

Plan parse_plan(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw PlanError(std::string("plan is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) fail("", "plan must be a JSON object");
  reject_unknown(j, "",
                 {"job_id", "rank", "world_size", "udp_port", "device", "devices", "local_mac", "local_ip",
                  "elems_per_packet", "dscp", "ttl", "trees", "congestion"});
  Plan p;
  p.job_id = static_cast<uint16_t>(get_uint(require(j, "", "job_id"), "job_id", 0, 0xFFFF));
  p.rank = static_cast<uint32_t>(get_uint(require(j, "", "rank"), "rank", 0, 0xFFFFFFFF));
  p.world_size = static_cast<uint32_t>(get_uint(require(j, "", "world_size"), "world_size", 1, 0xFFFFFFFF));
  opt_uint(j, "", "udp_port", p.udp_port, 1, 0xFFFF);
  if (const json* v = find(j, "device")) p.device = get_string(*v, "device");
  if (const json* v = find(j, "devices")) {
    if (!v->is_array()) fail("devices", "expected an array of DPDK port names");
    for (size_t i = 0; i < v->size(); ++i)
      p.devices.push_back(get_string((*v)[i], "devices[" + std::to_string(i) + "]"));
  }
  p.local_mac = mac_at(require(j, "", "local_mac"), "local_mac");
  p.local_ip = ip_at(require(j, "", "local_ip"), "local_ip");
  opt_uint(j, "", "elems_per_packet", p.elems_per_packet, 1, wire::kMaxElemsPerFrame);
  opt_uint(j, "", "dscp", p.dscp, 0, 63);
  opt_uint(j, "", "ttl", p.ttl, 1, 255);
  const json& trees = require(j, "", "trees");
  if (!trees.is_array()) fail("trees", "expected an array");
  for (size_t i = 0; i < trees.size(); ++i)
    p.trees.push_back(parse_tree(trees[i], "trees[" + std::to_string(i) + "]"));
  if (const json* c = find(j, "congestion")) p.congestion = parse_congestion(*c, "congestion");
  validate_plan(p);
  return p;
}

Plan load_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw PlanError("cannot open plan file \"" + path + "\"");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return parse_plan(ss.str());
  } catch (const PlanError& e) {
    throw PlanError(path + ": " + e.what());
  }
}

std::string plan_to_json(const Plan& p) {
  json j;
  j["job_id"] = p.job_id;
  j["rank"] = p.rank;
  j["world_size"] = p.world_size;
  j["udp_port"] = p.udp_port;
  if (!p.device.empty()) j["device"] = p.device;
  if (!p.devices.empty()) j["devices"] = p.devices;
  j["local_mac"] = config::format_mac(p.local_mac);
  j["local_ip"] = config::format_ipv4(p.local_ip);
  j["elems_per_packet"] = p.elems_per_packet;
  j["dscp"] = p.dscp;
  j["ttl"] = p.ttl;
  j["trees"] = json::array();
  for (const TreePlan& t : p.trees) {
    json tj = {{"tree_id", t.tree_id},
               {"child_id", t.child_id},
               {"dst_mac", config::format_mac(t.dst_mac)},
               {"dst_ip", config::format_ipv4(t.dst_ip)},
               {"initial_cwnd_cap", t.initial_cwnd_cap}};
    if (t.backup_for >= 0) tj["backup_for"] = t.backup_for;
    if (t.uplink != 0) tj["uplink"] = t.uplink;
    j["trees"].push_back(tj);
  }
  const CongestionParams& c = p.congestion;
  j["congestion"] = {{"g", c.g},
                     {"initial_alpha", c.initial_alpha},
                     {"initial_cwnd", c.initial_cwnd},
                     {"ssthresh", c.ssthresh},
                     {"rto_initial_us", c.rto_initial_us},
                     {"rto_min_us", c.rto_min_us},
                     {"rto_max_us", c.rto_max_us},
                     {"rto_backoff", c.rto_backoff},
                     {"retry_budget", c.retry_budget},
                     {"failover_after", c.failover_after}};
  return j.dump(2) + "\n";
}

}  // namespace panama::runtime
