// panama-cluster --nodes threads: the same virtual cluster (controller plan,
// software PSwitches, workers, bit-exact checks, summary) with every node a
// thread of this process and every link a net_ring pair instead of a memif
// socket pair. A frame then crosses a link as an mbuf pointer (memif copies
// it into and out of shared memory), and the nodes switch between threads
// of one process rather than between processes. docs/cluster.md compares
// the two.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/orchestration.hpp"
#include "panama/pswitch/software_pswitch.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/runtime.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted.store(true);
}

// "net_memif0,role=server,socket=/x/y.sock" -> ("/x/y.sock", true).
std::pair<std::string, bool> memif_end(const std::string& vdev) {
  const size_t at = vdev.find("socket=");
  if (at == std::string::npos) throw std::runtime_error("link without a memif socket: " + vdev);
  const std::string sock = vdev.substr(at + 7, vdev.find(',', at) - (at + 7));
  return {sock, vdev.find("role=server") != std::string::npos};
}

struct WorkerSlot {
  WorkerOptions opt;
  std::string host, device;
  uint32_t job = 0, rank = 0;
  RingPeers peers;
  std::atomic<uint32_t> iteration{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> done{false};
  json report;
  std::shared_ptr<void> keep;
  std::thread thread;
};

// A worker thread without a final report (interrupted or stalled run).
json partial_report(const WorkerSlot& s, bool interrupted) {
  return {{"ok", false},
          {"error", interrupted ? "did not finish: the run was interrupted" : "did not finish"},
          {"iterations_done", s.iteration.load()},
          {"bytes_in_progress", s.bytes.load()},
          {"job", s.job},
          {"rank", s.rank}};
}

}  // namespace

int run_cluster_in_process(const ClusterOptions& opt) {
  PlannedRun run;
  if (const int rc = plan_run_or_report(opt, run, "panama-cluster"); rc != 0) return rc;
  const controller::Deployment& dep = run.dep;
  const double size_bytes = static_cast<double>(opt.elems) * 4.0;
  std::fprintf(stderr,
               "panama-cluster: %s topology, %zu PSwitch(es), %u job(s) x %u workers, %u tree(s) per job, "
               "%s x %u allreduces, links %.3g Gbit/s%s, all nodes threads of this process (net_ring)\n",
               opt.topology.c_str(), dep.switches.size(), opt.jobs, opt.workers, opt.trees,
               human_bytes(size_bytes).c_str(), opt.iterations, opt.link_gbps,
               (opt.loss + opt.dup + opt.reorder) > 0 ? " (fault injection on)" : "");
  if (opt.ring_baseline)
    std::fprintf(stderr, "  baseline: host ring allreduce (no in-network aggregation)\n");
  for (const auto& t : dep.trees)
    std::fprintf(stderr, "  job %u tree %u rooted at %s\n", t.job, t.tree, t.root.c_str());
  std::fprintf(stderr, "  run directory %s\n", run.run_dir.c_str());

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  int rc = 0;
  std::vector<std::unique_ptr<pswitch::SoftwarePswitch>> switches;
  std::vector<std::unique_ptr<WorkerSlot>> slots;
  std::vector<std::thread> switch_threads;
  std::atomic<bool> stop_switches{false};
  std::unique_ptr<runtime::Runtime> rt;
  std::string runtime_dir;
  try {
    // One EAL for every node; memory for every port's mempool (PSwitch
    // ports 4095 mbufs, worker ports 2047, 9216-byte frames).
    size_t switch_ports = 0;
    for (const auto& s : dep.switches) switch_ports += s.settings.ports.size();
    const unsigned memory_mb = static_cast<unsigned>(128 + 40 * switch_ports + 24 * dep.workers.size());
    const std::string prefix = "panama-cluster-" + std::to_string(getpid());
    runtime_dir = "/var/run/dpdk/" + prefix;
    auto eal = runtime::DpdkEal::initialize(node_eal_args("", memory_mb, prefix));
    // Every memif socket pair of the plan becomes a net_ring pair.
    std::map<std::string, std::pair<std::string, std::string>> links;  // socket -> (server, client) port
    auto port_of = [&](const std::string& vdev) {
      const auto [sock, server] = memif_end(vdev);
      auto it = links.find(sock);
      if (it == links.end()) {
        const std::string k = "l" + std::to_string(links.size());
        it = links.emplace(sock, eal->create_ring_pair(k + "s", k + "c")).first;
      }
      return server ? it->second.first : it->second.second;
    };
    for (const auto& s : dep.switches) {
      std::vector<std::string> devices;
      for (const auto& p : s.settings.ports) devices.push_back(port_of(p.vdev));
      switches.push_back(std::make_unique<pswitch::SoftwarePswitch>(s.node, eal, devices));
    }
    for (auto& sw : switches) {
      pswitch::SoftwarePswitch* p = sw.get();
      switch_threads.emplace_back([p, &stop_switches, &opt] {
        pthread_setname_np(pthread_self(), ("pswitch-" + p->name()).substr(0, 15).c_str());
        const runtime::EalThreadScope lcore;  // per-lcore mempool caches for this thread
        p->run(stop_switches, opt.idle_sleep_us, idle_spin_us(opt));
      });
    }
    for (const auto& w : dep.workers) {
      auto slot = std::make_unique<WorkerSlot>();
      slot->host = w.host;
      slot->job = w.plan.job_id;
      slot->rank = w.plan.rank;
      slot->device = port_of(w.vdev);
      slot->opt.plan_path = run.run_dir + "/" + w.host + ".plan.json";
      slot->opt.vdev = w.vdev;
      slot->opt.seed = opt.seed;
      slot->opt.elems = opt.elems;
      slot->opt.iterations = opt.iterations;
      slot->opt.idle_sleep_us = opt.idle_sleep_us;
      slot->opt.idle_spin_us = idle_spin_us(opt);
      slot->opt.ring_channels = opt.ring_channels;
      if (opt.ring_baseline) {
        const uint32_t n = w.plan.world_size;
        for (const auto& o : dep.workers) {
          if (o.plan.job_id != w.plan.job_id) continue;
          if (o.plan.rank == (w.plan.rank + n - 1) % n) slot->peers.left = o.plan.local_mac;
          if (o.plan.rank == (w.plan.rank + 1) % n) slot->peers.right = o.plan.local_mac;
        }
      }
      slots.push_back(std::move(slot));
    }
    // One runtime (one progress thread) serves every PANAMA worker: with the
    // PSwitch thread that is two busy threads, one per core of a small machine.
    if (!opt.ring_baseline) {
      runtime::RuntimeOptions ro;
      ro.idle_sleep_us = opt.idle_sleep_us;
      ro.idle_spin_us = idle_spin_us(opt);
      ro.streaming_copy_bytes = opt.streaming_copy_bytes;
      ro.zero_copy_send = opt.zero_copy_send;
      rt = runtime::Runtime::create(eal, ro);
    }
    for (auto& sp : slots) {
      WorkerSlot* s = sp.get();
      const bool ring = opt.ring_baseline;
      s->thread = std::thread([s, ring, eal, &rt] {
        pthread_setname_np(pthread_self(), ("worker-" + s->host).substr(0, 15).c_str());
        auto progress = [s](uint32_t it, uint64_t bytes) {
          s->iteration.store(it);
          s->bytes.store(bytes);
        };
        s->report = ring ? ring_iterations(s->opt, s->peers, eal, s->device, progress, &s->keep)
                         : worker_iterations(s->opt, rt.get(), s->device, progress);
        s->done.store(true);
      });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-cluster: %s\n", e.what());
    rc = 1;
  }

  // Progress, interruption, stall.
  bool interrupted = false, stalled = false;
  if (rc == 0) {
    const double total = size_bytes * opt.iterations * static_cast<double>(slots.size());
    const auto start = std::chrono::steady_clock::now();
    auto last_progress = start;
    double last_done = -1;
    for (;;) {
      bool running = false;
      double done_bytes = 0;
      for (const auto& s : slots) {
        running |= !s->done.load();
        done_bytes += s->iteration.load() * size_bytes + (s->done.load() ? 0.0 : double(s->bytes.load()));
      }
      const auto now = std::chrono::steady_clock::now();
      if (done_bytes != last_done) {
        last_done = done_bytes;
        last_progress = now;
      }
      if (opt.progress) {
        std::fprintf(stderr, "\r  progress %5.1f%%  %s of %s  %.1fs   ", 100.0 * done_bytes / total,
                     human_bytes(done_bytes).c_str(), human_bytes(total).c_str(),
                     std::chrono::duration<double>(now - start).count());
      }
      if (!running) break;
      if (g_interrupted.load()) {
        interrupted = true;
        break;
      }
      if (std::chrono::duration<double>(now - last_progress).count() > opt.stall_timeout_s) {
        stalled = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (opt.progress) std::fprintf(stderr, "\n");
  }
  if (interrupted) std::fprintf(stderr, "panama-cluster: interrupted, stopping\n");
  if (stalled)
    std::fprintf(stderr, "panama-cluster: no progress for %.0f s, stopping\n", opt.stall_timeout_s);
  if (!interrupted && !stalled) {
    for (auto& s : slots) {
      if (s->thread.joinable()) s->thread.join();
    }
  }
  stop_switches.store(true);
  for (auto& t : switch_threads) t.join();

  // Summary, in the same form as the multi-process cluster's.
  json summary = summary_header(opt, true);
  uint64_t mismatches = 0;
  uint32_t failed = 0;
  for (const auto& s : slots) {
    json r = s->done.load() && !s->report.is_null() ? s->report : partial_report(*s, interrupted);
    r["host"] = s->host;
    if (!r.value("ok", false)) {
      ++failed;
      if (!interrupted && !stalled)
        std::fprintf(stderr, "worker %s failed: %s\n", s->host.c_str(), r.value("error", "mismatch").c_str());
    }
    mismatches += r.value("mismatches", uint64_t{0});
    summary["workers"].push_back(r);
  }
  std::printf("\n== PANAMA virtual cluster summary (in-process) ==\n");
  report_jobs(opt, summary);
  std::vector<json> switch_counters;
  for (auto& sw : switches) switch_counters.push_back(sw->counters_json());
  report_switches(switch_counters, summary);
  const bool ok = report_result(opt, summary, rc == 0 && !interrupted && !stalled, failed, mismatches,
                                interrupted ? ", interrupted" : (stalled ? ", stalled" : ""));
  finish_run_dir(run, !opt.keep && (ok || interrupted), "panama-cluster");
  // The EAL is not torn down (below), so its runtime directory goes here.
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir, ec);
  std::fflush(stdout);
  std::fflush(stderr);
  // Worker threads may still run (interrupted, stalled) and the PSwitches
  // hold mbufs of the workers' pools: exit without tearing DPDK down.
  std::_Exit(interrupted ? 130 : (ok ? 0 : 1));
}

}  // namespace panama::cluster
