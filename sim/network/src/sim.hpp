// The state of one network simulation and the class that runs it, internal
// to sim/network. The code is split by what it does:
//  - topology.cpp: the fabric (switches, hosts, links) and its routing
//    (EcmpRouting: flow-level ECMP at switches; PANAMA frames are taken off
//    the IP path and handed to the PSwitch or the worker);
//  - queues.cpp: the ports' output queues (queue.hpp), PFC (--lossless) and
//    queue sampling;
//  - jobs.cpp: the training jobs, planned by the controller: the PSwitches
//    (SwitchCore + engine model on the real frame bytes, behind an
//    accelerator with its own line rate and latency), the workers
//    (AllreduceCore), and the ring allreduce over TCP; pooled mode (--pool):
//    the pools' leases on simulation time, ring frames between hosts;
//  - background.cpp: DCTCP background flows, Poisson arrivals, sizes from a
//    CDF, and their ideal flow completion times;
//  - report.cpp: summary.json and the CSV files;
//  - simulation.cpp: running it (ns-3 set-up, progress, the end).
// CMake compiles the parts as one unity translation unit (ns-3's headers
// are slow to compile); each part also compiles alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ns3/event-id.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"

#include "panama/config/node_config.hpp"
#include "panama/controller/controller.hpp"
#include "panama/engine.hpp"
#include "panama/netsim/simulation.hpp"
#include "panama/pswitch/settings.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/wire.hpp"
#include "queue.hpp"

namespace panama::netsim::detail {

using ns3::Ipv4Address;
using ns3::Ipv4Header;
using ns3::Ptr;

// The engine model as the PSwitches run it: the HLS engine in the card's
// default configuration (64 entries, 512 slots of 144 words), so a slot
// holds a jumbo frame's payload (--mtu 9000).
using SimEngine = Engine<64, 512, 144>;
static_assert(SimEngine::kSlotCapacity == kEngineSlotElems,
              "the options check packets against the engine's slots");
static_assert(kPanamaIpHeaderBytes == wire::kPayloadOffset - wire::kIpOffset,
              "PANAMA header bytes from IPv4 on");

constexpr uint16_t kPanamaPort = wire::kDefaultUdpPort;
constexpr uint16_t kPoolRingPort = kPanamaPort + 1;  // pooled mode's ring frames (the plans' default)
constexpr uint16_t kFlowPort = 5000;                 // background flows
constexpr uint16_t kRingPort = 6000;                 // ring allreduce
constexpr uint32_t kTcpDataOverhead = 20 + 32 + 2;   // IPv4 + TCP with timestamps + PPP
constexpr uint64_t kPoolDrainNs = 1000000;           // pooled mode: at most 1 ms for the last releases
constexpr uint64_t kShortFlowBytes = 100000;         // "short" background flows: under 100 KB
constexpr uint32_t kTcpSynBytes = 20 + 40 + 2;       // SYN / SYN-ACK with options + PPP

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
  // Pooled mode: the next lease end the pool waits for (SwitchCore::advance
  // runs then, and before every frame).
  ns3::EventId lease_timer;
  uint64_t lease_timer_at = UINT64_MAX;
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
  std::vector<float> data;       // fp32 jobs
  std::vector<uint16_t> data16;  // bf16 and fp16 jobs
  uint32_t iteration = 0;
  runtime::OpId op = 0;
  ns3::EventId timer;
  uint64_t timer_at = UINT64_MAX;
  bool done = false;
  std::vector<double> finish_ns;  // per iteration
  // the iteration's buckets
  uint32_t bucket = 0;        // the bucket being (or next to be) allreduced
  uint64_t backward_ns = 0;   // when this iteration's backward started
  ns3::EventId bucket_event;  // the next bucket's ready time, or the end of backward
  std::vector<BucketRecord> bucket_log;
  // ring
  // ring and hierarchical schemes: link 0 is the job's ring (hierarchical:
  // the rack's ring), link 1 the ring across racks (hierarchical only)
  // The ring's byte stream to the next worker and from the previous one,
  // striped over --ring-channels TCP connections: stripe s of `stripe`
  // bytes goes on connection s mod channels, so each connection carries
  // its stripes in order and the stream's received prefix follows from
  // what each connection has delivered.
  struct RingLink {
    std::vector<Ptr<ns3::Socket>> tx;  // per channel; empty: the link is unused
    std::vector<uint64_t> ch_recv;     // per channel, bytes received
    uint32_t prev_host = UINT32_MAX;   // the host whose ring traffic arrives on this link
    uint64_t sent = 0, recv = 0;       // stream bytes each way (recv: the contiguous prefix), all buckets
    uint64_t base = 0;                 // bytes of the phases before the current one
  };
  RingLink links[2];
  bool ring_active = false;
  uint32_t phase = 0;  // of the current bucket's phases
  // observations
  std::vector<uint32_t> max_in_flight;  // per tree
  std::vector<uint32_t> max_window;
  std::vector<uint16_t> min_cap;
  uint64_t mismatches = 0;
};

struct Job {
  uint16_t id = 0;
  std::string model;
  uint64_t elems = 0;  // elements of the gradient (the model's fp32 gradient bytes / 4)
  wire::ElemType dtype = wire::ElemType::kFloat32;
  uint32_t elem_bytes = 4;
  std::vector<uint32_t> leaf_of_rank;  // 16-bit checks: the PSwitch each rank's host hangs off
  // Chain trees, 16-bit checks: per primary tree (plan order), its leaves
  // (indices as in leaf_of_rank) from the first to the root.
  std::vector<std::vector<uint32_t>> chains;
  uint64_t compute_ns = 0;  // forward + backward
  uint8_t dscp = 0;         // of its PANAMA packets (the controller's, by priority level)
  uint64_t forward_ns = 0, backward_ns = 0;
  std::vector<Bucket> buckets;  // of every iteration, in sending order
  double start_ns = 0;
  std::vector<uint32_t> workers;  // indices into Sim::workers_, rank order
  uint32_t workers_done = 0;
  double end_ns = -1;
  // Iterations the job runs: decided by the first worker to finish each
  // iteration, so that all workers stop after the same one.
  uint32_t planned = 0;
  uint32_t decided_through = 0;  // iterations whose successor has been decided
  // Ring phases of each bucket (bytes each way): the ring's reduce-scatter and
  // all-gather as one phase; hierarchical: reduce-scatter in the rack, an
  // allreduce of the worker's shard across racks, all-gather in the rack.
  struct RingPhase {
    uint32_t link = 0;
    uint64_t chunk = 0, total = 0, seg = 0;
  };
  std::vector<std::vector<RingPhase>> ring;  // per bucket
  std::vector<uint32_t> ring_next[2];        // per link and rank, the rank it sends to
  std::map<uint32_t, std::pair<std::vector<float>, uint32_t>>
      reference;  // iteration -> (sum, checks left), fp32
  std::map<uint32_t, std::pair<std::vector<uint16_t>, uint32_t>>
      reference16;  // iteration -> (result, checks left), bf16 and fp16
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

// ------------------------------------------------------------------ the simulation

class Sim {
 public:
  explicit Sim(const Options& o) : o_(o), rng_(o.seed) {}

  RunResult run();

  // Called by the routing of a node for a PANAMA frame (UDP to the PANAMA port).
  void on_panama(const NodeInfo& info, Ptr<const ns3::Packet> p, const Ipv4Header& h, uint32_t iface);
  int panama_transit(uint32_t sw, uint32_t dst) const;  // jobs.cpp: a chain's frame for another switch
  static uint32_t switch_ip(uint32_t s) { return (10u << 24) | (2u << 16) | (s + 1); }  // the controller's
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
  void arm_lease_timer(uint32_t sw);  // pooled mode: advance the pool at its next lease end

  void start_jobs();
  void start_iteration(uint32_t w);  // forward
  void start_backward(uint32_t w);
  void next_bucket(Worker& w);  // allreduce the next bucket once it is ready
  void start_bucket(uint32_t w);
  void start_allreduce(uint32_t w);  // the bucket's allreduce, after the reduce inside the host
  void bucket_done(Worker& w);
  void end_bucket(Worker& w);  // after the result's way back inside the host
  uint64_t intra_host_ns(const Job& job, const Bucket& b) const;
  void pump(Worker& w);
  void finish_iteration(Worker& w);
  Ptr<ns3::Socket> create_ring_socket(Ptr<ns3::Node> node) const;
  void plan_host_reduction(Job& job);
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
  void drain_pool(uint64_t deadline_ns);  // pooled mode: the last releases, after the last job

  // summary.json (report.cpp): the whole of it, and its sections.
  RunResult report(double wall_s);
  nlohmann::json report_background(std::vector<FlowRecord>& flows) const;
  nlohmann::json report_jobs(std::vector<std::vector<std::pair<double, double>>>& iterations) const;
  nlohmann::json report_job_workers(const Job& job) const;
  nlohmann::json report_job_trees(const Job& job) const;
  void report_fabric(nlohmann::json& j, double sim_ns) const;  // "fabric" and "pfc"
  void report_pswitches(nlohmann::json& j) const;              // "pswitches" and "engine_drops_total"
  nlohmann::json report_job_pool(const Job& job) const;        // pooled mode: the workers' PoolStats

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
  struct RingRx {
    uint32_t worker, link, channel;
  };
  std::unordered_map<ns3::Socket*, RingRx> worker_by_rx_socket_;
  // The sender's (host, port) of each ring connection -> its channel.
  std::map<std::pair<uint32_t, uint16_t>, uint32_t> ring_channel_of_;
  std::unordered_map<ns3::Socket*, uint32_t> worker_by_tx_socket_;
  uint32_t jobs_done_ = 0;
  double first_job_end_ns_ = -1;
  uint64_t short_started_ = 0;  // short background flows started in the window
  uint64_t pending_measured_ = 0;
  uint64_t flows_started_ = 0, flows_finished_ = 0;
  uint64_t ring_connect_failures_ = 0;
  uint64_t flow_connect_failures_ = 0;
  uint64_t unknown_panama_frames_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point wall0_, last_progress_;
  uint64_t next_ip_ = (172u << 24) | (16u << 16);
};

}  // namespace panama::netsim::detail
