// The controller's outputs: each PSwitch's node configuration (engine table
// and "pswitch" section), each worker's plan, and the files of a deployment
// (<switch>.json, <host>.plan.json, deployment.json).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <stdexcept>

#include "panama/runtime/plan_file.hpp"
#include "planner.hpp"

namespace panama::controller {

using nlohmann::json;

namespace {

// memif buffers large enough for a whole jumbo frame: with the default 2 KiB
// buffers a frame spans several descriptors, and under load frames of more
// than 2 KiB went missing between processes.
constexpr const char* kMemifArgs = ",bsize=10240";

}  // namespace

namespace detail {

// Node configuration (engine table + "pswitch" section) of every PSwitch.
void Planner::write_switch_configs() {
  const std::vector<std::vector<size_t>> below = hosts_below();
  for (size_t s = 0; s < c.switches.size(); ++s) {
    const SwitchDesc& sd = c.switches[s];
    SwitchOutput out;
    pswitch::PswitchSettings& ps = out.settings;
    ps.name = sd.name;
    ps.seed = c.port_defaults.seed * 1000003u + s;
    ps.engine_ecn_k_bytes = c.engine_ecn_k_bytes;
    // Priorities: the queues serve the levels' DSCPs, highest first. A DSCP
    // given to two levels is one class on the wire: it is listed once, at
    // the higher level.
    if (jd.priority_levels > 0) {
      for (uint8_t dscp : jd.priority_dscp) {
        if (std::find(ps.priority_dscp.begin(), ps.priority_dscp.end(), dscp) == ps.priority_dscp.end())
          ps.priority_dscp.push_back(dscp);
      }
    }
    for (size_t p = 0; p < sw_ports[s].size(); ++p) {
      const std::string& n = sw_ports[s][p];
      const Node& o = nodes.at(n);
      pswitch::PortSettings port;
      port.name = n;
      // The spine (or the PSwitch, towards a host) serves the socket.
      const bool server = o.kind == NodeKind::kHost || tier[o.index] < tier[s];
      const std::string sock = c.run_dir + "/" + (server ? sd.name + "-" + n : n + "-" + sd.name) + ".sock";
      if (sock.size() >= 108)
        fail("cluster: run_dir: socket path '" + sock + "' is too long (unix sockets allow 107 bytes)");
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
    // Pooled jobs' rings: ring frames are ordinary unicast between the
    // job's workers. A PSwitch on a pooled tree sends those for a worker
    // not below it towards the tree's root (which has every worker of the
    // job below it) instead of flooding them to its other hosts.
    for (const PendingEntry& e : entries) {
      if (e.sw != s || e.parent.empty() || !is_pooled(e.job)) continue;
      const uint32_t parent_port = port_of(s, e.parent);
      for (const JobDesc& job : jd.jobs) {
        if (job.id != e.job) continue;
        for (const std::string& w : job.workers) {
          const size_t h = nodes.at(w).index;
          if (std::find(below[s].begin(), below[s].end(), h) != below[s].end()) continue;
          const config::MacAddress& mac = c.hosts[h].mac;
          if (std::none_of(ps.mac_table.begin(), ps.mac_table.end(),
                           [&](const pswitch::MacRoute& r) { return r.mac == mac; }))
            ps.mac_table.push_back(pswitch::MacRoute{mac, parent_port});
        }
      }
    }
    config::NodeConfig& nc = out.node;
    nc.node = sd.name;
    nc.engine.udp_port = jd.udp_port;
    for (size_t i = 0; i < entries.size(); ++i) {
      const PendingEntry& e = entries[i];
      if (e.sw != s) continue;
      const auto chain = chain_links.find(i);
      const ChainLink* link = chain == chain_links.end() ? nullptr : &chain->second;
      nc.entries.push_back(e.cfg);
      pswitch::TreePorts tp;
      tp.job = e.job;
      tp.tree = e.tree;
      // A chain's parent is the next leaf, through a spine.
      tp.parent = e.parent.empty() ? -1 : static_cast<int>(port_of(s, link ? link->parent_via : e.parent));
      // The ingress binding: the child behind each port speaks only as its child id.
      for (size_t k = 0; k < e.children.size(); ++k) {
        tp.children.push_back(port_of(s, e.children[k]));
        tp.child_ids.push_back(e.cfg.children[k]);
      }
      // A chain: results to the previous leaf are addressed to it (the spine
      // passes them on), and to the workers from the group again.
      if (link && link->relay >= 0) {
        const SwitchDesc& prev = c.switches[link->relay_leaf];
        tp.relays.push_back(
            pswitch::RelayChild{tp.children[static_cast<size_t>(link->relay)], prev.mac, prev.ip});
      }
      if (link && !e.root) {
        tp.group_ip = e.group_ip;
        tp.group_mac = multicast_mac(e.group_ip);
      }
      ps.trees.push_back(tp);
    }
    const auto pool = pools.find(s);
    if (pool != pools.end()) {
      pswitch::PoolSettings pset;
      pset.base = 0;
      pset.size = pool->second.size;
      pset.lease_ns = jd.pool->lease_us * 1000;
      pset.table_base = pool->second.table_base;
      pset.table_count = pool->second.table_count;
      pset.claim_job = claim_job;
      for (const auto& [key, cap] : pool->second.caps) {
        pswitch::PooledTree pt;
        pt.job = key.first;
        pt.tree = key.second;
        pt.group_size = group_of.at(key.first);
        pt.claim_cap = cap;
        pset.trees.push_back(pt);
      }
      ps.pool = pset;
    }
    for (const PendingHop& h : hops) {
      if (h.spine == s)
        ps.transit.push_back(pswitch::TransitHop{h.job, h.tree, port_of(s, h.child), port_of(s, h.parent)});
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

// Every worker's plan: its leaf per tree, its child id, and a first
// cwnd_cap no larger than the smallest share on the tree.
void Planner::write_worker_plans() {
  // The ring of each pooled job's denied groups: its workers by rack (the
  // PSwitch of each one's first uplink, in the cluster's PSwitch order),
  // by rank within a rack, so that the ring crosses between racks once per
  // rack. ring_at[job index][position] is a rank, position_of the inverse.
  std::map<size_t, std::vector<uint32_t>> ring_at, position_of;
  for (size_t ji = 0; ji < jd.jobs.size(); ++ji) {
    const JobDesc& job = jd.jobs[ji];
    if (!job.pooled) continue;
    std::vector<uint32_t>& order = ring_at[ji];
    order.resize(job.workers.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return host_leaf[nodes.at(job.workers[a]).index] < host_leaf[nodes.at(job.workers[b]).index];
    });
    std::vector<uint32_t>& pos = position_of[ji];
    pos.resize(order.size());
    for (uint32_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  }
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
      for (const auto& [i, link] : chain_links) {  // a chain: every leaf's share bounds the result's cwnd_cap
        const PendingEntry& e = entries[i];
        if (e.job == job.id && e.tree == tp.tree_id) cap = std::min(cap, e.cfg.slot_count);
      }
      tp.initial_cwnd_cap = static_cast<uint16_t>(std::min<uint32_t>(cap, 0xFFFF));
      p.trees.push_back(tp);
    }
    for (size_t u = 0; u < host_uplinks[ws.host].size(); ++u) {
      wo.vdevs.push_back("net_memif" + std::to_string(u) + ",role=client,socket=" + c.run_dir + "/" +
                         c.switches[host_uplinks[ws.host][u]].name + "-" + hd.name + ".sock" + kMemifArgs);
    }
    if (job.pooled) {
      // The ring of denied groups: data to the next worker on the ring,
      // acknowledgements to the previous one.
      const std::vector<uint32_t>& order = ring_at.at(ws.job_index);
      const uint32_t n = static_cast<uint32_t>(order.size());
      const uint32_t at = position_of.at(ws.job_index)[ws.rank];
      const HostDesc& next = c.hosts[nodes.at(job.workers[order[(at + 1) % n]]).index];
      const HostDesc& prev = c.hosts[nodes.at(job.workers[order[(at + n - 1) % n]]).index];
      runtime::PooledPlan pp;
      pp.group_size = group_of.at(job.id);
      pp.ring_position = at;
      pp.next_mac = next.mac;
      pp.next_ip = next.ip;
      pp.prev_mac = prev.mac;
      pp.prev_ip = prev.ip;
      pp.ring_congestion = jd.pool && jd.pool->ring_congestion;
      p.pooled = pp;
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

}  // namespace detail

void write_deployment(const Deployment& d, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  using detail::fail;
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

}  // namespace panama::controller
