// The fabric: switches, hosts and links as the controller's built-in
// descriptions have them, shortest-path routes, and the routing protocol of
// every node (flow-level ECMP at switches; PANAMA frames go to the PSwitch
// or the worker).
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "ns3/channel.h"
#include "ns3/data-rate.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-route.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include "panama/cluster/test_data.hpp"
#include "sim.hpp"

namespace panama::netsim::detail {

namespace {

uint64_t mix(uint64_t z) {
  return cluster::mix64(z);
}

}  // namespace

// ------------------------------------------------------------------ routing

bool EcmpRouting::RouteInput(Ptr<const ns3::Packet> p, const Ipv4Header& h, Ptr<const ns3::NetDevice> idev,
                             UnicastForwardCallback ucb, MulticastForwardCallback, LocalDeliverCallback lcb,
                             ErrorCallback ecb) {
  const uint32_t iif = static_cast<uint32_t>(ipv4_->GetInterfaceForDevice(idev));
  uint8_t l4[4] = {0, 0, 0, 0};
  const bool has_ports = (h.GetProtocol() == 6 || h.GetProtocol() == 17) && p->GetSize() >= 4;
  if (has_ports) p->CopyData(l4, 4);
  const uint32_t dst = h.GetDestination().Get();
  // A switch routes on a chain tree's frames for another switch (a spine
  // passes them from leaf to leaf); the rest go to its PSwitch (or worker).
  int transit = -1;
  if (h.GetProtocol() == 17 && has_ports && ((l4[2] << 8) | l4[3]) == kPanamaPort) {
    if (!info_->is_host) transit = sim_->panama_transit(info_->index, dst);
    if (transit < 0) {
      sim_->on_panama(*info_, p, h, iif);
      return true;
    }
  }
  if (info_->is_host) {
    // Pooled mode's ring frames (UDP to the ring port, routed between hosts
    // as ordinary traffic) go to the worker's AllreduceCore too.
    if (h.GetProtocol() == 17 && has_ports && ((l4[2] << 8) | l4[3]) == kPoolRingPort &&
        dst == info_->host_ip) {
      sim_->on_panama(*info_, p, h, iif);
      return true;
    }
    if (dst == info_->host_ip && !lcb.IsNull()) {
      lcb(p, h, iif);
      return true;
    }
    return false;
  }
  const int host = transit >= 0 ? transit : sim_->host_of_ip(dst);
  if (host < 0) {
    ecb(p, h, ns3::Socket::ERROR_NOROUTETOHOST);
    return true;
  }
  if (!sim_->pfc_admit(info_->index, iif, p, h)) return true;
  const std::vector<uint32_t>& nh = info_->next_if[host];
  uint32_t out = nh[0];
  if (nh.size() > 1) {
    // Flow-level ECMP: every packet of a 5-tuple takes the same next hop.
    uint64_t k = info_->hash_salt;
    k = mix(k ^ h.GetSource().Get());
    k = mix(k ^ (uint64_t{dst} << 8) ^ h.GetProtocol());
    k = mix(k ^ ((uint64_t{l4[0]} << 24) | (uint64_t{l4[1]} << 16) | (uint64_t{l4[2]} << 8) | l4[3]));
    out = nh[k % nh.size()];
  }
  Ptr<ns3::Ipv4Route> r = ns3::Create<ns3::Ipv4Route>();
  r->SetDestination(h.GetDestination());
  r->SetSource(h.GetSource());
  r->SetGateway(Ipv4Address::GetZero());
  r->SetOutputDevice(ipv4_->GetNetDevice(out));
  ucb(r, p, h);
  return true;
}
NS_OBJECT_ENSURE_REGISTERED(EcmpRouting);

// ------------------------------------------------------------------ topology

void Sim::add_link(Ptr<ns3::Node> a, Ptr<ns3::Node> b, double gbps, Port& pa, Port& pb) {
  ns3::PointToPointHelper p2p;
  p2p.SetDeviceAttribute("Mtu", ns3::UintegerValue(o_.mtu));
  p2p.SetDeviceAttribute("DataRate", ns3::DataRateValue(ns3::DataRate(static_cast<uint64_t>(gbps * 1e9))));
  p2p.SetChannelAttribute("Delay",
                          ns3::TimeValue(ns3::NanoSeconds(static_cast<int64_t>(o_.link_delay_us * 1e3))));
  p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("1p")));
  ns3::NetDeviceContainer devs = p2p.Install(a, b);
  ns3::TrafficControlHelper tch;
  // Lossless: output queues do not drop; PFC bounds what each ingress port holds.
  const uint64_t buffer = o_.lossless ? (uint64_t{1} << 40) : uint64_t{o_.buffer_kb} * 1000;
  tch.SetRootQueueDisc("panama::netsim::EcnQueueDisc", "MaxBytes", ns3::UintegerValue(buffer), "KBytes",
                       ns3::UintegerValue(uint64_t{o_.ecn_k_kb} * 1000), "Levels",
                       ns3::UintegerValue(std::max<uint32_t>(1, o_.priorities)));
  ns3::QueueDiscContainer qds = tch.Install(devs);
  pa.dev = devs.Get(0);
  pb.dev = devs.Get(1);
  pa.queue = ns3::DynamicCast<EcnQueueDisc>(qds.Get(0));
  pb.queue = ns3::DynamicCast<EcnQueueDisc>(qds.Get(1));
  pa.gbps = pb.gbps = gbps;
  pa.peer_queue = pb.queue;
  pb.peer_queue = pa.queue;
  // PFC headroom: what arrives after XOFF is decided: the data on the wire
  // (one delay), the data sent while the pause travels (another), and up to
  // four full-size frames (one in transmission at each end, the device's
  // one-frame queue, one requeued by the queue disc).
  const uint64_t headroom =
      o_.pfc_headroom_kb > 0
          ? uint64_t{o_.pfc_headroom_kb} * 1000
          : static_cast<uint64_t>(std::ceil(2 * o_.link_delay_us * 1e-6 * gbps * 1e9 / 8)) +
                4 * (o_.mtu + 100);
  pa.headroom = pb.headroom = headroom;
  for (auto [node, dev] : {std::pair{a, pa.dev}, std::pair{b, pb.dev}}) {
    Ptr<ns3::Ipv4> ipv4 = node->GetObject<ns3::Ipv4>();
    const uint32_t ifi = ipv4->AddInterface(dev);
    uint32_t addr = 0;
    for (const HostNode& h : hosts_) {
      if (h.node == node) addr = h.ip;
    }
    if (addr == 0) addr = static_cast<uint32_t>(next_ip_++);
    ipv4->AddAddress(ifi, ns3::Ipv4InterfaceAddress(Ipv4Address(addr), ns3::Ipv4Mask("255.255.255.255")));
    ipv4->SetUp(ifi);
  }
}

void Sim::build_topology() {
  const uint32_t nh = o_.hosts();
  const uint32_t rs = o_.rack_size();
  ns3::InternetStackHelper stack;
  EcmpRoutingHelper routing;
  stack.SetRoutingHelper(routing);
  hosts_.resize(nh);
  // Switches and links: names and wiring as the controller's built-in
  // descriptions (two_tier_cluster, fat_tree_cluster) have them.
  std::vector<std::pair<std::string, int>> sw;  // name, tier
  if (o_.topology == Topology::kFatTree) {
    const uint32_t half = o_.k / 2, edges = o_.k * half, cores = half * half;
    for (uint32_t e = 0; e < edges; ++e) sw.emplace_back("edge" + std::to_string(e), 0);
    for (uint32_t a = 0; a < edges; ++a) sw.emplace_back("agg" + std::to_string(a), 1);
    for (uint32_t c = 0; c < cores; ++c) sw.emplace_back("core" + std::to_string(c), 2);
    for (uint32_t i = 0; i < nh; ++i) links_.push_back({i, nh + i / half, o_.host_gbps});
    for (uint32_t e = 0; e < edges; ++e) {
      for (uint32_t i = 0; i < half; ++i)
        links_.push_back({nh + e, nh + edges + (e / half) * half + i, o_.fabric_gbps});
    }
    for (uint32_t a = 0; a < edges; ++a) {
      for (uint32_t c = 0; c < half; ++c)
        links_.push_back({nh + edges + a, nh + 2 * edges + (a % half) * half + c, o_.fabric_gbps});
    }
  } else {
    const uint32_t nleaf = o_.racks;
    const uint32_t nspine = o_.racks > 1 ? o_.spines : 0;
    for (uint32_t l = 0; l < nleaf; ++l) sw.emplace_back("leaf" + std::to_string(l), 0);
    for (uint32_t p = 0; p < nspine; ++p) sw.emplace_back("spine" + std::to_string(p), 1);
    for (uint32_t i = 0; i < nh; ++i) links_.push_back({i, nh + i / rs, o_.host_gbps});
    for (uint32_t l = 0; l < nleaf; ++l) {
      for (uint32_t p = 0; p < nspine; ++p) links_.push_back({nh + l, nh + nleaf + p, o_.fabric_gbps});
    }
  }
  switches_.resize(sw.size());
  for (uint32_t i = 0; i < nh; ++i) {
    HostNode& h = hosts_[i];
    h.name = "h" + std::to_string(i);
    h.rack = i / rs;
    h.ip = (10u << 24) | (1u << 16) | (i + 1);  // the controller's host addresses
    h.node = ns3::CreateObject<ns3::Node>();
    stack.Install(h.node);
    host_by_ip_[h.ip] = i;
  }
  for (uint32_t s = 0; s < switches_.size(); ++s) {
    SwitchNode& n = switches_[s];
    n.name = sw[s].first;
    n.tier = sw[s].second;
    n.node = ns3::CreateObject<ns3::Node>();
    stack.Install(n.node);
  }
  // Ports in link order: the controller's port order.
  for (const LinkSpec& l : links_) {
    SwitchNode& b = switches_[l.b - nh];
    b.ports.emplace_back();
    if (l.a < nh) {
      HostNode& h = hosts_[l.a];
      add_link(h.node, b.node, l.gbps, h.nic, b.ports.back());
      h.nic.peer = b.name;
      b.ports.back().peer = h.name;
    } else {
      SwitchNode& a = switches_[l.a - nh];
      a.ports.emplace_back();
      add_link(a.node, b.node, l.gbps, a.ports.back(), b.ports.back());
      a.ports.back().peer = b.name;
      a.ports.back().fabric = true;
      b.ports.back().peer = a.name;
      b.ports.back().fabric = true;
    }
  }
  for (uint32_t i = 0; i < nh; ++i) {
    hosts_[i].ipv4 = hosts_[i].node->GetObject<ns3::Ipv4L3Protocol>();
    auto info = std::make_unique<NodeInfo>();
    info->is_host = true;
    info->index = i;
    info->host_ip = hosts_[i].ip;
    ns3::DynamicCast<EcmpRouting>(hosts_[i].ipv4->GetRoutingProtocol())->bind(this, info.get());
    infos_.push_back(std::move(info));
  }
  for (uint32_t s = 0; s < switches_.size(); ++s) {
    SwitchNode& n = switches_[s];
    n.ipv4 = n.node->GetObject<ns3::Ipv4L3Protocol>();
    n.port_of_if.assign(n.ipv4->GetNInterfaces(), -1);
    for (uint32_t p = 0; p < n.ports.size(); ++p) {
      n.port_of_if[static_cast<uint32_t>(n.ipv4->GetInterfaceForDevice(n.ports[p].dev))] =
          static_cast<int>(p);
      if (o_.lossless) {
        // PFC: a forwarded packet leaving an output queue frees its ingress port's bytes.
        n.ports[p].queue->on_dequeue = [this, s](Ptr<ns3::QueueDiscItem> item) {
          SwitchNode& me = switches_[s];
          auto it = me.held.find(item->GetPacket()->GetUid());
          if (it == me.held.end()) return;  // generated by the PSwitch itself
          const SwitchNode::Held held = it->second;
          me.held.erase(it);
          pfc_release(s, held.port, held.cls, held.bytes);
        };
      }
    }
    auto info = std::make_unique<NodeInfo>();
    info->index = s;
    info->hash_salt = mix(o_.seed * 0x100000001B3ull + s + 1);
    ns3::DynamicCast<EcmpRouting>(n.ipv4->GetRoutingProtocol())->bind(this, info.get());
    infos_.push_back(std::move(info));
  }
  compute_routes();
}

uint32_t Sim::fabric_links(uint32_t a, uint32_t b) const {
  const uint32_t ra = hosts_[a].rack, rb = hosts_[b].rack;
  if (ra == rb) return 0;
  if (o_.topology != Topology::kFatTree) return 2;
  return ra / (o_.k / 2) == rb / (o_.k / 2) ? 2 : 4;  // same pod: up to an aggregation switch and down
}

// Shortest paths by breadth-first search from every host; a switch's next
// hops towards a host are its neighbours one step closer.
void Sim::compute_routes() {
  const uint32_t nh = static_cast<uint32_t>(hosts_.size());
  const uint32_t nn = nh + static_cast<uint32_t>(switches_.size());
  // adjacency: node -> (neighbour node, local interface)
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> adj(nn);
  std::map<ns3::Node*, uint32_t> id;
  for (uint32_t i = 0; i < nh; ++i) id[ns3::PeekPointer(hosts_[i].node)] = i;
  for (uint32_t s = 0; s < switches_.size(); ++s) id[ns3::PeekPointer(switches_[s].node)] = nh + s;
  auto link_of = [&](uint32_t self, const Port& port, Ptr<ns3::Ipv4> ipv4) {
    Ptr<ns3::Channel> ch = port.dev->GetChannel();
    for (size_t k = 0; k < ch->GetNDevices(); ++k) {
      Ptr<ns3::NetDevice> d = ch->GetDevice(k);
      if (d != port.dev) {
        adj[self].emplace_back(id.at(ns3::PeekPointer(d->GetNode())),
                               static_cast<uint32_t>(ipv4->GetInterfaceForDevice(port.dev)));
      }
    }
  };
  for (uint32_t i = 0; i < nh; ++i) link_of(i, hosts_[i].nic, hosts_[i].ipv4);
  for (uint32_t s = 0; s < switches_.size(); ++s) {
    for (const Port& p : switches_[s].ports) link_of(nh + s, p, switches_[s].ipv4);
  }
  for (uint32_t s = 0; s < switches_.size(); ++s) infos_[nh + s]->next_if.assign(nh, {});
  std::vector<int> dist(nn);
  for (uint32_t h = 0; h < nh; ++h) {
    std::fill(dist.begin(), dist.end(), -1);
    std::vector<uint32_t> frontier = {h};
    dist[h] = 0;
    while (!frontier.empty()) {
      std::vector<uint32_t> next;
      for (uint32_t u : frontier) {
        for (auto [v, ifi] : adj[u]) {
          (void)ifi;
          // Hosts do not forward: paths never pass through another host.
          if (dist[v] < 0 && (v >= nh || v == h)) {
            dist[v] = dist[u] + 1;
            if (v >= nh) next.push_back(v);
          }
        }
      }
      frontier.swap(next);
    }
    for (uint32_t s = 0; s < switches_.size(); ++s) {
      const uint32_t u = nh + s;
      for (auto [v, ifi] : adj[u]) {
        if (dist[v] >= 0 && dist[v] == dist[u] - 1 && (v >= nh || v == h))
          infos_[u]->next_if[h].push_back(ifi);
      }
      if (infos_[u]->next_if[h].empty())
        throw std::runtime_error("internal: no route from " + switches_[s].name);
    }
  }
}

}  // namespace panama::netsim::detail
