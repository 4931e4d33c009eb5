// The fabric (fabric.hpp) of a controller deployment: every PSwitch and
// worker the controller planned, as panama-cluster would run them. Link
// panama_fabric_deployment.
#pragma once

#include "panama/controller/controller.hpp"
#include "panama/fabric/fabric.hpp"

namespace panama::fabric {

inline Topology topology_of(const controller::Deployment& d) {
  Topology t;
  for (const controller::SwitchOutput& s : d.switches) t.switches.push_back(SwitchSpec{s.node, s.settings});
  for (const controller::WorkerOutput& w : d.workers) t.workers.push_back(WorkerSpec{w.host, w.plan});
  return t;
}

}  // namespace panama::fabric
