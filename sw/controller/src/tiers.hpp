// Tiers of a PSwitch fabric and the three-tier (fat-tree) part of tree
// planning, used by the Planner in controller.cpp. Internal to the library.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace panama::controller::tiers {

// The tier of every PSwitch, from the links: 0 = has hosts (a leaf / edge
// switch), 1 = no hosts, linked to a tier-0 PSwitch (spine / aggregation),
// 2 = linked only to tier-1 PSwitches (core). `neighbours[s]` are the PSwitch
// indices linked to PSwitch s, `has_hosts[s]` whether a host hangs off it.
// Throws ControllerError for a link between PSwitches whose tiers are not
// adjacent and for PSwitches more than two tiers above the hosts.
std::vector<int> switch_tiers(const std::vector<std::string>& names,
                              const std::vector<std::vector<size_t>>& neighbours,
                              const std::vector<bool>& has_hosts);

// One candidate root of a three-level tree (leaf -> middle -> core) over a
// job's leaves: the core, and for each leaf (in the job's leaf order) the
// tier-1 PSwitch linked to both the leaf and the core through which it
// reaches the core (the first such in PSwitch order).
struct CoreRoot {
  size_t core;
  std::vector<size_t> middle_of_leaf;
};

// Every tier-2 PSwitch through which all of `leaves` reach a common root, in
// PSwitch order.
std::vector<CoreRoot> core_roots(const std::vector<size_t>& leaves, const std::vector<int>& tier,
                                 const std::vector<std::vector<size_t>>& neighbours);

// Root spreading: tree t of a job is rooted at candidate (offset + t) mod n,
// where offset is the number of trees of the jobs planned before it, so that
// over jobs every candidate (spine or core) roots trees, not only the first T.
inline size_t spread_root(size_t offset, size_t tree, size_t candidates) {
  return (offset + tree) % candidates;
}

}  // namespace panama::controller::tiers
