// Test helpers for the controller's output: plan a deployment from the two
// JSON descriptions, and find a PSwitch's or a worker's part of it (a test
// failure when there is none).
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "panama/controller/controller.hpp"

namespace panama::controller::test {

inline Deployment run(const nlohmann::json& cluster, const nlohmann::json& jobs) {
  return plan_deployment(parse_cluster(cluster), parse_jobs(jobs));
}

inline const SwitchOutput& sw(const Deployment& d, const std::string& name) {
  for (const auto& s : d.switches) {
    if (s.node.node == name) return s;
  }
  FAIL("no switch " << name);
  throw;
}

inline const WorkerOutput& worker(const Deployment& d, const std::string& host) {
  for (const auto& w : d.workers) {
    if (w.host == host) return w;
  }
  FAIL("no worker " << host);
  throw;
}

}  // namespace panama::controller::test
