// Reading the controller's input: the cluster description and the job
// description (docs/controller.md), with the JSON object reader
// (panama/config/json_reader.hpp).
#include <algorithm>
#include <limits>
#include <memory>

#include "panama/config/json_reader.hpp"
#include "panama/controller/controller.hpp"
#include "panama/runtime/plan_file.hpp"
#include "panama/wire.hpp"

namespace panama::controller {

namespace {

using config::json_path;
using config::JsonObject;
using config::JsonSource;
using nlohmann::json;

constexpr uint64_t kMaxBytes = uint64_t{1} << 40;

config::MacAddress auto_mac(uint8_t kind, size_t index) {
  return {0x02, 0x00, 0x00, kind, static_cast<uint8_t>(index >> 8), static_cast<uint8_t>(index)};
}
uint32_t auto_ip(uint8_t kind, size_t index) {
  return (10u << 24) | (uint32_t{kind} << 16) | static_cast<uint32_t>(index + 1);
}

// The engine capacity keys of a cluster or PSwitch object. The bounds are
// the register map's: at most 256 entries, a share's E_SLOT_COUNT is 16 bits
// wide in effect (cwnd_cap), and an element count is a 16-bit field.
EngineCapacity read_capacity(const JsonObject& o, const EngineCapacity& dflt) {
  EngineCapacity e;
  e.table_entries = static_cast<uint32_t>(o.uint("table_entries", 1, 256, dflt.table_entries));
  e.packet_memory = static_cast<uint32_t>(o.uint("packet_memory", 1, 1u << 24, dflt.packet_memory));
  e.slot_elems = static_cast<uint32_t>(o.uint("slot_elems", 1, 0xFFFF, dflt.slot_elems));
  return e;
}

// A host or PSwitch: its name, or an object with the name and `keys`.
// Returns the object's reader (null for a name).
std::unique_ptr<JsonObject> read_node(const JsonSource& src, const json& v, const std::string& path,
                                      std::initializer_list<const char*> keys, std::string& name) {
  if (v.is_string()) {
    name = v.get<std::string>();
    if (name.empty()) src.fail(path, "the name must not be empty");
    return nullptr;
  }
  if (!v.is_object()) src.wrong_type(v, path, "a name or an object");
  auto o = std::make_unique<JsonObject>(src, v, path, keys);
  name = o->string("name");
  if (name.empty()) o->fail("name", "must not be empty");
  return o;
}

}  // namespace

ClusterDesc parse_cluster(const json& j, const std::string& origin) {
  const JsonSource src(origin, &config::throw_as<ControllerError>);
  const JsonObject top(src, j, "",
                       {"name", "hosts", "pswitches", "links", "port_defaults", "run_dir", "packet_memory",
                        "table_entries", "slot_elems", "engine_ecn_k_bytes"});
  ClusterDesc c;
  c.run_dir = top.string("run_dir", c.run_dir);
  c.engine_ecn_k_bytes = top.uint("engine_ecn_k_bytes", 0, kMaxBytes, c.engine_ecn_k_bytes);
  const EngineCapacity default_engine = read_capacity(top, EngineCapacity{});
  const json& hosts = top.array("hosts", true);
  const json& pswitches = top.array("pswitches", true);
  const json& links = top.array("links", true);
  for (size_t i = 0; i < hosts.size(); ++i) {
    HostDesc h;
    h.mac = auto_mac(1, i);
    h.ip = auto_ip(1, i);
    if (auto o = read_node(src, hosts[i], json_path("hosts", i), {"name", "mac", "ip"}, h.name)) {
      h.mac = o->mac("mac", h.mac);
      h.ip = o->ipv4("ip", h.ip);
    }
    c.hosts.push_back(h);
  }
  for (size_t i = 0; i < pswitches.size(); ++i) {
    SwitchDesc s;
    s.mac = auto_mac(2, i);
    s.ip = auto_ip(2, i);
    s.engine = default_engine;
    if (auto o = read_node(src, pswitches[i], json_path("pswitches", i),
                           {"name", "mac", "ip", "packet_memory", "table_entries", "slot_elems"}, s.name)) {
      s.mac = o->mac("mac", s.mac);
      s.ip = o->ipv4("ip", s.ip);
      s.engine = read_capacity(*o, default_engine);
    }
    c.switches.push_back(s);
  }
  for (size_t i = 0; i < links.size(); ++i) {
    const JsonObject o(src, links[i], json_path("links", i), {"a", "b", "rate_gbps"});
    LinkDesc l;
    l.a = o.string("a");
    l.b = o.string("b");
    if (l.a.empty()) o.fail("a", "must not be empty");
    if (l.b.empty()) o.fail("b", "must not be empty");
    l.rate_gbps = o.number("rate_gbps", 0.0, std::numeric_limits<double>::infinity(), l.rate_gbps);
    c.links.push_back(l);
  }
  if (top.has("port_defaults")) {
    const JsonObject o =
        top.object("port_defaults", {"queue_bytes", "ecn_k_bytes", "loss", "dup", "reorder", "seed"});
    PortDefaults& d = c.port_defaults;
    d.queue_bytes = o.uint("queue_bytes", wire::kMaxFrameBytes, kMaxBytes, d.queue_bytes);
    d.ecn_k_bytes = o.uint("ecn_k_bytes", 0, kMaxBytes, d.ecn_k_bytes);
    d.loss = o.number("loss", 0.0, 1.0, d.loss);
    d.dup = o.number("dup", 0.0, 1.0, d.dup);
    d.reorder = o.number("reorder", 0.0, 1.0, d.reorder);
    d.seed = o.uint("seed", 0, UINT64_MAX, d.seed);
  }
  return c;
}

const char* tree_shape_name(TreeShape s) {
  return s == TreeShape::kChain ? "chain" : "spine";
}

bool parse_tree_shape(const std::string& name, TreeShape& out) {
  if (name != "spine" && name != "chain") return false;
  out = name == "chain" ? TreeShape::kChain : TreeShape::kSpine;
  return true;
}

JobsDesc parse_jobs(const json& j, const std::string& origin) {
  const JsonSource src(origin, &config::throw_as<ControllerError>);
  const JsonObject top(
      src, j, "", {"jobs", "shares", "udp_port", "elems_per_packet", "congestion", "priorities", "pool"});
  JobsDesc d;
  const std::string shares = top.string("shares", "equal");
  if (shares != "equal" && shares != "weighted") {
    top.fail("shares", "must be \"equal\" or \"weighted\" (got \"" + shares + "\")");
  }
  d.weighted_shares = shares == "weighted";
  d.udp_port = static_cast<uint16_t>(top.uint("udp_port", 1, 65535, d.udp_port));
  d.elems_per_packet =
      static_cast<uint32_t>(top.uint("elems_per_packet", 1, wire::kMaxElemsPerFrame, d.elems_per_packet));
  if (const json* congestion = top.find("congestion")) {
    // Reuse the plan parser for the congestion keys: one definition of them.
    // The key has the same path in both files, so its errors read right.
    json probe = {
        {"job_id", 1},
        {"rank", 0},
        {"world_size", 1},
        {"local_mac", "02:00:00:00:00:01"},
        {"local_ip", "10.0.0.1"},
        {"congestion", *congestion},
        {"trees",
         json::array(
             {{{"tree_id", 0}, {"child_id", 0}, {"dst_mac", "02:00:00:00:00:02"}, {"dst_ip", "10.0.0.2"}}})}};
    try {
      d.congestion = runtime::parse_plan(probe.dump(), origin).congestion;
    } catch (const runtime::PlanError& e) {
      throw ControllerError(e.what());
    }
  }
  if (top.has("priorities")) {
    const JsonObject o = top.object("priorities", {"levels", "dscp"});
    d.priority_levels = static_cast<uint32_t>(o.uint("levels", 1, 8));
    const json& dscp = o.array("dscp", true);
    if (dscp.size() != d.priority_levels) {
      o.fail("dscp", "needs one DSCP value per level (" + std::to_string(d.priority_levels) + "), got " +
                         std::to_string(dscp.size()));
    }
    for (size_t k = 0; k < dscp.size(); ++k) {
      const std::string path = json_path(o.path("dscp"), k);
      const uint8_t v = static_cast<uint8_t>(src.uint(dscp[k], path, 0, 63));
      if (std::find(d.priority_dscp.begin(), d.priority_dscp.end(), v) != d.priority_dscp.end())
        src.fail(path,
                 "DSCP " + std::to_string(v) + " is given to two levels (each level needs its own queue)");
      d.priority_dscp.push_back(v);
    }
  }
  if (top.has("pool")) {
    const JsonObject o =
        top.object("pool", {"slots", "lease_us", "table_entries", "overcommit", "ring_congestion"});
    PoolDesc p;
    // At most 512 slots: the pool's free-slot bitmap (ClaimPool).
    p.slots = static_cast<uint32_t>(o.uint("slots", 1, 512));
    p.lease_us = o.uint("lease_us", 1, 60000000, p.lease_us);
    p.table_entries = static_cast<uint32_t>(o.uint("table_entries", 1, 256, 0));
    p.overcommit = o.number("overcommit", 1.0, 1e6, p.overcommit);
    p.ring_congestion = o.boolean("ring_congestion", false);
    d.pool = p;
  }
  const json& jobs = top.array("jobs", true);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JsonObject o(src, jobs[i], json_path("jobs", i),
                       {"id", "workers", "trees", "shape", "weight", "dscp", "backup_trees", "compute_ms",
                        "gradient_bytes", "memory", "group"});
    JobDesc job;
    job.id = static_cast<uint16_t>(o.uint("id", 0, 0xFFFF));
    job.trees = static_cast<uint32_t>(o.uint("trees", 1, 255, 1));
    const std::string shape = o.string("shape", tree_shape_name(job.shape));
    if (!parse_tree_shape(shape, job.shape)) {
      o.fail("shape", "must be \"spine\" or \"chain\" (got \"" + shape + "\")");
    }
    job.dscp = static_cast<uint8_t>(o.uint("dscp", 0, 63, 0));
    job.weight = o.number("weight", 0.0, std::numeric_limits<double>::infinity(), 1.0);
    if (!(job.weight > 0.0)) o.fail("weight", "out of range: " + o.require("weight").dump() + " is not > 0");
    job.backup_trees = o.boolean("backup_trees", false);
    job.compute_ms = o.number("compute_ms", 0.0, 1e9, 0.0);
    job.gradient_bytes = o.number("gradient_bytes", 0.0, 1e15, 0.0);
    if (d.priority_levels > 0) {
      if (o.has("dscp")) o.fail("dscp", "set by the priority level when \"priorities\" is given");
      if (!(job.compute_ms > 0) || !(job.gradient_bytes > 0)) {
        o.fail(o.has("compute_ms") ? "gradient_bytes" : "compute_ms",
               "priorities need every job's compute_ms and gradient_bytes (both > 0)");
      }
    }
    if (job.backup_trees && job.trees > 127) o.fail("trees", "at most 127 with backup_trees");
    const std::string memory = o.string("memory", "share");
    if (memory != "share" && memory != "pooled") {
      o.fail("memory", "must be \"share\" or \"pooled\" (got \"" + memory + "\")");
    }
    job.pooled = memory == "pooled";
    if (job.pooled) {
      if (!d.pool) o.fail("memory", "a pooled job needs the engines' pool (the top-level \"pool\")");
      if (job.backup_trees)
        o.fail("backup_trees",
               "a pooled job has no standby trees (tree failover is not supported in pooled mode)");
      if (job.shape == TreeShape::kChain)
        o.fail("shape", "chain trees are not supported in pooled mode (a pooled job's trees are \"spine\")");
      job.group = static_cast<uint32_t>(o.uint("group", 1, 512, 0));
    } else if (o.has("group")) {
      o.fail("group", "applies only to a pooled job (\"memory\": \"pooled\")");
    }
    const json& workers = o.array("workers", true);
    for (size_t k = 0; k < workers.size(); ++k) {
      job.workers.push_back(src.string(workers[k], json_path(o.path("workers"), k)));
    }
    d.jobs.push_back(job);
  }
  if (d.pool && std::none_of(d.jobs.begin(), d.jobs.end(), [](const JobDesc& job) { return job.pooled; })) {
    top.fail("pool", "no job is pooled (\"memory\": \"pooled\"); the pool would sit idle");
  }
  return d;
}

}  // namespace panama::controller
