// The built-in cluster descriptions panama-cluster uses: one PSwitch, or a
// leaf-spine fabric (controller.hpp; the fat-tree is fat_tree.cpp's).
#include <algorithm>
#include <string>

#include "panama/controller/controller.hpp"

namespace panama::controller {

using nlohmann::json;

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
