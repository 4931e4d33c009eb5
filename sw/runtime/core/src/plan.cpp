// Validation and comparison of job plans (plan.hpp). Reading and writing
// plan files is panama_runtime_plan's (plan_file.hpp): this library does no
// I/O and links no JSON library.
#include "panama/runtime/plan.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "panama/wire.hpp"

namespace panama::runtime {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw PlanError(where.empty() ? what : where + ": " + what);
}

}  // namespace

void validate_plan(const Plan& p) {
  if (p.world_size < 1) fail("world_size", "must be at least 1");
  if (p.rank >= p.world_size) {
    fail("rank",
         "must be below world_size (" + std::to_string(p.rank) + " >= " + std::to_string(p.world_size) + ")");
  }
  // Sized for fp32, the widest type: a frame of 16-bit elements of the same
  // count is smaller (64 + 2 x elems_per_packet bytes), so it fits as well.
  if (p.elems_per_packet < 1 || p.elems_per_packet > wire::kMaxElemsPerFrame) {
    fail("elems_per_packet", "out of range [1, " + std::to_string(wire::kMaxElemsPerFrame) + "]");
  }
  if (p.trees.empty()) fail("trees", "at least one tree is required");
  if (p.trees.size() > 256) fail("trees", "at most 256 trees");
  std::set<uint8_t> ids;
  for (size_t i = 0; i < p.trees.size(); ++i) {
    const std::string w = "trees[" + std::to_string(i) + "]";
    if (!ids.insert(p.trees[i].tree_id).second)
      fail(w + ".tree_id", "duplicate tree id " + std::to_string(p.trees[i].tree_id));
    if (p.trees[i].child_id > 63) fail(w + ".child_id", "out of range [0, 63]");
    if (p.trees[i].initial_cwnd_cap < 1) fail(w + ".initial_cwnd_cap", "must be at least 1");
    if (p.trees[i].uplink >= std::max<size_t>(1, p.devices.size())) {
      fail(w + ".uplink", "no such uplink (the plan has " +
                              std::to_string(std::max<size_t>(1, p.devices.size())) + ", see devices)");
    }
  }
  if (p.devices.size() == 1 || p.devices.size() > 2) fail("devices", "two uplinks, or none (use device)");
  if (!p.devices.empty() && !p.device.empty() && p.device != p.devices[0])
    fail("device", "must be devices[0] when devices is given");
  // Backups: each stands by for one primary of this plan, a primary has at most one.
  std::set<int> primaries, backed_up;
  for (const TreePlan& t : p.trees) {
    if (t.backup_for < 0) primaries.insert(t.tree_id);
  }
  if (primaries.empty()) fail("trees", "at least one primary tree (without backup_for) is required");
  for (size_t i = 0; i < p.trees.size(); ++i) {
    const int b = p.trees[i].backup_for;
    if (b < 0) continue;
    const std::string w = "trees[" + std::to_string(i) + "].backup_for";
    if (b > 255 || !primaries.count(b)) fail(w, "no primary tree with id " + std::to_string(b));
    if (!backed_up.insert(b).second) fail(w, "tree " + std::to_string(b) + " already has a backup");
  }
  const CongestionParams& c = p.congestion;
  if (!(c.g >= 0 && c.g <= 1)) fail("congestion.g", "out of range [0, 1]");
  if (!(c.initial_alpha >= 0 && c.initial_alpha <= 1))
    fail("congestion.initial_alpha", "out of range [0, 1]");
  if (!(c.initial_cwnd >= 1)) fail("congestion.initial_cwnd", "must be at least 1");
  if (!(c.ssthresh >= 1)) fail("congestion.ssthresh", "must be at least 1");
  if (c.rto_min_us < 1 || c.rto_min_us > c.rto_max_us)
    fail("congestion.rto_min_us", "must be in [1, rto_max_us]");
  if (c.rto_initial_us < 1) fail("congestion.rto_initial_us", "must be at least 1");
  if (!(c.rto_backoff >= 1)) fail("congestion.rto_backoff", "must be at least 1");
  if (c.failover_after < 1) fail("congestion.failover_after", "must be at least 1");
  if (p.pooled) {
    const PooledPlan& q = *p.pooled;
    if (q.group_size < 1 || q.group_size > 512) fail("pooled.group_size", "out of range [1, 512]");
    if (q.ring_window < 1 || q.ring_window > 65536) fail("pooled.ring_window", "out of range [1, 65536]");
    if (q.ring_position && *q.ring_position >= p.world_size) {
      fail("pooled.ring_position", "must be below world_size (" + std::to_string(*q.ring_position) +
                                       " >= " + std::to_string(p.world_size) + ")");
    }
    if (q.ring_port == 0 && p.udp_port == 0xFFFF)
      fail("pooled.ring_port", "required when udp_port is 65535 (the default is udp_port + 1)");
    if (ring_udp_port(p) == p.udp_port)
      fail("pooled.ring_port", "must differ from udp_port: ring frames are not PANAMA frames");
    for (size_t i = 0; i < p.trees.size(); ++i) {
      if (p.trees[i].backup_for >= 0) {
        fail("trees[" + std::to_string(i) + "].backup_for",
             "a pooled job has no backup trees (tree failover is not supported in pooled mode)");
      }
    }
    if (p.world_size > 1 && (q.next_ip == 0 || q.prev_ip == 0))
      fail(q.next_ip == 0 ? "pooled.next_ip" : "pooled.prev_ip", "required (the ring neighbours' addresses)");
  }
}

uint16_t ring_udp_port(const Plan& plan) {
  if (!plan.pooled) return 0;
  return plan.pooled->ring_port != 0 ? plan.pooled->ring_port : static_cast<uint16_t>(plan.udp_port + 1);
}

uint32_t ring_position(const Plan& plan) {
  return plan.pooled && plan.pooled->ring_position ? *plan.pooled->ring_position : plan.rank;
}

bool operator==(const CongestionParams& a, const CongestionParams& b) {
  return a.g == b.g && a.initial_alpha == b.initial_alpha && a.initial_cwnd == b.initial_cwnd &&
         a.ssthresh == b.ssthresh && a.rto_initial_us == b.rto_initial_us && a.rto_min_us == b.rto_min_us &&
         a.rto_max_us == b.rto_max_us && a.rto_backoff == b.rto_backoff && a.retry_budget == b.retry_budget &&
         a.failover_after == b.failover_after;
}
bool operator==(const TreePlan& a, const TreePlan& b) {
  return a.tree_id == b.tree_id && a.child_id == b.child_id && a.dst_mac == b.dst_mac &&
         a.dst_ip == b.dst_ip && a.initial_cwnd_cap == b.initial_cwnd_cap && a.backup_for == b.backup_for &&
         a.uplink == b.uplink;
}
bool operator==(const PooledPlan& a, const PooledPlan& b) {
  return a.group_size == b.group_size && a.ring_position == b.ring_position && a.next_mac == b.next_mac &&
         a.next_ip == b.next_ip && a.prev_mac == b.prev_mac && a.prev_ip == b.prev_ip &&
         a.ring_port == b.ring_port && a.ring_window == b.ring_window;
}
bool operator==(const Plan& a, const Plan& b) {
  return a.job_id == b.job_id && a.rank == b.rank && a.world_size == b.world_size &&
         a.udp_port == b.udp_port && a.device == b.device && a.devices == b.devices &&
         a.local_mac == b.local_mac && a.local_ip == b.local_ip && a.elems_per_packet == b.elems_per_packet &&
         a.dscp == b.dscp && a.ttl == b.ttl && a.trees == b.trees && a.congestion == b.congestion &&
         a.pooled == b.pooled;
}

}  // namespace panama::runtime
