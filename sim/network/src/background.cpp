// Background traffic: DCTCP flows over ns-3's TCP between hosts in different
// racks, Poisson arrivals at --load, sizes from a CDF, or given by --flow;
// and the ideal flow completion time their slowdown is measured against.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ns3/inet-socket-address.h"
#include "ns3/tcp-socket-factory.h"

#include "sim.hpp"

namespace panama::netsim {
namespace detail {

// ------------------------------------------------------------------ background flows

void Sim::next_arrival() {
  if (!in_window()) return;
  const double lambda = o_.load * o_.hosts() * o_.host_gbps * 1e9 / (8 * cdf_.mean());  // flows per second
  std::exponential_distribution<double> gap(lambda);
  std::uniform_int_distribution<uint32_t> any(0, o_.hosts() - 1);
  std::uniform_real_distribution<double> u(0, 1);
  const uint32_t src = any(rng_);
  uint32_t dst;
  do {
    dst = any(rng_);
  } while (hosts_[dst].rack == hosts_[src].rack);
  const uint64_t bytes = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(cdf_.sample(u(rng_)))));
  const double next = gap(rng_);
  start_flow(src, dst, bytes, false);
  ns3::Simulator::Schedule(ns3::Seconds(next), [this]() { next_arrival(); });
}

void Sim::start_flow(uint32_t src, uint32_t dst, uint64_t bytes, bool manual) {
  auto f = std::make_unique<BgFlow>();
  f->rec.id = static_cast<uint32_t>(flows_.size());
  f->rec.src = src;
  f->rec.dst = dst;
  f->rec.bytes = bytes;
  f->rec.start_us = ns3::Simulator::Now().GetSeconds() * 1e6;
  f->rec.ideal_us = ideal_fct_path_us(o_, bytes, fabric_links(src, dst));
  f->rec.manual = manual;
  f->rec.measured = manual || in_window();
  if (f->rec.measured) ++pending_measured_;
  if (f->rec.measured && !manual && bytes < kShortFlowBytes) ++short_started_;
  ++flows_started_;
  f->tx = ns3::Socket::CreateSocket(hosts_[src].node, ns3::TcpSocketFactory::GetTypeId());
  f->tx->Bind();
  ns3::Address local;
  f->tx->GetSockName(local);
  const uint16_t port = ns3::InetSocketAddress::ConvertFrom(local).GetPort();
  flow_by_src_[(uint64_t{hosts_[src].ip} << 16) | port] = f->rec.id;
  flow_by_socket_[ns3::PeekPointer(f->tx)] = f->rec.id;
  f->tx->SetConnectCallback(ns3::MakeCallback(&Sim::flow_connected, this),
                            ns3::MakeCallback(&Sim::flow_failed, this));
  f->tx->SetSendCallback(ns3::MakeCallback(&Sim::flow_fill, this));
  f->tx->Connect(ns3::InetSocketAddress(Ipv4Address(hosts_[dst].ip), kFlowPort));
  flows_.push_back(std::move(f));
}

void Sim::flow_connected(Ptr<ns3::Socket> s) {
  flow_fill(s, 0);
}

// The connection could not be set up (SYN retries exhausted): the flow is
// over, unfinished, and counted.
void Sim::flow_failed(Ptr<ns3::Socket> s) {
  BgFlow& f = *flows_[flow_by_socket_.at(ns3::PeekPointer(s))];
  ++flow_connect_failures_;
  if (f.rec.measured && f.rec.fct_us < 0) {
    --pending_measured_;
    check_done();
  }
}

void Sim::flow_fill(Ptr<ns3::Socket> s, uint32_t) {
  BgFlow& f = *flows_[flow_by_socket_.at(ns3::PeekPointer(s))];
  while (f.sent < f.rec.bytes) {
    const uint32_t room = s->GetTxAvailable();
    if (room == 0) break;
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({room, f.rec.bytes - f.sent, 65536}));
    if (s->Send(ns3::Create<ns3::Packet>(n)) < 0) break;
    f.sent += n;
  }
  if (f.sent == f.rec.bytes) {
    s->SetSendCallback(ns3::MakeNullCallback<void, Ptr<ns3::Socket>, uint32_t>());
    s->Close();  // FIN after the data
  }
}

void Sim::flow_accept(Ptr<ns3::Socket> s, const ns3::Address& from) {
  const ns3::InetSocketAddress a = ns3::InetSocketAddress::ConvertFrom(from);
  auto it = flow_by_src_.find((uint64_t{a.GetIpv4().Get()} << 16) | a.GetPort());
  if (it == flow_by_src_.end()) return;
  flows_[it->second]->rx = s;
  flow_by_socket_[ns3::PeekPointer(s)] = it->second;
  s->SetRecvCallback(ns3::MakeCallback(&Sim::flow_recv, this));
}

void Sim::flow_recv(Ptr<ns3::Socket> s) {
  BgFlow& f = *flows_[flow_by_socket_.at(ns3::PeekPointer(s))];
  while (Ptr<ns3::Packet> p = s->Recv()) {
    if (p->GetSize() == 0) break;
    f.received += p->GetSize();
  }
  if (f.received >= f.rec.bytes && f.rec.fct_us < 0) flow_done(f);
}

void Sim::flow_done(BgFlow& f) {
  f.rec.fct_us = ns3::Simulator::Now().GetSeconds() * 1e6 - f.rec.start_us;
  ++flows_finished_;
  f.rx->Close();
  if (f.rec.measured) {
    --pending_measured_;
    check_done();
  }
}

}  // namespace detail

using detail::kTcpDataOverhead;
using detail::kTcpSynBytes;

double ideal_fct_us(const Options& o, uint64_t bytes, bool same_rack) {
  return ideal_fct_path_us(o, bytes, same_rack ? 0 : 2);
}

double ideal_fct_path_us(const Options& o, uint64_t bytes, uint32_t fabric_links) {
  std::vector<double> rates = {o.host_gbps};
  for (uint32_t i = 0; i < fabric_links; ++i) rates.push_back(o.fabric_gbps);
  rates.push_back(o.host_gbps);
  const double delay_ns = o.link_delay_us * 1e3;
  const uint64_t mss = o.background_mss();
  const uint64_t first = std::min<uint64_t>(bytes, mss);
  const uint64_t packets = (bytes + mss - 1) / mss;
  double handshake = 0, one_way = 0, slowest = rates[0];
  for (double g : rates) {
    handshake += 2 * (delay_ns + kTcpSynBytes * 8 / g);
    one_way += delay_ns + (first + kTcpDataOverhead) * 8 / g;
    slowest = std::min(slowest, g);
  }
  const double rest = static_cast<double>(bytes - first + (packets - 1) * kTcpDataOverhead) * 8 / slowest;
  return (handshake + one_way + rest) / 1e3;
}

}  // namespace panama::netsim
