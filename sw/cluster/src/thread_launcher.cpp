// The thread launcher of ClusterRun (cluster_run.hpp), --nodes threads: the
// same plan, PSwitches, workers, checks and summary as the process
// launcher's, with every node a thread of this process and every link a
// net_ring pair instead of a memif socket pair. A frame then crosses a link
// as an mbuf pointer (memif copies it into and out of shared memory), one
// runtime progress thread serves every PANAMA worker, and the nodes switch
// between threads of one process rather than between processes.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include "panama/cluster/cluster_run.hpp"
#include "panama/cluster/ring_baseline.hpp"
#include "panama/cluster/worker.hpp"
#include "panama/pswitch/software_pswitch.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/idle_backoff.hpp"
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

// A PSwitch thread: running, frozen (--fail-switch NAME:STOP: it stops
// forwarding, its links stay up and their rings fill, as a SIGSTOPped
// process's memif rings do) or ended for good (KILL).
enum SwitchState : int { kRunning, kFrozen, kEnded };

struct SwitchSlot {
  std::unique_ptr<pswitch::SoftwarePswitch> sw;
  std::atomic<int> state{kRunning};
  std::atomic<bool> failed{false};        // its loop threw (not failed on purpose)
  std::atomic<uint64_t> last_work_ns{0};  // when a poll last handled a frame
  std::string error;                      // what it threw, once `failed`
  std::thread thread;
};

struct WorkerSlot {
  WorkerOptions opt;
  std::string host;
  std::vector<std::string> devices;  // its ports in the shared EAL, one per uplink
  RingPeers peers;
  std::atomic<uint32_t> iteration{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> done{false};
  json report;
  std::shared_ptr<void> keep;
  std::thread thread;
};

class ThreadLauncher final : public NodeLauncher {
 public:
  std::string description() const override { return "all nodes threads of this process (net_ring)"; }
  std::string summary_title() const override { return " (in-process)"; }

  // A PSwitch that workers are linked to, when it is frozen or ended, keeps
  // the frames in its rings; a worker sending zero-copy could not finish an
  // allreduce while one of its frames still references its buffer, so such
  // runs copy payloads into frames instead.
  void check(const PlannedRun& run, ClusterOptions& opt) override {
    if (opt.fail_switch.empty() || !opt.zero_copy_send || opt.ring_baseline) return;
    for (const auto& s : run.dep.switches) {
      if (s.node.node != opt.fail_switch) continue;
      for (const auto& p : s.settings.ports) {
        for (const auto& w : run.dep.workers) {
          if (p.name != w.host) continue;
          std::fprintf(stderr,
                       "panama-cluster: workers copy payloads into frames (no zero-copy send): --fail-switch "
                       "%s stops a PSwitch they are linked to, whose rings would keep frames that reference "
                       "their buffers\n",
                       opt.fail_switch.c_str());
          opt.zero_copy_send = false;
          return;
        }
      }
    }
  }

  void start(const PlannedRun& run, const ClusterOptions& opt, std::vector<WorkerStatus>& workers) override {
    const controller::Deployment& dep = run.dep;
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    // One EAL for every node; memory for every port's mempool (PSwitch
    // ports 4095 mbufs, worker ports 2047, 9216-byte frames).
    size_t switch_ports = 0, worker_ports = 0;
    for (const auto& s : dep.switches) switch_ports += s.settings.ports.size();
    for (const auto& w : dep.workers) worker_ports += std::max<size_t>(1, w.vdevs.size());
    const unsigned memory_mb = static_cast<unsigned>(128 + 40 * switch_ports + 24 * worker_ports);
    const std::string prefix = "panama-cluster-" + std::to_string(getpid());
    runtime_dir_ = "/var/run/dpdk/" + prefix;
    eal_ = runtime::DpdkEal::initialize(node_eal_args({}, memory_mb, prefix));
    // Every memif socket pair of the plan becomes a net_ring pair.
    std::map<std::string, std::pair<std::string, std::string>> links;  // socket -> (server, client) port
    auto port_of = [&](const std::string& vdev) {
      const auto [sock, server] = memif_end(vdev);
      auto it = links.find(sock);
      if (it == links.end()) {
        const std::string k = "l" + std::to_string(links.size());
        it = links.emplace(sock, eal_->create_ring_pair(k + "s", k + "c")).first;
      }
      return server ? it->second.first : it->second.second;
    };
    const runtime::IdlePolicy poll = idle_policy(opt);
    for (const auto& s : dep.switches) {
      std::vector<std::string> devices;
      for (const auto& p : s.settings.ports) devices.push_back(port_of(p.vdev));
      auto slot = std::make_unique<SwitchSlot>();
      slot->sw = std::make_unique<pswitch::SoftwarePswitch>(s.node, eal_, devices);
      switches_.push_back(std::move(slot));
    }
    for (auto& sp : switches_) {
      SwitchSlot* s = sp.get();
      s->thread = std::thread([this, s, poll] { run_switch(*s, poll); });
    }
    for (const auto& w : dep.workers) {
      auto slot = std::make_unique<WorkerSlot>();
      slot->host = w.host;
      for (const std::string& v : w.vdevs.empty() ? std::vector<std::string>{w.vdev} : w.vdevs)
        slot->devices.push_back(port_of(v));
      slot->opt.plan_path = run.run_dir + "/" + w.host + ".plan.json";
      slot->opt.seed = opt.seed;
      slot->opt.elems = opt.elems;
      slot->opt.iterations = opt.iterations;
      slot->opt.idle = poll;
      slot->opt.ring_channels = opt.ring_channels;
      slot->opt.dtype = opt.dtype;
      if (!opt.ring_baseline) slot->opt.leaf_of_rank = leaf_of_rank(dep, w.plan.job_id);
      if (opt.ring_baseline) {
        const uint32_t n = w.plan.world_size;
        for (const auto& o : dep.workers) {
          if (o.plan.job_id != w.plan.job_id) continue;
          if (o.plan.rank == (w.plan.rank + n - 1) % n) slot->peers.left = o.plan.local_mac;
          if (o.plan.rank == (w.plan.rank + 1) % n) slot->peers.right = o.plan.local_mac;
        }
      }
      WorkerStatus ws;
      ws.host = w.host;
      ws.job = w.plan.job_id;
      ws.rank = w.plan.rank;
      workers.push_back(ws);
      slots_.push_back(std::move(slot));
    }
    // One runtime (one progress thread) serves every PANAMA worker: with the
    // PSwitch thread that is two busy threads, one per core of a small machine.
    if (!opt.ring_baseline) {
      runtime::RuntimeOptions ro;
      ro.idle = poll;
      ro.streaming_copy_bytes = opt.streaming_copy_bytes;
      ro.zero_copy_send = opt.zero_copy_send;
      rt_ = runtime::Runtime::create(eal_, ro);
    }
    for (auto& sp : slots_) {
      WorkerSlot* s = sp.get();
      const bool ring = opt.ring_baseline;
      s->thread = std::thread([this, s, ring] {
        pthread_setname_np(pthread_self(), ("worker-" + s->host).substr(0, 15).c_str());
        auto progress = [s](uint32_t it, uint64_t bytes) {
          s->iteration.store(it);
          s->bytes.store(bytes);
        };
        s->report = ring ? ring_iterations(s->opt, s->peers, eal_, s->devices[0], progress, &s->keep)
                         : worker_iterations(s->opt, rt_.get(), s->devices, progress);
        s->done.store(true);
      });
    }
  }

  void poll(int timeout_ms, std::vector<WorkerStatus>& workers) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    update(workers);
  }

  std::string switch_failure() override {
    for (const auto& s : switches_) {
      if (s->failed.load()) return s->sw->name() + " failed: " + s->error;
    }
    return {};
  }

  bool interrupted() const override { return g_interrupted.load(); }

  std::string fail_switch(const std::string& name, FailMode how) override {
    for (auto& s : switches_) {
      if (s->sw->name() != name || s->state.load() != kRunning) continue;
      s->state.store(how == FailMode::kKill ? kEnded : kFrozen);
      return "PSwitch " + name +
             (how == FailMode::kKill ? "'s thread ended for good (KILL)"
                                     : "'s thread frozen (STOP): it stops forwarding");
    }
    return {};
  }

  void stop(bool finished, std::vector<WorkerStatus>& workers) override {
    // Worker threads of a run cut short may still run: they are left to
    // exit_code()'s _Exit.
    if (finished) {
      for (auto& s : slots_) {
        if (s->thread.joinable()) s->thread.join();
      }
      drain_switches();
    }
    stop_switches_.store(true);
    for (auto& s : switches_) {
      if (s->thread.joinable()) s->thread.join();
    }
    update(workers);
  }

  std::vector<json> switch_counters(const PlannedRun&) override {
    std::vector<json> out;
    for (auto& s : switches_) out.push_back(s->sw->counters_json());
    return out;
  }

  // The EAL is not torn down: worker threads may still run (interrupted,
  // stalled) and the PSwitches hold mbufs of the workers' pools. So its
  // runtime directory goes here and the process exits without running
  // DPDK's destructors.
  int exit_code(int code) override {
    std::error_code ec;
    if (!runtime_dir_.empty()) std::filesystem::remove_all(runtime_dir_, ec);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
  }

 private:
  void run_switch(SwitchSlot& s, const runtime::IdlePolicy& poll) {
    pthread_setname_np(pthread_self(), ("pswitch-" + s.sw->name()).substr(0, 15).c_str());
    const runtime::EalThreadScope lcore;  // per-lcore mempool caches for this thread
    runtime::IdleBackoff backoff(poll.backoff());
    try {
      while (!stop_switches_.load(std::memory_order_relaxed)) {
        const int state = s.state.load(std::memory_order_relaxed);
        if (state == kRunning) {
          const uint64_t now = pswitch::SoftwarePswitch::now_ns();
          const uint32_t n = s.sw->poll(now);
          if (n > 0) s.last_work_ns.store(now, std::memory_order_relaxed);
          backoff.after_poll(n);
        } else if (state == kEnded) {
          return;  // its rings are never read again
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // frozen
        }
      }
    } catch (const std::exception& e) {
      s.error = e.what();
      s.failed.store(true);
    }
  }

  // What the workers sent last (a pooled job's final release, results on
  // their way down) is still in the PSwitches' rings when the workers'
  // threads end. The switches keep running until none of the running ones
  // has handled a frame for 20 ms, one second at most, so the final
  // counters include it. A frame one switch forwards to another restarts
  // the other's quiet time.
  void drain_switches() {
    constexpr uint64_t kQuietNs = 20'000'000, kLimitNs = 1'000'000'000;
    const uint64_t start = pswitch::SoftwarePswitch::now_ns();
    for (;;) {
      const uint64_t now = pswitch::SoftwarePswitch::now_ns();
      bool quiet = true;
      for (const auto& s : switches_) {
        if (s->state.load() != kRunning || s->failed.load()) continue;
        const uint64_t last = s->last_work_ns.load(std::memory_order_relaxed);
        if (now < last + kQuietNs) quiet = false;
      }
      if (quiet || now - start >= kLimitNs) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  void update(std::vector<WorkerStatus>& workers) {
    for (size_t i = 0; i < slots_.size() && i < workers.size(); ++i) {
      WorkerSlot& s = *slots_[i];
      WorkerStatus& w = workers[i];
      const bool done = s.done.load();
      w.iteration = s.iteration.load();
      w.bytes = s.bytes.load();
      w.running = !done;
      if (done) w.report = s.report;
    }
  }

  std::shared_ptr<runtime::DpdkEal> eal_;
  std::unique_ptr<runtime::Runtime> rt_;
  std::vector<std::unique_ptr<SwitchSlot>> switches_;
  std::vector<std::unique_ptr<WorkerSlot>> slots_;
  std::atomic<bool> stop_switches_{false};
  std::string runtime_dir_;
};

}  // namespace

std::unique_ptr<NodeLauncher> make_thread_launcher() {
  return std::make_unique<ThreadLauncher>();
}

}  // namespace panama::cluster
