// The allreduce state machine of one communicator (one job on one worker).
//
// Pure protocol logic, no I/O: the caller feeds events (a received frame, the
// current time) and gives it a FrameOut to write the frames it wants sent.
// The DPDK runtime, the tests and simulators drive this same class.
//
//  - start(data, n, type) issues an in-place allreduce of n elements of
//    `type` (fp32, bf16 or fp16; docs/protocol.md §7). It is cut into chunks
//    of elems_per_packet elements whatever the type (a 16-bit chunk has half
//    the payload bytes of an fp32 one); chunk k goes to primary tree k mod T
//    with sequence base_t + k div T, where base_t counts the sequences tree t
//    used before (sequences never restart within the communicator's life).
//    Every frame of the allreduce carries its elem_type and its results come
//    back in it: they are copied into the buffer byte for byte, never
//    converted.
//  - poll(now, out) sends new chunks as each tree's window allows (sequences in
//    order; outstanding span next_seq - oldest_unacked <= window <= cwnd_cap)
//    and retransmits chunks whose RTO expired (type 3, same payload, RTO
//    multiplied by rto_backoff). A chunk that exceeds the retry budget fails the
//    communicator: every unfinished allreduce fails with an error saying which
//    chunk, and later ones fail at once (the engines' slots can no longer be
//    trusted to match this worker's sequences).
//  - on_frame(frame, now) takes result-down frames of this job. A result for an
//    outstanding sequence is copied into the user's buffer (exactly once),
//    acknowledges the chunk and drives the tree's congestion control;
//    duplicates, results for sequences never sent and results whose
//    elem_type or elem_count is not the chunk's are counted and ignored.
//  - Tree failover (docs/protocol.md, "Tree failover"): a primary tree with a
//    backup in the plan keeps a copy of the contributions of its most recent
//    results. When one of its chunks times out failover_after times, the tree
//    is dead for this worker: the worker sends an agreement vector (its
//    oldest unacknowledged sequence on the tree and the oldest it can still
//    contribute; an fp32 vector whatever the allreduces' types) as sequences
//    0.. of the backup tree; the sum tells every worker the same restart
//    point S0, and the dead tree's sequences from S0 on, including later
//    allreduces' chunks, continue on the backup with sequence m + (s - S0);
//    contributions already answered are replayed from kept copies (bytes and
//    type). A backup that dies fails the job after the retry budget, as a
//    tree without backup does.
//  - Pooled mode (a plan with `pooled`; docs/runtime.md, "Pooled mode"):
//    each tree's sequences form groups of G; a worker claims each group
//    before its chunks (claim frames, include/panama/claim.hpp), sends the
//    chunks of granted groups to the engines and reduces denied groups with
//    a ring over the job's ranks (ring frames to the next worker on the
//    ring, acknowledgements to the previous one), and reports finished groups in
//    cumulative releases. The ring runs inside this class, so every harness
//    gets it.
//
// Not thread-safe: one thread (or a lock held by the caller) at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "panama/runtime/congestion.hpp"
#include "panama/runtime/plan.hpp"
#include "panama/wire.hpp"

namespace panama::runtime {

// Zero-copy send: how many frames still reference an allreduce's buffer.
// The op holds one reference and every frame sent from the buffer another,
// dropped by whatever thread frees that frame; the last drop deletes it.
class BufferHold {
 public:
  static BufferHold* create() { return new BufferHold(); }
  void acquire() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Frames besides the holder's own reference still read the buffer.
  bool in_use() const { return refs_.load(std::memory_order_acquire) > 1; }

 private:
  BufferHold() = default;
  std::atomic<uint32_t> refs_{1};
};

// Where the core writes frames to send. begin_frame returns space for one
// frame of `len` bytes, or null when the transmit path is full (the core
// stops and tries again on the next poll); end_frame commits it.
class FrameOut {
 public:
  virtual ~FrameOut() = default;
  virtual uint8_t* begin_frame(uint32_t len) = 0;
  virtual void end_frame(uint32_t len) = 0;
  // Zero-copy send: whether begin_frame_attached works.
  virtual bool can_attach() const { return false; }
  // Space for the 64 header bytes of a frame whose payload is sent from
  // where it is: `payload_len` bytes at `payload` (the user's buffer). The
  // FrameOut takes a reference on `hold` (BufferHold::acquire) that is
  // released once nothing reads the payload any more. end_frame(64 +
  // payload_len) commits. Null as for begin_frame.
  virtual uint8_t* begin_frame_attached(const uint8_t* payload, uint32_t payload_len, BufferHold* hold) {
    (void)payload;
    (void)payload_len;
    (void)hold;
    return nullptr;
  }
  // Whether the frames are read next by another core or a device (a ring's
  // reader, a NIC's DMA) rather than by this thread right away (a PMD that
  // copies in tx_burst, a test reading them back): only then may a large
  // allreduce write payloads into them with streaming stores.
  virtual bool read_elsewhere() const { return false; }
};

// A FrameOut collecting copies, for tests and simulators.
class VectorFrameOut : public FrameOut {
 public:
  // A frame sent with an attached payload: where the payload was, and the
  // reference on its hold that this FrameOut keeps until release_attached().
  struct Attached {
    size_t frame;  // index into frames
    const uint8_t* payload;
    uint32_t len;
    BufferHold* hold;
  };
  std::vector<std::vector<uint8_t>> frames;  // whole frames (attached payloads copied at end_frame)
  std::vector<Attached> attached;            // references not yet released
  size_t limit = SIZE_MAX;                   // begin_frame fails once this many frames are held
  bool elsewhere = false;                    // what read_elsewhere() claims (tests of the streaming path)
  bool attach = false;                       // what can_attach() claims (tests of zero-copy send)
  ~VectorFrameOut() override { release_attached(); }
  uint8_t* begin_frame(uint32_t len) override {
    if (frames.size() >= limit) return nullptr;
    frames.emplace_back(len);
    return frames.back().data();
  }
  void end_frame(uint32_t) override {
    if (pending_) {
      std::vector<uint8_t>& f = frames[pending_->frame];
      f.insert(f.end(), pending_->payload, pending_->payload + pending_->len);
      attached.push_back(*pending_);
      pending_.reset();
    }
  }
  bool read_elsewhere() const override { return elsewhere; }
  bool can_attach() const override { return attach; }
  uint8_t* begin_frame_attached(const uint8_t* payload, uint32_t payload_len, BufferHold* hold) override {
    if (!attach || frames.size() >= limit) return nullptr;
    hold->acquire();
    pending_ = Attached{frames.size(), payload, payload_len, hold};
    frames.emplace_back(wire::kPayloadOffset);
    return frames.back().data();
  }
  // Drops the references of the first `n` attached frames still held (all by default).
  void release_attached(size_t n = SIZE_MAX) {
    n = std::min(n, attached.size());
    for (size_t i = 0; i < n; ++i) attached[i].hold->release();
    attached.erase(attached.begin(), attached.begin() + static_cast<std::ptrdiff_t>(n));
  }

 private:
  std::optional<Attached> pending_;
};

using OpId = uint64_t;
enum class OpStatus { kPending, kDone, kFailed };

// Pooled mode (docs/runtime.md, "Pooled mode"): per tree, and summed over
// the trees in CommStats.
struct PoolStats {
  uint64_t groups = 0;                   // groups issued
  uint64_t claimed = 0;                  // groups whose claim was sent
  uint64_t claims_sent = 0;              // claim frames (first, repeated after an RTO, with retransmissions)
  uint64_t claim_timeouts = 0;           // claims sent again because no answer came within the RTO
  uint64_t granted = 0, denied = 0;      // the first answer heard for a group
  uint64_t expired = 0;                  // granted groups that a later denied (expired) moved to the ring
  uint64_t denied_by_peer = 0;           // groups moved to the ring by the previous rank's ring frame
  uint64_t in_network = 0, on_ring = 0;  // groups finished each way
  uint64_t answers_ignored = 0;          // repeated answers, answers for finished groups
  uint64_t denied_after_result = 0;      // denied for a group with a result already: ignored (never expected)
  uint64_t releases_sent = 0;
  uint32_t released = 0;          // the cumulative count of finished groups (CommStats: summed)
  uint32_t confirmed = 0;         // the count the root confirmed freed (CommStats: summed)
  uint64_t release_asks = 0;      // releases repeated for want of a confirmation
  uint64_t confirmations = 0;     // release confirmations received
  uint64_t ring_frames_sent = 0;  // ring data frames, retransmissions included
  uint64_t ring_retransmissions = 0;
  uint64_t ring_bytes_sent = 0;  // payload bytes of those (fp32 partial sums and results)
  uint64_t ring_acks_sent = 0, ring_acks_received = 0;
  uint64_t ring_frames_received = 0;  // ring data frames of this job
  uint64_t ring_duplicates = 0;       // data frames received again (acknowledged again)
  uint64_t ring_early = 0;        // data frames for a group this worker has not issued yet (not acknowledged)
  uint64_t ring_malformed = 0;    // ring frames of this job that do not fit the group, step or sender
  uint64_t ring_ce_received = 0;  // ring data frames that arrived CE-marked (the mark echoed)
  uint64_t ring_ce_echoes = 0;    // fresh acknowledgements that echoed a mark (ring_congestion)
};

struct TreeStats {
  uint8_t tree_id = 0;
  // Payload bytes (elements x the allreduce's element size: 4 for fp32, 2
  // for bf16 and fp16) of chunks assigned to this tree, of results copied
  // to user buffers, and of every frame sent (retransmissions, replays and
  // agreement vectors included).
  uint64_t bytes_issued = 0;
  uint64_t bytes_completed = 0;
  uint64_t bytes_sent = 0;
  uint64_t packets_sent = 0;      // first transmissions and retransmissions
  uint64_t packets_received = 0;  // result frames of this tree (fresh, duplicate or unexpected)
  uint64_t retransmissions = 0;
  uint64_t timeouts = 0;
  uint64_t results_ce = 0;  // fresh results carrying CE
  uint64_t duplicate_results = 0;
  uint64_t unexpected_results = 0;  // sequence never sent, or elem_type / elem_count not the chunk's
  uint64_t cwnd_reductions = 0;
  double cwnd = 0;
  double alpha = 0;
  uint16_t cwnd_cap = 0;    // latest cap (initial_cwnd_cap before any result)
  int16_t backup_for = -1;  // the plan's: the primary tree id this tree stands by for
  // Failover: "active", "standby" (a backup not in use), "dead" (stopped
  // using it; its later results are ignored) or "agreeing" (a backup carrying
  // the agreement vector).
  std::string state;
  uint64_t results_ignored = 0;  // results that arrived after this tree was declared dead
  // For a dead primary: when it was declared dead and when the restart point
  // was agreed (core clock, ns; 0 = not yet), the time of its last result
  // before that, and the agreed restart sequence.
  uint64_t dead_at_ns = 0, agreed_at_ns = 0, last_result_ns = 0;
  uint32_t restart_seq = 0;
  // Sent again on the backup: contributions this worker already had the
  // result of (from kept copies) and chunks it was still waiting for.
  uint64_t replayed_kept = 0, replayed_unanswered = 0;
  uint32_t in_flight = 0;  // next_seq - oldest unacknowledged
  uint32_t next_seq = 0;
  double srtt_us = 0;  // smoothed RTT (0 before the first sample)
  double rto_us = 0;
  PoolStats pool;  // pooled mode
};

struct CommStats {
  uint16_t job_id = 0;
  uint64_t ops_started = 0, ops_completed = 0, ops_failed = 0;
  uint64_t bytes_issued = 0, bytes_completed = 0, bytes_sent = 0;  // payload bytes, as in TreeStats
  uint64_t packets_sent = 0, packets_received = 0, retransmissions = 0, timeouts = 0, results_ce = 0;
  uint64_t duplicate_results = 0, unexpected_results = 0;
  // Result-down frames of this job with bad lengths, no element type or an unknown tree.
  uint64_t malformed_results = 0;
  uint64_t failovers = 0;  // primary trees this worker failed over to their backup
  PoolStats pool;          // pooled mode: the trees' counters summed
  std::vector<TreeStats> trees;
};

class AllreduceCore {
 public:
  // Validates the plan (throws PlanError).
  explicit AllreduceCore(const Plan& plan);
  ~AllreduceCore();
  AllreduceCore(const AllreduceCore&) = delete;
  AllreduceCore& operator=(const AllreduceCore&) = delete;

  const Plan& plan() const { return plan_; }

  // Issues an in-place allreduce of `count` elements of `type` at `data`
  // (count x wire::elem_bytes(type) bytes, little-endian; the buffer must
  // stay valid and untouched until the op finishes). Several may be in
  // flight, of different types; every worker of the job must issue the same
  // sizes and types in the same order. A type that is none of ElemType
  // fails the op (not the communicator).
  OpId start(void* data, size_t count, wire::ElemType type, uint64_t now_ns);
  // The same for fp32.
  OpId start(float* data, size_t count, uint64_t now_ns) {
    return start(data, count, wire::ElemType::kFloat32, now_ns);
  }
  OpStatus status(OpId id) const;       // kFailed for unknown ids
  std::string op_error(OpId id) const;  // why it failed ("" otherwise)
  void release(OpId id);                // forget a finished op
  // Unfinished allreduces, plus one while this worker still owes other
  // workers failover contributions or (pooled mode) ring frames not yet
  // acknowledged, or owes the engines a release (a caller keeps polling
  // while non-zero).
  size_t pending_ops() const {
    return pending_ + (failover_owed() || pool_owed() || (pooled() && release_owed()) ? 1 : 0);
  }
  size_t tracked_ops() const { return ops_.size(); }  // records not yet released

  // Continuing a job in a new communicator (e.g. a process group destroyed
  // and created again in one process): the engines' slots remember the
  // sequences the job used (docs/protocol.md §5), so a new communicator of
  // the same job must go on where the previous one stopped, not at 0.
  // next_sequences() is, per tree in plan order, the sequence its next chunk
  // would use; throws std::logic_error while allreduces are
  // unfinished, after a failure or after a failover (the engines' state then
  // depends on more than one number per tree). continue_sequences() makes a
  // fresh core (no allreduce started yet) start every tree there; it throws
  // std::invalid_argument for a vector of another length or a standby tree
  // that does not start at 0, std::logic_error once an allreduce started.
  // Every worker of the job must continue from the same sequences.
  std::vector<uint32_t> next_sequences() const;
  void continue_sequences(const std::vector<uint32_t>& next);

  // Deferring failure: until `until_ns` (core clock), a chunk that has used
  // its retry budget (and whose tree has been silent long enough), or that
  // has reached failover_after, is retransmitted at rto_max instead of
  // failing the job or failing its tree over. For a caller that knows
  // another worker has not issued the allreduce yet (a late peer, not a dead
  // tree) and has its own deadline. 0 (the default): no deferral.
  void defer_failure_until(uint64_t until_ns) { defer_failure_until_ns_ = until_ns; }
  uint64_t failure_deferred_until() const { return defer_failure_until_ns_; }

  // Skew allowance: while a tree has answered nothing for as long as a
  // chunk's RTO, the chunk is not retransmitted before this long after its
  // sending, however small the RTO. A result needs every worker's
  // contribution, so a tree where nothing moves is waiting for a worker that
  // has not contributed yet: one that issued the allreduce later (the ranks
  // of a training job reach each gradient bucket at different times) or
  // whose threads were off the CPU. A retransmission does not bring it
  // sooner. The first result after such a silence restarts the timers of
  // the chunks still outstanding (their results follow now), and chunks that
  // waited through it give no RTT sample (their round trip measured the
  // worker, not the path). A lost chunk among others that complete is still
  // retransmitted after its RTO; what waits longer is recovering a loss
  // after which the tree has nothing else to answer (the last chunks of a
  // window, or all of them). 0 (the default): off.
  void set_skew_allowance_ns(uint64_t ns) { skew_allowance_ns_ = ns; }
  uint64_t skew_allowance_ns() const { return skew_allowance_ns_; }

  // Fails every unfinished allreduce and all later ones with `reason`.
  void abort(const std::string& reason);
  bool failed() const { return !fail_reason_.empty(); }
  const std::string& failure() const { return fail_reason_; }

  // A received frame. Returns true when it was a result-down frame of this
  // job or, in pooled mode, a claim frame or ring frame of this job
  // (consumed, whatever its fate); false for anything else.
  bool on_frame(const uint8_t* frame, uint32_t len, uint64_t now_ns);

  // Sends what the windows allow and what timed out; at most `max_frames`
  // frames. Returns how many were written to `out`.
  uint32_t poll(uint64_t now_ns, FrameOut& out, uint32_t max_frames = 64);
  // Earliest time poll() has a timeout to handle (UINT64_MAX when none).
  uint64_t next_timer_ns() const;
  // True when poll() would send a new chunk now (some tree has window and data).
  bool can_send() const;

  CommStats stats() const;
  const TreeCongestion& congestion(size_t tree_index) const;

  // Allreduces of at least this many bytes copy their payloads (into frames,
  // out of results) with streaming stores (payload_copy.hpp); 0: never.
  // Applies to allreduces started afterwards.
  void set_streaming_copy_bytes(size_t bytes) { streaming_copy_bytes_ = bytes; }
  size_t streaming_copy_bytes() const { return streaming_copy_bytes_; }

  // Zero-copy send: allreduces started afterwards send their chunks' first
  // transmissions and retransmissions from the user's buffer when the
  // FrameOut can attach payloads (FrameOut::can_attach). Such an allreduce
  // finishes (done or failed) only once no frame references its buffer any
  // more, so the caller may reuse or free the buffer as soon as it is told;
  // abort() (the runtime or communicator going away) does not wait.
  void set_zero_copy_send(bool on) { zero_copy_send_ = on; }
  bool zero_copy_send() const { return zero_copy_send_; }

  // Test hook: called once per result copied into a user buffer.
  void set_write_observer(std::function<void(OpId, size_t chunk)> f) { observer_ = std::move(f); }
  // Test hook (pooled mode): called once per group as it finishes, with its
  // tree id, its index and whether the ring finished it.
  void set_group_observer(std::function<void(uint8_t tree_id, uint32_t group, bool on_ring)> f) {
    group_observer_ = std::move(f);
  }

 private:
  struct Op;
  struct Tree;
  struct Outstanding;
  struct Kept;
  struct Group;
  struct RingGroup;
  struct RingKey;
  struct RingAck;
  struct RingOut;

  bool failover_owed() const;
  Tree& route(size_t primary);  // where new chunks of primary tree `primary` go now
  void begin_failover(Tree& t, uint64_t now_ns);
  void complete_failover(Tree& b, uint64_t now_ns);
  void keep_contribution(Tree& t, uint32_t seq, const uint8_t* src, uint32_t n, uint8_t elem_type);
  bool send_new(Tree& t, uint64_t now_ns, FrameOut& out);
  bool send_chunk(Tree& t, Outstanding& o, uint32_t seq, bool retransmission, FrameOut& out);
  bool handle_timeouts(Tree& t, uint64_t now_ns, FrameOut& out, uint32_t& budget);
  void handle_result(Tree& t, const wire::Header& h, const uint8_t* payload, uint64_t now_ns);
  void fail_all(const std::string& reason);
  void collect_released();
  void collect_drained();
  void finish(Op& op, OpStatus st, const std::string& err);
  void finalize(Op& op);

  // Pooled mode (pooled.cpp).
  bool pooled() const { return plan_.pooled.has_value(); }
  void pool_issue(Tree& t, Op& op, uint32_t first_seq, uint32_t n, size_t first_chunk, size_t stride);
  bool pool_skip(Tree& t);  // before send_new: past ring groups and gaps; true when next_seq may go out
  void pool_result(Tree& t, uint32_t seq);
  bool pool_poll(Tree& t, uint64_t now_ns, FrameOut& out, uint32_t& budget);
  bool ring_poll(uint64_t now_ns, FrameOut& out, uint32_t& budget);
  bool pool_frame(const uint8_t* frame, uint32_t len, uint64_t now_ns);
  void on_claim_result(Tree& t, uint32_t group, bool granted, uint64_t now_ns);
  void to_ring(Tree& t, Group& g, uint64_t now_ns);
  void ring_data(Tree& t, uint32_t group, uint32_t step, uint32_t piece, uint32_t offset, uint32_t count,
                 const uint8_t* payload, uint64_t now_ns, bool ce);
  void ring_final(Tree& t, Group& g, uint32_t offset, const uint32_t* values, uint32_t count);
  void ring_send(Tree& t, uint32_t group, uint32_t step, uint32_t piece, uint32_t offset,
                 std::vector<uint32_t> values);
  void group_done(Tree& t, Group& g);
  bool pool_owed() const;
  bool release_owed() const;
  bool release_unconfirmed(const Tree& t) const;
  bool pool_can_send() const;
  bool pool_sendable(const Tree& t) const;
  uint64_t pool_next_timer() const;
  void pool_clear();
  bool write_claim(Tree& t, uint32_t group, FrameOut& out);

  Plan plan_;
  std::vector<std::unique_ptr<Tree>> trees_;
  std::vector<size_t> primaries_;  // indices into trees_ of the primary trees, plan order
  int16_t tree_index_[256];
  std::unordered_map<OpId, std::unique_ptr<Op>> ops_;
  std::vector<OpId> finished_released_;
  std::vector<Op*> draining_;  // finished, waiting for their attached frames to be released
  OpId next_op_ = 1;
  size_t pending_ = 0;
  size_t rr_ = 0;  // round-robin start tree for sending
  std::string fail_reason_;
  CommStats totals_;
  std::function<void(OpId, size_t)> observer_;
  std::function<void(uint8_t, uint32_t, bool)> group_observer_;
  size_t streaming_copy_bytes_ = 0;
  bool zero_copy_send_ = false;
  uint64_t defer_failure_until_ns_ = 0;
  uint64_t skew_allowance_ns_ = 0;
  // Pooled mode: ring data frames of this rank not yet acknowledged (sent
  // or queued), those not sent yet in order, how many are in flight, and
  // the acknowledgements to send.
  std::map<RingKey, RingOut> ring_out_;
  std::deque<RingKey> ring_unsent_;
  uint32_t ring_in_flight_ = 0;
  std::deque<RingAck> ring_acks_;
  // PooledPlan::ring_congestion: the ring's DCTCP window (cap ring_window).
  std::optional<TreeCongestion> ring_cc_;
  uint32_t ring_window_now() const;
  uint64_t last_ring_ack_ns_ = 0;
  // The ring's round trip (RFC 6298 from acknowledgements of frames sent
  // once): its RTO times ring frames out once a sample exists.
  bool ring_have_rtt_ = false;
  double ring_srtt_ns_ = 0, ring_rttvar_ns_ = 0;
  uint64_t ring_rto_ns_ = 0;
  uint16_t ring_port_ = 0;
  uint32_t ring_pos_ = 0;           // this worker's place on the ring (ring_position(plan))
  uint64_t ring_unknown_tree_ = 0;  // ring frames of this job naming a tree it does not have
};

}  // namespace panama::runtime
