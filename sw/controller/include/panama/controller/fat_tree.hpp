// A built-in three-tier fat-tree cluster description for the controller
// (docs/controller.md, "Three-tier fabrics").
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace panama::controller {

// The k-ary fat-tree (k even, 2..64): k pods of k/2 edge and k/2 aggregation
// PSwitches, (k/2)^2 core PSwitches, k/2 hosts per edge (k^3/4 hosts).
// Names: hosts w0.., edges edge0.. (pod p's edge i is edge<p*k/2+i>),
// aggregation agg0.. (likewise), cores core0..; aggregation i of every pod is
// linked to cores i*k/2 .. i*k/2+k/2-1. Links in the order: hosts (host order),
// edge-aggregation (edge order), aggregation-core (aggregation order). Every
// link at rate_gbps. Throws ControllerError for an invalid k.
nlohmann::json fat_tree_cluster(uint32_t k, double rate_gbps);

}  // namespace panama::controller
