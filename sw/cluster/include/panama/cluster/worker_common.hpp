// What every worker of the virtual cluster shares, PANAMA's
// (panama/cluster/worker.hpp) and the ring baseline's
// (panama/cluster/ring_baseline.hpp): its options, its ring neighbours, how
// it reports progress, the iteration barrier and the EAL arguments of a
// node. Library panama_cluster_worker, which both link; it includes neither.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "panama/runtime/idle_backoff.hpp"
#include "panama/wire.hpp"

namespace panama::cluster {

struct WorkerOptions {
  std::string plan_path;
  std::vector<std::string> vdevs;  // its own EAL's devices (a worker process): one per uplink
  std::string file_prefix;         // its own EAL's --file-prefix
  uint64_t seed = 1;
  uint64_t elems = 0;
  uint32_t iterations = 1;
  // PANAMA workers: the allreduces' element type (ClusterOptions::dtype),
  // and for 16-bit types the leaf PSwitch of every rank of the job (indices;
  // the reference rounds each leaf's partial sum, test_data.hpp). Empty: one
  // PSwitch for all.
  wire::ElemType dtype = wire::ElemType::kFloat32;
  std::vector<uint32_t> leaf_of_rank;
  runtime::IdlePolicy idle;         // its polling loop's back-off (ClusterOptions::poll, resolved)
  size_t streaming_copy_bytes = 0;  // ClusterOptions::streaming_copy_bytes (PANAMA workers)
  uint32_t ring_channels = 2;       // ClusterOptions::ring_channels (ring baseline)
};

// The left and right neighbours of a ring-allreduce worker.
struct RingPeers {
  std::array<uint8_t, 6> left{}, right{};
};

// Progress of one worker: iteration, bytes of it completed.
using WorkerProgress = std::function<void(uint32_t iteration, uint64_t bytes)>;

// Waits until every rank of the job in `plan_path`'s directory has reached
// `iteration` (a file per rank and iteration), so no worker generates or
// checks test data while another one's allreduce is being timed. Calls
// `while_waiting` (if any) between checks. Throws after `timeout_s`.
void iteration_barrier(const std::string& plan_path, uint32_t job, uint32_t rank, uint32_t world,
                       uint32_t iteration, double timeout_s = 600.0,
                       const std::function<void()>& while_waiting = {});

// EAL arguments of a virtual-cluster node: no hugepages, no PCI, nothing
// shared, its own file prefix, not pinned to one core, its vdevs.
std::vector<std::string> node_eal_args(const std::vector<std::string>& vdevs, unsigned memory_mb,
                                       const std::string& prefix);

// Mbufs of a worker's port (DpdkPort's default, 2047; 4095 for net_af_xdp,
// whose receive queue fills its AF_XDP fill ring of 2048 from the pool).
uint32_t port_mbufs(const std::vector<std::string>& vdevs);

// A worker process's report protocol on stdout: "P <iteration> <bytes>"
// progress lines and a final "R <json>" line (report_line).
void print_progress_line(uint32_t iteration, uint64_t bytes);
void print_report_line(const std::string& report_json);

}  // namespace panama::cluster
