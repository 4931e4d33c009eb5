// A switch output port's queue: a token bucket on bytes emulates the link
// rate (in virtual time: credit earned while frames wait is never lost), DCTCP-style ECN marking sets CE on
// ECT frames that arrive while the queue holds more than K bytes, and frames that do not fit are
// tail-dropped.
//
// The queue stores opaque handles (an rte_mbuf* in the PSwitch, a test's own
// type in unit tests) and is driven by an explicit clock, so its behaviour is
// deterministic and testable without DPDK. The hot path does not allocate:
// the ring of handles is sized once from the byte capacity.
#pragma once

#include <cstdint>
#include <vector>

#include "panama/wire.hpp"

namespace panama::pswitch {

// Bytes a frame occupies on an Ethernet link beyond the bytes we store:
// preamble + start delimiter (8), inter-frame gap (12) and FCS (4).
constexpr uint32_t kWireOverheadBytes = 24;

enum class EcnMark : uint8_t { kNotIpv4, kNotEct, kMarked, kAlreadyCe };

// Sets CE in the IPv4 header of `frame` when it carries ECT(0) or ECT(1) and
// rewrites the header checksum. Frames that are not IPv4 without options are
// left alone.
inline EcnMark mark_ce(uint8_t* frame, uint32_t len) {
  if (len < wire::kIpOffset + wire::kIpHeaderBytes) return EcnMark::kNotIpv4;
  if (wire::load_be16(frame + wire::kEthType) != wire::kEtherTypeIpv4 || frame[wire::kIpVerIhl] != 0x45) {
    return EcnMark::kNotIpv4;
  }
  const uint8_t ecn = frame[wire::kIpTos] & 3;
  if (ecn == wire::kEcnNotEct) return EcnMark::kNotEct;
  if (ecn == wire::kEcnCe) return EcnMark::kAlreadyCe;
  frame[wire::kIpTos] = static_cast<uint8_t>(frame[wire::kIpTos] | wire::kEcnCe);
  wire::store_be16(frame + wire::kIpChecksum, 0);
  wire::store_be16(frame + wire::kIpChecksum, wire::ipv4_header_checksum(frame + wire::kIpOffset));
  return EcnMark::kMarked;
}

struct QueueConfig {
  double rate_gbps = 10.0;  // 0 = unlimited (no pacing)
  uint64_t capacity_bytes = 4u << 20;
  uint64_t ecn_k_bytes = 256u << 10;  // 0 = never mark
};

struct QueueCounters {
  uint64_t enqueued = 0;
  uint64_t dequeued = 0;
  uint64_t bytes_out = 0;
  uint64_t tail_drops = 0;
  uint64_t ecn_marked = 0;      // frames this queue turned from ECT into CE
  uint64_t over_k_not_ect = 0;  // frames above K that could not be marked
  uint64_t max_depth_bytes = 0;
};

enum class EnqueueResult : uint8_t { kQueued, kQueuedMarked, kDropped };

template <class Handle>
class OutputQueue {
 public:
  explicit OutputQueue(const QueueConfig& cfg)
      : cfg_(cfg),
        // 60 bytes is the smallest Ethernet frame without FCS.
        ring_(static_cast<size_t>(cfg.capacity_bytes / 60 + 1)),
        bytes_per_ns_(cfg.rate_gbps / 8.0),
        burst_bytes_(2.0 * (wire::kMaxFrameBytes + kWireOverheadBytes)),
        tokens_(burst_bytes_) {}

  // Whether a frame queued now would be marked CE (the queue holds more
  // than K bytes): a caller sharing one frame between queues gives a queue
  // that marks its own copy.
  bool marks_now() const { return cfg_.ecn_k_bytes != 0 && depth_bytes_ > cfg_.ecn_k_bytes; }

  // Queues `h` (whose frame bytes are `frame`, `len`) at time `now_ns`,
  // marking CE when the queue already holds more than K bytes. On kDropped
  // the caller still owns h.
  EnqueueResult enqueue(Handle h, uint8_t* frame, uint32_t len, uint64_t now_ns) {
    refill(now_ns);
    if (depth_bytes_ + len > cfg_.capacity_bytes || count_ == ring_.size()) {
      ++ctr_.tail_drops;
      return EnqueueResult::kDropped;
    }
    bool marked = false;
    if (marks_now()) {
      const EcnMark m = mark_ce(frame, len);
      marked = m == EcnMark::kMarked;
      if (marked) ++ctr_.ecn_marked;
      if (m == EcnMark::kNotEct || m == EcnMark::kNotIpv4) ++ctr_.over_k_not_ect;
    }
    ring_[(head_ + count_) % ring_.size()] = Item{h, len};
    ++count_;
    depth_bytes_ += len;
    if (depth_bytes_ > ctr_.max_depth_bytes) ctr_.max_depth_bytes = depth_bytes_;
    ++ctr_.enqueued;
    return marked ? EnqueueResult::kQueuedMarked : EnqueueResult::kQueued;
  }

  // Hands to `send(Handle)` the frames the emulated link has finished
  // serialising by `now_ns`, at most `max`; returns how many.
  template <class Send>
  uint32_t dequeue(uint64_t now_ns, uint32_t max, Send&& send) {
    refill(now_ns);
    uint32_t n = 0;
    while (n < max && count_ != 0) {
      const Item& it = ring_[head_];
      const double cost = static_cast<double>(it.len + kWireOverheadBytes);
      if (bytes_per_ns_ > 0.0 && tokens_ < cost) break;
      if (bytes_per_ns_ > 0.0) tokens_ -= cost;
      const Item out = it;
      head_ = (head_ + 1) % ring_.size();
      --count_;
      depth_bytes_ -= out.len;
      ++ctr_.dequeued;
      ctr_.bytes_out += out.len;
      send(out.handle);
      ++n;
    }
    return n;
  }

  // Empties the queue (shutdown), handing every frame to `release`.
  template <class Release>
  void drain(Release&& release) {
    while (count_ != 0) {
      release(ring_[head_].handle);
      head_ = (head_ + 1) % ring_.size();
      --count_;
    }
    depth_bytes_ = 0;
  }

  uint64_t depth_bytes() const { return depth_bytes_; }
  size_t depth_frames() const { return count_; }
  const QueueCounters& counters() const { return ctr_; }
  const QueueConfig& config() const { return cfg_; }

 private:
  struct Item {
    Handle handle;
    uint32_t len;
  };

  void refill(uint64_t now_ns) {
    if (!started_) {
      started_ = true;
      last_ns_ = now_ns;
      return;
    }
    if (now_ns <= last_ns_) return;
    tokens_ += static_cast<double>(now_ns - last_ns_) * bytes_per_ns_;
    // An idle link saves up at most a small burst. A busy one keeps all its
    // credit: it was sending the whole time, so when this thread was not
    // scheduled, the frames the link would have sent go out now.
    if (count_ == 0 && tokens_ > burst_bytes_) tokens_ = burst_bytes_;
    last_ns_ = now_ns;
  }

  QueueConfig cfg_;
  std::vector<Item> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
  uint64_t depth_bytes_ = 0;
  double bytes_per_ns_;
  double burst_bytes_;  // two jumbo frames: enough to keep the link busy, small enough to pace
  double tokens_;
  bool started_ = false;
  uint64_t last_ns_ = 0;
  QueueCounters ctr_;
};

}  // namespace panama::pswitch
