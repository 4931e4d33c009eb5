// Fabric tiers and three-level tree roots (see tiers.hpp).
#include "tiers.hpp"

#include <algorithm>
#include <cstdlib>

#include "panama/controller/controller.hpp"

namespace panama::controller::tiers {

std::vector<int> switch_tiers(const std::vector<std::string>& names,
                              const std::vector<std::vector<size_t>>& neighbours,
                              const std::vector<bool>& has_hosts) {
  const size_t n = names.size();
  std::vector<int> tier(n, -1);
  for (size_t s = 0; s < n; ++s) {
    if (has_hosts[s]) tier[s] = 0;
  }
  for (size_t s = 0; s < n; ++s) {
    if (tier[s] >= 0) continue;
    for (size_t o : neighbours[s]) {
      if (has_hosts[o]) tier[s] = 1;
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (tier[s] >= 0) continue;
    bool all_tier1 = !neighbours[s].empty();
    for (size_t o : neighbours[s]) all_tier1 = all_tier1 && tier[o] == 1;
    if (!all_tier1) {
      throw ControllerError("cluster: PSwitch '" + names[s] +
                            "' has no hosts and is not linked only to PSwitches one tier below it; "
                            "supported are one PSwitch, a two-tier leaf-spine fabric and a three-tier "
                            "fabric (edge PSwitches with hosts, aggregation PSwitches linked to edges, "
                            "core PSwitches linked only to aggregation PSwitches)");
    }
    tier[s] = 2;
  }
  static const char* const kTierName[] = {"leaf", "spine", "core"};
  for (size_t s = 0; s < n; ++s) {
    for (size_t o : neighbours[s]) {
      if (o > s && std::abs(tier[s] - tier[o]) != 1) {
        const std::string what = tier[s] == tier[o]
                                     ? std::string("two ") + kTierName[tier[s]] + " PSwitches"
                                     : std::string("a ") + kTierName[std::min(tier[s], tier[o])] + " and a " +
                                           kTierName[std::max(tier[s], tier[o])] + " PSwitch";
        throw ControllerError("cluster: link " + names[s] + " - " + names[o] + " joins " + what +
                              "; supported are one PSwitch, a two-tier leaf-spine fabric (leaves: PSwitches "
                              "with hosts, spines: PSwitches linked only to leaves) and a three-tier fabric "
                              "(leaf/edge - spine/aggregation - core), links joining adjacent tiers only");
      }
    }
  }
  return tier;
}

std::vector<CoreRoot> core_roots(const std::vector<size_t>& leaves, const std::vector<int>& tier,
                                 const std::vector<std::vector<size_t>>& neighbours) {
  std::vector<CoreRoot> out;
  auto linked = [&](size_t a, size_t b) {
    return std::find(neighbours[a].begin(), neighbours[a].end(), b) != neighbours[a].end();
  };
  for (size_t core = 0; core < tier.size(); ++core) {
    if (tier[core] != 2) continue;
    CoreRoot r{core, {}};
    for (size_t leaf : leaves) {
      size_t middle = tier.size();
      for (size_t m = 0; m < tier.size() && middle == tier.size(); ++m) {
        if (tier[m] == 1 && linked(m, leaf) && linked(m, core)) middle = m;
      }
      if (middle == tier.size()) break;
      r.middle_of_leaf.push_back(middle);
    }
    if (r.middle_of_leaf.size() == leaves.size()) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace panama::controller::tiers
