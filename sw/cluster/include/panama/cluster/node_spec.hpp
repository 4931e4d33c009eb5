// The node-spec file: everything a child process of a virtual-cluster run
// needs, written by the parent into <run_dir>/nodes/<name>.json beside the
// plan. A child is started as
//
//   <exe> --node <run_dir>/nodes/<name>.json
//
// (panama-cluster and panama-torchrun: the one entry point of their child
// processes, is_node_child / run_node_child). One JSON object:
//
//   role         "pswitch", "worker" (PANAMA) or "ring-worker" (--baseline ring)
//   name         the node (PSwitch or host name of the plan)
//   dpdk_prefix  its EAL's --file-prefix
//   poll         its polling loop's back-off: {"name", "spin_polls", "spin_us", "max_sleep_us"}
//   pswitch:     config (its node config), stats (the counters file it writes)
//   workers:     plan, vdevs (one per uplink), seed, elems, iterations,
//                streaming_copy_bytes; PANAMA workers also dtype ("fp32",
//                "bf16", "fp16") and leaf_of_rank (the leaf PSwitch index of
//                every rank of the job); ring workers ring_channels, left
//                and right (the neighbours' MAC addresses)
//
// Every key is required for its role and no other key is allowed: a
// mistake in the file is an error naming the key and the file.
#pragma once

#include <string>

#include "panama/cluster/worker_common.hpp"

namespace panama::cluster {

struct NodeSpecFile {
  enum class Role { kPswitch, kWorker, kRingWorker };
  Role role = Role::kWorker;
  std::string name;
  std::string dpdk_prefix;
  runtime::IdlePolicy poll;
  std::string config_path, stats_path;  // kPswitch
  WorkerOptions worker;                 // kWorker, kRingWorker (file_prefix and idle: as above)
  RingPeers peers;                      // kRingWorker
};

// <run_dir>/nodes/<name>.json
std::string node_spec_path(const std::string& run_dir, const std::string& name);

// Writes `spec` to `path` (creating its folder); throws std::runtime_error.
void write_node_spec(const std::string& path, const NodeSpecFile& spec);

// Reads a node-spec file; throws std::runtime_error naming the file and
// the key for an unknown, missing or ill-typed key.
NodeSpecFile read_node_spec(const std::string& path);

// `argv` is `<exe> --node <file>`: a child process of a cluster run.
bool is_node_child(int argc, char** argv);

// Runs the child process `argv[2]` describes (a PSwitch, a PANAMA worker or
// a ring worker) and returns its exit status: 2 when the file is unusable.
int run_node_child(int argc, char** argv);

}  // namespace panama::cluster
