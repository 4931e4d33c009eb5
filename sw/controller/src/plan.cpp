// Tree computation and share assignment (the planner's steps up to the
// engine entries), and the multicast groups of the results.
#include <algorithm>
#include <set>
#include <utility>

#include "planner.hpp"

namespace panama::controller {

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

Deployment plan_deployment(const ClusterDesc& c, const JobsDesc& jd) {
  const JobsDesc planned = apply_priorities(jd);
  return detail::Planner(c, planned).run();
}

namespace detail {

// Every host and PSwitch by name; names are unique across both.
void Planner::index_names() {
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
void Planner::check_links() {
  sw_ports.assign(c.switches.size(), {});
  sw_rates.assign(c.switches.size(), {});
  host_leaf.assign(c.hosts.size(), -1);
  host_uplinks.assign(c.hosts.size(), {});
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < c.links.size(); ++i) {
    const LinkDesc& l = c.links[i];
    const std::string where = "cluster: links[" + std::to_string(i) + "] (" + l.a + " - " + l.b + ")";
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
    if (sw_ports[s].size() > 64) fail("cluster: PSwitch '" + c.switches[s].name + "' has more than 64 ports");
    for (const std::string& n : sw_ports[s]) {
      const Node& o = nodes.at(n);
      if (o.kind == NodeKind::kSwitch) sw_neighbours[s].push_back(o.index);
    }
  }
  // Leaves (tier 0), spines / aggregation (tier 1), cores (tier 2).
  tier = tiers::switch_tiers(names, sw_neighbours, is_leaf);
}

uint32_t Planner::port_of(size_t sw, const std::string& neighbour) const {
  const auto& p = sw_ports[sw];
  return static_cast<uint32_t>(std::find(p.begin(), p.end(), neighbour) - p.begin());
}
// Per PSwitch, the hosts reached from it by going down tiers, in host order.
std::vector<std::vector<size_t>> Planner::hosts_below() const {
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
bool Planner::linked(size_t sw, const std::string& neighbour) const {
  const auto& p = sw_ports[sw];
  return std::find(p.begin(), p.end(), neighbour) != p.end();
}

}  // namespace detail

JobsDesc apply_priorities(const JobsDesc& jd) {
  if (jd.priority_levels == 0) return jd;
  if (jd.priority_dscp.size() != jd.priority_levels)
    throw ControllerError("priorities: one DSCP value per level is needed");
  JobsDesc out = jd;
  for (const JobDesc& job : out.jobs) {
    if (!(job.compute_ms > 0) || !(job.gradient_bytes > 0)) {
      throw ControllerError("job " + std::to_string(job.id) +
                            ": priorities need its compute_ms and gradient_bytes (both > 0)");
    }
  }
  // GPU intensity: compute per byte communicated; the most intensive first
  // (ties: lower id first).
  std::stable_sort(out.jobs.begin(), out.jobs.end(), [](const JobDesc& a, const JobDesc& b) {
    const double ia = a.compute_ms / a.gradient_bytes, ib = b.compute_ms / b.gradient_bytes;
    return ia != ib ? ia > ib : a.id < b.id;
  });
  const size_t n = out.jobs.size();
  for (size_t r = 0; r < n; ++r) {
    JobDesc& job = out.jobs[r];
    job.priority_level = static_cast<int>(r * jd.priority_levels / n);
    job.dscp = jd.priority_dscp[static_cast<size_t>(job.priority_level)];
    if (jd.weighted_shares) job.weight *= static_cast<double>(jd.priority_levels - job.priority_level);
  }
  return out;
}

namespace detail {

// Each job's trees: rooted at its only leaf, or round-robin at the spines
// linked to all of its leaves; one pending engine entry per PSwitch on a tree.
void Planner::build_trees() {
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
          fail(where + ": more than 64 workers under PSwitch '" + c.switches[leaf].name + "' (fan-in limit)");
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
        if (job.shape == TreeShape::kChain && roots.empty()) {
          fail(where + ": a chain over its " + std::to_string(leaves.size()) +
               " leaves needs a spine PSwitch linked to all of them to pass the partial sums from leaf to "
               "leaf (a two-tier leaf-spine fabric, or one pod of a three-tier fabric); chains across "
               "the cores of a three-tier fabric are not supported");
        }
        if (roots.empty()) core_roots = tiers::core_roots(leaves, tier, sw_neighbours);
        if (roots.empty() && core_roots.empty()) {
          fail(where + ": its workers sit under " + std::to_string(leaves.size()) +
               " leaves and no spine PSwitch is linked to all of them (nor a core PSwitch reached by all "
               "of them through spine/aggregation PSwitches)");
        }
        if (leaves.size() > config::kMaxFanIn && job.shape != TreeShape::kChain)
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
      if (job.shape == TreeShape::kChain && leaves.size() > 1) {
        add_chain_tree(job, tree, leaves, leaf_workers, roots, offset + turn,
                       backup ? static_cast<int>(primary) : -1);
        same_root_as_primary(d.trees.back().root);
        continue;
      }
      if (!core_roots.empty()) {
        const tiers::CoreRoot& cr = core_roots[tiers::spread_root(offset, turn, core_roots.size())];
        same_root_as_primary(c.switches[cr.core].name);
        add_three_level_tree(job, tree, leaves, leaf_workers, cr, backup ? static_cast<int>(primary) : -1);
        continue;
      }
      size_t root = roots[tiers::spread_root(offset, turn, roots.size())];
      if (jd.priority_levels > 0 && !backup) {
        // In priority order, each tree on the candidate root with the least
        // demand placed so far (the spread order breaks ties).
        for (size_t k = 0; k < roots.size(); ++k) {
          const size_t cand = roots[tiers::spread_root(offset, turn + k, roots.size())];
          if (root_demand[cand] < root_demand[root]) root = cand;
        }
        root_demand[root] += job.gradient_bytes / job.compute_ms / job.trees;
      }
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
void Planner::add_three_level_tree(const JobDesc& job, uint8_t tree, const std::vector<size_t>& leaves,
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
  if (middles.size() > config::kMaxFanIn) fail(where + ": more than 64 PSwitches under core '" + core + "'");
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

// A chain tree (CINA's): the job's leaves in PSwitch order, rotated by
// `turn` (tree t of a job starts at leaf (o + t) mod L, o as for spine
// roots); each leaf's entry has its workers (child ids 0..w-1) and, but the
// first, the previous leaf (child id w, behind the spine it came through)
// as children, sends its partial to the next leaf through spine
// (turn + k) mod S of `spines` (hop k: leaf k to leaf k+1), and the last
// leaf is the root. Results go back down the chain: each leaf replicates
// them to its workers and, addressed to it, to the previous leaf.
void Planner::add_chain_tree(const JobDesc& job, uint8_t tree, const std::vector<size_t>& leaves,
                             std::map<size_t, std::vector<std::string>>& leaf_workers,
                             const std::vector<size_t>& spines, size_t turn, int backup_for) {
  const std::string where = "job " + std::to_string(job.id);
  std::vector<size_t> sorted = leaves;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  std::vector<size_t> chain(n);
  for (size_t k = 0; k < n; ++k) chain[k] = sorted[(turn + k) % n];
  auto hop_spine = [&](size_t k) { return spines[(turn + k) % spines.size()]; };
  const uint32_t group = multicast_ip(job.id, tree);
  d.trees.push_back(TreeInfo{job.id, tree, c.switches[chain[n - 1]].name, group, backup_for});
  for (size_t k = 0; k < n; ++k) {
    const size_t l = chain[k];
    PendingEntry e{l, job.id, tree, k == n - 1, job.weight, job.dscp, leaf_workers[l], "", 0, group, {}};
    ChainLink& link = chain_links[entries.size()];
    if (k > 0) {
      link.relay = static_cast<int>(e.children.size());
      link.relay_leaf = chain[k - 1];
      e.children.push_back(c.switches[hop_spine(k - 1)].name);
    }
    if (e.children.size() > config::kMaxFanIn) {
      fail(where + ": more than 64 children of PSwitch '" + c.switches[l].name +
           "' in a chain (its workers and the previous leaf; fan-in limit)");
    }
    if (k + 1 < n) {
      const size_t next = chain[k + 1], spine = hop_spine(k);
      e.parent = c.switches[next].name;
      link.parent_via = c.switches[spine].name;
      e.out_child_id = static_cast<uint16_t>(leaf_workers[next].size());
      hops.push_back(PendingHop{spine, job.id, tree, c.switches[l].name, c.switches[next].name});
    }
    entries.push_back(std::move(e));
  }
}

bool Planner::is_pooled(uint16_t job) const {
  for (const JobDesc& j : jd.jobs) {
    if (j.id == job) return j.pooled;
  }
  return false;
}

// Pooled jobs: a pool on every PSwitch that serves one, each pooled tree's
// claim cap there (its part of the pool weighted as shares are, times the
// overcommit, at most the pool), each pooled job's G (at most its smallest
// cap), and the claim entries' job id.
void Planner::assign_claim_caps() {
  if (!jd.pool) return;
  const PoolDesc& pd = *jd.pool;
  std::map<uint16_t, std::pair<uint32_t, size_t>> least_cap;  // pooled job -> (cap, PSwitch)
  for (size_t s = 0; s < c.switches.size(); ++s) {
    double weight_sum = 0;
    for (const PendingEntry& e : entries) {
      if (e.sw == s && is_pooled(e.job)) weight_sum += jd.weighted_shares ? e.weight : 1.0;
    }
    if (weight_sum == 0) continue;
    PendingPool& pool = pools[s];
    pool.size = pd.slots;
    for (const PendingEntry& e : entries) {
      if (e.sw != s || !is_pooled(e.job)) continue;
      const double w = jd.weighted_shares ? e.weight : 1.0;
      const double part = pd.overcommit * static_cast<double>(pd.slots) * w / weight_sum;
      const uint32_t cap = static_cast<uint32_t>(std::min<double>(pd.slots, part));
      if (cap < 1) {
        fail("PSwitch '" + c.switches[s].name + "': its pool of " + std::to_string(pd.slots) +
             " slots gives job " + std::to_string(e.job) + " tree " + std::to_string(e.tree) +
             " a claim cap of no slot; use a larger pool, a larger overcommit, fewer pooled trees or other "
             "weights");
      }
      pool.caps[{e.job, e.tree}] = cap;
      auto it = least_cap.find(e.job);
      if (it == least_cap.end() || cap < it->second.first) least_cap[e.job] = {cap, s};
    }
  }
  for (const JobDesc& job : jd.jobs) {
    if (!job.pooled) continue;
    const auto [cap, s] = least_cap.at(job.id);
    const uint32_t g = job.group ? job.group : std::min<uint32_t>(8, cap);
    if (g > cap) {
      fail("job " + std::to_string(job.id) + ": group " + std::to_string(g) +
           " is larger than what fits: its claim cap on PSwitch '" + c.switches[s].name + "' is " +
           std::to_string(cap) + " slots (pool of " + std::to_string(pd.slots) +
           "); use a smaller group, a larger pool or a larger overcommit");
    }
    group_of[job.id] = g;
  }
  // A key no (job, tree) of the deployment has: an id no job uses.
  std::set<uint16_t> ids;
  for (const JobDesc& job : jd.jobs) ids.insert(job.id);
  while (ids.count(claim_job)) --claim_job;
}

// Each PSwitch's packet memory divided among its entries (equal or
// weighted shares Q), and the entries' addresses. With a pool, the fixed
// shares divide what the pool leaves (slots from `pool.size` up), a pooled
// tree's entry is a template on one pool slot, and the claim entries follow
// the switch's own entries in the table.
void Planner::assign_shares() {
  assign_claim_caps();
  for (size_t s = 0; s < c.switches.size(); ++s) {
    std::vector<PendingEntry*> mine;
    double weight_sum = 0;
    size_t pooled_count = 0;
    for (PendingEntry& e : entries) {
      if (e.sw != s) continue;
      mine.push_back(&e);
      if (is_pooled(e.job)) {
        ++pooled_count;
      } else {
        weight_sum += jd.weighted_shares ? e.weight : 1.0;
      }
    }
    const SwitchDesc& sd = c.switches[s];
    if (mine.size() > sd.engine.table_entries) {
      fail("PSwitch '" + sd.name + "': " + std::to_string(mine.size()) + " (job, tree) entries exceed its " +
           std::to_string(sd.engine.table_entries) + "-entry table; use fewer trees or jobs");
    }
    if (!mine.empty() && jd.elems_per_packet > sd.engine.slot_elems) {
      fail("jobs: elems_per_packet: " + std::to_string(jd.elems_per_packet) +
           " elements do not fit a slot of PSwitch '" + sd.name + "' (" +
           std::to_string(sd.engine.slot_elems) + " elements)");
    }
    const auto pool_it = pools.find(s);
    PendingPool* pool = pool_it == pools.end() ? nullptr : &pool_it->second;
    uint32_t shared_memory = sd.engine.packet_memory;
    if (pool) {
      const std::string where =
          "PSwitch '" + sd.name + "': the pool of " + std::to_string(pool->size) + " slots";
      if (pool->size > sd.engine.packet_memory) {
        fail(where + " is larger than its packet memory of " + std::to_string(sd.engine.packet_memory) +
             " slots");
      }
      if (pool->size == sd.engine.packet_memory && pooled_count < mine.size()) {
        fail(where + " leaves no packet memory for its " + std::to_string(mine.size() - pooled_count) +
             " fixed-share entries");
      }
      if (pooled_count > pool->size) {
        fail(where + " is smaller than its " + std::to_string(pooled_count) +
             " pooled trees (each needs a pool slot)");
      }
      shared_memory -= pool->size;
      // Claim entries: as many as the table holds after the switch's own
      // entries, at most one per group of the smallest G that fits the pool.
      const uint32_t free_entries = sd.engine.table_entries - static_cast<uint32_t>(mine.size());
      uint32_t least_g = pool->size;
      for (const auto& [key, cap] : pool->caps) least_g = std::min(least_g, group_of.at(key.first));
      const uint32_t wanted = jd.pool->table_entries ? jd.pool->table_entries : pool->size / least_g;
      if (free_entries == 0 || wanted > free_entries) {
        fail("PSwitch '" + sd.name + "': its " + std::to_string(sd.engine.table_entries) +
             "-entry table holds " + std::to_string(mine.size()) + " (job, tree) entries and leaves " +
             std::to_string(free_entries) + " for the pool's claim entries" +
             (jd.pool->table_entries ? " (pool.table_entries is " + std::to_string(wanted) + ")" : "") +
             "; use fewer trees or jobs, or fewer claim entries");
      }
      pool->table_base = static_cast<uint32_t>(mine.size());
      pool->table_count = wanted;
    }
    uint32_t base = pool ? pool->size : 0;
    uint32_t pool_slot = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      PendingEntry& e = *mine[i];
      config::EntryConfig& ec = e.cfg;
      if (is_pooled(e.job)) {
        // A template: never committed; a distinct pool slot passes the node
        // config's checks (docs/pswitch.md, "The pool").
        ec.slot_base = pool_slot++;
        ec.slot_count = 1;
      } else {
        const double w = jd.weighted_shares ? e.weight : 1.0;
        const uint32_t q = static_cast<uint32_t>(static_cast<double>(shared_memory) * w / weight_sum);
        if (q < 1) {
          fail("PSwitch '" + sd.name + "': its packet memory of " + std::to_string(sd.engine.packet_memory) +
               " slots" +
               (pool ? " (" + std::to_string(pool->size) + " of them the pool's)" : std::string()) +
               " leaves job " + std::to_string(e.job) + " tree " + std::to_string(e.tree) +
               " no slot; use fewer trees or jobs, more memory, or other weights");
        }
        ec.slot_base = base;
        ec.slot_count = q;
        base += q;
      }
      ec.index = static_cast<uint32_t>(i);
      ec.job = e.job;
      ec.tree = e.tree;
      ec.root = e.root;
      ec.fan_in = static_cast<uint32_t>(e.children.size());
      for (size_t k = 0; k < e.children.size(); ++k) ec.children.push_back(static_cast<uint8_t>(k));
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

uint32_t Planner::entry_share(size_t sw, uint16_t job, uint8_t tree) const {
  // A pooled tree: its claim cap, what the results' cwnd_cap is capped at.
  const auto pool = pools.find(sw);
  if (pool != pools.end()) {
    const auto cap = pool->second.caps.find({job, tree});
    if (cap != pool->second.caps.end()) return cap->second;
  }
  for (const PendingEntry& e : entries) {
    if (e.sw == sw && e.job == job && e.tree == tree) return e.cfg.slot_count;
  }
  return 0;
}
const std::string& Planner::parent_of(size_t sw, uint16_t job, uint8_t tree) const {
  static const std::string none;
  for (const PendingEntry& e : entries) {
    if (e.sw == sw && e.job == job && e.tree == tree) return e.parent;
  }
  return none;
}
size_t Planner::root_of(uint16_t job, uint8_t tree) const {
  for (const TreeInfo& t : d.trees) {
    if (t.job == job && t.tree == tree) return nodes.at(t.root).index;
  }
  return 0;
}

}  // namespace detail
}  // namespace panama::controller
