// Running one simulation (simulation.hpp): ns-3's set-up, the parts of
// sim.hpp put together, progress and the end of the run. docs/network-simulation.md
// describes the model.
#include "panama/netsim/simulation.hpp"

#include <chrono>
#include <cstdio>

#include "ns3/config.h"
#include "ns3/global-value.h"
#include "ns3/inet-socket-address.h"
#include "ns3/rng-seed-manager.h"
#include "ns3/string.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/uinteger.h"
#include "panama/netsim/tcp_bounds.hpp"

#include "sim.hpp"

namespace panama::netsim {
namespace detail {

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
    if (o_.pool_slots > 0) {
      // Pooled mode: the workers' last releases (and ring acknowledgements)
      // still go out and reach the PSwitches, so that the pools end free.
      drain_pool(static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds()) + kPoolDrainNs);
      return;
    }
    ns3::Simulator::Stop();
  }
}

// Pooled mode, after the last job: every worker polls what it still owes
// (a due release, acknowledgements), every few microseconds, until no
// worker has anything pending and no pool holds a group, or until
// `deadline` (a release lost on the way is never repaired: the job sends
// nothing more).
void Sim::drain_pool(uint64_t deadline_ns) {
  const uint64_t now = static_cast<uint64_t>(ns3::Simulator::Now().GetNanoSeconds());
  bool idle = true;
  for (const auto& w : workers_) {
    if (!w->core) continue;
    w->core->poll(now, *w->out, 64);
    idle = idle && w->core->pending_ops() == 0;
  }
  for (const SwitchNode& sw : switches_) {
    if (sw.psw && sw.psw->core->pool() && sw.psw->core->pool()->holding_groups() > 0) idle = false;
  }
  if (idle || now >= deadline_ns) {
    ns3::Simulator::Stop();
    return;
  }
  ns3::Simulator::Schedule(ns3::MicroSeconds(5), [this, deadline_ns]() { drain_pool(deadline_ns); });
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

RunResult Sim::run() {
  wall0_ = last_progress_ = std::chrono::steady_clock::now();
  cdf_ = load_size_cdf(o_.cdf_path.empty() ? default_cdf_path() : o_.cdf_path);
  ns3::RngSeedManager::SetSeed(static_cast<uint32_t>(o_.seed % 0xFFFFFFFEu) + 1);
  ns3::RngSeedManager::SetRun(1);
  // The binary-heap event queue is faster than ns-3's default map here.
  ns3::GlobalValue::Bind("SchedulerType", ns3::StringValue("ns3::HeapScheduler"));
  // DCTCP and PRR with Linux's lower bounds on the window (panama/netsim/tcp_bounds.hpp).
  ns3::Config::SetDefault("ns3::TcpL4Protocol::SocketType", ns3::TypeIdValue(TcpDctcpLinux::GetTypeId()));
  ns3::Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                          ns3::TypeIdValue(TcpPrrRecoveryLinux::GetTypeId()));
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(o_.background_mss()));
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
    if (host_reduces(o_.scheme) && h.worker) {
      h.ring_listener = create_ring_socket(h.node);
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

}  // namespace detail

RunResult run_simulation(const Options& o) {
  validate(o);
  detail::Sim sim(o);
  return sim.run();
}

}  // namespace panama::netsim
