// A switch output port's queue: a token bucket on bytes emulates the link
// rate (in virtual time: credit earned while frames wait is never lost), DCTCP-style ECN marking sets CE on
// ECT frames that arrive while the queue holds more than K bytes, and frames that do not fit are
// tail-dropped. With priority levels configured, the queue is several FIFOs (bands) served in strict
// priority by the frames' DSCP, sharing one buffer, each marking CE on its own depth.
//
// The queue stores opaque handles (an rte_mbuf* in the PSwitch, a test's own
// type in unit tests) and is driven by an explicit clock, so its behaviour is
// deterministic and testable without DPDK. The hot path does not allocate:
// the buffer's cells (one per frame, linked per band) are sized once from
// the byte capacity.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
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

// Strict priority by DSCP class. A queue has 1 + L bands: band 0 holds the
// default traffic (anything not IPv4, and IPv4 of a DSCP not listed), band
// 1 + l the frames of priority level l, whose DSCP is priority_dscp[l] (the
// controller's levels, docs/controller.md "Priorities": level 0 is the most
// GPU-intensive). The link serves band 1 first, then 2, ..., L, and band 0
// last; within a band, frames leave in arrival order.
constexpr uint32_t kMaxPriorityLevels = 8;
constexpr uint32_t kMaxBands = 1 + kMaxPriorityLevels;

// The DSCP of an Ethernet frame carrying IPv4 (no VLAN tag), or -1 for any
// other frame (ARP, IPv6, a tagged or truncated frame).
inline int frame_dscp(const uint8_t* frame, uint32_t len) {
  if (len < wire::kIpOffset + wire::kIpHeaderBytes) return -1;
  if (wire::load_be16(frame + wire::kEthType) != wire::kEtherTypeIpv4 || (frame[wire::kIpVerIhl] >> 4) != 4) {
    return -1;
  }
  return frame[wire::kIpTos] >> 2;
}

struct QueueConfig {
  double rate_gbps = 10.0;  // 0 = unlimited (no pacing)
  // The port's buffer, shared by its bands: a frame is tail-dropped when the
  // bytes queued in all bands plus its own exceed it.
  uint64_t capacity_bytes = 4u << 20;
  // CE threshold K, applied to each band's own depth (0 = never mark).
  uint64_t ecn_k_bytes = 256u << 10;
  // DSCP of each priority level, highest first (at most kMaxPriorityLevels,
  // each 0..63). Empty: one band, a plain FIFO. A DSCP listed twice belongs
  // to its first (higher) level.
  std::vector<uint8_t> priority_dscp = {};
};

// Totals over every band.
struct QueueCounters {
  uint64_t enqueued = 0;
  uint64_t dequeued = 0;
  uint64_t bytes_out = 0;
  uint64_t tail_drops = 0;
  uint64_t ecn_marked = 0;      // frames this queue turned from ECT into CE
  uint64_t over_k_not_ect = 0;  // frames above K that could not be marked
  uint64_t max_depth_bytes = 0;
};

// One band's share of the totals (max_depth_bytes: of the band alone).
struct BandCounters {
  uint64_t enqueued = 0;
  uint64_t dequeued = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t tail_drops = 0;
  uint64_t ecn_marked = 0;
  uint64_t max_depth_bytes = 0;
};

enum class EnqueueResult : uint8_t { kQueued, kQueuedMarked, kDropped };

template <class Handle>
class OutputQueue {
 public:
  // Throws std::invalid_argument for more than kMaxPriorityLevels levels or
  // a DSCP above 63.
  explicit OutputQueue(const QueueConfig& cfg)
      : cfg_(cfg),
        // 60 bytes is the smallest Ethernet frame without FCS: the shared
        // buffer never holds more frames than this.
        cells_(static_cast<size_t>(cfg.capacity_bytes / 60 + 1)),
        free_(cells_.size()),
        free_count_(cells_.size()),
        bands_(static_cast<uint32_t>(1 + cfg.priority_dscp.size())),
        bytes_per_ns_(cfg.rate_gbps / 8.0),
        burst_bytes_(2.0 * (wire::kMaxFrameBytes + kWireOverheadBytes)),
        tokens_(burst_bytes_) {
    if (cfg.priority_dscp.size() > kMaxPriorityLevels) {
      throw std::invalid_argument("output queue: at most " + std::to_string(kMaxPriorityLevels) +
                                  " priority levels (got " + std::to_string(cfg.priority_dscp.size()) + ")");
    }
    for (size_t l = cfg.priority_dscp.size(); l-- > 0;) {
      const uint8_t d = cfg.priority_dscp[l];
      if (d > 63) throw std::invalid_argument("output queue: DSCP " + std::to_string(d) + " is not in 0..63");
      band_of_dscp_[d] = static_cast<uint8_t>(1 + l);  // the lowest level wins: listed first = higher
    }
    // Cells are taken from the top of the free stack: 0, 1, 2, ... first.
    for (size_t i = 0; i < free_.size(); ++i) free_[i] = static_cast<uint32_t>(free_.size() - 1 - i);
  }

  // The band a frame goes to (0: the default band).
  uint32_t band_of(const uint8_t* frame, uint32_t len) const {
    if (bands_ == 1) return 0;
    const int d = frame_dscp(frame, len);
    return d < 0 ? 0 : band_of_dscp_[static_cast<size_t>(d)];
  }

  // Whether this frame, queued now, would be marked CE (its band holds more
  // than K bytes): a caller sharing one frame between queues gives a queue
  // that marks its own copy.
  bool marks_now(const uint8_t* frame, uint32_t len) const { return marks(band_of(frame, len)); }

  // Queues `h` (whose frame bytes are `frame`, `len`) at time `now_ns` in
  // the band of its DSCP, marking CE when that band already holds more than
  // K bytes. On kDropped the caller still owns h.
  EnqueueResult enqueue(Handle h, uint8_t* frame, uint32_t len, uint64_t now_ns) {
    refill(now_ns);
    const uint32_t b = band_of(frame, len);
    BandCounters& bc = band_ctr_[b];
    if (depth_bytes_ + len > cfg_.capacity_bytes || free_count_ == 0) {
      ++ctr_.tail_drops;
      ++bc.tail_drops;
      return EnqueueResult::kDropped;
    }
    bool marked = false;
    if (marks(b)) {
      const EcnMark m = mark_ce(frame, len);
      marked = m == EcnMark::kMarked;
      if (marked) {
        ++ctr_.ecn_marked;
        ++bc.ecn_marked;
      }
      if (m == EcnMark::kNotEct || m == EcnMark::kNotIpv4) ++ctr_.over_k_not_ect;
    }
    const uint32_t c = free_[--free_count_];
    cells_[c] = Cell{h, len, kNil};
    Band& q = band_[b];
    if (q.count == 0) {
      q.head = c;
      nonempty_ |= 1u << b;
    } else {
      cells_[q.tail].next = c;
    }
    q.tail = c;
    ++q.count;
    q.depth_bytes += len;
    ++count_;
    depth_bytes_ += len;
    if (depth_bytes_ > ctr_.max_depth_bytes) ctr_.max_depth_bytes = depth_bytes_;
    if (q.depth_bytes > bc.max_depth_bytes) bc.max_depth_bytes = q.depth_bytes;
    ++ctr_.enqueued;
    ++bc.enqueued;
    bc.bytes_in += len;
    return marked ? EnqueueResult::kQueuedMarked : EnqueueResult::kQueued;
  }

  // Hands to `send(Handle)` the frames the emulated link has finished
  // serialising by `now_ns`, at most `max`; returns how many. Each frame is
  // the oldest of the highest non-empty band; when the link has no credit
  // for it, nothing else passes it.
  template <class Send>
  uint32_t dequeue(uint64_t now_ns, uint32_t max, Send&& send) {
    refill(now_ns);
    uint32_t n = 0;
    while (n < max && count_ != 0) {
      const uint32_t b = next_band();
      Band& q = band_[b];
      const Cell& it = cells_[q.head];
      const double cost = static_cast<double>(it.len + kWireOverheadBytes);
      if (bytes_per_ns_ > 0.0 && tokens_ < cost) break;
      if (bytes_per_ns_ > 0.0) tokens_ -= cost;
      const Cell out = it;
      free_[free_count_++] = q.head;
      q.head = out.next;
      if (--q.count == 0) nonempty_ &= ~(1u << b);
      q.depth_bytes -= out.len;
      --count_;
      depth_bytes_ -= out.len;
      ++ctr_.dequeued;
      ctr_.bytes_out += out.len;
      ++band_ctr_[b].dequeued;
      band_ctr_[b].bytes_out += out.len;
      send(out.handle);
      ++n;
    }
    return n;
  }

  // Empties the queue (shutdown), handing every frame to `release`.
  template <class Release>
  void drain(Release&& release) {
    for (uint32_t b = 0; b < bands_; ++b) {
      Band& q = band_[b];
      while (q.count != 0) {
        release(cells_[q.head].handle);
        free_[free_count_++] = q.head;
        q.head = cells_[q.head].next;
        --q.count;
      }
      q.depth_bytes = 0;
    }
    nonempty_ = 0;
    count_ = 0;
    depth_bytes_ = 0;
  }

  uint64_t depth_bytes() const { return depth_bytes_; }
  size_t depth_frames() const { return count_; }
  uint64_t depth_bytes(uint32_t band) const { return band_[band].depth_bytes; }
  size_t depth_frames(uint32_t band) const { return band_[band].count; }
  const QueueCounters& counters() const { return ctr_; }
  // 1 + the number of priority levels.
  uint32_t bands() const { return bands_; }
  const BandCounters& band_counters(uint32_t band) const { return band_ctr_[band]; }
  const QueueConfig& config() const { return cfg_; }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;

  // A frame in the shared buffer; `next` links the frames of one band.
  struct Cell {
    Handle handle;
    uint32_t len;
    uint32_t next;
  };

  struct Band {
    uint32_t head = kNil;
    uint32_t tail = kNil;
    size_t count = 0;
    uint64_t depth_bytes = 0;
  };

  bool marks(uint32_t band) const {
    return cfg_.ecn_k_bytes != 0 && band_[band].depth_bytes > cfg_.ecn_k_bytes;
  }

  // The highest non-empty band: the lowest of 1..L, else 0. Needs count_ != 0.
  uint32_t next_band() const {
    const uint32_t levels = nonempty_ & ~1u;
    return levels != 0 ? static_cast<uint32_t>(__builtin_ctz(levels)) : 0;
  }

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
  std::vector<Cell> cells_;     // the shared buffer, sized once
  std::vector<uint32_t> free_;  // a stack of the free cells
  size_t free_count_;
  uint32_t bands_;
  std::array<uint8_t, 64> band_of_dscp_{};
  std::array<Band, kMaxBands> band_{};
  std::array<BandCounters, kMaxBands> band_ctr_{};
  uint32_t nonempty_ = 0;  // bit b: band b holds frames
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
