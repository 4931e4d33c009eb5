// Tree computation, share assignment and output of the controller.
#include "panama/controller/controller.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "panama/runtime/plan_file.hpp"
#include "panama/wire.hpp"
#include "tiers.hpp"

namespace panama::controller {

namespace {

using nlohmann::json;

// memif buffers large enough for a whole jumbo frame: with the default 2 KiB
// buffers a frame spans several descriptors, and under load frames of more
// than 2 KiB went missing between processes.
constexpr const char* kMemifArgs = ",bsize=10240";

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

}  // namespace

uint32_t multicast_ip(uint16_t job, uint8_t tree) {
  return (239u << 24) | (uint32_t{job} << 8) | tree;
}

config::MacAddress multicast_mac(uint32_t ip) {
  return {0x01,
          0x00,
          0x5e,
          static_cast<uint8_t>((ip >> 16) & 0x7F),
          static_cast<uint8_t>(ip >> 8),
          static_cast<uint8_t>(ip)};
}

// The engine capacity keys of a cluster or PSwitch object. The bounds are
// the register map's: at most 256 entries, a share's E_SLOT_COUNT is 16 bits
// wide in effect (cwnd_cap), and an element count is a 16-bit field.
static EngineCapacity read_capacity(const json& o, const std::string& where, const EngineCapacity& dflt) {
  EngineCapacity e;
  e.table_entries = static_cast<uint32_t>(get_uint(o, "table_entries", dflt.table_entries, 1, 256, where));
  e.packet_memory =
      static_cast<uint32_t>(get_uint(o, "packet_memory", dflt.packet_memory, 1, 1u << 24, where));
  e.slot_elems = static_cast<uint32_t>(get_uint(o, "slot_elems", dflt.slot_elems, 1, 0xFFFF, where));
  return e;
}

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

namespace {

enum class NodeKind { kHost, kSwitch };

struct Node {
  NodeKind kind;
  size_t index;  // into hosts or switches
};

// One engine entry being built, with the switch ports it needs.
struct PendingEntry {
  size_t sw;
  uint16_t job;
  uint8_t tree;
  bool root;
  double weight;
  uint8_t dscp;
  std::vector<std::string> children;  // neighbour names, child id = position
  std::string parent;                 // neighbour name; empty at the root
  uint16_t out_child_id;
  uint32_t group_ip;
  config::EntryConfig cfg;
};

// plan_deployment's steps, in the order docs/controller.md describes them:
// name the nodes, check the links (one PSwitch or a leaf-spine fabric),
// build each job's trees, divide each PSwitch's packet memory into shares,
// then write the PSwitch node configurations and the worker plans.
class Planner {
 public:
  Planner(const ClusterDesc& cluster, const JobsDesc& jobs) : c(cluster), jd(jobs) {}

  Deployment run() {
    index_names();
    check_links();
    build_trees();
    assign_shares();
    write_switch_configs();
    write_worker_plans();
    return std::move(d);
  }

 private:
  struct WorkerSlot {
    size_t host;
    size_t job_index;
    uint32_t rank;
    std::vector<uint16_t> child_id;  // per tree of the job
    std::vector<size_t> leaf;        // per tree: the PSwitch the worker sends it to
  };

  // Every host and PSwitch by name; names are unique across both.
  void index_names() {
    for (size_t i = 0; i < c.hosts.size(); ++i) {
      if (!nodes.emplace(c.hosts[i].name, Node{NodeKind::kHost, i}).second) {
        fail("cluster: name '" + c.hosts[i].name + "' is used twice");
      }
    }
    for (size_t i = 0; i < c.switches.size(); ++i) {
      if (!nodes.emplace(c.switches[i].name, Node{NodeKind::kSwitch, i}).second) {
        fail("cluster: name '" + c.switches[i].name + "' is used twice");
      }
    }
  }

  // Hosts hang off exactly one PSwitch; PSwitches form one switch or a
  // two-tier leaf-spine fabric.
  void check_links() {
    sw_ports.assign(c.switches.size(), {});
    sw_rates.assign(c.switches.size(), {});
    host_leaf.assign(c.hosts.size(), -1);
    host_uplinks.assign(c.hosts.size(), {});
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < c.links.size(); ++i) {
      const LinkDesc& l = c.links[i];
      const std::string where = "cluster.links[" + std::to_string(i) + "] (" + l.a + " - " + l.b + ")";
      auto ia = nodes.find(l.a), ib = nodes.find(l.b);
      if (ia == nodes.end()) fail(where + ": unknown node '" + l.a + "'");
      if (ib == nodes.end()) fail(where + ": unknown node '" + l.b + "'");
      if (l.a == l.b) fail(where + ": a link needs two different ends");
      if (!seen.insert(std::minmax(l.a, l.b)).second) fail(where + ": the two nodes are already linked");
      if (ia->second.kind == NodeKind::kHost && ib->second.kind == NodeKind::kHost) {
        fail(where + ": hosts connect to PSwitches, not to each other");
      }
      for (auto [self, other] : {std::pair{ia, ib}, std::pair{ib, ia}}) {
        if (self->second.kind == NodeKind::kHost) {
          // Dual homing: a host may have two uplinks, to two PSwitches.
          std::vector<size_t>& up = host_uplinks[self->second.index];
          if (up.size() == 2)
            fail(where + ": host '" + self->first + "' has a third link (at most two uplinks)");
          up.push_back(other->second.index);
          if (host_leaf[self->second.index] < 0)
            host_leaf[self->second.index] = static_cast<int>(other->second.index);
        } else {
          sw_ports[self->second.index].push_back(other->first);
          sw_rates[self->second.index].push_back(l.rate_gbps);
        }
      }
    }
    for (size_t h = 0; h < c.hosts.size(); ++h) {
      if (host_leaf[h] < 0) fail("cluster: host '" + c.hosts[h].name + "' has no link to a PSwitch");
    }
    is_leaf.assign(c.switches.size(), false);
    for (const auto& up : host_uplinks) {
      for (size_t leaf : up) is_leaf[leaf] = true;
    }
    std::vector<std::string> names;
    sw_neighbours.assign(c.switches.size(), {});
    for (size_t s = 0; s < c.switches.size(); ++s) {
      names.push_back(c.switches[s].name);
      if (sw_ports[s].empty()) fail("cluster: PSwitch '" + c.switches[s].name + "' has no links");
      if (sw_ports[s].size() > 64)
        fail("cluster: PSwitch '" + c.switches[s].name + "' has more than 64 ports");
      for (const std::string& n : sw_ports[s]) {
        const Node& o = nodes.at(n);
        if (o.kind == NodeKind::kSwitch) sw_neighbours[s].push_back(o.index);
      }
    }
    // Leaves (tier 0), spines / aggregation (tier 1), cores (tier 2).
    tier = tiers::switch_tiers(names, sw_neighbours, is_leaf);
  }

  uint32_t port_of(size_t sw, const std::string& neighbour) const {
    const auto& p = sw_ports[sw];
    return static_cast<uint32_t>(std::find(p.begin(), p.end(), neighbour) - p.begin());
  }
  // Per PSwitch, the hosts reached from it by going down tiers, in host order.
  std::vector<std::vector<size_t>> hosts_below() const {
    std::vector<std::vector<size_t>> below(c.switches.size());
    for (size_t h = 0; h < c.hosts.size(); ++h) below[static_cast<size_t>(host_leaf[h])].push_back(h);
    for (int t = 1; t <= 2; ++t) {
      for (size_t s = 0; s < c.switches.size(); ++s) {
        if (tier[s] != t) continue;
        for (size_t o : sw_neighbours[s]) {
          if (tier[o] == t - 1) below[s].insert(below[s].end(), below[o].begin(), below[o].end());
        }
        std::sort(below[s].begin(), below[s].end());
        below[s].erase(std::unique(below[s].begin(), below[s].end()), below[s].end());
      }
    }
    return below;
  }
  bool linked(size_t sw, const std::string& neighbour) const {
    const auto& p = sw_ports[sw];
    return std::find(p.begin(), p.end(), neighbour) != p.end();
  }

  // Each job's trees: rooted at its only leaf, or round-robin at the spines
  // linked to all of its leaves; one pending engine entry per PSwitch on a tree.
  void build_trees() {
    std::set<uint16_t> job_ids;
    std::map<std::string, uint16_t> host_job;
    for (size_t ji = 0; ji < jd.jobs.size(); ++ji) {
      const JobDesc& job = jd.jobs[ji];
      const std::string where = "job " + std::to_string(job.id);
      if (!job_ids.insert(job.id).second) fail("jobs: job id " + std::to_string(job.id) + " is used twice");
      if (job.trees < 1 || job.trees > 255) fail(where + ": trees must be 1..255");
      const size_t job_tree_base = d.trees.size();
      std::vector<size_t> hosts;
      for (uint32_t r = 0; r < job.workers.size(); ++r) {
        const std::string& wname = job.workers[r];
        auto it = nodes.find(wname);
        if (it == nodes.end() || it->second.kind != NodeKind::kHost) {
          fail(where + ": worker '" + wname + "' is not a host of the cluster");
        }
        if (!host_job.emplace(wname, job.id).second) {
          fail(where + ": host '" + wname + "' already runs a worker (of job " +
               std::to_string(host_job[wname]) + "); one worker per host");
        }
        hosts.push_back(it->second.index);
        worker_slots.push_back(WorkerSlot{it->second.index, ji, r, {}, {}});
      }
      WorkerSlot* slots = &worker_slots[worker_slots.size() - hosts.size()];
      const uint32_t all_trees = job.backup_trees ? 2 * job.trees : job.trees;
      const size_t offset = trees_planned;  // root spreading across jobs
      trees_planned += job.trees;
      for (uint32_t t = 0; t < all_trees; ++t) {
        const bool backup = t >= job.trees;
        const uint32_t primary = backup ? t - job.trees : t;
        const uint8_t tree = static_cast<uint8_t>(t);
        // A dual-homed worker's trees alternate between its uplinks, and a
        // standby uses the other uplink than its primary.
        const uint32_t turn = primary + (backup ? 1 : 0);
        // The tree's leaves in order of first appearance; each leaf's workers in rank order.
        std::vector<size_t> leaves;
        std::map<size_t, std::vector<std::string>> leaf_workers;
        for (size_t r = 0; r < hosts.size(); ++r) {
          const std::vector<size_t>& up = host_uplinks[hosts[r]];
          const size_t leaf = up[turn % up.size()];
          if (!leaf_workers.count(leaf)) leaves.push_back(leaf);
          leaf_workers[leaf].push_back(job.workers[r]);
          if (leaf_workers[leaf].size() > config::kMaxFanIn) {
            fail(where + ": more than 64 workers under PSwitch '" + c.switches[leaf].name +
                 "' (fan-in limit)");
          }
          slots[r].leaf.push_back(leaf);
          slots[r].child_id.push_back(static_cast<uint16_t>(leaf_workers[leaf].size() - 1));
        }
        std::vector<size_t> roots;
        std::vector<tiers::CoreRoot> core_roots;  // three-tier fabric, leaves without a common spine
        if (leaves.size() == 1) {
          roots.push_back(leaves[0]);
        } else {
          for (size_t sw = 0; sw < c.switches.size(); ++sw) {
            if (is_leaf[sw]) continue;
            bool all = true;
            for (size_t l : leaves) all = all && linked(sw, c.switches[l].name);
            if (all) roots.push_back(sw);
          }
          if (roots.empty()) core_roots = tiers::core_roots(leaves, tier, sw_neighbours);
          if (roots.empty() && core_roots.empty()) {
            fail(where + ": its workers sit under " + std::to_string(leaves.size()) +
                 " leaves and no spine PSwitch is linked to all of them (nor a core PSwitch reached by all "
                 "of them through spine/aggregation PSwitches)");
          }
          if (leaves.size() > config::kMaxFanIn)
            fail(where + ": more than 64 leaves (fan-in limit at the root)");
        }
        // Roots are spread over the candidates across jobs. With backup trees,
        // tree trees+t stands by for tree t on the next candidate root (or,
        // dual-homed, on the other leaves), so that one dead root never takes both.
        const auto same_root_as_primary = [&](const std::string& name) {
          if (backup && name == d.trees[job_tree_base + primary].root) {
            fail(where + ": backup_trees needs two candidate roots (spines or cores reached by all of its " +
                 "leaves, or dual-homed workers); a standby tree on the same PSwitch would die with it");
          }
        };
        if (!core_roots.empty()) {
          const tiers::CoreRoot& cr = core_roots[tiers::spread_root(offset, turn, core_roots.size())];
          same_root_as_primary(c.switches[cr.core].name);
          add_three_level_tree(job, tree, leaves, leaf_workers, cr, backup ? static_cast<int>(primary) : -1);
          continue;
        }
        const size_t root = roots[tiers::spread_root(offset, turn, roots.size())];
        same_root_as_primary(c.switches[root].name);
        const uint32_t group = multicast_ip(job.id, tree);
        d.trees.push_back(
            TreeInfo{job.id, tree, c.switches[root].name, group, backup ? static_cast<int>(primary) : -1});
        if (root == leaves[0] && leaves.size() == 1) {
          entries.push_back(PendingEntry{
              root, job.id, tree, true, job.weight, job.dscp, leaf_workers[root], "", 0, group, {}});
          continue;
        }
        std::vector<std::string> leaf_names;
        for (size_t i = 0; i < leaves.size(); ++i) {
          const size_t l = leaves[i];
          leaf_names.push_back(c.switches[l].name);
          entries.push_back(PendingEntry{l,
                                         job.id,
                                         tree,
                                         false,
                                         job.weight,
                                         job.dscp,
                                         leaf_workers[l],
                                         c.switches[root].name,
                                         static_cast<uint16_t>(i),
                                         group,
                                         {}});
        }
        entries.push_back(
            PendingEntry{root, job.id, tree, true, job.weight, job.dscp, leaf_names, "", 0, group, {}});
      }
    }
  }

  // A tree leaf -> middle (spine/aggregation) -> core: each leaf's entry
  // goes up to the middle PSwitch linking it to the core, each middle's entry
  // aggregates its leaves (in the job's leaf order) and goes up to the core,
  // whose root entry has the middles as children (in order of first use).
  void add_three_level_tree(const JobDesc& job, uint8_t tree, const std::vector<size_t>& leaves,
                            std::map<size_t, std::vector<std::string>>& leaf_workers,
                            const tiers::CoreRoot& cr, int backup_for) {
    const std::string where = "job " + std::to_string(job.id);
    const uint32_t group = multicast_ip(job.id, tree);
    const std::string& core = c.switches[cr.core].name;
    d.trees.push_back(TreeInfo{job.id, tree, core, group, backup_for});
    std::vector<size_t> middles;
    std::map<size_t, std::vector<std::string>> middle_leaves;
    for (size_t i = 0; i < leaves.size(); ++i) {
      const size_t m = cr.middle_of_leaf[i];
      if (!middle_leaves.count(m)) middles.push_back(m);
      middle_leaves[m].push_back(c.switches[leaves[i]].name);
      entries.push_back(PendingEntry{leaves[i],
                                     job.id,
                                     tree,
                                     false,
                                     job.weight,
                                     job.dscp,
                                     leaf_workers[leaves[i]],
                                     c.switches[m].name,
                                     static_cast<uint16_t>(middle_leaves[m].size() - 1),
                                     group,
                                     {}});
    }
    if (middles.size() > config::kMaxFanIn)
      fail(where + ": more than 64 PSwitches under core '" + core + "'");
    std::vector<std::string> middle_names;
    for (size_t i = 0; i < middles.size(); ++i) {
      const size_t m = middles[i];
      if (middle_leaves[m].size() > config::kMaxFanIn)
        fail(where + ": more than 64 leaves under PSwitch '" + c.switches[m].name + "' (fan-in limit)");
      middle_names.push_back(c.switches[m].name);
      entries.push_back(PendingEntry{m,
                                     job.id,
                                     tree,
                                     false,
                                     job.weight,
                                     job.dscp,
                                     middle_leaves[m],
                                     core,
                                     static_cast<uint16_t>(i),
                                     group,
                                     {}});
    }
    entries.push_back(
        PendingEntry{cr.core, job.id, tree, true, job.weight, job.dscp, middle_names, "", 0, group, {}});
  }

  // Each PSwitch's packet memory divided among its entries (equal or
  // weighted shares Q), and the entries' addresses.
  void assign_shares() {
    for (size_t s = 0; s < c.switches.size(); ++s) {
      std::vector<PendingEntry*> mine;
      double weight_sum = 0;
      for (PendingEntry& e : entries) {
        if (e.sw == s) {
          mine.push_back(&e);
          weight_sum += jd.weighted_shares ? e.weight : 1.0;
        }
      }
      const SwitchDesc& sd = c.switches[s];
      if (mine.size() > sd.engine.table_entries) {
        fail("PSwitch '" + sd.name + "': " + std::to_string(mine.size()) +
             " (job, tree) entries exceed its " + std::to_string(sd.engine.table_entries) +
             "-entry table; use fewer trees or jobs");
      }
      if (!mine.empty() && jd.elems_per_packet > sd.engine.slot_elems) {
        fail("jobs.elems_per_packet: " + std::to_string(jd.elems_per_packet) +
             " elements do not fit a slot of PSwitch '" + sd.name + "' (" +
             std::to_string(sd.engine.slot_elems) + " elements)");
      }
      uint32_t base = 0;
      for (size_t i = 0; i < mine.size(); ++i) {
        PendingEntry& e = *mine[i];
        const double w = jd.weighted_shares ? e.weight : 1.0;
        const uint32_t q =
            static_cast<uint32_t>(static_cast<double>(sd.engine.packet_memory) * w / weight_sum);
        if (q < 1) {
          fail("PSwitch '" + sd.name + "': its packet memory of " + std::to_string(sd.engine.packet_memory) +
               " slots leaves job " + std::to_string(e.job) + " tree " + std::to_string(e.tree) +
               " no slot; use fewer trees or jobs, more memory, or other weights");
        }
        config::EntryConfig& ec = e.cfg;
        ec.index = static_cast<uint32_t>(i);
        ec.job = e.job;
        ec.tree = e.tree;
        ec.root = e.root;
        ec.fan_in = static_cast<uint32_t>(e.children.size());
        for (size_t k = 0; k < e.children.size(); ++k) ec.children.push_back(static_cast<uint8_t>(k));
        ec.slot_base = base;
        ec.slot_count = q;
        base += q;
        ec.out_child_id = e.out_child_id;
        ec.eth_src = sd.mac;
        ec.ip_src = sd.ip;
        if (e.root) {
          ec.ip_dst = e.group_ip;
          ec.eth_dst = multicast_mac(e.group_ip);
        } else {
          const SwitchDesc& parent = c.switches[nodes.at(e.parent).index];
          ec.ip_dst = parent.ip;
          ec.eth_dst = parent.mac;
        }
        ec.udp_src = jd.udp_port;
        ec.udp_dst = jd.udp_port;
        ec.dscp = e.dscp;
      }
    }
  }

  // Node configuration (engine table + "pswitch" section) of every PSwitch.
  void write_switch_configs() {
    const std::vector<std::vector<size_t>> below = hosts_below();
    for (size_t s = 0; s < c.switches.size(); ++s) {
      const SwitchDesc& sd = c.switches[s];
      SwitchOutput out;
      pswitch::PswitchSettings& ps = out.settings;
      ps.name = sd.name;
      ps.seed = c.port_defaults.seed * 1000003u + s;
      ps.engine_ecn_k_bytes = c.engine_ecn_k_bytes;
      for (size_t p = 0; p < sw_ports[s].size(); ++p) {
        const std::string& n = sw_ports[s][p];
        const Node& o = nodes.at(n);
        pswitch::PortSettings port;
        port.name = n;
        // The spine (or the PSwitch, towards a host) serves the socket.
        const bool server = o.kind == NodeKind::kHost || tier[o.index] < tier[s];
        const std::string sock = c.run_dir + "/" + (server ? sd.name + "-" + n : n + "-" + sd.name) + ".sock";
        if (sock.size() >= 108)
          fail("cluster.run_dir: socket path '" + sock + "' is too long (unix sockets allow 107 bytes)");
        port.vdev = "net_memif" + std::to_string(p) + ",role=" + (server ? "server" : "client") +
                    ",socket=" + sock + kMemifArgs;
        port.rate_gbps = sw_rates[s][p];
        port.queue_bytes = c.port_defaults.queue_bytes;
        port.ecn_k_bytes = c.port_defaults.ecn_k_bytes;
        port.loss = c.port_defaults.loss;
        port.dup = c.port_defaults.dup;
        port.reorder = c.port_defaults.reorder;
        port.uplink = o.kind == NodeKind::kSwitch && tier[o.index] > tier[s];
        ps.ports.push_back(port);
        // Static MAC routes: the neighbour itself, and the hosts below a lower-tier neighbour through it.
        const config::MacAddress mac =
            o.kind == NodeKind::kHost ? c.hosts[o.index].mac : c.switches[o.index].mac;
        ps.mac_table.push_back(pswitch::MacRoute{mac, static_cast<uint32_t>(p)});
        if (o.kind == NodeKind::kSwitch && tier[o.index] < tier[s]) {
          for (size_t h : below[o.index]) {
            ps.mac_table.push_back(pswitch::MacRoute{c.hosts[h].mac, static_cast<uint32_t>(p)});
          }
        }
      }
      config::NodeConfig& nc = out.node;
      nc.node = sd.name;
      nc.engine.udp_port = jd.udp_port;
      for (const PendingEntry& e : entries) {
        if (e.sw != s) continue;
        nc.entries.push_back(e.cfg);
        pswitch::TreePorts tp;
        tp.job = e.job;
        tp.tree = e.tree;
        tp.parent = e.parent.empty() ? -1 : static_cast<int>(port_of(s, e.parent));
        // The ingress binding: the child behind each port speaks only as its child id.
        for (size_t k = 0; k < e.children.size(); ++k) {
          tp.children.push_back(port_of(s, e.children[k]));
          tp.child_ids.push_back(e.cfg.children[k]);
        }
        ps.trees.push_back(tp);
      }
      nc.pswitch = pswitch::settings_to_json(ps);
      try {
        config::validate_node_config(nc, sd.name);
        pswitch::check_trees_against_entries(ps, nc.entries);
      } catch (const std::runtime_error& e) {
        fail(std::string("internal: generated node config is invalid: ") + e.what());
      }
      d.switches.push_back(std::move(out));
    }
  }

  uint32_t entry_share(size_t sw, uint16_t job, uint8_t tree) const {
    for (const PendingEntry& e : entries) {
      if (e.sw == sw && e.job == job && e.tree == tree) return e.cfg.slot_count;
    }
    return 0;
  }
  const std::string& parent_of(size_t sw, uint16_t job, uint8_t tree) const {
    static const std::string none;
    for (const PendingEntry& e : entries) {
      if (e.sw == sw && e.job == job && e.tree == tree) return e.parent;
    }
    return none;
  }
  size_t root_of(uint16_t job, uint8_t tree) const {
    for (const TreeInfo& t : d.trees) {
      if (t.job == job && t.tree == tree) return nodes.at(t.root).index;
    }
    return 0;
  }

  // Every worker's plan: its leaf per tree, its child id, and a first
  // cwnd_cap no larger than the smallest share on the tree.
  void write_worker_plans() {
    for (const WorkerSlot& ws : worker_slots) {
      const JobDesc& job = jd.jobs[ws.job_index];
      const HostDesc& hd = c.hosts[ws.host];
      WorkerOutput wo;
      wo.host = hd.name;
      runtime::Plan& p = wo.plan;
      p.job_id = job.id;
      p.rank = ws.rank;
      p.world_size = static_cast<uint32_t>(job.workers.size());
      p.udp_port = jd.udp_port;
      p.device = "net_memif0";
      p.local_mac = hd.mac;
      p.local_ip = hd.ip;
      p.elems_per_packet = jd.elems_per_packet;
      p.dscp = job.dscp;
      p.congestion = jd.congestion;
      for (uint32_t t = 0; t < (job.backup_trees ? 2 * job.trees : job.trees); ++t) {
        runtime::TreePlan tp;
        tp.tree_id = static_cast<uint8_t>(t);
        if (t >= job.trees) tp.backup_for = static_cast<int16_t>(t - job.trees);
        const size_t leaf = ws.leaf[t];
        tp.child_id = ws.child_id[t];
        tp.uplink =
            static_cast<uint8_t>(std::find(host_uplinks[ws.host].begin(), host_uplinks[ws.host].end(), leaf) -
                                 host_uplinks[ws.host].begin());
        tp.dst_mac = c.switches[leaf].mac;
        tp.dst_ip = c.switches[leaf].ip;
        uint32_t cap = std::min(entry_share(leaf, job.id, tp.tree_id),
                                entry_share(root_of(job.id, tp.tree_id), job.id, tp.tree_id));
        const std::string& mid = parent_of(leaf, job.id, tp.tree_id);  // three levels: the middle PSwitch
        if (!mid.empty()) cap = std::min(cap, entry_share(nodes.at(mid).index, job.id, tp.tree_id));
        tp.initial_cwnd_cap = static_cast<uint16_t>(std::min<uint32_t>(cap, 0xFFFF));
        p.trees.push_back(tp);
      }
      for (size_t u = 0; u < host_uplinks[ws.host].size(); ++u) {
        wo.vdevs.push_back("net_memif" + std::to_string(u) + ",role=client,socket=" + c.run_dir + "/" +
                           c.switches[host_uplinks[ws.host][u]].name + "-" + hd.name + ".sock" + kMemifArgs);
      }
      wo.vdev = wo.vdevs[0];
      if (wo.vdevs.size() > 1) p.devices = {"net_memif0", "net_memif1"};  // device stays devices[0]
      try {
        runtime::validate_plan(p);
      } catch (const runtime::PlanError& e) {
        fail("internal: generated plan for " + hd.name + " is invalid: " + e.what());
      }
      d.workers.push_back(std::move(wo));
    }
  }

  const ClusterDesc& c;
  const JobsDesc& jd;
  std::map<std::string, Node> nodes;
  std::vector<std::vector<std::string>> sw_ports;  // per PSwitch: neighbour names, port order
  std::vector<std::vector<double>> sw_rates;
  std::vector<int> host_leaf;                      // per host: its (first) PSwitch
  std::vector<std::vector<size_t>> host_uplinks;   // per host: its one or two PSwitches, link order
  std::vector<bool> is_leaf;                       // per PSwitch
  std::vector<int> tier;                           // per PSwitch: 0 leaf/edge, 1 spine/aggregation, 2 core
  std::vector<std::vector<size_t>> sw_neighbours;  // per PSwitch: linked PSwitches
  size_t trees_planned = 0;                        // primary trees of earlier jobs (root spreading)
  std::vector<PendingEntry> entries;
  std::vector<WorkerSlot> worker_slots;
  Deployment d;
};

}  // namespace

Deployment plan_deployment(const ClusterDesc& c, const JobsDesc& jd) {
  return Planner(c, jd).run();
}

void write_deployment(const Deployment& d, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail("cannot create output directory '" + dir + "': " + ec.message());
  auto write = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream f(path);
    f << text << "\n";
    if (!f) fail("cannot write '" + path + "'");
  };
  json manifest = {{"pswitches", json::array()}, {"workers", json::array()}, {"trees", json::array()}};
  for (const SwitchOutput& s : d.switches) {
    try {
      config::save_node_config(s.node, dir + "/" + s.node.node + ".json");
    } catch (const config::ConfigError& e) {
      fail(e.what());
    }
    manifest["pswitches"].push_back({{"name", s.node.node}, {"config", s.node.node + ".json"}});
  }
  for (const WorkerOutput& w : d.workers) {
    write(w.host + ".plan.json", runtime::plan_to_json(w.plan));
    manifest["workers"].push_back({{"host", w.host},
                                   {"job", w.plan.job_id},
                                   {"rank", w.plan.rank},
                                   {"plan", w.host + ".plan.json"},
                                   {"vdev", w.vdev}});
    if (w.vdevs.size() > 1) manifest["workers"].back()["vdevs"] = w.vdevs;
  }
  for (const TreeInfo& t : d.trees) {
    json tj = {{"job", t.job},
               {"tree", t.tree},
               {"root", t.root},
               {"multicast_ip", config::format_ipv4(t.multicast_ip)}};
    if (t.backup_for >= 0) tj["backup_for"] = t.backup_for;
    manifest["trees"].push_back(tj);
  }
  write("deployment.json", manifest.dump(2));
}

json single_switch_cluster(uint32_t workers, double rate_gbps) {
  json j = {{"hosts", json::array()}, {"pswitches", json::array({"s0"})}, {"links", json::array()}};
  for (uint32_t i = 0; i < workers; ++i) {
    const std::string n = "w" + std::to_string(i);
    j["hosts"].push_back(n);
    j["links"].push_back({{"a", n}, {"b", "s0"}, {"rate_gbps", rate_gbps}});
  }
  return j;
}

json two_tier_cluster(uint32_t workers, uint32_t leaves, uint32_t spines, double rate_gbps, bool dual_homed) {
  json j = {{"hosts", json::array()}, {"pswitches", json::array()}, {"links", json::array()}};
  for (uint32_t l = 0; l < leaves; ++l) j["pswitches"].push_back("leaf" + std::to_string(l));
  for (uint32_t s = 0; s < spines; ++s) j["pswitches"].push_back("spine" + std::to_string(s));
  for (uint32_t i = 0; i < workers; ++i) {
    const std::string n = "w" + std::to_string(i);
    j["hosts"].push_back(n);
    if (dual_homed) {
      // Two planes, as with dual-ToR: uplink 0 to leaves [0, L/2), uplink 1 to [L/2, L).
      const uint32_t half = std::max(1u, leaves / 2);
      j["links"].push_back({{"a", n}, {"b", "leaf" + std::to_string(i % half)}, {"rate_gbps", rate_gbps}});
      j["links"].push_back(
          {{"a", n}, {"b", "leaf" + std::to_string(half + i % half)}, {"rate_gbps", rate_gbps}});
    } else {
      j["links"].push_back({{"a", n}, {"b", "leaf" + std::to_string(i % leaves)}, {"rate_gbps", rate_gbps}});
    }
  }
  for (uint32_t l = 0; l < leaves; ++l) {
    for (uint32_t s = 0; s < spines; ++s) {
      j["links"].push_back(
          {{"a", "leaf" + std::to_string(l)}, {"b", "spine" + std::to_string(s)}, {"rate_gbps", rate_gbps}});
    }
  }
  return j;
}

}  // namespace panama::controller
