// A PANAMA worker of the virtual cluster: one Communicator, `iterations`
// allreduces of exact-summing data (test_data.hpp), each checked bit for
// bit against a reference computed locally, and a JSON report.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "panama/cluster/worker_common.hpp"

namespace panama::runtime {
class Runtime;
}  // namespace panama::runtime

namespace panama::cluster {

// The allreduces of one worker (generate, barrier, allreduce, check),
// returning its report. With `shared_rt` null it starts its own runtime and
// EAL on opt.vdevs (a worker process); otherwise it opens `devices` (one
// per uplink) in that runtime, whose one progress thread then serves every
// worker of the in-process cluster.
nlohmann::json worker_iterations(const WorkerOptions& opt, runtime::Runtime* shared_rt,
                                 const std::vector<std::string>& devices, const WorkerProgress& progress);

// A worker process: progress and report lines on stdout
// (print_progress_line, print_report_line); returns through _Exit.
[[noreturn]] void run_worker(const WorkerOptions& opt);

}  // namespace panama::cluster
