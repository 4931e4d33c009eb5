// The allreduce state machine (see allreduce_core.hpp).
#include "panama/runtime/allreduce_core.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>

namespace panama::runtime {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "payloads are little-endian fp32 copied without swapping (docs/protocol.md)");

struct AllreduceCore::Op {
  OpId id = 0;
  float* data = nullptr;
  size_t count = 0;
  size_t chunks = 0;
  size_t remaining = 0;
  OpStatus status = OpStatus::kPending;
  bool released = false;  // forget it as soon as it finishes
  std::string error;
};

// A chunk that has been sent and is waiting for its result.
struct AllreduceCore::Outstanding {
  Op* op = nullptr;
  size_t chunk = 0;
  uint64_t sent_ns = 0;
  uint64_t deadline_ns = 0;
  uint64_t rto_ns = 0;
  uint32_t retries = 0;
  bool acked = false;
  bool retransmitted = false;
};

struct AllreduceCore::Tree {
  // Chunks of one op on this tree: sequences [first_seq, first_seq + count),
  // sequence first_seq + j carrying chunk position + T * j.
  struct Segment {
    Op* op;
    uint32_t first_seq;
    uint32_t count;
  };

  Tree(const TreePlan& p, size_t idx, const CongestionParams& c)
      : plan(p), index(idx), cc(c, p.initial_cwnd_cap) {}

  TreePlan plan;
  size_t index;
  TreeCongestion cc;
  wire::Header hdr{};
  std::deque<Segment> segments;  // issued chunks not yet sent, in sequence order
  uint64_t issued_end = 0;       // sequence after the last issued one
  uint32_t next_seq = 0;         // next sequence to send for the first time
  uint32_t snd_una = 0;          // oldest unacknowledged sequence
  std::vector<Outstanding> ring = std::vector<Outstanding>(64);  // seq s at s & (size-1)
  uint64_t min_deadline = UINT64_MAX;
  bool have_rtt = false;
  double srtt_ns = 0, rttvar_ns = 0;
  uint64_t rto_ns = 0;
  TreeStats st;

  Outstanding& at(uint32_t seq) { return ring[seq & (ring.size() - 1)]; }
  uint32_t in_flight() const { return next_seq - snd_una; }

  void grow_ring() {
    std::vector<Outstanding> bigger(ring.size() * 2);
    for (uint32_t s = snd_una; s != next_seq; ++s) bigger[s & (bigger.size() - 1)] = at(s);
    ring.swap(bigger);
  }
};

AllreduceCore::AllreduceCore(const Plan& plan) : plan_(plan) {
  validate_plan(plan_);
  std::fill(std::begin(tree_index_), std::end(tree_index_), int16_t{-1});
  for (size_t i = 0; i < plan_.trees.size(); ++i) {
    auto t = std::make_unique<Tree>(plan_.trees[i], i, plan_.congestion);
    wire::Header& h = t->hdr;
    std::memcpy(h.eth_dst, t->plan.dst_mac.data(), 6);
    std::memcpy(h.eth_src, plan_.local_mac.data(), 6);
    h.dscp = plan_.dscp;
    h.ecn = wire::kEcnEct0;
    h.ttl = plan_.ttl;
    h.ip_id = 0;
    h.ip_src = plan_.local_ip;
    h.ip_dst = t->plan.dst_ip;
    h.udp_src = plan_.udp_port;
    h.udp_dst = plan_.udp_port;
    h.version = wire::kVersion;
    h.type = static_cast<uint8_t>(wire::PacketType::kAggregateUp);
    h.job_id = plan_.job_id;
    h.tree_id = t->plan.tree_id;
    h.elem_type = static_cast<uint8_t>(wire::ElemType::kFloat32);
    h.child_id = t->plan.child_id;
    h.cwnd_cap = 0xFFFF;  // workers do not limit the cap; engines take the minimum
    t->rto_ns = uint64_t{plan_.congestion.rto_initial_us} * 1000;
    t->st.tree_id = t->plan.tree_id;
    tree_index_[t->plan.tree_id] = static_cast<int16_t>(i);
    trees_.push_back(std::move(t));
  }
  totals_.job_id = plan_.job_id;
}

AllreduceCore::~AllreduceCore() = default;

OpId AllreduceCore::start(float* data, size_t count, uint64_t /*now_ns*/) {
  collect_released();
  const OpId id = next_op_++;
  auto op = std::make_unique<Op>();
  op->id = id;
  op->data = data;
  op->count = count;
  const size_t e = plan_.elems_per_packet;
  op->chunks = (count + e - 1) / e;
  op->remaining = op->chunks;
  Op* raw = op.get();
  ops_[id] = std::move(op);
  ++totals_.ops_started;
  ++pending_;
  if (failed()) {
    finish(*raw, OpStatus::kFailed, fail_reason_);
    return id;
  }
  if (count > 0 && data == nullptr) {
    finish(*raw, OpStatus::kFailed, "allreduce of " + std::to_string(count) + " elements on a null buffer");
    return id;
  }
  const size_t nt = trees_.size();
  for (size_t i = 0; i < nt && i < raw->chunks; ++i) {
    const uint64_t n = (raw->chunks - i + nt - 1) / nt;
    if (trees_[i]->issued_end + n > (uint64_t{1} << 32)) {
      finish(*raw, OpStatus::kFailed,
             "tree " + std::to_string(trees_[i]->plan.tree_id) +
                 ": the 32-bit sequence space of this communicator is exhausted; create a new communicator");
      return id;
    }
  }
  for (size_t i = 0; i < nt && i < raw->chunks; ++i) {
    Tree& t = *trees_[i];
    const uint32_t n = static_cast<uint32_t>((raw->chunks - i + nt - 1) / nt);
    t.segments.push_back(Tree::Segment{raw, static_cast<uint32_t>(t.issued_end), n});
    t.issued_end += n;
    uint64_t bytes = 0;
    for (size_t k = i; k < raw->chunks; k += nt) bytes += 4 * (std::min(count, (k + 1) * e) - k * e);
    t.st.bytes_issued += bytes;
    totals_.bytes_issued += bytes;
  }
  if (raw->chunks == 0) finish(*raw, OpStatus::kDone, "");
  return id;
}

void AllreduceCore::finish(Op& op, OpStatus st, const std::string& err) {
  if (op.status != OpStatus::kPending) return;
  op.status = st;
  op.error = err;
  --pending_;
  if (op.released) finished_released_.push_back(op.id);
  if (st == OpStatus::kDone) {
    ++totals_.ops_completed;
  } else {
    ++totals_.ops_failed;
  }
}

OpStatus AllreduceCore::status(OpId id) const {
  auto it = ops_.find(id);
  return it == ops_.end() ? OpStatus::kFailed : it->second->status;
}

std::string AllreduceCore::op_error(OpId id) const {
  auto it = ops_.find(id);
  if (it == ops_.end()) return "unknown allreduce id " + std::to_string(id);
  return it->second->error;
}

void AllreduceCore::release(OpId id) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return;
  if (it->second->status != OpStatus::kPending) {
    ops_.erase(it);
  } else {
    it->second->released = true;
  }
}

void AllreduceCore::collect_released() {
  for (OpId id : finished_released_) ops_.erase(id);
  finished_released_.clear();
}

void AllreduceCore::fail_all(const std::string& reason) {
  fail_reason_ = reason;
  for (auto& kv : ops_) finish(*kv.second, OpStatus::kFailed, reason);
  for (auto& t : trees_) {
    t->segments.clear();
    t->snd_una = t->next_seq;  // nothing outstanding any more
    t->min_deadline = UINT64_MAX;
  }
}

bool AllreduceCore::send_chunk(Tree& t, Outstanding& o, uint32_t seq, bool retransmission, FrameOut& out) {
  const size_t e = plan_.elems_per_packet;
  const size_t first = o.chunk * e;
  const uint32_t n = static_cast<uint32_t>(std::min(o.op->count, first + e) - first);
  const uint32_t len = wire::frame_length(n);
  uint8_t* p = out.begin_frame(len);
  if (!p) return false;
  t.hdr.seq = seq;
  t.hdr.elem_count = static_cast<uint16_t>(n);
  t.hdr.type = static_cast<uint8_t>(retransmission ? wire::PacketType::kRetransmission
                                                   : wire::PacketType::kAggregateUp);
  wire::write_headers(p, t.hdr);
  std::memcpy(p + wire::kPayloadOffset, o.op->data + first, 4 * size_t{n});
  out.end_frame(len);
  ++t.hdr.ip_id;
  ++t.st.packets_sent;
  ++totals_.packets_sent;
  return true;
}

bool AllreduceCore::send_new(Tree& t, uint64_t now_ns, FrameOut& out) {
  if (t.segments.empty() || t.in_flight() >= t.cc.window()) return false;
  if (t.in_flight() >= t.ring.size()) t.grow_ring();
  Tree::Segment& seg = t.segments.front();
  const uint32_t seq = t.next_seq;
  Outstanding& o = t.at(seq);
  o = Outstanding{};
  o.op = seg.op;
  o.chunk = t.index + trees_.size() * (seq - seg.first_seq);
  if (!send_chunk(t, o, seq, false, out)) return false;
  o.sent_ns = now_ns;
  o.rto_ns = t.rto_ns;
  o.deadline_ns = now_ns + o.rto_ns;
  t.min_deadline = std::min(t.min_deadline, o.deadline_ns);
  ++t.next_seq;
  if (t.next_seq - seg.first_seq == seg.count) t.segments.pop_front();
  return true;
}

bool AllreduceCore::handle_timeouts(Tree& t, uint64_t now_ns, FrameOut& out, uint32_t& budget) {
  if (now_ns < t.min_deadline) return true;
  const CongestionParams& c = plan_.congestion;
  uint64_t next = UINT64_MAX;
  bool ok = true;
  for (uint32_t s = t.snd_una; s != t.next_seq; ++s) {
    Outstanding& o = t.at(s);
    if (o.acked) continue;
    if (ok && o.deadline_ns <= now_ns) {
      if (o.retries >= c.retry_budget) {
        fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) +
                 ": chunk " + std::to_string(o.chunk) + " of allreduce #" + std::to_string(o.op->id) +
                 " (sequence " + std::to_string(s) + ") got no result after " + std::to_string(o.retries) +
                 " retransmissions (retry_budget); the job cannot finish");
        return false;
      }
      if (budget == 0 || !send_chunk(t, o, s, true, out)) {
        ok = false;  // transmit path full: retry on the next poll
      } else {
        --budget;
        ++o.retries;
        o.retransmitted = true;
        o.rto_ns = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(o.rto_ns) * c.rto_backoff),
                                      uint64_t{c.rto_max_us} * 1000);
        o.deadline_ns = now_ns + o.rto_ns;
        ++t.st.timeouts;
        ++t.st.retransmissions;
        ++totals_.timeouts;
        ++totals_.retransmissions;
      }
    }
    next = std::min(next, o.deadline_ns);
  }
  t.min_deadline = next;
  return ok;
}

uint32_t AllreduceCore::poll(uint64_t now_ns, FrameOut& out, uint32_t max_frames) {
  collect_released();
  if (failed()) return 0;
  uint32_t budget = max_frames;
  for (auto& t : trees_) {
    if (!handle_timeouts(*t, now_ns, out, budget)) {
      if (failed()) return max_frames - budget;
    }
  }
  // New chunks: one per tree per round, so trees share the transmit path.
  const size_t nt = trees_.size();
  bool progress = true;
  while (budget > 0 && progress) {
    progress = false;
    for (size_t i = 0; i < nt && budget > 0; ++i) {
      Tree& t = *trees_[(rr_ + i) % nt];
      if (send_new(t, now_ns, out)) {
        --budget;
        progress = true;
      }
    }
    rr_ = (rr_ + 1) % nt;
  }
  return max_frames - budget;
}

uint64_t AllreduceCore::next_timer_ns() const {
  uint64_t m = UINT64_MAX;
  for (const auto& t : trees_) {
    if (t->in_flight() > 0) m = std::min(m, t->min_deadline);
  }
  return m;
}

bool AllreduceCore::can_send() const {
  if (failed()) return false;
  for (const auto& t : trees_) {
    if (!t->segments.empty() && t->in_flight() < t->cc.window()) return true;
  }
  return false;
}

bool AllreduceCore::on_frame(const uint8_t* frame, uint32_t len, uint64_t now_ns) {
  wire::Header h;
  if (wire::classify_frame(frame, len, plan_.udp_port, h) != wire::FrameClass::kResultDown) return false;
  if (h.job_id != plan_.job_id) return false;
  // classify_frame stops at the type for result-down frames; check the rest here.
  const bool bad = h.elem_type != static_cast<uint8_t>(wire::ElemType::kFloat32) || h.elem_count == 0 ||
                   wire::load_be16(frame + wire::kIpTotalLen) != wire::ip_total_length(h.elem_count) ||
                   wire::load_be16(frame + wire::kUdpLength) != wire::udp_length(h.elem_count) ||
                   len < wire::frame_length(h.elem_count) || tree_index_[h.tree_id] < 0;
  if (bad) {
    ++totals_.malformed_results;
    return true;
  }
  handle_result(*trees_[tree_index_[h.tree_id]], h, frame + wire::kPayloadOffset, now_ns);
  return true;
}

void AllreduceCore::handle_result(Tree& t, const wire::Header& h, const uint8_t* payload, uint64_t now_ns) {
  ++t.st.packets_received;
  ++totals_.packets_received;
  const uint32_t seq = h.seq;
  // Unsigned distance from the oldest unacknowledged sequence handles wrap.
  if (seq - t.snd_una >= t.in_flight()) {
    if (seq - t.next_seq < (1u << 31)) {
      ++t.st.unexpected_results;  // at or beyond next_seq: never sent
      ++totals_.unexpected_results;
    } else {
      ++t.st.duplicate_results;  // before snd_una: already acknowledged
      ++totals_.duplicate_results;
    }
    return;
  }
  Outstanding& o = t.at(seq);
  if (o.acked) {
    ++t.st.duplicate_results;
    ++totals_.duplicate_results;
    return;
  }
  const size_t e = plan_.elems_per_packet;
  const size_t first = o.chunk * e;
  const size_t n = std::min(o.op->count, first + e) - first;
  if (h.elem_count != n) {
    ++t.st.unexpected_results;
    ++totals_.unexpected_results;
    return;
  }
  std::memcpy(o.op->data + first, payload, 4 * n);
  o.acked = true;
  t.st.bytes_completed += 4 * n;
  totals_.bytes_completed += 4 * n;
  if (observer_) observer_(o.op->id, o.chunk);

  // RTT sample (Karn: only from chunks sent once), RFC 6298 estimator.
  if (!o.retransmitted && now_ns >= o.sent_ns) {
    const double r = static_cast<double>(now_ns - o.sent_ns);
    if (!t.have_rtt) {
      t.srtt_ns = r;
      t.rttvar_ns = r / 2;
      t.have_rtt = true;
    } else {
      t.rttvar_ns = 0.75 * t.rttvar_ns + 0.25 * std::fabs(t.srtt_ns - r);
      t.srtt_ns = 0.875 * t.srtt_ns + 0.125 * r;
    }
    const CongestionParams& c = plan_.congestion;
    const double rto = t.srtt_ns + std::max(1000.0, 4 * t.rttvar_ns);
    t.rto_ns = static_cast<uint64_t>(
        std::min(std::max(rto, c.rto_min_us * 1000.0), static_cast<double>(c.rto_max_us) * 1000.0));
  }

  const bool ce = h.ecn == wire::kEcnCe;
  if (ce) {
    ++t.st.results_ce;
    ++totals_.results_ce;
  }
  t.cc.on_result(ce, h.cwnd_cap);

  Op& op = *o.op;
  if (--op.remaining == 0) finish(op, OpStatus::kDone, "");
  while (t.snd_una != t.next_seq && t.at(t.snd_una).acked) ++t.snd_una;
}

CommStats AllreduceCore::stats() const {
  CommStats s = totals_;
  for (const auto& t : trees_) {
    TreeStats ts = t->st;
    ts.cwnd = t->cc.cwnd();
    ts.alpha = t->cc.alpha();
    ts.cwnd_cap = t->cc.cap();
    ts.cwnd_reductions = t->cc.reductions();
    ts.in_flight = t->in_flight();
    ts.next_seq = t->next_seq;
    ts.srtt_us = t->have_rtt ? t->srtt_ns / 1000.0 : 0.0;
    ts.rto_us = static_cast<double>(t->rto_ns) / 1000.0;
    s.trees.push_back(ts);
  }
  return s;
}

const TreeCongestion& AllreduceCore::congestion(size_t tree_index) const {
  return trees_.at(tree_index)->cc;
}

}  // namespace panama::runtime
