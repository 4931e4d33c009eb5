// The baseline the virtual cluster compares in-network aggregation with
// (panama-cluster --baseline ring, docs/cluster.md "Ring-allreduce
// baseline"): a host ring allreduce between the same workers, over the same
// links and PSwitches, with the same data, checks and reports. Library
// panama_ring_baseline (sw/cluster/baseline); it builds on the workers'
// shared types (worker_common.hpp) and nothing else of sw/cluster.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "panama/cluster/worker_common.hpp"

namespace panama::runtime {
class DpdkEal;
}  // namespace panama::runtime

namespace panama::cluster {

// The allreduces of one ring worker (generate, barrier, allreduce, check),
// returning its report, on its own port `device` of `eal` (a thread of the
// in-process cluster) or, with `eal` null, its own EAL on opt.vdevs (a worker
// process). With `keep_alive`, the port (and its mempool, whose mbufs other
// threads may still hold) is handed to the caller instead of being closed on
// return.
nlohmann::json ring_iterations(const WorkerOptions& opt, const RingPeers& peers,
                               const std::shared_ptr<runtime::DpdkEal>& eal, const std::string& device,
                               const WorkerProgress& progress, std::shared_ptr<void>* keep_alive);

// A ring worker process: progress and report lines on stdout
// (print_progress_line, print_report_line); returns through _Exit.
[[noreturn]] void run_ring_worker(const WorkerOptions& opt, const RingPeers& peers);

}  // namespace panama::cluster
