// The output queue of every port of the simulated fabric (switches and host
// NICs), internal to sim/network: FIFO, finite buffer with tail drop, CE
// marking of ECN-capable packets that arrive to K or more queued bytes
// (DCTCP-style instantaneous marking), and two traffic classes (TCP, PANAMA)
// that a PFC pause stops separately. queues.cpp has the code, with the PFC
// accounting of the switches (--lossless) and the queue sampling.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>

#include "ns3/ipv4-header.h"
#include "ns3/packet.h"
#include "ns3/queue-disc.h"

namespace panama::netsim::detail {

// Traffic classes: a PFC pause stops one of them.
constexpr int kClassTcp = 0;     // background flows, ring allreduce: everything but PANAMA
constexpr int kClassPanama = 1;  // PANAMA aggregation frames
constexpr int kClasses = 2;

// The class of an IPv4 packet: UDP to the PANAMA port is kClassPanama.
int class_of(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& h);

// Priority levels of PANAMA traffic (--priorities L, the controller's
// levels): level l's packets carry DSCP 8 (L - l), so level 0 has the
// highest; any other DSCP is the lowest level.
inline uint8_t priority_dscp(uint32_t level, uint32_t levels) {
  return static_cast<uint8_t>(8 * (levels - level));
}
inline uint32_t priority_level_of(uint8_t dscp, uint32_t levels) {
  if (dscp % 8 != 0 || dscp == 0 || dscp / 8 > levels) return levels - 1;
  return levels - dscp / 8;
}

class EcnQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId();
  EcnQueueDisc() : QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {}
  uint64_t max_seen() const { return max_seen_; }

  // PFC: a pause (on) or resume (off) of one class has arrived from the
  // downstream switch. A paused class sends nothing; the other goes on.
  void pause(int cls, bool on);
  uint64_t pauses(int cls) const { return pauses_[cls]; }
  uint64_t paused_ns(int cls) const;
  // Called with every packet leaving the queue (the switch's PFC accounting).
  std::function<void(ns3::Ptr<ns3::QueueDiscItem>)> on_dequeue;

 private:
  bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
  // Arrival order across the classes, skipping a paused class: without
  // pauses this is one FIFO. Within the PANAMA class, with priority levels,
  // the PANAMA packet sent in its turn is the oldest of the highest level.
  ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
  bool CheckConfig() override;
  void InitializeParams() override {}

  uint32_t levels_ = 1;  // PANAMA priority levels: internal queue 1 + level, level 0 served first
  uint64_t max_bytes_ = 1 << 20;
  uint64_t k_bytes_ = 100000;
  uint64_t max_seen_ = 0;
  uint64_t next_seq_ = 0;
  std::deque<uint64_t> order_[kClasses];
  bool paused_[kClasses] = {false, false};
  uint64_t paused_since_[kClasses] = {0, 0};
  uint64_t paused_ns_[kClasses] = {0, 0};
  uint64_t pauses_[kClasses] = {0, 0};
};

}  // namespace panama::netsim::detail
