// The ports' output queues (queue.hpp); PFC at the switches (--lossless):
// per ingress port and class byte accounting, XOFF / XON to the upstream
// transmitter's output queue after the link's propagation delay; and the
// sampling of queue lengths.
#include <algorithm>

#include "ns3/drop-tail-queue.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/uinteger.h"

#include "queue.hpp"
#include "sim.hpp"

namespace panama::netsim::detail {

// ------------------------------------------------------------------ queue

int class_of(Ptr<const ns3::Packet> p, const Ipv4Header& h) {
  uint8_t l4[4] = {0, 0, 0, 0};
  if (h.GetProtocol() != 17 || p->GetSize() < 4) return kClassTcp;
  p->CopyData(l4, 4);
  return ((l4[2] << 8) | l4[3]) == kPanamaPort ? kClassPanama : kClassTcp;
}

ns3::TypeId EcnQueueDisc::GetTypeId() {
  static ns3::TypeId tid =
      ns3::TypeId("panama::netsim::EcnQueueDisc")
          .SetParent<ns3::QueueDisc>()
          .SetGroupName("Panama")
          .AddConstructor<EcnQueueDisc>()
          .AddAttribute("MaxBytes", "buffer capacity in bytes", ns3::UintegerValue(1 << 20),
                        ns3::MakeUintegerAccessor(&EcnQueueDisc::max_bytes_),
                        ns3::MakeUintegerChecker<uint64_t>())
          .AddAttribute("KBytes", "ECN marking threshold in bytes", ns3::UintegerValue(100000),
                        ns3::MakeUintegerAccessor(&EcnQueueDisc::k_bytes_),
                        ns3::MakeUintegerChecker<uint64_t>())
          .AddAttribute("Levels", "priority levels of PANAMA traffic (by DSCP)", ns3::UintegerValue(1),
                        ns3::MakeUintegerAccessor(&EcnQueueDisc::levels_),
                        ns3::MakeUintegerChecker<uint32_t>(1, 8));
  return tid;
}
NS_OBJECT_ENSURE_REGISTERED(EcnQueueDisc);

void EcnQueueDisc::pause(int cls, bool on) {
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  if (on && !paused_[cls]) {
    paused_[cls] = true;
    paused_since_[cls] = now;
    ++pauses_[cls];
  } else if (!on && paused_[cls]) {
    paused_[cls] = false;
    paused_ns_[cls] += now - paused_since_[cls];
    Run();  // send what waited
  }
}

uint64_t EcnQueueDisc::paused_ns(int cls) const {
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  return paused_ns_[cls] + (paused_[cls] ? now - paused_since_[cls] : 0);
}

bool EcnQueueDisc::DoEnqueue(Ptr<ns3::QueueDiscItem> item) {
  const uint64_t q = GetNBytes();
  if (q + item->GetSize() > max_bytes_) {
    DropBeforeEnqueue(item, "buffer full");
    return false;
  }
  if (q >= k_bytes_) Mark(item, "queue above K");  // no effect on packets that are not ECN-capable
  Ptr<ns3::Ipv4QueueDiscItem> ip = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
  const int cls = ip ? class_of(ip->GetPacket(), ip->GetHeader()) : kClassTcp;
  const size_t queue = cls == kClassTcp ? 0 : 1 + priority_level_of(ip->GetHeader().GetTos() >> 2, levels_);
  const bool ok = GetInternalQueue(queue)->Enqueue(item);
  if (ok) order_[cls].push_back(next_seq_++);
  max_seen_ = std::max<uint64_t>(max_seen_, GetNBytes());
  return ok;
}

Ptr<ns3::QueueDiscItem> EcnQueueDisc::DoDequeue() {
  int best = -1;
  for (int c = 0; c < kClasses; ++c) {
    if (paused_[c] || order_[c].empty()) continue;
    if (best < 0 || order_[c].front() < order_[best].front()) best = c;
  }
  if (best < 0) return nullptr;
  order_[best].pop_front();
  size_t queue = 0;
  if (best == kClassPanama) {
    queue = 1;
    while (queue < levels_ && GetInternalQueue(queue)->IsEmpty()) ++queue;
  }
  Ptr<ns3::QueueDiscItem> item = GetInternalQueue(queue)->Dequeue();
  if (item && on_dequeue) on_dequeue(item);
  return item;
}

bool EcnQueueDisc::CheckConfig() {
  if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0) return false;
  while (GetNInternalQueues() < 1 + levels_) {
    AddInternalQueue(ns3::CreateObjectWithAttributes<ns3::DropTailQueue<ns3::QueueDiscItem>>(
        "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("4000000000p"))));
  }
  return true;
}

// ------------------------------------------------------------------ PFC

bool Sim::pfc_admit(uint32_t s, uint32_t iif, Ptr<const ns3::Packet> p, const Ipv4Header& h) {
  if (!o_.lossless) return true;
  SwitchNode& sw = switches_[s];
  const int port = iif < sw.port_of_if.size() ? sw.port_of_if[iif] : -1;
  if (port < 0) return true;
  const int cls = class_of(p, h);
  const uint32_t bytes = p->GetSize() + h.GetSerializedSize();
  if (!pfc_charge(s, static_cast<uint32_t>(port), cls, bytes)) return false;
  sw.held.emplace(p->GetUid(), SwitchNode::Held{static_cast<uint32_t>(port), cls, bytes});
  return true;
}

bool Sim::pfc_charge(uint32_t s, uint32_t port, int cls, uint64_t bytes) {
  Port& pt = switches_[s].ports[port];
  const uint64_t xoff = uint64_t{o_.pfc_xoff_kb} * 1000;
  if (pt.in_bytes[cls] + bytes > xoff + pt.headroom) {
    ++pfc_drops_;  // the headroom did not hold what arrived after the pause (not expected)
    return false;
  }
  pt.in_bytes[cls] += bytes;
  pt.in_max[cls] = std::max(pt.in_max[cls], pt.in_bytes[cls]);
  if (pt.in_bytes[cls] >= xoff && !pt.xoff[cls]) {
    pt.xoff[cls] = true;
    ++pt.xoff_sent[cls];
    Ptr<EcnQueueDisc> up = pt.peer_queue;
    ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(o_.link_delay_us * 1e3)),
                             [up, cls]() { up->pause(cls, true); });
  }
  return true;
}

void Sim::pfc_release(uint32_t s, uint32_t port, int cls, uint64_t bytes) {
  Port& pt = switches_[s].ports[port];
  pt.in_bytes[cls] -= std::min(pt.in_bytes[cls], bytes);
  if (pt.xoff[cls] && pt.in_bytes[cls] <= uint64_t{o_.pfc_xon_kb} * 1000) {
    pt.xoff[cls] = false;
    ++pt.xon_sent[cls];
    Ptr<EcnQueueDisc> up = pt.peer_queue;
    ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(o_.link_delay_us * 1e3)),
                             [up, cls]() { up->pause(cls, false); });
  }
}

// ------------------------------------------------------------------ queue sampling

void Sim::sample_queues() {
  for (SwitchNode& sw : switches_) {
    for (Port& p : sw.ports) p.samples.push_back(p.queue->GetNBytes());
  }
  if (!finished_) {
    ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(o_.queue_sample_us * 1e3)),
                             [this]() { sample_queues(); });
  }
}

}  // namespace panama::netsim::detail
