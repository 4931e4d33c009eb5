// The allreduce state machine (see allreduce_core.hpp).
#include "panama/runtime/allreduce_core.hpp"

#include "core_state.hpp"
#include "panama/runtime/payload_copy.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <stdexcept>

namespace panama::runtime {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "payloads are little-endian elements copied without swapping (docs/protocol.md)");

namespace {

// The element size of a valid type (wire::elem_bytes of a checked value).
size_t bytes_of(uint8_t elem_type) {
  return wire::elem_bytes(elem_type);
}

}  // namespace

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
    if (t->plan.backup_for >= 0) {
      t->state = Tree::State::kStandby;
    } else {
      t->primary_pos = primaries_.size();
      primaries_.push_back(i);
    }
    trees_.push_back(std::move(t));
  }
  for (auto& t : trees_) {
    if (t->plan.backup_for < 0) continue;
    Tree& p = *trees_[static_cast<size_t>(tree_index_[t->plan.backup_for])];
    p.backup = static_cast<int>(t->index);
    t->primary = static_cast<int>(p.index);
  }
  totals_.job_id = plan_.job_id;
  ring_port_ = ring_udp_port(plan_);
  ring_pos_ = ring_position(plan_);
  if (plan_.pooled && plan_.pooled->ring_congestion)
    ring_cc_.emplace(plan_.congestion,
                     static_cast<uint16_t>(std::min<uint32_t>(plan_.pooled->ring_window, 0xFFFF)));
}

AllreduceCore::Tree& AllreduceCore::route(size_t primary) {
  Tree* t = trees_[primaries_[primary]].get();
  return t->redirect >= 0 ? *trees_[static_cast<size_t>(t->redirect)] : *t;
}

bool AllreduceCore::failover_owed() const {
  if (failed()) return false;
  for (const auto& t : trees_) {
    if (t->agreement) return true;  // other workers wait for this worker's vector
    if (t->primary >= 0 && t->state == Tree::State::kActive && (t->in_flight() > 0 || !t->segments.empty()))
      return true;  // replayed contributions the others need
  }
  return false;
}

AllreduceCore::~AllreduceCore() = default;

OpId AllreduceCore::start(void* data, size_t count, wire::ElemType type, uint64_t /*now_ns*/) {
  collect_released();
  const OpId id = next_op_++;
  const uint8_t elem_type = static_cast<uint8_t>(type);
  const size_t eb = bytes_of(elem_type);
  auto op = std::make_unique<Op>();
  op->id = id;
  op->data = static_cast<uint8_t*>(data);
  op->count = count;
  op->elem_type = elem_type;
  op->elem_bytes = eb;
  op->streaming = streaming_copy_bytes_ != 0 && eb * count >= streaming_copy_bytes_;
  op->zero_copy = zero_copy_send_;
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
  if (eb == 0) {
    finish(*raw, OpStatus::kFailed,
           "allreduce with element type " + std::to_string(elem_type) +
               ", which is none of fp32 (1), bf16 (2) and fp16 (3)");
    return id;
  }
  if (count > 0 && data == nullptr) {
    finish(*raw, OpStatus::kFailed, "allreduce of " + std::to_string(count) + " elements on a null buffer");
    return id;
  }
  const size_t nt = primaries_.size();
  // Pooled mode: every tree starts the allreduce's chunks at a group
  // boundary, so that a group belongs to one allreduce.
  const uint64_t align = pooled() ? plan_.pooled->group_size : 1;
  for (size_t i = 0; i < nt && i < raw->chunks; ++i) {
    const uint64_t n = (raw->chunks - i + nt - 1) / nt;
    if ((route(i).issued_end + align - 1) / align * align + n > (uint64_t{1} << 32)) {
      finish(*raw, OpStatus::kFailed,
             "tree " + std::to_string(route(i).plan.tree_id) +
                 ": the 32-bit sequence space of this communicator is exhausted; create a new communicator");
      return id;
    }
  }
  for (size_t i = 0; i < nt && i < raw->chunks; ++i) {
    Tree& t = route(i);
    const uint32_t n = static_cast<uint32_t>((raw->chunks - i + nt - 1) / nt);
    if (pooled()) {
      t.issued_end = (t.issued_end + align - 1) / align * align;
      pool_issue(t, *raw, static_cast<uint32_t>(t.issued_end), n, i, nt);
    }
    t.segments.push_back(Tree::Segment{raw, static_cast<uint32_t>(t.issued_end), n, i, nt, nullptr});
    t.issued_end += n;
    uint64_t bytes = 0;
    for (size_t k = i; k < raw->chunks; k += nt) bytes += eb * (std::min(count, (k + 1) * e) - k * e);
    t.st.bytes_issued += bytes;
    totals_.bytes_issued += bytes;
  }
  if (raw->chunks == 0) finish(*raw, OpStatus::kDone, "");
  return id;
}

void AllreduceCore::finish(Op& op, OpStatus st, const std::string& err) {
  if (op.status != OpStatus::kPending || op.draining) return;
  op.final_status = st;
  op.error = err;
  if (op.hold && op.hold->in_use()) {
    // Frames sent from the buffer are still queued or being read: the
    // caller may reuse the buffer only once they are released.
    op.draining = true;
    draining_.push_back(&op);
    return;
  }
  finalize(op);
}

void AllreduceCore::collect_drained() {
  size_t kept = 0;
  for (Op* op : draining_) {
    if (op->hold->in_use()) {
      draining_[kept++] = op;
    } else {
      op->draining = false;
      finalize(*op);
    }
  }
  draining_.resize(kept);
}

// The caller is going away: what fail_all left draining is reported now.
void AllreduceCore::abort(const std::string& reason) {
  if (!failed()) fail_all(reason);
  for (Op* op : draining_) {
    op->draining = false;
    finalize(*op);
  }
  draining_.clear();
}

void AllreduceCore::finalize(Op& op) {
  const OpStatus st = op.final_status;
  op.status = st;
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
    t->agreement.reset();
  }
  if (pooled()) pool_clear();
}

bool AllreduceCore::send_chunk(Tree& t, Outstanding& o, uint32_t seq, bool retransmission, FrameOut& out) {
  const size_t e = plan_.elems_per_packet;
  const size_t first = o.chunk * e;
  const uint32_t n = o.op ? static_cast<uint32_t>(std::min(o.op->count, first + e) - first) : o.replay->count;
  const uint8_t elem_type = o.op ? o.op->elem_type : o.replay->elem_type;
  const uint32_t payload_len = static_cast<uint32_t>(bytes_of(elem_type)) * n;
  const uint8_t* payload = o.op ? o.op->data + first * o.op->elem_bytes : o.replay->bytes.data();
  const uint32_t len = wire::kPayloadOffset + payload_len;
  const bool attach = o.op && o.op->zero_copy && out.can_attach();
  uint8_t* p = nullptr;
  if (attach) {
    if (!o.op->hold) o.op->hold = BufferHold::create();
    p = out.begin_frame_attached(payload, payload_len, o.op->hold);
  } else {
    p = out.begin_frame(len);
  }
  if (!p) return false;
  t.hdr.seq = seq;
  t.hdr.elem_type = elem_type;
  t.hdr.elem_count = static_cast<uint16_t>(n);
  t.hdr.type = static_cast<uint8_t>(retransmission ? wire::PacketType::kRetransmission
                                                   : wire::PacketType::kAggregateUp);
  wire::write_headers(p, t.hdr);
  if (!attach) {
    copy_payload(p + wire::kPayloadOffset, payload, payload_len,
                 o.op && o.op->streaming && out.read_elsewhere());
  }
  out.end_frame(len);
  ++t.hdr.ip_id;
  ++t.st.packets_sent;
  ++totals_.packets_sent;
  t.st.bytes_sent += payload_len;
  totals_.bytes_sent += payload_len;
  return true;
}

bool AllreduceCore::send_new(Tree& t, uint64_t now_ns, FrameOut& out) {
  if (t.state != Tree::State::kActive || t.segments.empty()) return false;
  if (pooled() && !pool_skip(t)) return false;
  if (t.segments.empty() || t.in_flight() >= t.cc.window()) return false;
  if (t.in_flight() >= t.ring.size()) t.grow_ring();
  Tree::Segment& seg = t.segments.front();
  const uint32_t seq = t.next_seq;
  Outstanding& o = t.at(seq);
  o = Outstanding{};
  o.op = seg.op;
  o.replay = seg.replay;
  o.chunk = seg.first_chunk + seg.stride * (seq - seg.first_seq);
  if (!send_chunk(t, o, seq, false, out)) return false;
  o.sent_ns = now_ns;
  o.rto_ns = t.rto_ns;
  o.deadline_ns = now_ns + o.rto_ns;
  t.min_deadline = std::min(t.min_deadline, o.deadline_ns);
  ++t.next_seq;
  if (t.next_seq - seg.first_seq == seg.count) t.segments.pop_front();
  return true;
}

// Every expiry of a chunk's deadline counts against its retry budget, whether
// or not its retransmission can be written at once: when the transmit path
// stays full (a dead link or peer), the budget still ends the wait.
bool AllreduceCore::handle_timeouts(Tree& t, uint64_t now_ns, FrameOut& out, uint32_t& budget) {
  if (t.state != Tree::State::kActive || (now_ns < t.min_deadline && !t.resend_pending)) return true;
  const CongestionParams& c = plan_.congestion;
  uint64_t next = UINT64_MAX;
  bool ok = true;
  t.resend_pending = false;
  // Silent: the tree has answered nothing for an RTO (set_skew_allowance).
  const bool silent = skew_allowance_ns_ > 0 && now_ns >= t.last_result_ns + t.rto_ns;
  for (uint32_t s = t.snd_una; s != t.next_seq; ++s) {
    Outstanding& o = t.at(s);
    if (o.acked) continue;
    // A chunk sent once waits at least the tree's current RTO: it was armed
    // with the RTO of its sending, and the estimate may have grown since
    // (RFC 6298 restarts the timer with the current RTO). Otherwise the
    // chunks sent just before the round trip grew (the PSwitch's queue
    // filled, a thread was off the CPU) expire while their results are on
    // the way, as the RTT samples of the chunks before them already show.
    if (o.deadline_ns <= now_ns && o.retries == 0 && t.rto_ns > o.rto_ns) {
      o.rto_ns = t.rto_ns;
      o.deadline_ns = o.sent_ns + o.rto_ns;
    }
    // When its tree has answered nothing for as long as the chunk's RTO, a
    // chunk waits at least the skew allowance from its sending: nothing of
    // the tree moves, so a worker has not contributed yet (it issued the
    // allreduce later, or its threads were off the CPU), which a
    // retransmission does not hurry (set_skew_allowance).
    if (o.deadline_ns <= now_ns && o.retries == 0 && skew_allowance_ns_ > 0 &&
        now_ns >= t.last_result_ns + o.rto_ns && o.sent_ns + skew_allowance_ns_ > now_ns) {
      o.deadline_ns = o.sent_ns + skew_allowance_ns_;
      o.stalled = true;
    }
    // In a silence past the allowance, only the oldest unacknowledged chunk
    // (snd_una) probes the tree, as TCP retransmits only its earliest
    // segment on a timeout (RFC 6298 5.4): if the tree is waiting for a
    // worker, one probe per backoff is all it costs; if the probe's result
    // comes, the silence ends and the others' timers restart.
    if (o.deadline_ns <= now_ns && silent && s != t.snd_una && !o.resend) {
      o.deadline_ns = now_ns + o.rto_ns;
      o.stalled = true;
    }
    if (o.deadline_ns <= now_ns) {
      // Only a tree that has answered this worker before can die: before its
      // first result, silence means a worker that has not started yet.
      const bool deferred = now_ns < defer_failure_until_ns_;  // a late peer, says the caller
      if (t.backup >= 0 && t.last_result_ns > 0 && o.retries >= c.failover_after && !deferred) {
        begin_failover(t, now_ns);
        return !failed();
      }
      // The budget is spent only when, besides retry_budget timeouts of this
      // chunk, the tree has answered nothing for retry_budget x rto_max: a
      // chunk may wait that long for a worker whose own chunk is being
      // recovered (its contribution cannot come earlier), and every worker's
      // recovery of a lost chunk fits in that time.
      const uint64_t silent_since = std::max(t.last_result_ns, o.sent_ns);
      const uint64_t patience = uint64_t{c.retry_budget} * c.rto_max_us * 1000;
      if (o.retries >= c.retry_budget && now_ns - silent_since >= patience && !deferred) {
        const std::string what =
            o.op ? "chunk " + std::to_string(o.chunk) + " of allreduce #" + std::to_string(o.op->id)
                 : std::string("a replayed contribution");
        fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) + ": " +
                 what + " (sequence " + std::to_string(s) + ") got no result after " +
                 std::to_string(o.retries) +
                 " retransmissions (retry_budget), and the tree answered nothing for " +
                 std::to_string((now_ns - silent_since) / 1000000) + " ms; the job cannot finish");
        return false;
      }
      ++o.retries;
      o.rto_ns = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(o.rto_ns) * c.rto_backoff),
                                    uint64_t{c.rto_max_us} * 1000);
      o.retransmitted = true;  // Karn: no RTT sample from this chunk any more
      o.resend = true;
      o.deadline_ns = now_ns + o.rto_ns;
      ++t.st.timeouts;
      ++totals_.timeouts;
    }
    if (o.resend && ok) {
      if (budget > 0 && send_chunk(t, o, s, true, out)) {
        --budget;
        o.resend = false;
        ++t.st.retransmissions;
        ++totals_.retransmissions;
        if (pooled()) {
          // Rule 6: the claim goes with the retransmission, so that a group
          // whose lease ended hears denied; the release too (rule 5).
          auto g = t.groups.find(s / plan_.pooled->group_size);
          if (g != t.groups.end()) g->second.claim_due = true;
          if (t.released > 0) t.release_due = true;
        }
      } else {
        ok = false;  // transmit path full: written on a later poll
      }
    }
    t.resend_pending |= o.resend;  // tried again on every poll until written
    next = std::min(next, o.deadline_ns);
  }
  t.min_deadline = next;
  return ok;
}

uint32_t AllreduceCore::poll(uint64_t now_ns, FrameOut& out, uint32_t max_frames) {
  collect_drained();
  collect_released();
  if (failed()) return 0;
  uint32_t budget = max_frames;
  for (auto& t : trees_) {
    if (!handle_timeouts(*t, now_ns, out, budget)) {
      if (failed()) return max_frames - budget;
    }
  }
  if (pooled()) {
    for (auto& t : trees_) {
      pool_poll(*t, now_ns, out, budget);
      if (failed()) return max_frames - budget;
    }
    ring_poll(now_ns, out, budget);
    if (failed()) return max_frames - budget;
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
    if (t->state == Tree::State::kActive && t->in_flight() > 0) m = std::min(m, t->min_deadline);
  }
  if (pooled() && !failed()) m = std::min(m, pool_next_timer());
  return m;
}

bool AllreduceCore::can_send() const {
  if (failed()) return false;
  for (const auto& t : trees_) {
    if (t->state == Tree::State::kActive && !t->segments.empty() && t->in_flight() < t->cc.window() &&
        (!pooled() || pool_sendable(*t)))
      return true;
  }
  return pooled() && pool_can_send();
}

bool AllreduceCore::on_frame(const uint8_t* frame, uint32_t len, uint64_t now_ns) {
  if (pooled() && pool_frame(frame, len, now_ns)) return true;
  wire::Header h;
  if (wire::classify_frame(frame, len, plan_.udp_port, h) != wire::FrameClass::kResultDown) return false;
  if (h.job_id != plan_.job_id) return false;
  // classify_frame stops at the type for result-down frames; check the rest
  // here. A valid element type that is not the chunk's is handle_result's.
  const bool bad =
      wire::elem_bytes(h.elem_type) == 0 || h.elem_count == 0 ||
      wire::load_be16(frame + wire::kIpTotalLen) != wire::ip_total_length(h.elem_count, h.elem_type) ||
      wire::load_be16(frame + wire::kUdpLength) != wire::udp_length(h.elem_count, h.elem_type) ||
      len < wire::frame_length(h.elem_count, h.elem_type) || tree_index_[h.tree_id] < 0;
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
  if (t.state != Tree::State::kActive) {
    // Dead for this worker (its state is frozen at the failover) or a standby
    // not in use yet: nothing this worker waits for comes from it.
    ++t.st.results_ignored;
    return;
  }
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
  const size_t n = o.op ? std::min(o.op->count, first + e) - first : o.replay->count;
  const uint8_t elem_type = o.op ? o.op->elem_type : o.replay->elem_type;
  if (h.elem_count != n || h.elem_type != elem_type) {
    ++t.st.unexpected_results;
    ++totals_.unexpected_results;
    return;
  }
  o.acked = true;
  o.resend = false;
  // The first result after a silence of the tree (longer than its RTO) ends
  // a wait for a worker: the chunks still outstanding waited for it too, and
  // their results follow now, so their timers restart here
  // (set_skew_allowance).
  const bool silence_ended = skew_allowance_ns_ > 0 && t.last_result_ns + t.rto_ns <= now_ns;
  if (silence_ended) {
    for (uint32_t s2 = t.snd_una; s2 != t.next_seq; ++s2) {
      Outstanding& x = t.at(s2);
      if (x.acked || x.retries != 0 || x.sent_ns >= now_ns) continue;
      x.deadline_ns = now_ns + x.rto_ns;
      x.stalled = true;
      t.min_deadline = std::min(t.min_deadline, x.deadline_ns);
    }
  }
  t.last_result_ns = std::max<uint64_t>(now_ns, 1);
  if (o.op) {  // a replayed contribution's result is already in this worker's buffer
    const size_t eb = o.op->elem_bytes;
    uint8_t* dst = o.op->data + first * eb;
    if (t.backup >= 0) keep_contribution(t, seq, dst, static_cast<uint32_t>(n), elem_type);
    copy_payload(dst, payload, eb * n, o.op->streaming);
    if (!o.op->agreement) {
      t.st.bytes_completed += eb * n;
      totals_.bytes_completed += eb * n;
      if (observer_) observer_(o.op->id, o.chunk);
    }
  }

  // RTT sample (Karn: only from chunks sent once), RFC 6298 estimator.
  if (!o.retransmitted && !o.stalled && !silence_ended && now_ns >= o.sent_ns) {
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

  Op* op = o.op;
  while (t.snd_una != t.next_seq && t.at(t.snd_una).acked) ++t.snd_una;
  if (pooled()) pool_result(t, seq);
  if (op && --op->remaining == 0) {
    if (op->agreement) {
      complete_failover(t, now_ns);
    } else {
      finish(*op, OpStatus::kDone, "");
    }
  }
}

// ---------------------------------------------------------------- failover

// Before a result overwrites a contribution, keep a copy: if the tree dies
// before every worker has this result, the replay on the backup needs it.
void AllreduceCore::keep_contribution(Tree& t, uint32_t seq, const uint8_t* src, uint32_t n,
                                      uint8_t elem_type) {
  // Capacity: 2x the largest window this worker may have had, so that every
  // sequence in [snd_una - window, next_seq) keeps its copy (docs/protocol.md).
  const uint32_t cap = std::max<uint32_t>({t.cc.cap(), t.plan.initial_cwnd_cap, 1});
  const size_t slot = 4 * size_t{plan_.elems_per_packet};  // bytes of the largest chunk (fp32)
  if (cap > t.kept_for_cap) {
    size_t size = 1;
    while (size < 2 * size_t{std::min<uint32_t>(cap, 4096)}) size *= 2;
    if (size > t.kept_seq.size()) {
      std::vector<uint32_t> seqs(size), ns(size);
      std::vector<uint8_t> valid(size, 0), types(size, 0);
      std::vector<uint8_t> data(size * slot);
      for (size_t i = 0; i < t.kept_seq.size(); ++i) {
        if (!t.kept_valid[i]) continue;
        const size_t j = t.kept_seq[i] & (size - 1);
        seqs[j] = t.kept_seq[i];
        ns[j] = t.kept_n[i];
        types[j] = t.kept_type[i];
        valid[j] = 1;
        std::memcpy(&data[j * slot], &t.kept_data[i * slot], bytes_of(t.kept_type[i]) * t.kept_n[i]);
      }
      t.kept_seq.swap(seqs);
      t.kept_n.swap(ns);
      t.kept_valid.swap(valid);
      t.kept_type.swap(types);
      t.kept_data.swap(data);
    }
    t.kept_for_cap = cap;
  }
  const size_t j = seq & (t.kept_seq.size() - 1);
  t.kept_seq[j] = seq;
  t.kept_n[j] = n;
  t.kept_type[j] = elem_type;
  t.kept_valid[j] = 1;
  std::memcpy(&t.kept_data[j * slot], src, bytes_of(elem_type) * n);
}

namespace {

// The agreement vector: 4 floats per rank (exact integers below 2^16).
constexpr size_t kAgreementFields = 4;

void put_u32(float* v, uint32_t x) {
  v[0] = static_cast<float>(x & 0xFFFFu);
  v[1] = static_cast<float>(x >> 16);
}

uint32_t get_u32(const float* v) {
  return static_cast<uint32_t>(v[0]) | (static_cast<uint32_t>(v[1]) << 16);
}

}  // namespace

// Tree t stopped answering this worker: stop using it (its state freezes) and
// send the agreement vector on its backup.
void AllreduceCore::begin_failover(Tree& t, uint64_t now_ns) {
  Tree& b = *trees_[static_cast<size_t>(t.backup)];
  t.state = Tree::State::kDead;
  t.dead_at_ns = now_ns;
  t.min_deadline = UINT64_MAX;
  ++totals_.failovers;
  // The oldest sequence this worker can contribute again: everything it has
  // not acknowledged is still in the user's buffer; below snd_una (and for
  // sequences acknowledged out of order) only the kept copies remain.
  const uint32_t una = t.snd_una;
  uint32_t lowest = una;
  const size_t ks = t.kept_seq.size();
  while (ks > 0 && lowest > 0 && una - (lowest - 1) < ks) {
    const size_t j = (lowest - 1) & (ks - 1);
    if (!t.kept_valid[j] || t.kept_seq[j] != lowest - 1) break;
    --lowest;
  }
  b.agreement_data.assign(kAgreementFields * plan_.world_size, 0.0f);
  float* mine = &b.agreement_data[kAgreementFields * plan_.rank];
  put_u32(mine, una);
  put_u32(mine + 2, lowest);
  auto op = std::make_unique<Op>();
  op->id = 0;
  op->data = reinterpret_cast<uint8_t*>(b.agreement_data.data());
  op->count = b.agreement_data.size();  // fp32 elements, whatever the allreduces' types
  op->chunks = (op->count + plan_.elems_per_packet - 1) / plan_.elems_per_packet;
  op->remaining = op->chunks;
  op->agreement = true;
  b.state = Tree::State::kActive;
  b.agreement_seqs = static_cast<uint32_t>(op->chunks);
  b.segments.push_front(Tree::Segment{op.get(), 0, b.agreement_seqs, 0, 1, nullptr});
  b.issued_end = b.agreement_seqs;
  b.agreement = std::move(op);
}

// The agreement vector's sum arrived on backup b: every worker now knows the
// same restart point. Move the dead primary's sequences [S0, ...) to b.
void AllreduceCore::complete_failover(Tree& b, uint64_t now_ns) {
  Tree& t = *trees_[static_cast<size_t>(b.primary)];
  const std::vector<float>& v = b.agreement_data;
  uint32_t s0 = UINT32_MAX, need = 0, who = 0;
  for (uint32_t r = 0; r < plan_.world_size; ++r) {
    const uint32_t una = get_u32(&v[kAgreementFields * r]);
    const uint32_t lowest = get_u32(&v[kAgreementFields * r + 2]);
    s0 = std::min(s0, una);
    if (lowest > need) {
      need = lowest;
      who = r;
    }
  }
  b.agreement.reset();
  t.agreed_at_ns = now_ns;
  t.restart_seq = s0;
  if (need > s0) {
    fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) +
             ": cannot fail over to tree " + std::to_string(b.plan.tree_id) + ": the restart sequence is " +
             std::to_string(s0) + " but rank " + std::to_string(who) + " kept contributions only from " +
             std::to_string(need));
    return;
  }
  auto append = [&](Tree::Segment seg, uint64_t bytes) {
    seg.first_seq = static_cast<uint32_t>(b.issued_end);
    b.issued_end += seg.count;
    b.segments.push_back(std::move(seg));
    t.st.bytes_issued -= bytes;
    b.st.bytes_issued += bytes;
  };
  const size_t e = plan_.elems_per_packet;
  const size_t slot = 4 * e;
  const size_t ks = t.kept_seq.size();
  for (uint32_t s = s0; s != t.next_seq; ++s) {
    const bool acked = s - t.snd_una >= t.in_flight() || t.at(s).acked;
    if (acked) {
      const size_t j = ks ? (s & (ks - 1)) : 0;
      if (ks == 0 || !t.kept_valid[j] || t.kept_seq[j] != s) {
        fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) +
                 ": cannot fail over: the contribution of sequence " + std::to_string(s) + " was not kept");
        return;
      }
      auto copy = std::make_shared<Kept>();
      copy->elem_type = t.kept_type[j];
      copy->count = t.kept_n[j];
      copy->bytes.assign(&t.kept_data[j * slot],
                         &t.kept_data[j * slot] + bytes_of(t.kept_type[j]) * t.kept_n[j]);
      append(Tree::Segment{nullptr, 0, 1, 0, 0, std::move(copy)}, 0);
      ++t.st.replayed_kept;
    } else {
      const Outstanding& o = t.at(s);
      const size_t first = o.chunk * e;
      append(Tree::Segment{o.op, 0, 1, o.chunk, 1, nullptr},
             o.op->elem_bytes * (std::min(o.op->count, first + e) - first));
      ++t.st.replayed_unanswered;
    }
  }
  // Chunks issued to t but never sent, including later allreduces started
  // since t was declared dead; from now on start() sends t's chunks to b.
  for (size_t i = 0; i < t.segments.size(); ++i) {
    Tree::Segment seg = t.segments[i];
    if (i == 0 && t.next_seq != seg.first_seq) {
      const uint32_t done = t.next_seq - seg.first_seq;
      seg.first_chunk += seg.stride * done;
      seg.count -= done;
    }
    uint64_t bytes = 0;
    for (uint32_t j = 0; j < seg.count; ++j) {
      const size_t first = (seg.first_chunk + seg.stride * j) * e;
      bytes += seg.op->elem_bytes * (std::min(seg.op->count, first + e) - first);
    }
    append(seg, bytes);
  }
  t.segments.clear();
  t.snd_una = t.next_seq;
  t.redirect = static_cast<int>(b.index);
  t.kept_seq.clear();
  t.kept_n.clear();
  t.kept_valid.clear();
  t.kept_type.clear();
  t.kept_data.clear();
  t.kept_for_cap = 0;
}

std::vector<uint32_t> AllreduceCore::next_sequences() const {
  if (failed()) throw std::logic_error("the communicator failed: " + fail_reason_);
  // A release still due is no unfinished allreduce: the next communicator
  // of the job repeats it with its first claims.
  if (pending_ != 0 || failover_owed() || pool_owed()) throw std::logic_error("allreduces are unfinished");
  std::vector<uint32_t> next;
  for (const auto& t : trees_) {
    if (t->redirect >= 0 || t->state == Tree::State::kDead || t->agreement_seqs != 0) {
      throw std::logic_error("tree " + std::to_string(t->plan.tree_id) + " took part in a failover");
    }
    // Pooled mode: the next allreduce starts at a group boundary.
    const uint32_t g = pooled() ? plan_.pooled->group_size : 1;
    next.push_back(static_cast<uint32_t>((uint64_t{t->next_seq} + g - 1) / g * g));
  }
  return next;
}

void AllreduceCore::continue_sequences(const std::vector<uint32_t>& next) {
  if (next_op_ != 1) throw std::logic_error("continue_sequences after an allreduce was started");
  if (next.size() != trees_.size()) {
    throw std::invalid_argument("continue_sequences: " + std::to_string(next.size()) + " sequences for " +
                                std::to_string(trees_.size()) + " trees");
  }
  for (size_t i = 0; i < trees_.size(); ++i) {
    Tree& t = *trees_[i];
    if (t.state == Tree::State::kStandby && next[i] != 0) {
      throw std::invalid_argument("continue_sequences: standby tree " + std::to_string(t.plan.tree_id) +
                                  " must start at 0, not " + std::to_string(next[i]));
    }
    if (pooled() && next[i] % plan_.pooled->group_size != 0) {
      throw std::invalid_argument("continue_sequences: tree " + std::to_string(t.plan.tree_id) + " at " +
                                  std::to_string(next[i]) + ", not a multiple of the group size " +
                                  std::to_string(plan_.pooled->group_size));
    }
    t.next_seq = next[i];
    t.snd_una = next[i];
    t.issued_end = next[i];
    if (pooled()) {
      // The groups below were finished and released by the previous communicator.
      t.group_end = next[i] / plan_.pooled->group_size;
      t.released = t.group_end;
      t.confirmed = t.released;  // the previous communicator's to confirm; repeated with the first claims
    }
  }
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
    ts.backup_for = t->plan.backup_for;
    ts.state = t->agreement                        ? "agreeing"
               : t->state == Tree::State::kDead    ? "dead"
               : t->state == Tree::State::kStandby ? "standby"
                                                   : "active";
    ts.dead_at_ns = t->dead_at_ns;
    ts.agreed_at_ns = t->agreed_at_ns;
    ts.last_result_ns = t->last_result_ns;
    ts.restart_seq = t->restart_seq;
    ts.pool.released = t->released;
    ts.pool.confirmed = t->confirmed;
    const PoolStats& p = ts.pool;
    PoolStats& q = s.pool;
    q.groups += p.groups;
    q.claimed += p.claimed;
    q.claims_sent += p.claims_sent;
    q.claim_timeouts += p.claim_timeouts;
    q.granted += p.granted;
    q.denied += p.denied;
    q.expired += p.expired;
    q.denied_by_peer += p.denied_by_peer;
    q.in_network += p.in_network;
    q.on_ring += p.on_ring;
    q.answers_ignored += p.answers_ignored;
    q.denied_after_result += p.denied_after_result;
    q.releases_sent += p.releases_sent;
    q.released += p.released;
    q.confirmed += p.confirmed;
    q.release_asks += p.release_asks;
    q.confirmations += p.confirmations;
    q.ring_frames_sent += p.ring_frames_sent;
    q.ring_retransmissions += p.ring_retransmissions;
    q.ring_bytes_sent += p.ring_bytes_sent;
    q.ring_acks_sent += p.ring_acks_sent;
    q.ring_acks_received += p.ring_acks_received;
    q.ring_ce_received += p.ring_ce_received;
    q.ring_ce_echoes += p.ring_ce_echoes;
    q.ring_frames_received += p.ring_frames_received;
    q.ring_duplicates += p.ring_duplicates;
    q.ring_early += p.ring_early;
    q.ring_malformed += p.ring_malformed;
    s.trees.push_back(ts);
  }
  s.pool.ring_malformed += ring_unknown_tree_;
  return s;
}

const TreeCongestion& AllreduceCore::congestion(size_t tree_index) const {
  return trees_.at(tree_index)->cc;
}

}  // namespace panama::runtime
