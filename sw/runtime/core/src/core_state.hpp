// The allreduce core's private state (allreduce_core.hpp): what
// allreduce_core.cpp and pooled.cpp (pooled mode: claims, groups, the ring
// fallback) share. Not installed: the class's users see only its API.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "panama/runtime/allreduce_core.hpp"

namespace panama::runtime {

// A contribution kept for a failover replay: its elements' bytes and type.
struct AllreduceCore::Kept {
  uint8_t elem_type = 0;
  uint32_t count = 0;          // elements
  std::vector<uint8_t> bytes;  // count x elem_bytes(elem_type)
};

struct AllreduceCore::Op {
  OpId id = 0;
  uint8_t* data = nullptr;  // count elements of elem_type
  size_t count = 0;
  uint8_t elem_type = static_cast<uint8_t>(wire::ElemType::kFloat32);
  size_t elem_bytes = 4;
  size_t chunks = 0;
  size_t remaining = 0;
  OpStatus status = OpStatus::kPending;
  bool released = false;   // forget it as soon as it finishes
  bool agreement = false;  // a failover agreement vector (internal, not in ops_)
  bool streaming = false;  // payload copies with streaming stores (set_streaming_copy_bytes)
  bool zero_copy = false;  // chunks sent from the buffer when the FrameOut can attach (set_zero_copy_send)
  bool draining = false;   // finished, in draining_ until no frame references the buffer
  OpStatus final_status = OpStatus::kPending;  // what it finished as (reported once drained)
  BufferHold* hold = nullptr;                  // the frames that reference data (zero-copy send)
  std::string error;

  Op() = default;
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;
  ~Op() {
    if (hold) hold->release();
  }
};

// A chunk that has been sent and is waiting for its result.
struct AllreduceCore::Outstanding {
  Op* op = nullptr;  // null for a replayed contribution whose result this worker already has
  std::shared_ptr<const Kept> replay;  // that contribution (when op is null)
  size_t chunk = 0;
  uint64_t sent_ns = 0;
  uint64_t deadline_ns = 0;
  uint64_t rto_ns = 0;
  uint32_t retries = 0;
  bool acked = false;
  bool retransmitted = false;
  bool resend = false;   // timed out, retransmission not written yet (transmit path was full)
  bool stalled = false;  // waited through a silence of its tree (set_skew_allowance): no RTT sample
};

// Pooled mode: one group of G consecutive sequences of a tree
// (docs/hybrid-allreduce.md, rules 2-6). Sequences first_seq ..
// first_seq + nseq - 1 carry chunks first_chunk, first_chunk + stride, ...
// of `op` (an allreduce starts its chunks on every tree at a group boundary,
// so a group belongs to one allreduce; the last group of an allreduce on a
// tree may hold fewer than G sequences).
struct AllreduceCore::Group {
  enum class State : uint8_t {
    kIdle,      // issued, its claim not sent yet (beyond the claim-ahead limit)
    kClaiming,  // claim sent, no answer yet
    kNetwork,   // granted: its chunks go to the engines
    kRing,      // denied: reduced by the ring
    kDone,      // every result in the buffer (finished_on_ring says how)
  };
  State state = State::kIdle;
  bool on_ring = false;  // moved to the ring (kRing, or kDone through it)
  Op* op = nullptr;      // not to be read once the group is finished (the allreduce may be forgotten)
  size_t first_chunk = 0, stride = 1;
  uint32_t first_seq = 0, nseq = 0;
  uint32_t elems = 0;     // elements of its chunks
  uint8_t elem_type = 0;  // the allreduce's
  uint32_t results = 0;   // chunk results received (in the network)
  uint64_t claim_sent_ns = 0, claim_deadline_ns = 0, claim_rto_ns = 0;
  uint32_t claim_retries = 0;
  bool claim_due = false;  // send the claim again on the next poll (with a chunk's retransmission)
  std::unique_ptr<RingGroup> ring;
};

// The ring fallback's state of one denied group at this worker. The
// group's elements, its chunks in sequence order, form a vector of E
// elements in P = ceil(E / piece_elems) pieces, cut into N segments of
// whole pieces, min(N, P) of them non-empty, which ring positions hold the
// non-empty ones rotating with the group index (pooled.cpp, `segment`).
// Positions are the plan's ring order (PooledPlan::ring_position).
// Reduce-scatter: at step s (0 <= s <= N - 2) ring position r sends
// segment (r - s) mod N, its own contribution added to what it received at
// step s - 1; position r owns segment (r + 1) mod N, whose sum it completes
// at its receipt of step N - 2 and rounds once to the group's type.
// All-gather: at step N - 1 + a (0 <= a <= N - 2) position r sends segment
// (r + 1 - a) mod N, the owner's rounded values. An empty segment sends no
// frame. Partial sums and results travel as fp32.
struct AllreduceCore::RingGroup {
  uint32_t elems = 0;        // E
  uint32_t piece_elems = 0;  // largest piece
  uint8_t elem_type = 0;
  std::vector<uint32_t> own;  // this rank's contribution, widened to fp32 bits
  std::vector<uint8_t> got;   // [step * max_pieces + piece]: received
  uint32_t max_pieces = 0;
  uint32_t final_pieces = 0, total_pieces = 0;  // pieces whose result is in the buffer, of all
  uint64_t last_ns = 0;  // when the group went to the ring, or its latest new piece arrived
};

// A ring data frame of this rank, kept until acknowledged.
struct AllreduceCore::RingKey {
  uint8_t tree = 0;  // tree index
  uint32_t group = 0;
  uint16_t step = 0, piece = 0;
  bool operator<(const RingKey& o) const {
    return tree != o.tree     ? tree < o.tree
           : group != o.group ? group < o.group
           : step != o.step   ? step < o.step
                              : piece < o.piece;
  }
};

// An acknowledgement to send: the data frame's key, and whether it arrived CE-marked.
struct AllreduceCore::RingAck {
  RingKey key;
  bool ce = false;
};
struct AllreduceCore::RingOut {
  uint32_t offset = 0;
  uint8_t elem_type = 0;         // the group's
  std::vector<uint32_t> values;  // fp32 bits
  bool sent = false;
  uint64_t sent_ns = 0, deadline_ns = 0, rto_ns = 0;
  uint32_t retries = 0;
};

struct AllreduceCore::Tree {
  // Chunks of one op on this tree: sequences [first_seq, first_seq + count),
  // sequence first_seq + j carrying chunk first_chunk + stride * j. A replayed
  // contribution (failover) is a segment of one with op null and `replay` set.
  struct Segment {
    Op* op;
    uint32_t first_seq;
    uint32_t count;
    size_t first_chunk;
    size_t stride;
    std::shared_ptr<const Kept> replay;
  };
  enum class State { kActive, kStandby, kDead };

  Tree(const TreePlan& p, size_t idx, const CongestionParams& c)
      : plan(p), index(idx), cc(c, p.initial_cwnd_cap) {}

  TreePlan plan;
  size_t index;
  TreeCongestion cc;
  State state = State::kActive;
  int backup = -1;         // index of this primary's backup tree
  int primary = -1;        // for a backup: index of the primary it stands by for
  int redirect = -1;       // a failed-over primary: index of the tree its chunks now go to
  size_t primary_pos = 0;  // position among the primaries (chunk k -> primary k mod T)
  // Failover bookkeeping (see begin_failover / complete_failover).
  std::unique_ptr<Op> agreement;  // on a backup: the agreement vector in flight
  std::vector<float> agreement_data;
  uint32_t agreement_seqs = 0;  // m: sequences the agreement used on this backup
  uint64_t last_result_ns = 0, dead_at_ns = 0, agreed_at_ns = 0;
  uint32_t restart_seq = 0;
  // Contributions of recent results (primaries with a backup): seq s at
  // j = s & (kept_seq.size() - 1), kept_n[j] elements of type kept_type[j]
  // at kept_data + j * 4 * elems_per_packet (room for a chunk of fp32).
  std::vector<uint32_t> kept_seq, kept_n;
  std::vector<uint8_t> kept_valid, kept_type;
  std::vector<uint8_t> kept_data;
  uint32_t kept_for_cap = 0;  // the largest cap the ring was sized for
  wire::Header hdr{};
  std::deque<Segment> segments;  // issued chunks not yet sent, in sequence order
  uint64_t issued_end = 0;       // sequence after the last issued one
  uint32_t next_seq = 0;         // next sequence to send for the first time
  uint32_t snd_una = 0;          // oldest unacknowledged sequence
  std::vector<Outstanding> ring = std::vector<Outstanding>(64);  // seq s at s & (size-1)
  uint64_t min_deadline = UINT64_MAX;
  bool resend_pending = false;  // a timed-out chunk's retransmission is not written yet
  bool have_rtt = false;
  double srtt_ns = 0, rttvar_ns = 0;
  uint64_t rto_ns = 0;
  TreeStats st;
  // Pooled mode: the live groups (from `released` on), the next group to
  // issue, the cumulative count of finished groups and whether a release
  // is to be sent.
  std::map<uint32_t, Group> groups;
  uint32_t group_end = 0;
  uint32_t released = 0;
  bool release_due = false;
  // The root's confirmation of the released count (rule 5): once every
  // group issued here is finished, the release is repeated, asking for a
  // confirmation, after an RTO (backing off to rto_max) until one comes, at
  // most retry_budget times.
  uint32_t confirmed = 0;
  uint32_t release_sent_count = 0;  // the count of the latest release sent
  uint64_t release_sent_ns = 0;
  uint64_t release_rto_ns = 0;
  uint32_t release_asks = 0;    // repeats of the latest count
  bool release_ask = false;     // the release due is a repeat that asks
  uint64_t last_answer_ns = 0;  // latest claim-result heard

  Outstanding& at(uint32_t seq) { return ring[seq & (ring.size() - 1)]; }
  uint32_t in_flight() const { return next_seq - snd_una; }

  void grow_ring() {
    std::vector<Outstanding> bigger(ring.size() * 2);
    for (uint32_t s = snd_una; s != next_seq; ++s) bigger[s & (bigger.size() - 1)] = at(s);
    ring.swap(bigger);
  }
};

}  // namespace panama::runtime
