// The training jobs: planned by the controller (trees, shares, node configs
// and plans for the simulated fabric), aggregated by the PSwitches (SwitchCore
// around the engine model, behind an accelerator with its own line rate and
// latency) and driven by the workers' AllreduceCore; or reduced by the ring
// allreduce over TCP.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

#include "ns3/inet-socket-address.h"
#include "ns3/ipv4-route.h"
#include "ns3/tcp-congestion-ops.h"
#include "ns3/tcp-cubic.h"
#include "ns3/tcp-l4-protocol.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/tcp-socket-factory.h"

#include "panama/cluster/test_data.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/netsim/tcp_bounds.hpp"
#include "sim.hpp"

namespace panama::netsim::detail {

// ------------------------------------------------------------------ jobs and PSwitches

void Sim::plan_jobs() {
  // Hosts in placement order; job j takes the next workers_per_job of them.
  // spread: rack-interleaved, so each job spans as many racks as it has
  // workers (up to all); packed: host order, a job fills a rack first;
  // random: a seeded permutation (its own generator, so the other random
  // draws stay those of the seed).
  std::vector<uint32_t> order;
  if (o_.placement == "spread") {
    for (uint32_t slot = 0; slot < o_.rack_size(); ++slot) {
      for (uint32_t r = 0; r < o_.num_racks(); ++r) order.push_back(r * o_.rack_size() + slot);
    }
  } else {
    for (uint32_t h = 0; h < o_.hosts(); ++h) order.push_back(h);
    if (o_.placement == "random") {
      std::mt19937_64 g(o_.seed * 0x9E3779B97F4A7C15ull + 0x5EED);
      for (size_t i = order.size() - 1; i > 0; --i) {
        std::swap(order[i], order[std::uniform_int_distribution<size_t>(0, i)(g)]);
      }
    }
  }
  controller::TreeShape shape = controller::TreeShape::kSpine;
  controller::parse_tree_shape(o_.tree_shape, shape);  // checked with the options
  if (shape == controller::TreeShape::kChain && o_.jobs > 0) {
    if (host_reduces(o_.scheme))
      throw OptionError("--tree-shape chain: PANAMA schemes only (the ring schemes build no trees)");
  }
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  size_t next = 0;
  const WorkloadTable workloads = o_.jobs > 0 ? load_workloads(o_.workload) : WorkloadTable{};
  const bool measured = o_.workload != "v100";
  for (uint32_t j = 0; j < o_.jobs; ++j) {
    Job job;
    job.id = static_cast<uint16_t>(j + 1);
    const Workload& m = find_workload(workloads, o_.models[j % o_.models.size()], o_.precision);
    job.model = m.model;
    const double bytes = m.grad_bytes * o_.scale;
    job.elems = std::max<uint64_t>(1, static_cast<uint64_t>(bytes / 4));
    if (!cluster::parse_dtype(o_.dtype, job.dtype)) throw std::runtime_error("--dtype: " + o_.dtype);
    job.elem_bytes = wire::elem_bytes(static_cast<uint8_t>(job.dtype));
    job.forward_ns = static_cast<uint64_t>(m.fwd_ms * 1e6 * o_.scale);
    job.backward_ns = static_cast<uint64_t>(m.bwd_ms * 1e6 * o_.scale);
    job.compute_ns = job.forward_ns + job.backward_ns;
    // DDP's buckets (the first one 1 MiB), or the whole gradient after the compute (v100 table).
    job.buckets = make_buckets(m, job.elems, o_.scale, measured ? 1024.0 * 1024 : 0,
                               measured ? o_.bucket_mib * 1024 * 1024 : 0);
    // Jobs do not start in lock step: up to one compute time apart.
    job.start_ns = jitter(rng_) * static_cast<double>(job.compute_ns);
    job.planned = o_.iterations;
    for (uint32_t r = 0; r < o_.workers_of(j); ++r) {
      auto w = std::make_unique<Worker>();
      w->job = j;
      w->rank = r;
      w->host = order[next++];
      hosts_[w->host].worker = w.get();
      job.workers.push_back(static_cast<uint32_t>(workers_.size()));
      workers_.push_back(std::move(w));
    }
    // The ring's successor of each rank: rank order, or ranks grouped by rack.
    std::vector<uint32_t> ring(job.workers.size());
    for (uint32_t r = 0; r < ring.size(); ++r) ring[r] = r;
    if (o_.ring_order == "rack") {
      std::stable_sort(ring.begin(), ring.end(), [&](uint32_t a, uint32_t b) {
        return hosts_[workers_[job.workers[a]]->host].rack < hosts_[workers_[job.workers[b]]->host].rack;
      });
    }
    job.ring_next[0].assign(ring.size(), 0);
    for (size_t i = 0; i < ring.size(); ++i) job.ring_next[0][ring[i]] = ring[(i + 1) % ring.size()];
    plan_host_reduction(job);
    jobs_.push_back(std::move(job));
  }
  if (o_.jobs == 0 || host_reduces(o_.scheme)) return;

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
    sd.ip = switch_ip(s);
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
  if (o_.priorities > 0) {
    jd.priority_levels = o_.priorities;
    for (uint32_t l = 0; l < o_.priorities; ++l) jd.priority_dscp.push_back(priority_dscp(l, o_.priorities));
  }
  for (const Job& job : jobs_) {
    controller::JobDesc d;
    d.id = job.id;
    d.compute_ms = static_cast<double>(std::max<uint64_t>(1, job.compute_ns)) / 1e6;
    d.gradient_bytes = static_cast<double>(job.elems * job.elem_bytes);
    d.trees = o_.scheme == Scheme::kSingleTree ? 1 : o_.trees;
    d.shape = shape;
    for (uint32_t w : job.workers) d.workers.push_back(hosts_[workers_[w]->host].name);
    d.pooled = o_.job_pooled(job.id);
    if (d.pooled) d.group = o_.pool_group;
    jd.jobs.push_back(d);
  }
  if (o_.pool_slots > 0) {
    controller::PoolDesc pd;
    pd.slots = o_.pool_slots;
    if (o_.pool_lease_us > 0) pd.lease_us = o_.pool_lease_us;
    pd.overcommit = o_.pool_overcommit;
    pd.ring_congestion = o_.pool_ring_cc;
    jd.pool = pd;
  }
  controller::Deployment dep;
  try {
    dep = controller::plan_deployment(c, jd);
  } catch (const controller::ControllerError& e) {
    // What the pool's options ask may not fit the fabric (a group over a
    // claim cap, a pool over the packet memory): an option error.
    if (o_.pool_slots > 0)
      throw OptionError(std::string("--pool: the controller refuses the plan: ") + e.what());
    throw;
  }
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
    // Pooled mode: a pooled tree's entry is the template of its claim
    // entries, which SwitchCore commits as groups take slots; the engine
    // gets the others (as the software PSwitch does).
    if (psw->settings.pool) {
      psw->node_cfg.entries.clear();
      for (const config::EntryConfig& e : so.node.entries) {
        if (!psw->settings.pool->find(e.job, e.tree)) psw->node_cfg.entries.push_back(e);
      }
    }
    EngineRegisters<SimEngine> regs(*psw->engine);
    config::apply_node_config(regs, psw->node_cfg);
    psw->core =
        std::make_unique<pswitch::SwitchCore<SimEngine>>(psw->settings, *psw->engine, so.node.entries);
    switches_[s].psw = std::move(psw);
  }
  // The PSwitch each worker's host is attached to (its leaf), per job and
  // rank, for the 16-bit reference (a leaf rounds its workers' partial sum).
  for (const controller::WorkerOutput& wo : dep.workers) {
    Job& job = jobs_[wo.plan.job_id - 1];
    job.dscp = wo.plan.dscp;
    if (job.leaf_of_rank.size() < wo.plan.world_size) job.leaf_of_rank.resize(wo.plan.world_size, 0);
    for (size_t s = 0; s < dep.switches.size(); ++s) {
      const auto& ports = dep.switches[s].settings.ports;
      if (std::any_of(ports.begin(), ports.end(), [&](const auto& p) { return p.name == wo.host; })) {
        job.leaf_of_rank[wo.plan.rank] = static_cast<uint32_t>(s);
        break;
      }
    }
  }
  // Chain trees: each primary tree's leaves in chain order, for the 16-bit
  // reference (every leaf rounds in turn). A leaf's entry names the previous
  // leaf as its relay child; leaves are known by their address.
  if (shape == controller::TreeShape::kChain) {
    for (Job& job : jobs_) {
      const controller::WorkerOutput* first = nullptr;
      for (const controller::WorkerOutput& wo : dep.workers) first = wo.plan.job_id == job.id ? &wo : first;
      if (first == nullptr) continue;
      for (const runtime::TreePlan& tp : first->plan.trees) {
        if (tp.backup_for >= 0) continue;
        std::map<uint32_t, size_t> leaf_of_ip;   // the tree's leaves by address
        std::map<size_t, uint32_t> previous_ip;  // leaf -> the previous leaf's address
        for (size_t s = 0; s < dep.switches.size(); ++s) {
          for (const config::EntryConfig& e : dep.switches[s].node.entries)
            if (e.job == job.id && e.tree == tp.tree_id) leaf_of_ip[e.ip_src] = s;
          for (const pswitch::TreePorts& t : dep.switches[s].settings.trees)
            if (t.job == job.id && t.tree == tp.tree_id && !t.relays.empty()) previous_ip[s] = t.relays[0].ip;
        }
        std::map<size_t, size_t> next;  // leaf -> the next leaf
        for (const auto& [l, ip] : previous_ip) next[leaf_of_ip.at(ip)] = l;
        std::vector<uint32_t> chain;
        for (const auto& [ip, l] : leaf_of_ip) {
          if (previous_ip.count(l)) continue;  // the first leaf has no previous one
          for (size_t at = l; chain.size() <= leaf_of_ip.size(); at = next.at(at)) {
            chain.push_back(static_cast<uint32_t>(at));
            if (!next.count(at)) break;
          }
        }
        if (chain.size() != leaf_of_ip.size())
          throw std::logic_error("netsim: job " + std::to_string(job.id) + " tree " +
                                 std::to_string(tp.tree_id) + " is not one chain over its leaves");
        job.chains.push_back(std::move(chain));
      }
    }
  }
  for (const controller::WorkerOutput& wo : dep.workers) {
    const int h = static_cast<int>(std::stoul(wo.host.substr(1)));
    Worker& w = *hosts_[h].worker;
    if (wo.plan.pooled && runtime::ring_udp_port(wo.plan) != kPoolRingPort)
      throw std::logic_error("netsim: job " + std::to_string(wo.plan.job_id) + " has ring port " +
                             std::to_string(runtime::ring_udp_port(wo.plan)) + ", the hosts take " +
                             std::to_string(kPoolRingPort));
    w.core = std::make_unique<runtime::AllreduceCore>(wo.plan);
    w.out = std::make_unique<HostFrameOut>(this, w.host);
    if (jobs_[w.job].elem_bytes == 4) {
      w.data.resize(jobs_[w.job].elems);
    } else {
      w.data16.resize(jobs_[w.job].elems);
    }
    w.max_in_flight.assign(wo.plan.trees.size(), 0);
    w.max_window.assign(wo.plan.trees.size(), 0);
    w.min_cap.assign(wo.plan.trees.size(), 0xFFFF);
  }
}

// A chain tree's frame at a switch, addressed to another switch (a leaf:
// the next one up the chain, or a result for the previous one): routed on
// as ordinary IP traffic, towards the first host below that leaf (every
// shortest path to it ends through the leaf). -1: the frame is for this
// switch (its address, or a tree's group: its PSwitch or nothing).
int Sim::panama_transit(uint32_t sw, uint32_t dst) const {
  if ((dst >> 16) != (switch_ip(0) >> 16)) return -1;
  const uint32_t s = (dst & 0xFFFF) - 1;
  if (s == sw || s >= o_.num_racks()) return -1;  // leaves and edges come first, switch s above rack s
  return static_cast<int>(s * o_.rack_size());
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
  PortEmitFn out(
      [&](uint32_t port, const uint8_t* d, uint32_t n) { send_frame(sw.ipv4, sw.ports[port].dev, d, n); });
  // Pooled mode: the pool's leases end on simulation time, before the frame.
  sw.psw->core->advance(static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds()));
  sw.psw->core->on_frame(in_port, frame.data(), static_cast<uint32_t>(frame.size()), out);
  arm_lease_timer(s);
}

// The earliest lease end among the pool's groups that hold slots and have
// emitted nothing; the timer advances the pool then (and re-arms). A lease
// renewed since only makes the timer early, which is harmless.
void Sim::arm_lease_timer(uint32_t s) {
  PSwitch& ps = *switches_[s].psw;
  const pswitch::ClaimPool* pool = ps.core->pool();
  if (pool == nullptr || pool->holding_groups() == 0) return;
  uint64_t next = UINT64_MAX;
  for (uint32_t e = 0; e < pool->entry_count(); ++e) {
    for (const pswitch::GroupView& g : pool->groups(e))
      if (g.holds && !g.emitted) next = std::min(next, g.deadline);
  }
  if (next == UINT64_MAX || next >= ps.lease_timer_at) return;
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  ps.lease_timer.Cancel();
  ps.lease_timer_at = next;
  ps.lease_timer = ns3::Simulator::Schedule(
      ns3::NanoSeconds(static_cast<int64_t>(next > now ? next - now : 0)), [this, s]() {
        PSwitch& p = *switches_[s].psw;
        p.lease_timer_at = UINT64_MAX;
        p.core->advance(static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds()));
        arm_lease_timer(s);
      });
}

void HostFrameOut::end_frame(uint32_t len) {
  sim_->host_send(host_, buf_.data(), len);
}

// The rings of the host-reduction schemes and their phases per bucket.
// ring: one ring over every worker (link 0), reduce-scatter and all-gather
// as one phase of 2(N-1) chunks of 1/N. hierarchical (the racks' workers in
// equal numbers c, k racks): reduce-scatter around each rack's ring (link 0,
// c-1 chunks of 1/c), each worker's shard allreduced around the ring of the
// workers with its index in the other racks (link 1, 2(k-1) chunks of
// 1/(ck)), all-gather around the rack's ring (c-1 chunks of 1/c).
void Sim::plan_host_reduction(Job& job) {
  const uint64_t n = job.workers.size();
  const uint64_t seg_max = uint64_t{o_.ring_segment_kb} * 1024;
  auto phase = [&](uint32_t link, uint64_t chunk, uint64_t steps) {
    return Job::RingPhase{link, chunk, steps * chunk, std::max<uint64_t>(1, std::min(chunk, seg_max))};
  };
  if (o_.scheme != Scheme::kHierarchical) {
    for (const Bucket& b : job.buckets) {
      const uint64_t chunk = (b.elems * job.elem_bytes + n - 1) / n;
      job.ring.push_back({phase(0, chunk, 2 * (n - 1))});
    }
    return;
  }
  // The job's racks in order of their first rank, and each rack's ranks.
  std::vector<std::vector<uint32_t>> racks;
  std::map<uint32_t, size_t> rack_index;
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t rack = hosts_[workers_[job.workers[r]]->host].rack;
    auto [it, fresh] = rack_index.emplace(rack, racks.size());
    if (fresh) racks.emplace_back();
    racks[it->second].push_back(r);
  }
  const uint64_t k = racks.size(), c = racks[0].size();
  for (const auto& g : racks) {
    if (g.size() != c) {
      throw OptionError("--scheme hierarchical: job " + std::to_string(job.id) + " has " +
                        std::to_string(racks[0].size()) + " workers in one rack and " +
                        std::to_string(g.size()) +
                        " in another; the hierarchical baseline needs as many in every rack it spans "
                        "(--placement packed or spread, --workers-per-job a multiple of the racks it spans)");
    }
  }
  job.ring_next[0].assign(n, 0);
  job.ring_next[1].assign(n, 0);
  for (size_t g = 0; g < k; ++g) {
    for (size_t i = 0; i < c; ++i) {
      job.ring_next[0][racks[g][i]] = racks[g][(i + 1) % c];
      job.ring_next[1][racks[g][i]] = racks[(g + 1) % k][i];
    }
  }
  for (const Bucket& b : job.buckets) {
    const uint64_t shard = (b.elems * job.elem_bytes + c - 1) / c;
    std::vector<Job::RingPhase> ph;
    if (c > 1) ph.push_back(phase(0, shard, c - 1));
    if (k > 1) ph.push_back(phase(1, (shard + k - 1) / k, 2 * (k - 1)));
    if (c > 1) ph.push_back(phase(0, shard, c - 1));
    job.ring.push_back(ph);
  }
}

// ------------------------------------------------------------------ training

void Sim::start_jobs() {
  for (Job& job : jobs_) {
    for (uint32_t wi : job.workers) {
      Worker& w = *workers_[wi];
      w.finish_ns.clear();
      ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(job.start_ns)),
                               [this, wi]() { start_iteration(wi); });
      if (host_reduces(o_.scheme)) {
        for (uint32_t l = 0; l < 2; ++l) {
          bool used = false;
          for (const Job::RingPhase& p : job.ring[0]) used = used || p.link == l;
          if (!used) continue;
          Worker& next = *workers_[job.workers[job.ring_next[l][w.rank]]];
          next.links[l].prev_host = w.host;
          next.links[l].ch_recv.assign(o_.ring_channels, 0);
          const ns3::InetSocketAddress peer(Ipv4Address(hosts_[next.host].ip), kRingPort);
          for (uint32_t c = 0; c < o_.ring_channels; ++c) {
            Ptr<ns3::Socket> s = create_ring_socket(hosts_[w.host].node);
            w.links[l].tx.push_back(s);
            s->Bind();
            ns3::Address local;
            s->GetSockName(local);
            ring_channel_of_[{w.host, ns3::InetSocketAddress::ConvertFrom(local).GetPort()}] = c;
            s->SetConnectCallback(ns3::MakeCallback(&Sim::ring_connected, this),
                                  ns3::MakeCallback(&Sim::ring_failed, this));
            s->SetSendCallback(ns3::MakeCallback(&Sim::ring_fill_cb, this));
            worker_by_tx_socket_[ns3::PeekPointer(s)] = wi;
            // Connections open when the simulation starts (devices are initialised then).
            ns3::Simulator::Schedule(ns3::Seconds(0), [s, peer]() { s->Connect(peer); });
          }
        }
      }
    }
  }
}

// An iteration: forward, then backward; each bucket is allreduced once its
// last gradient is ready and the bucket before it is done (DDP sends its
// buckets in order); the next forward waits for backward and the last bucket.
void Sim::start_iteration(uint32_t wi) {
  const Job& job = jobs_[workers_[wi]->job];
  if (job.forward_ns == 0) {
    start_backward(wi);
    return;
  }
  ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(job.forward_ns)),
                           [this, wi]() { start_backward(wi); });
}

void Sim::start_backward(uint32_t wi) {
  Worker& w = *workers_[wi];
  const Job& job = jobs_[w.job];
  w.backward_ns = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  w.bucket = 0;
  if (!host_reduces(o_.scheme)) {
    // This iteration's gradient (every bucket a slice of it), checked once all are reduced.
    if (job.elem_bytes == 4) {
      cluster::fill_tensor(w.data.data(), w.data.size(), o_.seed, w.iteration, w.rank);
    } else {
      cluster::fill_tensor16(w.data16.data(), w.data16.size(), job.dtype, o_.seed, w.iteration, w.rank);
    }
  }
  next_bucket(w);
}

void Sim::next_bucket(Worker& w) {
  const Job& job = jobs_[w.job];
  const uint32_t wi = job.workers[w.rank];
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  if (w.bucket == job.buckets.size()) {
    // Every bucket reduced: the iteration ends with backward.
    const uint64_t end = w.backward_ns + job.backward_ns;
    if (end <= now) {
      finish_iteration(w);
    } else {
      Worker* wp = &w;
      w.bucket_event = ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(end - now)),
                                                [this, wp]() { finish_iteration(*wp); });
    }
    return;
  }
  const uint64_t ready = w.backward_ns + job.buckets[w.bucket].ready_ns;
  if (ready <= now) {
    start_bucket(wi);
  } else {
    w.bucket_event = ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(ready - now)),
                                              [this, wi]() { start_bucket(wi); });
  }
}

void Sim::start_bucket(uint32_t wi) {
  Worker& w = *workers_[wi];
  const Job& job = jobs_[w.job];
  const Bucket& b = job.buckets[w.bucket];
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  BucketRecord rec;
  rec.job = job.id;
  rec.rank = w.rank;
  rec.iteration = w.iteration;
  rec.bucket = w.bucket;
  rec.elems = b.elems;
  rec.backward_ns = w.backward_ns;
  rec.ready_ns = w.backward_ns + b.ready_ns;
  rec.start_ns = now;
  w.bucket_log.push_back(rec);
  if (const uint64_t t = intra_host_ns(job, b); t > 0) {
    w.bucket_event = ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(t)),
                                              [this, wi]() { start_allreduce(wi); });
    return;
  }
  start_allreduce(wi);
}

// Several GPUs per host (--gpus-per-host G, CINA's model of a server, for
// every scheme alike): a bucket is first reduced to the host's master GPU by
// a ring over the intra-host link (reduce-scatter, then gather: 2(G-1)/G of
// its bytes at --intra-host-gbps), the master takes part in the allreduce,
// and the result goes back to the other GPUs the same way.
uint64_t Sim::intra_host_ns(const Job& job, const Bucket& b) const {
  if (o_.gpus_per_host <= 1) return 0;
  const double g = o_.gpus_per_host;
  const double bits = static_cast<double>(b.elems) * job.elem_bytes * 8;
  return static_cast<uint64_t>(std::llround(2 * (g - 1) / g * bits / o_.intra_host_gbps));
}

void Sim::start_allreduce(uint32_t wi) {
  Worker& w = *workers_[wi];
  const Job& job = jobs_[w.job];
  const Bucket& b = job.buckets[w.bucket];
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  if (host_reduces(o_.scheme)) {
    w.ring_active = true;
    w.phase = 0;
    ring_fill(w);
    ring_check(w);
    return;
  }
  if (job.elem_bytes == 4) {
    w.op = w.core->start(w.data.data() + b.elem_begin, b.elems, now);
  } else {
    w.op = w.core->start(w.data16.data() + b.elem_begin, b.elems, job.dtype, now);
  }
  pump(w);
}

void Sim::bucket_done(Worker& w) {
  const Job& job = jobs_[w.job];
  if (!host_reduces(o_.scheme)) {
    if (w.core->status(w.op) == runtime::OpStatus::kFailed) {
      throw std::runtime_error("job " + std::to_string(job.id) + " rank " + std::to_string(w.rank) +
                               ": allreduce failed: " + w.core->op_error(w.op));
    }
    w.core->release(w.op);
    w.op = 0;
    w.timer.Cancel();
  }
  if (const uint64_t t = intra_host_ns(job, job.buckets[w.bucket]); t > 0) {
    Worker* wp = &w;
    w.bucket_event = ns3::Simulator::Schedule(ns3::NanoSeconds(static_cast<int64_t>(t)),
                                              [this, wp]() { end_bucket(*wp); });
    return;
  }
  end_bucket(w);
}

void Sim::end_bucket(Worker& w) {
  w.bucket_log.back().end_ns = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  ++w.bucket;
  next_bucket(w);
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
    bucket_done(w);
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
  if (!host_reduces(o_.scheme)) {
    if (o_.verify && job.elem_bytes == 2) {
      // Rounded once per engine level (docs/protocol.md section 7): the
      // reference rounds each leaf's partial sum, then the root's.
      // The reference once per iteration, every worker compared with it.
      auto& ref = job.reference16[w.iteration];
      if (ref.first.empty()) {
        ref.first.resize(job.elems);
        if (job.chains.empty()) {
          cluster::reference_tensor16(ref.first.data(), job.elems, job.dtype, o_.seed, w.iteration,
                                      static_cast<uint32_t>(job.workers.size()), job.leaf_of_rank);
        } else {
          std::vector<std::pair<size_t, size_t>> segments;
          for (const Bucket& b : job.buckets) segments.emplace_back(b.elem_begin, b.elems);
          cluster::reference_tensor16_chain(ref.first.data(), job.elems, job.dtype, o_.seed, w.iteration,
                                            static_cast<uint32_t>(job.workers.size()), job.leaf_of_rank,
                                            job.chains, segments, w.core->plan().elems_per_packet);
        }
        ref.second = static_cast<uint32_t>(job.workers.size());
      }
      cluster::Check16 c;
      cluster::compare16(w.data16.data(), ref.first.data(), job.elems, c);
      w.mismatches += c.mismatches;
      if (--ref.second == 0) job.reference16.erase(w.iteration);
    } else if (o_.verify) {
      auto& ref = job.reference[w.iteration];
      if (ref.first.empty()) {
        ref.first.resize(job.elems);
        cluster::reference_sum(ref.first.data(), job.elems, o_.seed, w.iteration,
                               static_cast<uint32_t>(job.workers.size()));
        ref.second = static_cast<uint32_t>(job.workers.size());
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
    // Too few short flows yet to measure: one more iteration (the window
    // ends when the first job stops).
    if (job.planned == w.iteration && o_.min_short_flows > 0 && short_started_ < o_.min_short_flows) {
      ++job.planned;
    }
  }
  if (w.iteration < job.planned) {
    start_iteration(job.workers[w.rank]);
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
  if (!w.ring_active) return;
  const Job::RingPhase& p = jobs_[w.job].ring[w.bucket][w.phase];
  Worker::RingLink& l = w.links[p.link];
  if (l.tx.empty()) return;
  const uint64_t base = l.base;
  const uint64_t got = std::min(p.total, l.recv > base ? l.recv - base : 0);
  const uint64_t whole = got / p.chunk;
  const uint64_t part = got % p.chunk;
  const uint64_t allowed = std::min(p.total, p.chunk * (1 + whole) + (part / p.seg) * p.seg);
  const uint64_t stripe = uint64_t{o_.ring_segment_kb} * 1024;
  const uint64_t channels = l.tx.size();
  while (l.sent < base + allowed) {
    // The stream in order: the stripe at `sent` on its channel, up to the stripe's end.
    const uint64_t s = l.sent / stripe;
    const Ptr<ns3::Socket>& tx = l.tx[s % channels];
    const uint32_t room = tx->GetTxAvailable();
    if (room == 0) break;
    const uint64_t stripe_left = channels == 1 ? UINT64_MAX : (s + 1) * stripe - l.sent;
    const uint32_t n =
        static_cast<uint32_t>(std::min<uint64_t>({room, base + allowed - l.sent, stripe_left, 65536}));
    if (tx->Send(ns3::Create<ns3::Packet>(n)) < 0) break;
    l.sent += n;
  }
}

// The phase is done when this worker has sent and received all of it; the
// bucket when its last phase is.
void Sim::ring_check(Worker& w) {
  while (w.ring_active) {
    const std::vector<Job::RingPhase>& phases = jobs_[w.job].ring[w.bucket];
    const Job::RingPhase& p = phases[w.phase];
    Worker::RingLink& l = w.links[p.link];
    const uint64_t end = l.base + p.total;
    if (l.sent < end || l.recv < end) return;
    l.base = end;
    if (++w.phase == phases.size()) {
      w.ring_active = false;
      bucket_done(w);
      return;
    }
    ring_fill(w);
  }
}

// A socket of the ring's transport: its congestion control (created with it:
// DCTCP's initialisation would leave its ECN mode behind on a socket that
// changes algorithm), ECN and buffers; a listener's accepted sockets inherit them.
Ptr<ns3::Socket> Sim::create_ring_socket(Ptr<ns3::Node> node) const {
  Ptr<ns3::TcpL4Protocol> l4 = node->GetObject<ns3::TcpL4Protocol>();
  if (!l4) throw std::logic_error("internal: a host without TCP");
  const ns3::TypeId cc = o_.ring_tcp == "cubic"     ? ns3::TcpCubic::GetTypeId()
                         : o_.ring_tcp == "newreno" ? ns3::TcpNewReno::GetTypeId()
                                                    : TcpDctcpLinux::GetTypeId();
  Ptr<ns3::TcpSocketBase> tcp = ns3::DynamicCast<ns3::TcpSocketBase>(l4->CreateSocket(cc));
  if (!tcp) throw std::logic_error("internal: a ring socket is not TCP");
  if (o_.ring_tcp != "dctcp")
    tcp->SetUseEcn(o_.ring_ecn ? ns3::TcpSocketState::On : ns3::TcpSocketState::Off);
  tcp->SetAttribute("SegmentSize", ns3::UintegerValue(o_.gradient_mss()));
  tcp->SetAttribute("SndBufSize", ns3::UintegerValue(uint64_t{o_.ring_sockbuf_kb} * 1024));
  tcp->SetAttribute("RcvBufSize", ns3::UintegerValue(uint64_t{o_.ring_sockbuf_kb} * 1024));
  return tcp;
}

void Sim::ring_accept(Ptr<ns3::Socket> s, const ns3::Address& from) {
  ns3::Address local;
  s->GetSockName(local);
  const uint32_t host = host_of_ip(ns3::InetSocketAddress::ConvertFrom(local).GetIpv4().Get());
  Worker* w = hosts_[host].worker;
  if (w == nullptr) return;
  // Which of its rings: by the host the connection comes from.
  const int peer_host = host_of_ip(ns3::InetSocketAddress::ConvertFrom(from).GetIpv4().Get());
  if (peer_host < 0) return;
  const uint32_t peer = static_cast<uint32_t>(peer_host);
  uint32_t link = 0;
  while (link < 2 && w->links[link].prev_host != peer) ++link;
  if (link == 2) return;
  const auto ch = ring_channel_of_.find({peer, ns3::InetSocketAddress::ConvertFrom(from).GetPort()});
  if (ch == ring_channel_of_.end()) return;
  worker_by_rx_socket_[ns3::PeekPointer(s)] = {jobs_[w->job].workers[w->rank], link, ch->second};
  s->SetRecvCallback(ns3::MakeCallback(&Sim::ring_recv, this));
}

void Sim::ring_recv(Ptr<ns3::Socket> s) {
  const RingRx rx = worker_by_rx_socket_.at(ns3::PeekPointer(s));
  Worker& w = *workers_[rx.worker];
  Worker::RingLink& l = w.links[rx.link];
  while (Ptr<ns3::Packet> p = s->Recv()) {
    if (p->GetSize() == 0) break;
    l.ch_recv[rx.channel] += p->GetSize();
  }
  // The stream's received prefix: the first stripe not yet whole, s* = min
  // over channels c of (whole stripes of c) x C + c, plus what its channel
  // has of it.
  const uint64_t channels = l.ch_recv.size();
  if (channels == 1) {
    l.recv = l.ch_recv[0];
  } else {
    const uint64_t stripe = uint64_t{o_.ring_segment_kb} * 1024;
    uint64_t first = UINT64_MAX;
    for (uint64_t c = 0; c < channels; ++c) first = std::min(first, (l.ch_recv[c] / stripe) * channels + c);
    l.recv = first * stripe + l.ch_recv[first % channels] % stripe;
  }
  ring_fill(w);
  ring_check(w);
}

void Sim::ring_fill_cb(Ptr<ns3::Socket> s, uint32_t) {
  Worker& w = *workers_[worker_by_tx_socket_.at(ns3::PeekPointer(s))];
  ring_fill(w);
  ring_check(w);
}

}  // namespace panama::netsim::detail
