// The controller's planner (plan_deployment), internal to the library:
// its state and steps. plan.cpp names the nodes, checks the links, builds
// the trees and divides the packet memory into shares; write.cpp writes the
// PSwitch node configurations and the worker plans from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "panama/controller/controller.hpp"
#include "tiers.hpp"

namespace panama::controller::detail {

[[noreturn]] inline void fail(const std::string& what) {
  throw ControllerError(what);
}

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
  std::string parent;                 // the parent PSwitch (a neighbour but in a chain); empty at the root
  uint16_t out_child_id;
  uint32_t group_ip;
  config::EntryConfig cfg;
};

// What a chain tree's entry has beyond a PendingEntry: the spine its
// aggregate leaves by (the parent is the next leaf, beyond it), and the
// previous leaf, its child `relay` (a spine port; -1 for the first leaf).
struct ChainLink {
  std::string parent_via;
  int relay = -1;
  size_t relay_leaf = 0;
};

// A chain tree's hop from one leaf to the next through a spine that passes
// it on (pswitch::TransitHop).
struct PendingHop {
  size_t spine;
  uint16_t job;
  uint8_t tree;
  std::string child, parent;  // the leaves, neighbours of the spine
};

// The pool of a PSwitch that serves pooled trees (its "pool" settings):
// slots 0..size-1, table entries table_base.., a claim cap per pooled tree.
struct PendingPool {
  uint32_t size = 0;
  uint32_t table_base = 0, table_count = 0;
  std::map<std::pair<uint16_t, uint8_t>, uint32_t> caps;  // (job, tree) -> claim cap
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

  void index_names();
  void check_links();
  uint32_t port_of(size_t sw, const std::string& neighbour) const;
  std::vector<std::vector<size_t>> hosts_below() const;
  bool linked(size_t sw, const std::string& neighbour) const;
  void build_trees();
  void add_three_level_tree(const JobDesc& job, uint8_t tree, const std::vector<size_t>& leaves,
                            std::map<size_t, std::vector<std::string>>& leaf_workers,
                            const tiers::CoreRoot& cr, int backup_for);
  void add_chain_tree(const JobDesc& job, uint8_t tree, const std::vector<size_t>& leaves,
                      std::map<size_t, std::vector<std::string>>& leaf_workers,
                      const std::vector<size_t>& spines, size_t turn, int backup_for);
  void assign_shares();
  void assign_claim_caps();
  bool is_pooled(uint16_t job) const;
  uint32_t entry_share(size_t sw, uint16_t job, uint8_t tree) const;
  const std::string& parent_of(size_t sw, uint16_t job, uint8_t tree) const;
  size_t root_of(uint16_t job, uint8_t tree) const;

  // write.cpp
  void write_switch_configs();
  void write_worker_plans();

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
  std::map<size_t, double> root_demand;            // priorities: bytes per ms of compute rooted at a PSwitch
  std::vector<PendingEntry> entries;
  std::map<size_t, ChainLink> chain_links;  // by index in entries: the entries of chain trees
  std::vector<PendingHop> hops;
  std::vector<WorkerSlot> worker_slots;
  std::map<size_t, PendingPool> pools;    // by PSwitch: those serving pooled trees
  std::map<uint16_t, uint32_t> group_of;  // pooled job -> G
  uint16_t claim_job = 0xFFFF;            // the claim entries' job id: one no job uses
  Deployment d;
};

}  // namespace panama::controller::detail
