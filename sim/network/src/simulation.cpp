// The ns-3 model of a shared leaf-spine or fat-tree cluster (see simulation.hpp).
//
// Pieces, all in this file to keep the number of ns-3 translation units low:
//  - EcnQueueDisc: the output queue of every port (switches and host NICs):
//    FIFO, finite buffer with tail drop, CE marking of ECN-capable packets
//    that arrive to K or more queued bytes (DCTCP-style instantaneous marking);
//    two classes (TCP, PANAMA) that a PFC pause stops separately;
//  - PFC (--lossless): per ingress port and class byte accounting at every
//    switch, XOFF / XON to the upstream transmitter's output queue after the
//    link's propagation delay;
//  - EcmpRouting: the IPv4 routing of hosts and switches. Switches spread
//    ordinary traffic over equal-cost next hops by a hash of the 5-tuple
//    (flow-level ECMP); PANAMA frames are taken off the IP path and handed to
//    the PSwitch (at a switch) or to the worker (at a host);
//  - PSwitch: SwitchCore + engine model on the real frame bytes, behind an
//    accelerator with its own line rate and latency;
//  - Worker: one AllreduceCore per worker, or the ring allreduce over TCP;
//  - background flows: DCTCP over ns-3's TCP, Poisson arrivals, sizes from a CDF.
#include "panama/netsim/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>

#include "ns3/boolean.h"
#include "ns3/channel.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/global-value.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/node.h"
#include "ns3/point-to-point-helper.h"
#include "ns3/queue-disc.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include "panama/engine/apply_config.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/controller/controller.hpp"
#include "panama/engine.hpp"
#include "panama/engine/counters.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/wire.hpp"

namespace panama::netsim {

using ns3::Ipv4Address;
using ns3::Ipv4Header;
using ns3::Ptr;

namespace {

// The engine model as the PSwitches run it: the HLS engine with slots sized
// for packets that fit a 1500-byte MTU (362 elements), so 16 engines of a
// 64-host fabric take 24 MB instead of 150 MB.
using SimEngine = Engine<64, 512, 23>;
static_assert(SimEngine::kSlotCapacity >= 362, "a slot holds the largest packet of the simulation");

constexpr uint16_t kPanamaPort = wire::kDefaultUdpPort;
constexpr uint16_t kFlowPort = 5000;                // background flows
constexpr uint16_t kRingPort = 6000;                // ring allreduce
constexpr uint32_t kMss = 1448;                     // TCP payload per segment (1500-byte MTU with timestamps)
constexpr uint32_t kTcpDataOverhead = 20 + 32 + 2;  // IPv4 + TCP with timestamps + PPP
constexpr uint32_t kTcpSynBytes = 20 + 40 + 2;      // SYN / SYN-ACK with options + PPP

// ------------------------------------------------------------------ queue

// Traffic classes: a PFC pause stops one of them.
constexpr int kClassTcp = 0;     // background flows, ring allreduce: everything but PANAMA
constexpr int kClassPanama = 1;  // PANAMA aggregation frames
constexpr int kClasses = 2;

int class_of(Ptr<const ns3::Packet> p, const Ipv4Header& h) {
  uint8_t l4[4] = {0, 0, 0, 0};
  if (h.GetProtocol() != 17 || p->GetSize() < 4) return kClassTcp;
  p->CopyData(l4, 4);
  return ((l4[2] << 8) | l4[3]) == kPanamaPort ? kClassPanama : kClassTcp;
}

class EcnQueueDisc : public ns3::QueueDisc {
 public:
  static ns3::TypeId GetTypeId() {
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
                          ns3::MakeUintegerChecker<uint64_t>());
    return tid;
  }
  EcnQueueDisc() : QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {}
  uint64_t max_seen() const { return max_seen_; }

  // PFC: a pause (on) or resume (off) of one class has arrived from the
  // downstream switch. A paused class sends nothing; the other goes on.
  void pause(int cls, bool on) {
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
  uint64_t pauses(int cls) const { return pauses_[cls]; }
  uint64_t paused_ns(int cls) const {
    const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
    return paused_ns_[cls] + (paused_[cls] ? now - paused_since_[cls] : 0);
  }
  // Called with every packet leaving the queue (the switch's PFC accounting).
  std::function<void(Ptr<ns3::QueueDiscItem>)> on_dequeue;

 private:
  bool DoEnqueue(Ptr<ns3::QueueDiscItem> item) override {
    const uint64_t q = GetNBytes();
    if (q + item->GetSize() > max_bytes_) {
      DropBeforeEnqueue(item, "buffer full");
      return false;
    }
    if (q >= k_bytes_) Mark(item, "queue above K");  // no effect on packets that are not ECN-capable
    Ptr<ns3::Ipv4QueueDiscItem> ip = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
    const int cls = ip ? class_of(ip->GetPacket(), ip->GetHeader()) : kClassTcp;
    const bool ok = GetInternalQueue(cls)->Enqueue(item);
    if (ok) order_[cls].push_back(next_seq_++);
    max_seen_ = std::max<uint64_t>(max_seen_, GetNBytes());
    return ok;
  }
  // Arrival order across the classes, skipping a paused class: without
  // pauses this is one FIFO.
  Ptr<ns3::QueueDiscItem> DoDequeue() override {
    int best = -1;
    for (int c = 0; c < kClasses; ++c) {
      if (paused_[c] || order_[c].empty()) continue;
      if (best < 0 || order_[c].front() < order_[best].front()) best = c;
    }
    if (best < 0) return nullptr;
    order_[best].pop_front();
    Ptr<ns3::QueueDiscItem> item = GetInternalQueue(best)->Dequeue();
    if (item && on_dequeue) on_dequeue(item);
    return item;
  }
  bool CheckConfig() override {
    if (GetNQueueDiscClasses() > 0 || GetNPacketFilters() > 0) return false;
    while (GetNInternalQueues() < kClasses) {
      AddInternalQueue(ns3::CreateObjectWithAttributes<ns3::DropTailQueue<ns3::QueueDiscItem>>(
          "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("4000000000p"))));
    }
    return true;
  }
  void InitializeParams() override {}

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
NS_OBJECT_ENSURE_REGISTERED(EcnQueueDisc);

// ------------------------------------------------------------------ model state

class Sim;

// What the routing of one node needs to know.
struct NodeInfo {
  bool is_host = false;
  uint32_t index = 0;      // host index or switch index
  uint32_t host_ip = 0;    // hosts: their address
  uint64_t hash_salt = 0;  // switches: per-switch ECMP salt
  // switches: per destination host, the interfaces of its equal-cost next hops
  std::vector<std::vector<uint32_t>> next_if;
};

class EcmpRouting : public ns3::Ipv4RoutingProtocol {
 public:
  static ns3::TypeId GetTypeId() {
    static ns3::TypeId tid = ns3::TypeId("panama::netsim::EcmpRouting")
                                 .SetParent<ns3::Ipv4RoutingProtocol>()
                                 .SetGroupName("Panama")
                                 .AddConstructor<EcmpRouting>();
    return tid;
  }
  void bind(Sim* sim, NodeInfo* info) {
    sim_ = sim;
    info_ = info;
  }

  Ptr<ns3::Ipv4Route> RouteOutput(Ptr<ns3::Packet>, const Ipv4Header& h, Ptr<ns3::NetDevice>,
                                  ns3::Socket::SocketErrno& err) override {
    if (!info_ || !info_->is_host) {
      err = ns3::Socket::ERROR_NOROUTETOHOST;
      return nullptr;
    }
    Ptr<ns3::Ipv4Route> r = ns3::Create<ns3::Ipv4Route>();
    r->SetDestination(h.GetDestination());
    r->SetSource(Ipv4Address(info_->host_ip));
    r->SetGateway(Ipv4Address::GetZero());
    r->SetOutputDevice(ipv4_->GetNetDevice(1));
    err = ns3::Socket::ERROR_NOTERROR;
    return r;
  }

  bool RouteInput(Ptr<const ns3::Packet> p, const Ipv4Header& h, Ptr<const ns3::NetDevice> idev,
                  UnicastForwardCallback ucb, MulticastForwardCallback, LocalDeliverCallback lcb,
                  ErrorCallback ecb) override;

  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(Ptr<ns3::OutputStreamWrapper>, ns3::Time::Unit) const override {}

  Ptr<ns3::Ipv4> ipv4_;

 private:
  Sim* sim_ = nullptr;
  NodeInfo* info_ = nullptr;
};
NS_OBJECT_ENSURE_REGISTERED(EcmpRouting);

class EcmpRoutingHelper : public ns3::Ipv4RoutingHelper {
 public:
  ns3::Ipv4RoutingHelper* Copy() const override { return new EcmpRoutingHelper(*this); }
  Ptr<ns3::Ipv4RoutingProtocol> Create(Ptr<ns3::Node>) const override {
    return ns3::CreateObject<EcmpRouting>();
  }
};

struct Port {
  Ptr<ns3::NetDevice> dev;
  Ptr<EcnQueueDisc> queue;
  Ptr<EcnQueueDisc> peer_queue;  // the transmitter at the other end of the link (a PFC pause stops it)
  double gbps = 0;
  std::string peer;
  bool fabric = false;  // switch <-> switch
  std::vector<uint32_t> samples;
  // PFC ingress accounting (switch ports, --lossless): bytes held that came in here, per class.
  uint64_t in_bytes[kClasses] = {0, 0};
  uint64_t in_max[kClasses] = {0, 0};
  bool xoff[kClasses] = {false, false};  // a pause is in force upstream (sent, no resume since)
  uint64_t xoff_sent[kClasses] = {0, 0};
  uint64_t xon_sent[kClasses] = {0, 0};
  uint64_t headroom = 0;  // bytes accepted beyond XOFF
};

struct PSwitch {
  std::string name;
  std::unique_ptr<SimEngine> engine;
  pswitch::PswitchSettings settings;
  config::NodeConfig node_cfg;
  std::unique_ptr<pswitch::SwitchCore<SimEngine>> core;
  uint64_t busy_until_ns = 0;
  uint64_t max_backlog_bytes = 0;
  uint64_t frames_in = 0;
};

struct SwitchNode {
  std::string name;
  Ptr<ns3::Node> node;
  Ptr<ns3::Ipv4L3Protocol> ipv4;
  std::vector<Port> ports;       // controller port order
  std::vector<int> port_of_if;   // ipv4 interface -> port
  std::unique_ptr<PSwitch> psw;  // null when no job aggregates here
  int tier = 0;                  // 0 leaf / edge, 1 spine / aggregation, 2 core
  // PFC: forwarded packets held in the output queues, by packet uid: ingress
  // port, class, bytes. A TCP retransmission has the uid of its original, so
  // one uid can be held more than once (they leave in arrival order).
  struct Held {
    uint32_t port;
    int cls;
    uint32_t bytes;
  };
  std::unordered_multimap<uint64_t, Held> held;
};

struct Worker;

struct HostNode {
  std::string name;
  uint32_t rack = 0;
  uint32_t ip = 0;
  Ptr<ns3::Node> node;
  Ptr<ns3::Ipv4L3Protocol> ipv4;
  Port nic;
  Worker* worker = nullptr;
  Ptr<ns3::Socket> flow_listener, ring_listener;
};

class HostFrameOut;

struct Worker {
  uint32_t job = 0, rank = 0, host = 0;
  std::unique_ptr<runtime::AllreduceCore> core;
  std::unique_ptr<HostFrameOut> out;
  std::vector<float> data;
  uint32_t iteration = 0;
  runtime::OpId op = 0;
  ns3::EventId timer;
  uint64_t timer_at = UINT64_MAX;
  bool done = false;
  std::vector<double> finish_ns;  // per iteration
  // ring
  Ptr<ns3::Socket> ring_tx;
  bool ring_active = false;
  uint64_t ring_sent = 0, ring_recv = 0;
  // observations
  std::vector<uint32_t> max_in_flight;  // per tree
  std::vector<uint32_t> max_window;
  std::vector<uint16_t> min_cap;
  uint64_t mismatches = 0;
};

struct Job {
  uint16_t id = 0;
  std::string model;
  uint64_t elems = 0;  // fp32 elements of the gradient
  uint64_t compute_ns = 0;
  double start_ns = 0;
  std::vector<uint32_t> workers;  // indices into Sim::workers_, rank order
  uint32_t workers_done = 0;
  double end_ns = -1;
  // Iterations the job runs: decided by the first worker to finish each
  // iteration, so that all workers stop after the same one.
  uint32_t planned = 0;
  uint32_t decided_through = 0;  // iterations whose successor has been decided
  // ring geometry (bytes)
  uint64_t ring_chunk = 0, ring_total = 0, ring_seg = 0;
  std::map<uint32_t, std::pair<std::vector<float>, uint32_t>> reference;  // iteration -> (sum, checks left)
  std::vector<controller::TreeInfo> trees;
};

struct BgFlow {
  FlowRecord rec;
  Ptr<ns3::Socket> tx, rx;
  uint64_t sent = 0, received = 0;
};

class HostFrameOut : public runtime::FrameOut {
 public:
  HostFrameOut(Sim* sim, uint32_t host) : sim_(sim), host_(host) {}
  uint8_t* begin_frame(uint32_t len) override {
    buf_.resize(len);
    return buf_.data();
  }
  void end_frame(uint32_t len) override;

 private:
  Sim* sim_;
  uint32_t host_;
  std::vector<uint8_t> buf_;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

nlohmann::json stats_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return {{"count", v.size()},
          {"mean", v.empty() ? 0.0 : sum / static_cast<double>(v.size())},
          {"p50", percentile(v, 50)},
          {"p99", percentile(v, 99)},
          {"max", v.empty() ? 0.0 : *std::max_element(v.begin(), v.end())}};
}

uint64_t mix(uint64_t z) {
  return cluster::mix64(z);
}

// ------------------------------------------------------------------ the simulation

class Sim {
 public:
  explicit Sim(const Options& o) : o_(o), rng_(o.seed) {}

  RunResult run();

  // Called by the routing of a node for a PANAMA frame (UDP to the PANAMA port).
  void on_panama(const NodeInfo& info, Ptr<const ns3::Packet> p, const Ipv4Header& h, uint32_t iface);
  int host_of_ip(uint32_t ip) const {
    auto it = host_by_ip_.find(ip);
    return it == host_by_ip_.end() ? -1 : static_cast<int>(it->second);
  }
  void host_send(uint32_t host, const uint8_t* frame, uint32_t len) {
    send_frame(hosts_[host].ipv4, hosts_[host].nic.dev, frame, len);
  }
  // PFC (--lossless): a packet to forward arrived at switch s on interface
  // iif. Charges it to that ingress port; false when it is beyond XOFF +
  // headroom (dropped, counted).
  bool pfc_admit(uint32_t s, uint32_t iif, Ptr<const ns3::Packet> p, const Ipv4Header& h);

  // socket callbacks
  void flow_connected(Ptr<ns3::Socket> s);
  void flow_failed(Ptr<ns3::Socket> s);
  void flow_fill(Ptr<ns3::Socket> s, uint32_t);
  void flow_accept(Ptr<ns3::Socket> s, const ns3::Address& from);
  void flow_recv(Ptr<ns3::Socket> s);
  void ring_accept(Ptr<ns3::Socket> s, const ns3::Address& from);
  void ring_recv(Ptr<ns3::Socket> s);
  void ring_fill_cb(Ptr<ns3::Socket> s, uint32_t);
  void ring_connected(Ptr<ns3::Socket>) {}
  void ring_failed(Ptr<ns3::Socket>) { ring_connect_failures_++; }
  bool accept_any(Ptr<ns3::Socket>, const ns3::Address&) { return true; }

 private:
  void build_topology();
  void plan_jobs();
  void compute_routes();
  void add_link(Ptr<ns3::Node> a, Ptr<ns3::Node> b, double gbps, Port& pa, Port& pb);
  uint32_t fabric_links(uint32_t a,
                        uint32_t b) const;  // switch-switch links on a shortest path between hosts
  bool pfc_charge(uint32_t s, uint32_t port, int cls, uint64_t bytes);
  void pfc_release(uint32_t s, uint32_t port, int cls, uint64_t bytes);
  void send_frame(Ptr<ns3::Ipv4L3Protocol> ipv4, Ptr<ns3::NetDevice> dev, const uint8_t* d, uint32_t n);
  void accelerator_done(uint32_t sw, uint32_t in_port, const std::vector<uint8_t>& frame);

  void start_jobs();
  void compute_done(uint32_t w);
  void pump(Worker& w);
  void finish_iteration(Worker& w);
  void ring_fill(Worker& w);
  void ring_check(Worker& w);

  void next_arrival();
  void start_flow(uint32_t src, uint32_t dst, uint64_t bytes, bool manual);
  void flow_done(BgFlow& f);

  // Inside the measurement window (--duration-ms, or until the first job ends).
  bool in_window() const {
    if (o_.duration_ms > 0) return ns3::Simulator::Now().GetNanoSeconds() < o_.duration_ms * 1e6;
    return o_.jobs > 0 && first_job_end_ns_ < 0;
  }
  void tick();
  void sample_queues();
  void check_done();
  RunResult report(double wall_s);

  const Options& o_;
  std::mt19937_64 rng_;
  SizeCdf cdf_;
  std::vector<HostNode> hosts_;
  std::vector<SwitchNode> switches_;
  // Every link in order (hosts first, then by tier): node ids are host
  // indices, then hosts + switch index. The controller sees the same list,
  // so its port order is the simulator's.
  struct LinkSpec {
    uint32_t a, b;
    double gbps;
  };
  std::vector<LinkSpec> links_;
  uint64_t pfc_drops_ = 0;
  std::vector<std::unique_ptr<NodeInfo>> infos_;  // hosts first, then switches
  std::unordered_map<uint32_t, uint32_t> host_by_ip_;
  std::vector<Job> jobs_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<BgFlow>> flows_;
  std::unordered_map<uint64_t, uint32_t> flow_by_src_;  // (ip << 16 | port) -> flow
  std::unordered_map<ns3::Socket*, uint32_t> flow_by_socket_;
  std::unordered_map<ns3::Socket*, uint32_t> worker_by_rx_socket_;
  std::unordered_map<ns3::Socket*, uint32_t> worker_by_tx_socket_;
  uint32_t jobs_done_ = 0;
  double first_job_end_ns_ = -1;
  uint64_t pending_measured_ = 0;
  uint64_t flows_started_ = 0, flows_finished_ = 0;
  uint64_t ring_connect_failures_ = 0;
  uint64_t flow_connect_failures_ = 0;
  uint64_t unknown_panama_frames_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point wall0_, last_progress_;
  uint64_t next_ip_ = (172u << 24) | (16u << 16);
};

void HostFrameOut::end_frame(uint32_t len) {
  sim_->host_send(host_, buf_.data(), len);
}

// ------------------------------------------------------------------ routing

bool EcmpRouting::RouteInput(Ptr<const ns3::Packet> p, const Ipv4Header& h, Ptr<const ns3::NetDevice> idev,
                             UnicastForwardCallback ucb, MulticastForwardCallback, LocalDeliverCallback lcb,
                             ErrorCallback ecb) {
  const uint32_t iif = static_cast<uint32_t>(ipv4_->GetInterfaceForDevice(idev));
  uint8_t l4[4] = {0, 0, 0, 0};
  const bool has_ports = (h.GetProtocol() == 6 || h.GetProtocol() == 17) && p->GetSize() >= 4;
  if (has_ports) p->CopyData(l4, 4);
  if (h.GetProtocol() == 17 && has_ports && ((l4[2] << 8) | l4[3]) == kPanamaPort) {
    sim_->on_panama(*info_, p, h, iif);
    return true;
  }
  const uint32_t dst = h.GetDestination().Get();
  if (info_->is_host) {
    if (dst == info_->host_ip && !lcb.IsNull()) {
      lcb(p, h, iif);
      return true;
    }
    return false;
  }
  const int host = sim_->host_of_ip(dst);
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

// ------------------------------------------------------------------ topology

void Sim::add_link(Ptr<ns3::Node> a, Ptr<ns3::Node> b, double gbps, Port& pa, Port& pb) {
  ns3::PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", ns3::DataRateValue(ns3::DataRate(static_cast<uint64_t>(gbps * 1e9))));
  p2p.SetChannelAttribute("Delay",
                          ns3::TimeValue(ns3::NanoSeconds(static_cast<int64_t>(o_.link_delay_us * 1e3))));
  p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns3::QueueSizeValue(ns3::QueueSize("1p")));
  ns3::NetDeviceContainer devs = p2p.Install(a, b);
  ns3::TrafficControlHelper tch;
  // Lossless: output queues do not drop; PFC bounds what each ingress port holds.
  const uint64_t buffer = o_.lossless ? (uint64_t{1} << 40) : uint64_t{o_.buffer_kb} * 1000;
  tch.SetRootQueueDisc("panama::netsim::EcnQueueDisc", "MaxBytes", ns3::UintegerValue(buffer), "KBytes",
                       ns3::UintegerValue(uint64_t{o_.ecn_k_kb} * 1000));
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
          : static_cast<uint64_t>(std::ceil(2 * o_.link_delay_us * 1e-6 * gbps * 1e9 / 8)) + 4 * 1600;
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

// ------------------------------------------------------------------ jobs and PSwitches

void Sim::plan_jobs() {
  // Hosts in rack-interleaved order: job j takes the next workers_per_job of
  // them, so each job spreads over as many racks as it has workers (up to all).
  std::vector<uint32_t> order;
  for (uint32_t slot = 0; slot < o_.rack_size(); ++slot) {
    for (uint32_t r = 0; r < o_.num_racks(); ++r) order.push_back(r * o_.rack_size() + slot);
  }
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  size_t next = 0;
  for (uint32_t j = 0; j < o_.jobs; ++j) {
    Job job;
    job.id = static_cast<uint16_t>(j + 1);
    const ModelSpec& m = find_model(o_.models[j % o_.models.size()]);
    job.model = m.name;
    const double bytes = m.gradient_mb * 1e6 * o_.scale;
    job.elems = std::max<uint64_t>(1, static_cast<uint64_t>(bytes / 4));
    job.compute_ns = static_cast<uint64_t>(m.compute_ms * 1e6 * o_.scale);
    // Jobs do not start in lock step: up to one compute time apart.
    job.start_ns = jitter(rng_) * static_cast<double>(job.compute_ns);
    job.planned = o_.iterations;
    const uint64_t n = o_.workers_per_job;
    job.ring_chunk = (job.elems * 4 + n - 1) / n;
    job.ring_total = 2 * (n - 1) * job.ring_chunk;
    job.ring_seg = std::min<uint64_t>(job.ring_chunk, uint64_t{o_.ring_segment_kb} * 1024);
    for (uint32_t r = 0; r < o_.workers_per_job; ++r) {
      auto w = std::make_unique<Worker>();
      w->job = j;
      w->rank = r;
      w->host = order[next++];
      hosts_[w->host].worker = w.get();
      job.workers.push_back(static_cast<uint32_t>(workers_.size()));
      workers_.push_back(std::move(w));
    }
    jobs_.push_back(std::move(job));
  }
  if (o_.jobs == 0 || o_.scheme == Scheme::kRing) return;

  // The controller computes trees, shares and plans for this fabric.
  controller::ClusterDesc c;
  for (const HostNode& h : hosts_) {
    controller::HostDesc hd;
    hd.name = h.name;
    hd.ip = h.ip;
    const uint32_t i = h.ip & 0xFFFF;
    hd.mac = {0x02, 0x00, 0x00, 0x01, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
    c.hosts.push_back(hd);
  }
  for (uint32_t s = 0; s < switches_.size(); ++s) {
    controller::SwitchDesc sd;
    sd.name = switches_[s].name;
    sd.ip = (10u << 24) | (2u << 16) | (s + 1);
    sd.mac = {0x02, 0x00, 0x00, 0x02, static_cast<uint8_t>((s + 1) >> 8), static_cast<uint8_t>(s + 1)};
    // The simulated accelerators' capacities, as a cluster description states them.
    sd.engine.packet_memory = o_.packet_memory;
    sd.engine.table_entries = SimEngine::kTableEntries;
    sd.engine.slot_elems = SimEngine::kSlotCapacity;
    c.switches.push_back(sd);
  }
  const uint32_t nh = static_cast<uint32_t>(hosts_.size());
  for (const LinkSpec& l : links_) {
    c.links.push_back(
        {l.a < nh ? hosts_[l.a].name : switches_[l.a - nh].name, switches_[l.b - nh].name, l.gbps});
  }
  controller::JobsDesc jd;
  jd.elems_per_packet = o_.elems_per_packet;
  jd.udp_port = kPanamaPort;
  if (o_.scheme == Scheme::kFixedWindow) {
    // No congestion control: the window starts at the engines' share and
    // never moves (alpha = 0 makes a CE reduction a no-op; the cap bounds growth).
    jd.congestion.g = 0;
    jd.congestion.initial_alpha = 0;
    jd.congestion.initial_cwnd = 65535;
  }
  for (const Job& job : jobs_) {
    controller::JobDesc d;
    d.id = job.id;
    d.trees = o_.scheme == Scheme::kSingleTree ? 1 : o_.trees;
    for (uint32_t w : job.workers) d.workers.push_back(hosts_[workers_[w]->host].name);
    jd.jobs.push_back(d);
  }
  const controller::Deployment dep = controller::plan_deployment(c, jd);
  for (const controller::TreeInfo& t : dep.trees) jobs_[t.job - 1].trees.push_back(t);
  for (const controller::SwitchOutput& so : dep.switches) {
    if (so.node.entries.empty()) continue;
    uint32_t s = 0;
    while (switches_[s].name != so.node.node) ++s;
    auto psw = std::make_unique<PSwitch>();
    psw->name = so.node.node;
    psw->engine = std::make_unique<SimEngine>();
    psw->settings = so.settings;
    psw->node_cfg = so.node;
    EngineRegisters<SimEngine> regs(*psw->engine);
    config::apply_node_config(regs, psw->node_cfg);
    psw->core = std::make_unique<pswitch::SwitchCore<SimEngine>>(psw->settings, *psw->engine);
    switches_[s].psw = std::move(psw);
  }
  for (const controller::WorkerOutput& wo : dep.workers) {
    const int h = static_cast<int>(std::stoul(wo.host.substr(1)));
    Worker& w = *hosts_[h].worker;
    w.core = std::make_unique<runtime::AllreduceCore>(wo.plan);
    w.out = std::make_unique<HostFrameOut>(this, w.host);
    w.data.resize(jobs_[w.job].elems);
    w.max_in_flight.assign(wo.plan.trees.size(), 0);
    w.max_window.assign(wo.plan.trees.size(), 0);
    w.min_cap.assign(wo.plan.trees.size(), 0xFFFF);
  }
}

void Sim::send_frame(Ptr<ns3::Ipv4L3Protocol> ipv4, Ptr<ns3::NetDevice> dev, const uint8_t* d, uint32_t n) {
  Ipv4Header ih;
  ih.SetSource(Ipv4Address(wire::load_be32(d + wire::kIpSrc)));
  ih.SetDestination(Ipv4Address(wire::load_be32(d + wire::kIpDst)));
  ih.SetProtocol(wire::kIpProtoUdp);
  ih.SetTtl(d[wire::kIpTtl]);
  ih.SetTos(d[wire::kIpTos]);
  ih.SetIdentification(wire::load_be16(d + wire::kIpId));
  ih.SetDontFragment();
  ih.SetPayloadSize(n - wire::kUdpOffset);
  Ptr<ns3::Packet> pkt = ns3::Create<ns3::Packet>(d + wire::kUdpOffset, n - wire::kUdpOffset);
  Ptr<ns3::Ipv4Route> r = ns3::Create<ns3::Ipv4Route>();
  r->SetSource(ih.GetSource());
  r->SetDestination(ih.GetDestination());
  r->SetGateway(Ipv4Address::GetZero());
  r->SetOutputDevice(dev);
  ipv4->SendWithHeader(pkt, ih, r);
}

void Sim::on_panama(const NodeInfo& info, Ptr<const ns3::Packet> p, const Ipv4Header& h, uint32_t iface) {
  // The frame as the wire carries it: Ethernet II, IPv4 (checksum recomputed),
  // then the UDP datagram as received. MAC addresses are not modelled.
  const uint32_t n = wire::kUdpOffset + p->GetSize();
  std::vector<uint8_t> f(n, 0);
  wire::store_be16(f.data() + wire::kEthType, wire::kEtherTypeIpv4);
  uint8_t* ip = f.data() + wire::kIpOffset;
  ip[0] = 0x45;
  ip[1] = h.GetTos();
  wire::store_be16(ip + 2, static_cast<uint16_t>(n - wire::kIpOffset));
  wire::store_be16(ip + 4, h.GetIdentification());
  wire::store_be16(ip + 6, h.IsDontFragment() ? 0x4000 : 0);
  ip[8] = h.GetTtl();
  ip[9] = h.GetProtocol();
  wire::store_be32(ip + 12, h.GetSource().Get());
  wire::store_be32(ip + 16, h.GetDestination().Get());
  wire::store_be16(ip + 10, wire::ipv4_header_checksum(ip));
  p->CopyData(f.data() + wire::kUdpOffset, p->GetSize());
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());

  if (info.is_host) {
    Worker* w = hosts_[info.index].worker;
    if (w == nullptr || !w->core || !w->core->on_frame(f.data(), n, now)) {
      ++unknown_panama_frames_;
      return;
    }
    pump(*w);
    return;
  }
  SwitchNode& sw = switches_[info.index];
  const int port = iface < sw.port_of_if.size() ? sw.port_of_if[iface] : -1;
  if (!sw.psw || port < 0) {
    ++unknown_panama_frames_;
    return;
  }
  PSwitch& ps = *sw.psw;
  // PFC: the frame is held (in the accelerator's input, or until replicated)
  // and charged to its ingress port.
  const uint64_t held = n - wire::kIpOffset;
  if (o_.lossless && !pfc_charge(info.index, static_cast<uint32_t>(port), kClassPanama, held)) return;
  ++ps.frames_in;
  const bool result_down =
      n > wire::kPanamaType && f[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown);
  if (result_down) {  // replicated by the switch; the accelerator is not involved
    if (o_.lossless) pfc_release(info.index, static_cast<uint32_t>(port), kClassPanama, held);
    accelerator_done(info.index, static_cast<uint32_t>(port), f);
    return;
  }
  // The accelerator: a FIFO server at its line rate, then its pipeline latency.
  const uint64_t service = static_cast<uint64_t>(std::ceil(n * 8.0 / o_.engine_gbps));
  const uint64_t start = std::max(now, ps.busy_until_ns);
  ps.busy_until_ns = start + service;
  ps.max_backlog_bytes = std::max<uint64_t>(
      ps.max_backlog_bytes,
      static_cast<uint64_t>(static_cast<double>(ps.busy_until_ns - now) * o_.engine_gbps / 8));
  const uint64_t at = ps.busy_until_ns + static_cast<uint64_t>(o_.engine_latency_us * 1e3);
  const uint32_t s = info.index;
  const uint32_t in_port = static_cast<uint32_t>(port);
  ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(at - now)),
                           [this, s, in_port, held, frame = std::move(f)]() {
                             if (o_.lossless) pfc_release(s, in_port, kClassPanama, held);
                             accelerator_done(s, in_port, frame);
                           });
}

void Sim::accelerator_done(uint32_t s, uint32_t in_port, const std::vector<uint8_t>& frame) {
  SwitchNode& sw = switches_[s];
  sw.psw->core->on_frame(
      in_port, frame.data(), static_cast<uint32_t>(frame.size()),
      [&](uint32_t port, const uint8_t* d, uint32_t n) { send_frame(sw.ipv4, sw.ports[port].dev, d, n); });
}

// ------------------------------------------------------------------ training

void Sim::start_jobs() {
  for (Job& job : jobs_) {
    for (uint32_t wi : job.workers) {
      Worker& w = *workers_[wi];
      w.finish_ns.clear();
      ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(job.start_ns + job.compute_ns)),
                               [this, wi]() { compute_done(wi); });
      if (o_.scheme == Scheme::kRing) {
        const Worker& next = *workers_[job.workers[(w.rank + 1) % job.workers.size()]];
        w.ring_tx = ns3::Socket::CreateSocket(hosts_[w.host].node, ns3::TcpSocketFactory::GetTypeId());
        w.ring_tx->Bind();
        w.ring_tx->SetConnectCallback(ns3::MakeCallback(&Sim::ring_connected, this),
                                      ns3::MakeCallback(&Sim::ring_failed, this));
        w.ring_tx->SetSendCallback(ns3::MakeCallback(&Sim::ring_fill_cb, this));
        worker_by_tx_socket_[ns3::PeekPointer(w.ring_tx)] = wi;
        // Connections open when the simulation starts (devices are initialised then).
        const ns3::InetSocketAddress peer(Ipv4Address(hosts_[next.host].ip), kRingPort);
        Ptr<ns3::Socket> s = w.ring_tx;
        ns3::Simulator::Schedule(ns3::Seconds(0), [s, peer]() { s->Connect(peer); });
      }
    }
  }
}

void Sim::compute_done(uint32_t wi) {
  Worker& w = *workers_[wi];
  const Job& job = jobs_[w.job];
  if (o_.scheme == Scheme::kRing) {
    w.ring_active = true;
    ring_fill(w);
    ring_check(w);
    return;
  }
  cluster::fill_tensor(w.data.data(), w.data.size(), o_.seed, w.iteration, w.rank);
  w.op =
      w.core->start(w.data.data(), job.elems, static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds()));
  pump(w);
}

void Sim::pump(Worker& w) {
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  for (;;) {
    const uint32_t sent = w.core->poll(now, *w.out, 64);
    if (sent > 0) {
      const runtime::CommStats st = w.core->stats();
      for (size_t t = 0; t < st.trees.size(); ++t) {
        w.max_in_flight[t] = std::max(w.max_in_flight[t], st.trees[t].in_flight);
        w.max_window[t] = std::max(w.max_window[t], w.core->congestion(t).window());
        w.min_cap[t] = std::min(w.min_cap[t], st.trees[t].cwnd_cap);
      }
    }
    if (sent < 64) break;
  }
  if (w.op != 0 && w.core->status(w.op) != runtime::OpStatus::kPending) {
    finish_iteration(w);
    return;
  }
  const uint64_t t = w.core->next_timer_ns();
  if (t != UINT64_MAX && (!w.timer.IsRunning() || t < w.timer_at)) {
    w.timer.Cancel();
    w.timer_at = t;
    Worker* wp = &w;
    w.timer = ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(t > now ? t - now : 0)),
                                       [this, wp]() { pump(*wp); });
  }
}

void Sim::finish_iteration(Worker& w) {
  Job& job = jobs_[w.job];
  const double now = static_cast<double>(ns3::Simulator::Now().GetNanoSeconds());
  if (o_.scheme != Scheme::kRing) {
    if (w.core->status(w.op) == runtime::OpStatus::kFailed) {
      throw std::runtime_error("job " + std::to_string(job.id) + " rank " + std::to_string(w.rank) +
                               ": allreduce failed: " + w.core->op_error(w.op));
    }
    w.core->release(w.op);
    w.op = 0;
    w.timer.Cancel();
    if (o_.verify) {
      auto& ref = job.reference[w.iteration];
      if (ref.first.empty()) {
        ref.first.resize(job.elems);
        cluster::reference_sum(ref.first.data(), job.elems, o_.seed, w.iteration, o_.workers_per_job);
        ref.second = o_.workers_per_job;
      }
      w.mismatches += cluster::count_mismatches(w.data.data(), ref.first.data(), job.elems, nullptr);
      if (--ref.second == 0) job.reference.erase(w.iteration);
    }
  }
  w.finish_ns.push_back(now);
  ++w.iteration;
  if (w.iteration > job.decided_through) {
    // First worker of the job through this iteration: is there another?
    job.decided_through = w.iteration;
    if (job.planned > w.iteration && o_.duration_ms > 0 && now >= o_.duration_ms * 1e6) {
      job.planned = w.iteration;
    }
  }
  if (w.iteration < job.planned) {
    const uint32_t wi = job.workers[w.rank];
    ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(job.compute_ns)),
                             [this, wi]() { compute_done(wi); });
    return;
  }
  w.done = true;
  if (++job.workers_done == job.workers.size()) {
    job.end_ns = now;
    ++jobs_done_;
    if (first_job_end_ns_ < 0) first_job_end_ns_ = now;
    if (o_.progress) {
      std::fprintf(stderr, "[netsim] job %u (%s) finished %u iterations at %.3f ms\n", job.id,
                   job.model.c_str(), w.iteration, now / 1e6);
    }
    check_done();
  }
}

// Pipelined ring: reduce-scatter then all-gather, 2(N-1) steps of one chunk
// each; a segment of step s may leave once the same segment of step s-1 has
// arrived from the previous worker, so steps overlap segment by segment.
void Sim::ring_fill(Worker& w) {
  if (!w.ring_active || !w.ring_tx) return;
  const Job& job = jobs_[w.job];
  const uint64_t base = uint64_t{w.iteration} * job.ring_total;
  const uint64_t got = std::min(job.ring_total, w.ring_recv > base ? w.ring_recv - base : 0);
  const uint64_t whole = got / job.ring_chunk;
  const uint64_t part = got % job.ring_chunk;
  const uint64_t allowed =
      std::min(job.ring_total, job.ring_chunk * (1 + whole) + (part / job.ring_seg) * job.ring_seg);
  while (w.ring_sent < base + allowed) {
    const uint32_t room = w.ring_tx->GetTxAvailable();
    if (room == 0) break;
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({room, base + allowed - w.ring_sent, 65536}));
    if (w.ring_tx->Send(ns3::Create<ns3::Packet>(n)) < 0) break;
    w.ring_sent += n;
  }
}

void Sim::ring_check(Worker& w) {
  if (!w.ring_active) return;
  const Job& job = jobs_[w.job];
  const uint64_t end = uint64_t{w.iteration + 1} * job.ring_total;
  if (w.ring_sent >= end && w.ring_recv >= end) {
    w.ring_active = false;
    finish_iteration(w);
  }
}

void Sim::ring_accept(Ptr<ns3::Socket> s, const ns3::Address&) {
  ns3::Address local;
  s->GetSockName(local);
  const uint32_t host = host_of_ip(ns3::InetSocketAddress::ConvertFrom(local).GetIpv4().Get());
  Worker* w = hosts_[host].worker;
  if (w == nullptr) return;
  uint32_t wi = jobs_[w->job].workers[w->rank];
  worker_by_rx_socket_[ns3::PeekPointer(s)] = wi;
  s->SetRecvCallback(ns3::MakeCallback(&Sim::ring_recv, this));
}

void Sim::ring_recv(Ptr<ns3::Socket> s) {
  Worker& w = *workers_[worker_by_rx_socket_.at(ns3::PeekPointer(s))];
  while (Ptr<ns3::Packet> p = s->Recv()) {
    if (p->GetSize() == 0) break;
    w.ring_recv += p->GetSize();
  }
  ring_fill(w);
  ring_check(w);
}

void Sim::ring_fill_cb(Ptr<ns3::Socket> s, uint32_t) {
  Worker& w = *workers_[worker_by_tx_socket_.at(ns3::PeekPointer(s))];
  ring_fill(w);
  ring_check(w);
}

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

// ------------------------------------------------------------------ run control

void Sim::check_done() {
  if (finished_) return;
  const bool jobs_finished = jobs_done_ == o_.jobs;
  const bool arrivals_over = !in_window() || o_.load == 0;
  bool manual_pending = false;
  for (const ManualFlow& m : o_.flows) {
    if (m.start_us > ns3::Simulator::Now().GetSeconds() * 1e6) manual_pending = true;
  }
  if (jobs_finished && arrivals_over && pending_measured_ == 0 && !manual_pending) {
    finished_ = true;
    ns3::Simulator::Stop();
  }
}

void Sim::tick() {
  check_done();
  if (finished_) return;
  if (o_.progress) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress_ >= std::chrono::seconds(5)) {
      last_progress_ = now;
      const double wall = std::chrono::duration<double>(now - wall0_).count();
      std::fprintf(
          stderr,
          "[netsim] sim %.2f ms | wall %.0f s | jobs done %u/%u | flows %llu started, %llu done, %llu "
          "measured pending | %.2f M events/s\n",
          ns3::Simulator::Now().GetSeconds() * 1e3, wall, jobs_done_, o_.jobs,
          static_cast<unsigned long long>(flows_started_), static_cast<unsigned long long>(flows_finished_),
          static_cast<unsigned long long>(pending_measured_),
          static_cast<double>(ns3::Simulator::GetEventCount()) / wall / 1e6);
    }
  }
  ns3::Simulator::Schedule(ns3::MicroSeconds(100), [this]() { tick(); });
}

void Sim::sample_queues() {
  for (SwitchNode& sw : switches_) {
    for (Port& p : sw.ports) p.samples.push_back(p.queue->GetNBytes());
  }
  if (!finished_) {
    ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(o_.queue_sample_us * 1e3)),
                             [this]() { sample_queues(); });
  }
}

RunResult Sim::run() {
  wall0_ = last_progress_ = std::chrono::steady_clock::now();
  cdf_ = load_size_cdf(o_.cdf_path.empty() ? default_cdf_path() : o_.cdf_path);
  ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(o_.seed % 0xFFFFFFFEu) + 1);
  ns3::RngSeedManager::SetRun(1);
  // The binary-heap event queue is faster than ns-3's default map here.
  ns3::GlobalValue::Bind("SchedulerType", ns3::StringValue("ns3::HeapScheduler"));
  ns3::Config::SetDefault("ns3::TcpL4Protocol::SocketType", ns3::TypeIdValue(ns3::TcpDctcp::GetTypeId()));
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(kMss));
  ns3::Config::SetDefault("ns3::TcpSocket::DelAckCount", ns3::UintegerValue(1));
  ns3::Config::SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(256 << 10));
  ns3::Config::SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(256 << 10));
  ns3::Config::SetDefault("ns3::TcpSocket::ConnTimeout", ns3::TimeValue(ns3::MilliSeconds(2)));
  ns3::Config::SetDefault("ns3::TcpSocketBase::MinRto", ns3::TimeValue(ns3::MilliSeconds(1)));
  ns3::Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", ns3::TimeValue(ns3::MicroSeconds(1)));
  ns3::Config::SetDefault("ns3::TcpSocketBase::UseEcn", ns3::StringValue("On"));

  build_topology();
  plan_jobs();
  for (uint32_t i = 0; i < hosts_.size(); ++i) {
    HostNode& h = hosts_[i];
    h.flow_listener = ns3::Socket::CreateSocket(h.node, ns3::TcpSocketFactory::GetTypeId());
    h.flow_listener->Bind(ns3::InetSocketAddress(Ipv4Address::GetAny(), kFlowPort));
    h.flow_listener->Listen();
    h.flow_listener->SetAcceptCallback(ns3::MakeCallback(&Sim::accept_any, this),
                                       ns3::MakeCallback(&Sim::flow_accept, this));
    if (o_.scheme == Scheme::kRing && h.worker) {
      h.ring_listener = ns3::Socket::CreateSocket(h.node, ns3::TcpSocketFactory::GetTypeId());
      h.ring_listener->Bind(ns3::InetSocketAddress(Ipv4Address::GetAny(), kRingPort));
      h.ring_listener->Listen();
      h.ring_listener->SetAcceptCallback(ns3::MakeCallback(&Sim::accept_any, this),
                                         ns3::MakeCallback(&Sim::ring_accept, this));
    }
  }
  start_jobs();
  if (o_.load > 0) ns3::Simulator::Schedule(ns3::Seconds(0), [this]() { next_arrival(); });
  for (const ManualFlow& m : o_.flows) {
    const ManualFlow mf = m;
    ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(m.start_us * 1e3)),
                             [this, mf]() { start_flow(mf.src, mf.dst, mf.bytes, true); });
  }
  ns3::Simulator::Schedule(ns3::MicroSeconds(100), [this]() { tick(); });
  if (o_.queue_sample_us > 0) ns3::Simulator::Schedule(ns3::Seconds(0), [this]() { sample_queues(); });
  ns3::Simulator::Stop(ns3::NanoSeconds(static_cast<int64_t>(o_.max_time_ms * 1e6)));
  ns3::Simulator::Run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
  RunResult r = report(wall);
  ns3::Simulator::Destroy();
  return r;
}

// ------------------------------------------------------------------ report

nlohmann::json options_json(const Options& o) {
  nlohmann::json flows = nlohmann::json::array();
  for (const ManualFlow& f : o.flows)
    flows.push_back({{"src", f.src}, {"dst", f.dst}, {"bytes", f.bytes}, {"start_us", f.start_us}});
  const bool ft = o.topology == Topology::kFatTree;
  return {{"topology", topology_name(o.topology)},
          {"k", ft ? nlohmann::json(o.k) : nlohmann::json(nullptr)},
          {"racks", o.num_racks()},
          {"hosts_per_rack", o.rack_size()},
          {"spines", ft ? nlohmann::json(nullptr) : nlohmann::json(o.spines)},
          {"hosts", o.hosts()},
          {"host_gbps", o.host_gbps},
          {"fabric_gbps", o.fabric_gbps},
          {"link_delay_us", o.link_delay_us},
          {"buffer_kb", o.buffer_kb},
          {"ecn_k_kb", o.ecn_k_kb},
          {"lossless", o.lossless},
          {"pfc_xoff_kb", o.lossless ? nlohmann::json(o.pfc_xoff_kb) : nlohmann::json(nullptr)},
          {"pfc_xon_kb", o.lossless ? nlohmann::json(o.pfc_xon_kb) : nlohmann::json(nullptr)},
          {"pfc_headroom_kb", o.lossless ? nlohmann::json(o.pfc_headroom_kb) : nlohmann::json(nullptr)},
          {"engine_gbps", o.engine_gbps},
          {"engine_latency_us", o.engine_latency_us},
          {"packet_memory", o.packet_memory},
          {"elems_per_packet", o.elems_per_packet},
          {"scheme", scheme_name(o.scheme)},
          {"trees", o.scheme == Scheme::kSingleTree ? 1u : o.trees},
          {"jobs", o.jobs},
          {"workers_per_job", o.workers_per_job},
          {"models", o.models},
          {"scale", o.scale},
          {"iterations", o.iterations},
          {"verify", o.verify},
          {"ring_segment_kb", o.ring_segment_kb},
          {"load", o.load},
          {"cdf", o.cdf_path.empty() ? default_cdf_path() : o.cdf_path},
          {"duration_ms", o.duration_ms},
          {"flows", flows},
          {"seed", o.seed},
          {"max_time_ms", o.max_time_ms},
          {"queue_sample_us", o.queue_sample_us}};
}

RunResult Sim::report(double wall_s) {
  RunResult r;
  nlohmann::json& j = r.summary;
  const double sim_ns = static_cast<double>(ns3::Simulator::Now().GetNanoSeconds());
  j["options"] = options_json(o_);
  j["sim_time_ms"] = sim_ns / 1e6;
  j["finished"] = finished_;
  j["stop_reason"] = finished_ ? "all jobs and measured flows done" : "--max-time-ms reached";

  // ---- background flows
  std::vector<double> all, small, medium, large, manual;
  uint64_t measured = 0, unfinished = 0;
  for (const auto& f : flows_) {
    r.flows.push_back(f->rec);
    if (!f->rec.measured) continue;
    ++measured;
    if (f->rec.fct_us < 0) {
      ++unfinished;
      continue;
    }
    const double sd = f->rec.fct_us / f->rec.ideal_us;
    (f->rec.manual ? manual : all).push_back(sd);
    if (f->rec.manual) continue;
    (f->rec.bytes < 100000 ? small : f->rec.bytes <= 10000000 ? medium : large).push_back(sd);
  }
  j["background"] = {{"flows_started", flows_started_},
                     {"flows_measured", measured},
                     {"measured_unfinished", unfinished},
                     {"mean_size_bytes", cdf_.mean()},
                     {"fct_slowdown",
                      {{"all", stats_of(all)},
                       {"small_lt_100KB", stats_of(small)},
                       {"medium_100KB_10MB", stats_of(medium)},
                       {"large_gt_10MB", stats_of(large)},
                       {"manual", stats_of(manual)}}}};

  // ---- jobs
  nlohmann::json jobs = nlohmann::json::array();
  for (const Job& job : jobs_) {
    nlohmann::json jj;
    jj["id"] = job.id;
    jj["model"] = job.model;
    jj["gradient_bytes"] = job.elems * 4;
    jj["compute_ms"] = static_cast<double>(job.compute_ns) / 1e6;
    jj["start_ms"] = job.start_ns / 1e6;
    uint32_t its = o_.iterations;
    for (uint32_t wi : job.workers)
      its = std::min<uint32_t>(its, static_cast<uint32_t>(workers_[wi]->finish_ns.size()));
    std::vector<std::pair<double, double>> iters;
    double prev = job.start_ns;
    std::vector<double> iter_ms;
    for (uint32_t it = 0; it < its; ++it) {
      double end = 0;
      for (uint32_t wi : job.workers) end = std::max(end, workers_[wi]->finish_ns[it]);
      iters.emplace_back(prev / 1e6, end / 1e6);
      iter_ms.push_back((end - prev) / 1e6);
      prev = end;
    }
    r.iterations.push_back(iters);
    jj["iterations_done"] = its;
    jj["iteration_ms"] = iter_ms;
    double iter_sum = 0;
    for (double m : iter_ms) iter_sum += m;
    jj["iteration_mean_ms"] = iter_ms.empty() ? 0.0 : iter_sum / static_cast<double>(iter_ms.size());
    jj["finished"] = job.end_ns >= 0;
    jj["training_time_ms"] = job.end_ns >= 0 ? (job.end_ns - job.start_ns) / 1e6 : -1.0;
    double comm_ms = 0;
    for (double m : iter_ms) comm_ms += m - static_cast<double>(job.compute_ns) / 1e6;
    jj["allreduce_goodput_gbps"] =
        comm_ms > 0 ? static_cast<double>(job.elems * 4) * 8 * its / (comm_ms * 1e6) : 0.0;
    uint64_t mism = 0;
    nlohmann::json ws = nlohmann::json::array();
    nlohmann::json trees = nlohmann::json::array();
    for (uint32_t wi : job.workers) {
      const Worker& w = *workers_[wi];
      mism += w.mismatches;
      nlohmann::json wj = {{"rank", w.rank}, {"host", hosts_[w.host].name}, {"mismatches", w.mismatches}};
      if (w.core) {
        const runtime::CommStats st = w.core->stats();
        nlohmann::json tj = nlohmann::json::array();
        for (size_t t = 0; t < st.trees.size(); ++t) {
          const runtime::TreeStats& ts = st.trees[t];
          tj.push_back({{"tree", ts.tree_id},
                        {"results_ce", ts.results_ce},
                        {"cwnd_reductions", ts.cwnd_reductions},
                        {"cwnd", ts.cwnd},
                        {"cwnd_cap", ts.cwnd_cap},
                        {"max_in_flight", w.max_in_flight[t]},
                        {"max_window", w.max_window[t]},
                        {"min_cwnd_cap", w.min_cap[t]},
                        {"retransmissions", ts.retransmissions},
                        {"timeouts", ts.timeouts},
                        {"packets_sent", ts.packets_sent}});
        }
        wj["trees"] = tj;
        wj["results_ce"] = st.results_ce;
        wj["retransmissions"] = st.retransmissions;
        wj["duplicate_results"] = st.duplicate_results;
        wj["unexpected_results"] = st.unexpected_results;
        wj["malformed_results"] = st.malformed_results;
      } else {
        wj["ring_bytes_sent"] = w.ring_sent;
        wj["ring_bytes_received"] = w.ring_recv;
      }
      ws.push_back(wj);
    }
    if (!job.workers.empty() && workers_[job.workers[0]]->core) {
      const runtime::CommStats st0 = workers_[job.workers[0]]->core->stats();
      for (size_t t = 0; t < st0.trees.size(); ++t) {
        const runtime::TreeStats& ts = st0.trees[t];
        const uint64_t fresh = ts.packets_received - ts.duplicate_results - ts.unexpected_results;
        uint64_t retrans = 0;
        for (uint32_t wi : job.workers) retrans += workers_[wi]->core->stats().trees[t].retransmissions;
        std::string root;
        for (const controller::TreeInfo& ti : job.trees) {
          if (ti.tree == ts.tree_id) root = ti.root;
        }
        trees.push_back(
            {{"tree", ts.tree_id},
             {"root", root},
             {"cwnd_final", ts.cwnd},
             {"cwnd_cap", ts.cwnd_cap},
             {"ce_fraction", fresh ? static_cast<double>(ts.results_ce) / static_cast<double>(fresh) : 0.0},
             {"cwnd_reductions", ts.cwnd_reductions},
             {"retransmissions_all_workers", retrans}});
      }
    }
    jj["bit_exact"] =
        o_.scheme == Scheme::kRing ? nlohmann::json(nullptr) : nlohmann::json(mism == 0 && o_.verify);
    jj["mismatches"] = mism;
    jj["trees"] = trees;
    jj["workers"] = ws;
    jobs.push_back(jj);
  }
  j["jobs"] = jobs;

  // ---- fabric: links and queues
  nlohmann::json links = nlohmann::json::array();
  uint64_t egress = 0, core_bytes = 0, drops = 0, marks = 0, host_tx = 0;
  std::vector<double> qsamples;
  uint64_t pause_frames[kClasses] = {0, 0}, resume_frames[kClasses] = {0, 0}, paused_ns[kClasses] = {0, 0};
  uint64_t in_max[kClasses] = {0, 0}, host_paused_ns = 0, headroom = 0;
  for (const SwitchNode& sw : switches_) {
    for (const Port& p : sw.ports) {
      for (int c = 0; c < kClasses; ++c) {
        pause_frames[c] += p.xoff_sent[c];
        resume_frames[c] += p.xon_sent[c];
        paused_ns[c] += p.queue->paused_ns(c);
        in_max[c] = std::max(in_max[c], p.in_max[c]);
      }
      headroom = std::max(headroom, p.headroom);
      const ns3::QueueDisc::Stats& st = p.queue->GetStats();
      egress += st.nTotalDequeuedBytes;
      if (p.fabric) core_bytes += st.nTotalDequeuedBytes;
      drops += st.nTotalDroppedPackets;
      marks += st.nTotalMarkedPackets;
      std::vector<double> q(p.samples.begin(), p.samples.end());
      qsamples.insert(qsamples.end(), q.begin(), q.end());
      links.push_back(
          {{"from", sw.name},
           {"to", p.peer},
           {"bytes", st.nTotalDequeuedBytes},
           {"utilisation",
            sim_ns > 0 ? static_cast<double>(st.nTotalDequeuedBytes) * 8 / (p.gbps * sim_ns) : 0.0},
           {"ce_marked", st.nTotalMarkedPackets},
           {"drops", st.nTotalDroppedPackets},
           {"queue_p99_bytes", percentile(q, 99)},
           {"queue_max_bytes", p.queue->max_seen()},
           {"pauses_received", p.queue->pauses(kClassTcp) + p.queue->pauses(kClassPanama)},
           {"paused_us",
            static_cast<double>(p.queue->paused_ns(kClassTcp) + p.queue->paused_ns(kClassPanama)) / 1e3}});
    }
  }
  for (const HostNode& h : hosts_) {
    const ns3::QueueDisc::Stats& st = h.nic.queue->GetStats();
    host_tx += st.nTotalDequeuedBytes;
    drops += st.nTotalDroppedPackets;
    for (int c = 0; c < kClasses; ++c) {
      paused_ns[c] += h.nic.queue->paused_ns(c);
      host_paused_ns += h.nic.queue->paused_ns(c);
    }
  }
  drops += pfc_drops_;
  auto per_class = [](const uint64_t* v, double scale) {
    return nlohmann::json{{"tcp", static_cast<double>(v[kClassTcp]) * scale},
                          {"panama", static_cast<double>(v[kClassPanama]) * scale}};
  };
  j["pfc"] = {{"enabled", o_.lossless},
              {"xoff_bytes", o_.lossless ? uint64_t{o_.pfc_xoff_kb} * 1000 : 0},
              {"xon_bytes", o_.lossless ? uint64_t{o_.pfc_xon_kb} * 1000 : 0},
              {"headroom_bytes_max", o_.lossless ? headroom : 0},
              {"pause_frames", pause_frames[0] + pause_frames[1]},
              {"resume_frames", resume_frames[0] + resume_frames[1]},
              {"pause_frames_by_class", per_class(pause_frames, 1)},
              {"paused_us", static_cast<double>(paused_ns[0] + paused_ns[1]) / 1e3},
              {"paused_us_by_class", per_class(paused_ns, 1e-3)},
              {"host_nic_paused_us", static_cast<double>(host_paused_ns) / 1e3},
              {"max_ingress_bytes_by_class", per_class(in_max, 1)},
              {"headroom_drops", pfc_drops_}};
  j["fabric"] = {{"switch_egress_bytes", egress},
                 {"leaf_spine_bytes", core_bytes},  // every switch-to-switch link (fat-tree: both tiers)
                 {"host_tx_bytes", host_tx},
                 {"drops", drops},
                 {"ce_marked", marks},
                 {"queue_bytes",
                  {{"p50", percentile(qsamples, 50)},
                   {"p99", percentile(qsamples, 99)},
                   {"max", percentile(qsamples, 100)}}},
                 {"links", links}};

  // ---- PSwitches
  nlohmann::json psws = nlohmann::json::array();
  uint64_t engine_drops = 0;
  for (const SwitchNode& sw : switches_) {
    if (!sw.psw) continue;
    EngineRegisters<SimEngine> regs(*sw.psw->engine);
    const config::CounterSnapshot snap = config::read_counters(regs, sw.psw->node_cfg.entries);
    uint64_t d = 0;
    for (uint32_t c = regmap::kGcDropOversize; c < regmap::kNumGlobalCounters; ++c) d += snap.global[c];
    engine_drops += d;
    psws.push_back({{"name", sw.name},
                    {"frames_to_pswitch", sw.psw->frames_in},
                    {"aggregated", snap.global[regmap::kGcAggregated]},
                    {"emitted", snap.global[regmap::kGcEmitted]},
                    {"duplicates", snap.global[regmap::kGcDuplicates]},
                    {"drops", d},
                    {"drop_seq_window", snap.global[regmap::kGcDropSeqWindow]},
                    {"switch_engine_drops", sw.psw->core->counters().engine_drops},
                    {"accelerator_max_backlog_bytes", sw.psw->max_backlog_bytes},
                    {"counters", config::counters_to_json(snap)}});
  }
  j["pswitches"] = psws;
  j["engine_drops_total"] = engine_drops;
  j["unknown_panama_frames"] = unknown_panama_frames_;
  j["ring_connect_failures"] = ring_connect_failures_;
  j["flow_connect_failures"] = flow_connect_failures_;

  const double events = static_cast<double>(ns3::Simulator::GetEventCount());
  j["performance"] = {{"events", events},
                      {"wall_s", wall_s},
                      {"events_per_s", wall_s > 0 ? events / wall_s : 0.0},
                      {"sim_over_wall", wall_s > 0 ? sim_ns / 1e9 / wall_s : 0.0}};
  return r;
}

}  // namespace

double ideal_fct_us(const Options& o, uint64_t bytes, bool same_rack) {
  return ideal_fct_path_us(o, bytes, same_rack ? 0 : 2);
}

double ideal_fct_path_us(const Options& o, uint64_t bytes, uint32_t fabric_links) {
  std::vector<double> rates = {o.host_gbps};
  for (uint32_t i = 0; i < fabric_links; ++i) rates.push_back(o.fabric_gbps);
  rates.push_back(o.host_gbps);
  const double delay_ns = o.link_delay_us * 1e3;
  const uint64_t first = std::min<uint64_t>(bytes, kMss);
  const uint64_t packets = (bytes + kMss - 1) / kMss;
  double handshake = 0, one_way = 0, slowest = rates[0];
  for (double g : rates) {
    handshake += 2 * (delay_ns + kTcpSynBytes * 8 / g);
    one_way += delay_ns + (first + kTcpDataOverhead) * 8 / g;
    slowest = std::min(slowest, g);
  }
  const double rest = static_cast<double>(bytes - first + (packets - 1) * kTcpDataOverhead) * 8 / slowest;
  return (handshake + one_way + rest) / 1e3;
}

RunResult run_simulation(const Options& o) {
  validate(o);
  Sim sim(o);
  return sim.run();
}

void write_outputs(const Options& o, const RunResult& r) {
  if (o.out_dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) throw std::runtime_error("cannot create '" + o.out_dir + "': " + ec.message());
  {
    std::ofstream f(o.out_dir + "/summary.json");
    f << r.summary.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/summary.json");
  }
  {
    std::ofstream f(o.out_dir + "/flows.csv");
    f << "id,src,dst,bytes,start_us,fct_us,ideal_us,slowdown,measured,manual\n";
    for (const FlowRecord& x : r.flows) {
      f << x.id << ',' << x.src << ',' << x.dst << ',' << x.bytes << ',' << x.start_us << ',' << x.fct_us
        << ',' << x.ideal_us << ',' << (x.fct_us >= 0 ? x.fct_us / x.ideal_us : -1.0) << ',' << x.measured
        << ',' << x.manual << "\n";
    }
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/flows.csv");
  }
  {
    std::ofstream f(o.out_dir + "/iterations.csv");
    f << "job,iteration,start_ms,end_ms\n";
    for (size_t j = 0; j < r.iterations.size(); ++j) {
      for (size_t i = 0; i < r.iterations[j].size(); ++i) {
        f << j + 1 << ',' << i << ',' << r.iterations[j][i].first << ',' << r.iterations[j][i].second << "\n";
      }
    }
    if (!f) throw std::runtime_error("cannot write " + o.out_dir + "/iterations.csv");
  }
}

}  // namespace panama::netsim
