// Reading and writing job plan files (plan_file.hpp): JSON text <-> Plan,
// every key checked by the JSON object reader (panama/config/json_reader.hpp).
#include "panama/runtime/plan_file.hpp"

#include <nlohmann/json.hpp>

#include "panama/config/json_reader.hpp"
#include "panama/config/node_config.hpp"
#include "panama/wire.hpp"

namespace panama::runtime {
namespace {

using config::JsonObject;
using config::JsonSource;
using nlohmann::json;

CongestionParams parse_congestion(const JsonObject& c) {
  CongestionParams p;
  p.g = c.number("g", 0.0, 1.0, p.g);
  p.initial_alpha = c.number("initial_alpha", 0.0, 1.0, p.initial_alpha);
  p.initial_cwnd = c.number("initial_cwnd", 1.0, 65535.0, p.initial_cwnd);
  p.ssthresh = c.number("ssthresh", 1.0, 65535.0, p.ssthresh);
  p.rto_initial_us = static_cast<uint32_t>(c.uint("rto_initial_us", 1, 60000000, p.rto_initial_us));
  p.rto_min_us = static_cast<uint32_t>(c.uint("rto_min_us", 1, 60000000, p.rto_min_us));
  p.rto_max_us = static_cast<uint32_t>(c.uint("rto_max_us", 1, 60000000, p.rto_max_us));
  p.rto_backoff = c.number("rto_backoff", 1.0, 16.0, p.rto_backoff);
  p.retry_budget = static_cast<uint32_t>(c.uint("retry_budget", 0, 1000000, p.retry_budget));
  p.failover_after = static_cast<uint32_t>(c.uint("failover_after", 1, 1000000, p.failover_after));
  return p;
}

TreePlan parse_tree(const JsonObject& t) {
  TreePlan p;
  p.tree_id = static_cast<uint8_t>(t.uint("tree_id", 0, 255));
  p.child_id = static_cast<uint16_t>(t.uint("child_id", 0, 63));
  p.dst_mac = t.mac("dst_mac");
  p.dst_ip = t.ipv4("dst_ip");
  p.initial_cwnd_cap = static_cast<uint16_t>(t.uint("initial_cwnd_cap", 1, 0xFFFF, p.initial_cwnd_cap));
  if (t.has("backup_for")) p.backup_for = static_cast<int16_t>(t.uint("backup_for", 0, 255));
  p.uplink = static_cast<uint8_t>(t.uint("uplink", 0, 1, p.uplink));
  return p;
}

Plan parse_plan_json(const json& j, const JsonSource& src) {
  // Typos in keys would otherwise silently fall back to defaults.
  const JsonObject top(src, j, "",
                       {"job_id", "rank", "world_size", "udp_port", "device", "devices", "local_mac",
                        "local_ip", "elems_per_packet", "dscp", "ttl", "trees", "congestion", "pooled"});
  Plan p;
  p.job_id = static_cast<uint16_t>(top.uint("job_id", 0, 0xFFFF));
  p.rank = static_cast<uint32_t>(top.uint("rank", 0, 0xFFFFFFFF));
  p.world_size = static_cast<uint32_t>(top.uint("world_size", 1, 0xFFFFFFFF));
  p.udp_port = static_cast<uint16_t>(top.uint("udp_port", 1, 0xFFFF, p.udp_port));
  p.device = top.string("device", p.device);
  if (top.has("devices")) {
    const json& devices = top.array("devices");
    for (size_t i = 0; i < devices.size(); ++i)
      p.devices.push_back(src.string(devices[i], config::json_path("devices", i)));
  }
  p.local_mac = top.mac("local_mac");
  p.local_ip = top.ipv4("local_ip");
  p.elems_per_packet =
      static_cast<uint32_t>(top.uint("elems_per_packet", 1, wire::kMaxElemsPerFrame, p.elems_per_packet));
  p.dscp = static_cast<uint8_t>(top.uint("dscp", 0, 63, p.dscp));
  p.ttl = static_cast<uint8_t>(top.uint("ttl", 1, 255, p.ttl));
  const json& trees = top.array("trees");
  for (size_t i = 0; i < trees.size(); ++i) {
    p.trees.push_back(parse_tree(JsonObject(
        src, trees[i], config::json_path("trees", i),
        {"tree_id", "child_id", "dst_mac", "dst_ip", "initial_cwnd_cap", "backup_for", "uplink"})));
  }
  if (top.has("congestion")) {
    p.congestion = parse_congestion(top.object(
        "congestion", {"g", "initial_alpha", "initial_cwnd", "ssthresh", "rto_initial_us", "rto_min_us",
                       "rto_max_us", "rto_backoff", "retry_budget", "failover_after"}));
  }
  if (top.has("pooled")) {
    const JsonObject q =
        top.object("pooled", {"group_size", "ring_position", "next_mac", "next_ip", "prev_mac", "prev_ip",
                              "ring_port", "ring_window", "ring_congestion"});
    PooledPlan pp;
    pp.group_size = static_cast<uint32_t>(q.uint("group_size", 1, 512));
    if (q.has("ring_position"))
      pp.ring_position = static_cast<uint32_t>(q.uint("ring_position", 0, 0xFFFFFFFFu));
    pp.next_mac = q.mac("next_mac");
    pp.next_ip = q.ipv4("next_ip");
    pp.prev_mac = q.mac("prev_mac");
    pp.prev_ip = q.ipv4("prev_ip");
    pp.ring_port = static_cast<uint16_t>(q.uint("ring_port", 1, 0xFFFF, pp.ring_port));
    pp.ring_window = static_cast<uint32_t>(q.uint("ring_window", 1, 65536, pp.ring_window));
    pp.ring_congestion = q.boolean("ring_congestion", false);
    p.pooled = pp;
  }
  // What one key alone cannot tell (validate_plan names the path).
  try {
    validate_plan(p);
  } catch (const PlanError& e) {
    src.fail_file(e.what());
  }
  return p;
}

}  // namespace

Plan parse_plan(const std::string& text, const std::string& origin) {
  const JsonSource src(origin, &config::throw_as<PlanError>);
  return parse_plan_json(config::parse_json_text(text, src), src);
}

Plan load_plan(const std::string& path) {
  const JsonSource src(path, &config::throw_as<PlanError>);
  return parse_plan_json(config::read_json_file(path, &config::throw_as<PlanError>), src);
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
  if (p.pooled) {
    const PooledPlan& q = *p.pooled;
    j["pooled"] = {{"group_size", q.group_size},
                   {"next_mac", config::format_mac(q.next_mac)},
                   {"next_ip", config::format_ipv4(q.next_ip)},
                   {"prev_mac", config::format_mac(q.prev_mac)},
                   {"prev_ip", config::format_ipv4(q.prev_ip)},
                   {"ring_window", q.ring_window},
                   {"ring_congestion", q.ring_congestion}};
    if (q.ring_position) j["pooled"]["ring_position"] = *q.ring_position;
    if (q.ring_port != 0) j["pooled"]["ring_port"] = q.ring_port;
  }
  return j.dump(2) + "\n";
}

}  // namespace panama::runtime
