// TCP as Linux bounds it: two ns-3 (3.37) behaviours that let a connection's
// congestion window fall below one segment, after which a sender with
// nothing in flight never sends again (no ACK comes to open the window and
// no timer runs): the connection stalls for good, with no drop anywhere.
// Both were found as ring allreduces that never finished (32 hosts, 30%
// background load, seeds 2 and 3 of tests/network's reproducer).
//
//  - TcpDctcp sets the slow-start threshold to cwnd x (1 - alpha/2) with no
//    lower bound: after a retransmission timeout left cwnd at one segment,
//    a CE mark set it below one. Linux's dctcp_ssthresh keeps at least two
//    segments (net/ipv4/tcp_dctcp.c); TcpDctcpLinux does.
//  - Proportional rate reduction (TcpPrrRecovery, also run in CWR after a
//    CE mark) sets cwnd = bytes in flight + what it may send: with a short
//    last segment in flight and nothing to send, cwnd became 38 bytes.
//    Linux counts cwnd in segments, so the same computation leaves at least
//    one; TcpPrrRecoveryLinux keeps at least one segment.
//
// Every TCP socket of the simulation (background flows and the ring) uses
// them; they are otherwise ns-3's DCTCP and PRR.
#pragma once

#include <algorithm>
#include <string>

#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-prr-recovery.h"

namespace panama::netsim {

class TcpDctcpLinux : public ns3::TcpDctcp {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("panama::netsim::TcpDctcpLinux")
                                 .SetParent<ns3::TcpDctcp>()
                                 .SetGroupName("Internet")
                                 .AddConstructor<TcpDctcpLinux>();
    return tid;
  }
  TcpDctcpLinux() = default;
  TcpDctcpLinux(const TcpDctcpLinux&) = default;
  std::string GetName() const override { return "TcpDctcpLinux"; }
  uint32_t GetSsThresh(ns3::Ptr<const ns3::TcpSocketState> tcb, uint32_t bytes_in_flight) override {
    return std::max(ns3::TcpDctcp::GetSsThresh(tcb, bytes_in_flight), 2 * tcb->m_segmentSize);
  }
  ns3::Ptr<ns3::TcpCongestionOps> Fork() override { return ns3::CopyObject<TcpDctcpLinux>(this); }
};

class TcpPrrRecoveryLinux : public ns3::TcpPrrRecovery {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("panama::netsim::TcpPrrRecoveryLinux")
                                 .SetParent<ns3::TcpPrrRecovery>()
                                 .SetGroupName("Internet")
                                 .AddConstructor<TcpPrrRecoveryLinux>();
    return tid;
  }
  TcpPrrRecoveryLinux() = default;
  TcpPrrRecoveryLinux(const TcpPrrRecoveryLinux&) = default;
  std::string GetName() const override { return "TcpPrrRecoveryLinux"; }
  void EnterRecovery(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t dup_acks, uint32_t unacked,
                     uint32_t delivered) override {
    ns3::TcpPrrRecovery::EnterRecovery(tcb, dup_acks, unacked, delivered);
    at_least_one_segment(tcb);
  }
  void DoRecovery(ns3::Ptr<ns3::TcpSocketState> tcb, uint32_t delivered) override {
    ns3::TcpPrrRecovery::DoRecovery(tcb, delivered);
    at_least_one_segment(tcb);
  }
  void ExitRecovery(ns3::Ptr<ns3::TcpSocketState> tcb) override {
    ns3::TcpPrrRecovery::ExitRecovery(tcb);
    at_least_one_segment(tcb);
  }
  ns3::Ptr<ns3::TcpRecoveryOps> Fork() override { return ns3::CopyObject<TcpPrrRecoveryLinux>(this); }

 private:
  static void at_least_one_segment(ns3::Ptr<ns3::TcpSocketState> tcb) {
    if (tcb->m_cWnd < tcb->m_segmentSize) tcb->m_cWnd = tcb->m_segmentSize;
  }
};

}  // namespace panama::netsim
