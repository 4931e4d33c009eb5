// Reading the controller's input: the cluster description and the job
// description (docs/controller.md).
#include <algorithm>

#include "panama/controller/controller.hpp"
#include "panama/runtime/plan_file.hpp"
#include "panama/wire.hpp"

namespace panama::controller {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& what) {
  throw ControllerError(what);
}

void reject_unknown(const json& obj, const std::string& where, std::initializer_list<const char*> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (std::find_if(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }) ==
        known.end()) {
      fail(where + "." + it.key() + ": unknown key");
    }
  }
}

template <class T>
T get(const json& obj, const char* key, T dflt, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return dflt;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    fail(where + "." + key + ": wrong type (" + it->dump() + ")");
  }
}

uint64_t get_uint(const json& obj, const char* key, uint64_t dflt, uint64_t lo, uint64_t hi,
                  const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return dflt;
  if (!it->is_number_integer() ||
      (it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() < 0)) {
    fail(where + "." + key + ": expected a non-negative integer, got " + it->dump());
  }
  const uint64_t v = it->get<uint64_t>();
  if (v < lo || v > hi) {
    fail(where + "." + key + ": " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  }
  return v;
}

double get_prob(const json& obj, const char* key, double dflt, const std::string& where) {
  const double p = get<double>(obj, key, dflt, where);
  if (!(p >= 0.0 && p <= 1.0)) fail(where + "." + key + ": must be a probability in [0, 1]");
  return p;
}

config::MacAddress auto_mac(uint8_t kind, size_t index) {
  return {0x02, 0x00, 0x00, kind, static_cast<uint8_t>(index >> 8), static_cast<uint8_t>(index)};
}
uint32_t auto_ip(uint8_t kind, size_t index) {
  return (10u << 24) | (uint32_t{kind} << 16) | static_cast<uint32_t>(index + 1);
}

void read_address(const json& o, const std::string& where, config::MacAddress& mac, uint32_t& ip) {
  if (o.contains("mac")) {
    if (!o["mac"].is_string() || !config::parse_mac(o["mac"].get<std::string>(), mac)) {
      fail(where + ".mac: not a MAC address: " + o["mac"].dump());
    }
  }
  if (o.contains("ip")) {
    if (!o["ip"].is_string() || !config::parse_ipv4(o["ip"].get<std::string>(), ip)) {
      fail(where + ".ip: not an IPv4 address: " + o["ip"].dump());
    }
  }
}

// The engine capacity keys of a cluster or PSwitch object. The bounds are
// the register map's: at most 256 entries, a share's E_SLOT_COUNT is 16 bits
// wide in effect (cwnd_cap), and an element count is a 16-bit field.
EngineCapacity read_capacity(const json& o, const std::string& where, const EngineCapacity& dflt) {
  EngineCapacity e;
  e.table_entries = static_cast<uint32_t>(get_uint(o, "table_entries", dflt.table_entries, 1, 256, where));
  e.packet_memory =
      static_cast<uint32_t>(get_uint(o, "packet_memory", dflt.packet_memory, 1, 1u << 24, where));
  e.slot_elems = static_cast<uint32_t>(get_uint(o, "slot_elems", dflt.slot_elems, 1, 0xFFFF, where));
  return e;
}

}  // namespace

ClusterDesc parse_cluster(const json& j) {
  const std::string w = "cluster";
  if (!j.is_object()) fail("cluster: must be a JSON object");
  reject_unknown(j, w,
                 {"name", "hosts", "pswitches", "links", "port_defaults", "run_dir", "packet_memory",
                  "table_entries", "slot_elems", "engine_ecn_k_bytes"});
  ClusterDesc c;
  c.run_dir = get<std::string>(j, "run_dir", c.run_dir, w);
  c.engine_ecn_k_bytes = get_uint(j, "engine_ecn_k_bytes", c.engine_ecn_k_bytes, 0, uint64_t{1} << 40, w);
  const EngineCapacity default_engine = read_capacity(j, w, EngineCapacity{});
  for (const char* key : {"hosts", "pswitches", "links"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].empty()) {
      fail(w + "." + key + ": missing or empty (a non-empty array is required)");
    }
  }
  for (size_t i = 0; i < j["hosts"].size(); ++i) {
    const json& o = j["hosts"][i];
    const std::string where = w + ".hosts[" + std::to_string(i) + "]";
    HostDesc h;
    h.mac = auto_mac(1, i);
    h.ip = auto_ip(1, i);
    if (o.is_string()) {
      h.name = o.get<std::string>();
    } else if (o.is_object()) {
      reject_unknown(o, where, {"name", "mac", "ip"});
      h.name = get<std::string>(o, "name", "", where);
      read_address(o, where, h.mac, h.ip);
    } else {
      fail(where + ": expected a name or an object");
    }
    if (h.name.empty()) fail(where + ".name: missing");
    c.hosts.push_back(h);
  }
  for (size_t i = 0; i < j["pswitches"].size(); ++i) {
    const json& o = j["pswitches"][i];
    const std::string where = w + ".pswitches[" + std::to_string(i) + "]";
    SwitchDesc s;
    s.mac = auto_mac(2, i);
    s.ip = auto_ip(2, i);
    s.engine = default_engine;
    if (o.is_string()) {
      s.name = o.get<std::string>();
    } else if (o.is_object()) {
      reject_unknown(o, where, {"name", "mac", "ip", "packet_memory", "table_entries", "slot_elems"});
      s.name = get<std::string>(o, "name", "", where);
      read_address(o, where, s.mac, s.ip);
      s.engine = read_capacity(o, where, default_engine);
    } else {
      fail(where + ": expected a name or an object");
    }
    if (s.name.empty()) fail(where + ".name: missing");
    c.switches.push_back(s);
  }
  for (size_t i = 0; i < j["links"].size(); ++i) {
    const json& o = j["links"][i];
    const std::string where = w + ".links[" + std::to_string(i) + "]";
    if (!o.is_object()) fail(where + ": expected an object {\"a\", \"b\", \"rate_gbps\"}");
    reject_unknown(o, where, {"a", "b", "rate_gbps"});
    LinkDesc l;
    l.a = get<std::string>(o, "a", "", where);
    l.b = get<std::string>(o, "b", "", where);
    l.rate_gbps = get<double>(o, "rate_gbps", l.rate_gbps, where);
    if (l.a.empty() || l.b.empty()) fail(where + ": needs both ends \"a\" and \"b\"");
    if (!(l.rate_gbps >= 0.0)) fail(where + ".rate_gbps: must be >= 0 (0 = unlimited)");
    c.links.push_back(l);
  }
  if (j.contains("port_defaults")) {
    const json& o = j["port_defaults"];
    const std::string where = w + ".port_defaults";
    if (!o.is_object()) fail(where + ": expected an object");
    reject_unknown(o, where, {"queue_bytes", "ecn_k_bytes", "loss", "dup", "reorder", "seed"});
    PortDefaults& d = c.port_defaults;
    d.queue_bytes = get_uint(o, "queue_bytes", d.queue_bytes, wire::kMaxFrameBytes, uint64_t{1} << 40, where);
    d.ecn_k_bytes = get_uint(o, "ecn_k_bytes", d.ecn_k_bytes, 0, uint64_t{1} << 40, where);
    d.loss = get_prob(o, "loss", d.loss, where);
    d.dup = get_prob(o, "dup", d.dup, where);
    d.reorder = get_prob(o, "reorder", d.reorder, where);
    d.seed = get_uint(o, "seed", d.seed, 0, UINT64_MAX, where);
  }
  return c;
}

JobsDesc parse_jobs(const json& j) {
  const std::string w = "jobs";
  if (!j.is_object()) fail("jobs: must be a JSON object with a \"jobs\" array");
  reject_unknown(j, w, {"jobs", "shares", "udp_port", "elems_per_packet", "congestion"});
  JobsDesc d;
  const std::string shares = get<std::string>(j, "shares", "equal", w);
  if (shares != "equal" && shares != "weighted") fail(w + ".shares: must be \"equal\" or \"weighted\"");
  d.weighted_shares = shares == "weighted";
  d.udp_port = static_cast<uint16_t>(get_uint(j, "udp_port", d.udp_port, 1, 65535, w));
  d.elems_per_packet = static_cast<uint32_t>(
      get_uint(j, "elems_per_packet", d.elems_per_packet, 1, wire::kMaxElemsPerFrame, w));
  if (j.contains("congestion")) {
    // Reuse the plan parser for the congestion keys: one definition of them.
    json probe = {
        {"job_id", 1},
        {"rank", 0},
        {"world_size", 1},
        {"local_mac", "02:00:00:00:00:01"},
        {"local_ip", "10.0.0.1"},
        {"congestion", j["congestion"]},
        {"trees",
         json::array(
             {{{"tree_id", 0}, {"child_id", 0}, {"dst_mac", "02:00:00:00:00:02"}, {"dst_ip", "10.0.0.2"}}})}};
    try {
      d.congestion = runtime::parse_plan(probe.dump()).congestion;
    } catch (const runtime::PlanError& e) {
      fail(w + "." + e.what());
    }
  }
  if (!j.contains("jobs") || !j["jobs"].is_array() || j["jobs"].empty()) {
    fail(w + ".jobs: missing or empty (a non-empty array is required)");
  }
  for (size_t i = 0; i < j["jobs"].size(); ++i) {
    const json& o = j["jobs"][i];
    const std::string where = w + ".jobs[" + std::to_string(i) + "]";
    if (!o.is_object()) fail(where + ": expected an object");
    reject_unknown(o, where, {"id", "workers", "trees", "weight", "dscp", "backup_trees"});
    JobDesc job;
    if (!o.contains("id")) fail(where + ".id: missing");
    job.id = static_cast<uint16_t>(get_uint(o, "id", 0, 0, 0xFFFF, where));
    job.trees = static_cast<uint32_t>(get_uint(o, "trees", 1, 1, 255, where));
    job.dscp = static_cast<uint8_t>(get_uint(o, "dscp", 0, 0, 63, where));
    job.weight = get<double>(o, "weight", 1.0, where);
    job.backup_trees = get<bool>(o, "backup_trees", false, where);
    if (job.backup_trees && job.trees > 127) fail(where + ".trees: at most 127 with backup_trees");
    if (!(job.weight > 0.0)) fail(where + ".weight: must be > 0");
    if (!o.contains("workers") || !o["workers"].is_array() || o["workers"].empty()) {
      fail(where + ".workers: missing or empty (host names in rank order)");
    }
    for (const json& n : o["workers"]) {
      if (!n.is_string()) fail(where + ".workers: expected host names, got " + n.dump());
      job.workers.push_back(n.get<std::string>());
    }
    d.jobs.push_back(job);
  }
  return d;
}

}  // namespace panama::controller
