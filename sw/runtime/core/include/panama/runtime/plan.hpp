// The job plan: this host's part of a PANAMA job, as the controller writes it.
//
// The plan says who this worker is (job, rank), where its contributions go
// (one leaf PSwitch per tree), how packets are sized, and the
// congestion-control parameters. Every field has a documented default except
// the identity and addressing ones. This header is the plan as data and its
// validation; plan files (one JSON file per worker, docs/runtime.md "Job
// plan") are read and written by panama_runtime_plan (plan_file.hpp), so the
// protocol core does no I/O and links no JSON library.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

namespace panama::runtime {

// A bad plan: the message names the offending key, e.g. "trees[1].dst_ip: ...".
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using MacAddress = MacBytes;

// Congestion control and retransmission (docs/runtime.md, "Congestion control").
struct CongestionParams {
  double g = 1.0 / 16;             // DCTCP gain: alpha <- (1-g)·alpha + g·F once per window
  double initial_alpha = 1.0;      // alpha before the first window ends (1 = first CE halves cwnd)
  double initial_cwnd = 1.0;       // packets
  double ssthresh = 64.0;          // slow start (+1 per result) below, +1/cwnd per result above
  uint32_t rto_initial_us = 5000;  // before the first RTT sample
  uint32_t rto_min_us = 1000;
  uint32_t rto_max_us = 1000000;
  double rto_backoff = 2.0;    // a chunk's RTO is multiplied by this on each of its timeouts
  uint32_t retry_budget = 20;  // retransmissions of one chunk before the allreduce fails
  // Timeouts of one chunk after which a tree that has a backup tree is declared
  // dead and the job fails over to the backup (docs/protocol.md, "Tree failover").
  uint32_t failover_after = 6;
};

// One aggregation tree of the job as this worker sees it.
struct TreePlan {
  uint8_t tree_id = 0;
  uint16_t child_id = 0;          // this worker's child id at its leaf engine (0..63)
  MacAddress dst_mac{};           // the leaf PSwitch
  uint32_t dst_ip = 0;            // host byte order
  uint16_t initial_cwnd_cap = 8;  // window bound until the first result brings a cwnd_cap
  // -1: a primary tree (chunk k goes to primary k mod T). Otherwise this is the
  // standby tree of the primary with this tree id: unused until that primary
  // fails over (docs/protocol.md, "Tree failover").
  int16_t backup_for = -1;
  // Dual-homed workers: which of the plan's `devices` (uplinks) this tree's
  // packets leave by. 0 for a single-homed worker.
  uint8_t uplink = 0;
};

// Pooled mode (docs/hybrid-allreduce.md; docs/runtime.md, "Pooled mode"):
// the job's engines hold no fixed share for it but a pool of slots it
// claims G sequences at a time. A group the root denies is reduced by a
// host ring over the job's ranks instead, so the plan names this worker's
// place on the ring and its ring neighbours: ring frames are ordinary UDP
// traffic (to ring_port, never the PANAMA port) that switches forward by MAC
// address.
struct PooledPlan {
  uint32_t group_size = 0;  // G: sequences per group (1..512, the largest pool)
  // This worker's place on the ring, 0..world_size-1 (every place taken by
  // one worker of the job); absent: its rank (the ring in rank order).
  std::optional<uint32_t> ring_position;
  MacAddress next_mac{};  // ring position + 1 (mod world_size): ring data goes there
  uint32_t next_ip = 0;   // host byte order
  MacAddress prev_mac{};  // ring position - 1 (mod world_size): ring acknowledgements go there
  uint32_t prev_ip = 0;
  uint16_t ring_port = 0;     // 0: the plan's udp_port + 1
  uint32_t ring_window = 64;  // ring data frames sent and not yet acknowledged, at most
  // DCTCP on the ring: a data frame that arrives CE-marked is acknowledged
  // with the mark echoed, and the sender's ring window (at most
  // ring_window frames) follows the echoes as a tree's follows its results
  // (TreeCongestion). Groups on the ring then no longer count against the
  // claim-ahead limit: the window paces them. false: a fixed window of
  // ring_window frames, and as many groups on the ring as the tree's
  // claim-ahead limit.
  bool ring_congestion = false;
};

struct Plan {
  uint16_t job_id = 0;
  uint32_t rank = 0;
  uint32_t world_size = 1;
  uint16_t udp_port = wire::kDefaultUdpPort;  // PANAMA UDP port (source and destination)
  std::string device;                         // optional: DPDK port name this worker uses (e.g. "net_memif0")
  // Dual-homed workers: the DPDK port names of the uplinks (trees[].uplink
  // indexes them; device is then devices[0]). Empty: one uplink, `device`.
  std::vector<std::string> devices;
  MacAddress local_mac{};
  uint32_t local_ip = 0;  // host byte order
  // Elements per packet whatever the allreduce's type: 256 is a 1 KiB
  // payload in fp32, 512 bytes in bf16 or fp16 (an engine slot holds
  // SLOT_ELEMS elements of any type, docs/protocol.md §8).
  uint32_t elems_per_packet = 256;
  uint8_t dscp = 0;
  uint8_t ttl = 64;
  std::vector<TreePlan> trees;
  CongestionParams congestion;
  // Pooled mode; absent: every tree has a fixed share (the default).
  std::optional<PooledPlan> pooled;
};

// The UDP port of a pooled plan's ring frames (PooledPlan::ring_port, or
// udp_port + 1 when that is 0).
uint16_t ring_udp_port(const Plan& plan);

// This worker's place on a pooled plan's ring (PooledPlan::ring_position,
// or the rank when that is absent); the rank for a plan without `pooled`.
uint32_t ring_position(const Plan& plan);

// Validates a plan (built in code or parsed); throws PlanError naming the
// key, e.g. "trees[1].child_id: ...".
void validate_plan(const Plan& plan);

bool operator==(const CongestionParams& a, const CongestionParams& b);
bool operator==(const TreePlan& a, const TreePlan& b);
bool operator==(const PooledPlan& a, const PooledPlan& b);
bool operator==(const Plan& a, const Plan& b);

}  // namespace panama::runtime
