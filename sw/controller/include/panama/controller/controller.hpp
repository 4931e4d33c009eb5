// The controller: from a cluster description (hosts, PSwitches, links) and a
// job description (jobs: workers, number of trees, weights) it computes the
// aggregation trees, each PSwitch's table entries (fan-in, child ids, slot
// share, addresses, multicast group of the results) and each worker's plan,
// and writes them as node configs (sw/config format) and job plans
// (sw/runtime/core format). docs/controller.md documents the input formats
// and the rules.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/config/node_config.hpp"
#include "panama/pswitch/settings.hpp"
#include "panama/runtime/plan.hpp"

namespace panama::controller {

// An invalid topology or job; the message says which element and why.
struct ControllerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct HostDesc {
  std::string name;
  config::MacAddress mac{};
  uint32_t ip = 0;
};

// What a PSwitch's engine can hold, as the cluster description states it
// (the controller never assumes a build's engine: a card, the RTL and the
// model may differ). Defaults are the default engine configuration.
struct EngineCapacity {
  uint32_t table_entries = 64;   // (job, tree) entries (NUM_ENTRIES)
  uint32_t packet_memory = 512;  // slots in all (NUM_SLOTS); each entry gets a share Q of them
  uint32_t slot_elems = 2304;    // elements one slot holds, of any type (SLOT_ELEMS)
};

struct SwitchDesc {
  std::string name;
  config::MacAddress mac{};
  uint32_t ip = 0;
  EngineCapacity engine;
};

struct LinkDesc {
  std::string a, b;
  double rate_gbps = 10.0;
};

// Port defaults for every PSwitch port (the "pswitch" section's port keys).
struct PortDefaults {
  uint64_t queue_bytes = 4u << 20;
  uint64_t ecn_k_bytes = 256u << 10;
  double loss = 0.0, dup = 0.0, reorder = 0.0;
  uint64_t seed = 1;
};

struct ClusterDesc {
  std::vector<HostDesc> hosts;
  std::vector<SwitchDesc> switches;
  std::vector<LinkDesc> links;
  PortDefaults port_defaults;
  // CE threshold K of every PSwitch's engine queue (the frames waiting for
  // the engine; the "pswitch" section's engine_ecn_k_bytes), 0 = off.
  uint64_t engine_ecn_k_bytes = 256u << 10;
  // Where memif sockets of the virtual links live (used to write vdev specs).
  std::string run_dir = "/tmp/panama-cluster";
};

// The shape of a job's trees (docs/controller.md, "Chain trees"): spine
// (every leaf under a spine root, or a core root on three tiers) or chain
// (CINA's: only the job's leaves aggregate, each adds its rack to the
// previous leaf's partial and passes it on, the last one is the root).
enum class TreeShape { kSpine, kChain };

// "spine" / "chain"; parse_tree_shape is false for any other name.
const char* tree_shape_name(TreeShape s);
bool parse_tree_shape(const std::string& name, TreeShape& out);

struct JobDesc {
  uint16_t id = 1;
  std::vector<std::string> workers;  // rank order
  uint32_t trees = 1;
  TreeShape shape = TreeShape::kSpine;
  double weight = 1.0;
  uint8_t dscp = 0;
  // One standby tree per tree (ids trees..2·trees-1, tree trees+t stands by for
  // t), rooted at another candidate root: the workers fail over to it when t
  // stops answering (docs/protocol.md, "Tree failover").
  bool backup_trees = false;
  // Declared compute time per iteration and gradient bytes per iteration,
  // for priorities (JobsDesc::priority_levels): 0 when not declared.
  double compute_ms = 0;
  double gradient_bytes = 0;
  // Set by apply_priorities: 0 the most GPU-intensive level; -1 without priorities.
  int priority_level = -1;
  // Pooled mode ("memory": "pooled", docs/controller.md "Pooled jobs"): the
  // job's entries claim slots of the engines' pools a group of `group`
  // sequences at a time instead of holding a fixed share; a group the root
  // denies is reduced by a host ring. group 0: the default, min(8, the
  // smallest claim cap on the job's trees).
  bool pooled = false;
  uint32_t group = 0;
};

// The engines' pools ("pool" of the job description): on every PSwitch
// that serves a pooled job, engine slots 0..slots-1 and the table entries
// after the switch's own entries are the pool's; the fixed shares divide
// the rest of the packet memory. A pooled tree's claim cap on a PSwitch is
// its part of the pool, weighted as shares are, times `overcommit`, at most
// the whole pool.
struct PoolDesc {
  uint32_t slots = 0;
  uint64_t lease_us = 20000;     // a claim that has emitted nothing holds its slots this long
  uint32_t table_entries = 0;    // claim entries (groups holding slots at once); 0: as many as fit
  double overcommit = 1.0;       // >= 1: caps summing to more than the pool let tenants borrow
  bool ring_congestion = false;  // the pooled plans' ring_congestion: DCTCP on the ring fallback
};

struct JobsDesc {
  std::vector<JobDesc> jobs;
  bool weighted_shares = false;  // false: every (job, tree) entry on a PSwitch gets an equal share
  // Priorities by GPU intensity (Crux's idea, docs/controller.md
  // "Priorities"): 0 levels is off; else each job's intensity, compute per
  // gradient byte, ranks it, the ranks are compressed onto this many levels
  // (equal numbers of jobs per level, most intensive first), level l gets
  // DSCP priority_dscp[l] and, with weighted shares, weight x (levels - l);
  // jobs are planned in priority order and each tree takes the candidate
  // root with the least demand already placed on it (gradient bytes per ms
  // of compute).
  uint32_t priority_levels = 0;
  std::vector<uint8_t> priority_dscp;
  uint16_t udp_port = wire::kDefaultUdpPort;
  uint32_t elems_per_packet = 256;
  runtime::CongestionParams congestion;
  std::optional<PoolDesc> pool;  // required when a job is pooled
};

// The jobs with their priority levels, DSCP and weights applied and in
// planning order (most intensive first); `jd` itself when priorities are off.
// Throws ControllerError for a job without compute_ms and gradient_bytes.
JobsDesc apply_priorities(const JobsDesc& jd);

// Read the two descriptions with the project's JSON object reader
// (panama/config/json_reader.hpp): every error reads "<origin>: <path>:
// <what>", e.g. "jobs.json: jobs[1].trees: out of range: 0 is not in 1..255";
// `origin` is the file name (panama-controller passes it). Throw
// ControllerError.
ClusterDesc parse_cluster(const nlohmann::json& j, const std::string& origin = "cluster");
JobsDesc parse_jobs(const nlohmann::json& j, const std::string& origin = "jobs");

// One worker of the result: its plan and the DPDK device arguments of its link.
struct WorkerOutput {
  std::string host;
  runtime::Plan plan;
  std::string vdev;                // e.g. "net_memif0,role=client,socket=/tmp/panama-cluster/w0.sock"
  std::vector<std::string> vdevs;  // one per uplink (two for a dual-homed host); vdev is the first
};

struct SwitchOutput {
  config::NodeConfig node;            // engine table + "pswitch" section
  pswitch::PswitchSettings settings;  // the same section, parsed
};

// Where a (job, tree) is rooted; for reports and tests.
struct TreeInfo {
  uint16_t job;
  uint8_t tree;
  std::string root;
  uint32_t multicast_ip;  // the group the results are sent to
  int backup_for = -1;    // a standby tree: the tree it stands by for
};

struct Deployment {
  std::vector<SwitchOutput> switches;
  std::vector<WorkerOutput> workers;
  std::vector<TreeInfo> trees;
};

// Computes everything. Throws ControllerError for invalid input.
Deployment plan_deployment(const ClusterDesc& cluster, const JobsDesc& jobs);

// Writes <dir>/<switch>.json, <dir>/<host>.plan.json and <dir>/deployment.json
// (the list of nodes, their files and their device arguments).
void write_deployment(const Deployment& d, const std::string& dir);

// The group address results of (job, tree) go to: 239.<job hi>.<job lo>.<tree>,
// and its Ethernet mapping 01:00:5e + the low 23 bits (RFC 1112).
uint32_t multicast_ip(uint16_t job, uint8_t tree);
config::MacAddress multicast_mac(uint32_t group_ip);

// Built-in descriptions used by panama-cluster: `workers` hosts on one PSwitch,
// or a leaf-spine fabric with `leaves` leaves and `spines` spines, workers
// spread round-robin over the leaves. `dual_homed` (an even number of
// leaves): two planes as with dual-ToR, worker i's uplink 0 to leaf
// i mod L/2 and its uplink 1 to leaf L/2 + i mod L/2.
nlohmann::json single_switch_cluster(uint32_t workers, double rate_gbps);
nlohmann::json two_tier_cluster(uint32_t workers, uint32_t leaves, uint32_t spines, double rate_gbps,
                                bool dual_homed = false);

}  // namespace panama::controller
