// The built-in fat-tree cluster description (see fat_tree.hpp).
#include "panama/controller/fat_tree.hpp"

#include <string>

#include "panama/controller/controller.hpp"

namespace panama::controller {

nlohmann::json fat_tree_cluster(uint32_t k, double rate_gbps) {
  if (k < 2 || k > 64 || k % 2 != 0) {
    throw ControllerError("fat-tree: k must be even and in 2..64 (got " + std::to_string(k) + ")");
  }
  const uint32_t half = k / 2;
  nlohmann::json j = {{"hosts", nlohmann::json::array()},
                      {"pswitches", nlohmann::json::array()},
                      {"links", nlohmann::json::array()}};
  const uint32_t edges = k * half, cores = half * half;
  for (uint32_t e = 0; e < edges; ++e) j["pswitches"].push_back("edge" + std::to_string(e));
  for (uint32_t a = 0; a < edges; ++a) j["pswitches"].push_back("agg" + std::to_string(a));
  for (uint32_t c = 0; c < cores; ++c) j["pswitches"].push_back("core" + std::to_string(c));
  for (uint32_t h = 0; h < edges * half; ++h) {
    j["hosts"].push_back("w" + std::to_string(h));
    j["links"].push_back(
        {{"a", "w" + std::to_string(h)}, {"b", "edge" + std::to_string(h / half)}, {"rate_gbps", rate_gbps}});
  }
  for (uint32_t e = 0; e < edges; ++e) {
    const uint32_t pod = e / half;
    for (uint32_t i = 0; i < half; ++i) {
      j["links"].push_back({{"a", "edge" + std::to_string(e)},
                            {"b", "agg" + std::to_string(pod * half + i)},
                            {"rate_gbps", rate_gbps}});
    }
  }
  for (uint32_t a = 0; a < edges; ++a) {
    const uint32_t i = a % half;
    for (uint32_t c = 0; c < half; ++c) {
      j["links"].push_back({{"a", "agg" + std::to_string(a)},
                            {"b", "core" + std::to_string(i * half + c)},
                            {"rate_gbps", rate_gbps}});
    }
  }
  return j;
}

}  // namespace panama::controller
