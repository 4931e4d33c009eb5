// Loss soak: many small allreduces through the real components, in one
// process, under seeded loss, duplication and reordering.
//
// The fabric is what panama-cluster deploys (the controller plans it from
// the same built-in descriptions): every PSwitch is the engine model
// (DefaultEngine) programmed with apply_node_config plus the software
// PSwitch's SwitchCore; every worker is an unmodified AllreduceCore. Links
// are events in virtual time with a fixed delay. Impairment is the software
// PSwitch's FaultInjector on each PSwitch port, on both directions of its
// link, with the seeds panama-pswitch derives, so the faults are those of a
// virtual cluster with the same port_defaults.
//
// Every allreduce: all workers start it at once with tensors whose sum is
// exact in any order (cluster/test_data.hpp); it ends when no worker has it
// pending. It is completed when every worker got the reference sum bit for
// bit, wrong when a worker finished with other bits, failed when a worker
// failed it (retry budget) or nothing happened for a virtual minute. After a
// failure the fabric is rebuilt (fresh engines and cores), as a job restart.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "panama/cluster/test_data.hpp"
#include "panama/controller/controller.hpp"
#include "panama/engine.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/pswitch/fault_injector.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/wire.hpp"

using namespace panama;

namespace {

struct Options {
  uint64_t allreduces = 100000;
  std::string topology = "both";
  uint32_t workers_single = 4;
  uint32_t workers_two_tier = 8;
  uint32_t trees = 2;
  double loss = 0.01, dup = 0.01, reorder = 0.01;
  uint64_t seed = 1;
  std::vector<uint32_t> sizes = {1, 7, 64, 200, 333};
  uint32_t elems_per_packet = 64;
  uint64_t link_delay_ns = 2000;
  double progress_s = 10;
};

// A frame in flight; FaultInjector handles are pointers to these (null = none).
struct Packet {
  std::vector<uint8_t> bytes;
};

// Where a link delivers: a PSwitch port, or a worker.
struct Endpoint {
  int sw = -1;         // PSwitch index, or -1 for a worker
  uint32_t index = 0;  // port of the PSwitch, or the worker
};

struct Event {
  uint64_t at_ns;
  uint64_t order;  // FIFO among equal times
  Endpoint to;
  Packet* pkt;
  bool operator>(const Event& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : order > o.order; }
};

using Injector = pswitch::FaultInjector<Packet*>;

struct Port {
  Endpoint peer;
  std::unique_ptr<Injector> tx, rx;
};

struct PSwitch {
  std::unique_ptr<DefaultEngine> engine;
  pswitch::PswitchSettings settings;
  std::unique_ptr<pswitch::SwitchCore<DefaultEngine>> core;
  std::vector<Port> ports;
};

struct Worker {
  std::unique_ptr<runtime::AllreduceCore> core;
  Endpoint uplink;  // its leaf's port
  std::vector<float> data;
  runtime::OpId op = 0;
};

struct Totals {
  uint64_t completed = 0, wrong = 0, failed = 0, restarts = 0;
  uint64_t lost = 0, duplicated = 0, reordered = 0;
  uint64_t retransmissions = 0, duplicate_results = 0, engine_drops = 0, frames = 0;
  uint64_t virtual_ns = 0;
  std::string first_failure;
};

class Fabric {
 public:
  Fabric(const controller::ClusterDesc& cluster, const controller::JobsDesc& jobs, const Options& o)
      : opt_(o) {
    const controller::Deployment dep = controller::plan_deployment(cluster, jobs);
    std::map<std::string, int> switch_of, worker_of;
    for (size_t s = 0; s < dep.switches.size(); ++s)
      switch_of[dep.switches[s].node.node] = static_cast<int>(s);
    for (size_t w = 0; w < dep.workers.size(); ++w) worker_of[dep.workers[w].host] = static_cast<int>(w);

    for (const controller::SwitchOutput& so : dep.switches) {
      auto p = std::make_unique<PSwitch>();
      p->engine = std::make_unique<DefaultEngine>();
      p->settings = so.settings;
      EngineRegisters<DefaultEngine> regs(*p->engine);
      config::apply_node_config(regs, so.node);
      p->core = std::make_unique<pswitch::SwitchCore<DefaultEngine>>(p->settings, *p->engine);
      const pswitch::PswitchSettings& s = p->settings;
      for (size_t i = 0; i < s.ports.size(); ++i) {
        const pswitch::PortSettings& ps = s.ports[i];
        const pswitch::FaultConfig fc{ps.loss, ps.dup, ps.reorder};
        Port port;
        // The seeds panama-pswitch uses for a port's two directions.
        port.tx = std::make_unique<Injector>(fc, s.seed * 0x9E3779B97F4A7C15ull + 2 * i);
        port.rx = std::make_unique<Injector>(fc, s.seed * 0x9E3779B97F4A7C15ull + 2 * i + 1);
        p->ports.push_back(std::move(port));
      }
      switches_.push_back(std::move(p));
    }
    // Wire the ports: a port named after a host leads to that worker, one
    // named after a PSwitch to the port of that PSwitch named after this one.
    for (size_t s = 0; s < switches_.size(); ++s) {
      PSwitch& p = *switches_[s];
      for (size_t i = 0; i < p.ports.size(); ++i) {
        const std::string& n = p.settings.ports[i].name;
        if (auto w = worker_of.find(n); w != worker_of.end()) {
          p.ports[i].peer = Endpoint{-1, static_cast<uint32_t>(w->second)};
        } else {
          const int o = switch_of.at(n);
          p.ports[i].peer =
              Endpoint{o, static_cast<uint32_t>(switches_[o]->settings.port_index(p.settings.name))};
        }
      }
    }
    workers_.resize(dep.workers.size());
    for (size_t w = 0; w < dep.workers.size(); ++w) {
      workers_[w].core = std::make_unique<runtime::AllreduceCore>(dep.workers[w].plan);
      for (size_t s = 0; s < switches_.size(); ++s) {
        const int port = switches_[s]->settings.port_index(dep.workers[w].host);
        if (port >= 0) workers_[w].uplink = Endpoint{static_cast<int>(s), static_cast<uint32_t>(port)};
      }
    }
  }

  ~Fabric() {
    while (!events_.empty()) {
      delete events_.top().pkt;
      events_.pop();
    }
    // A frame an injector still holds is released by a forced flush.
    for (auto& s : switches_) {
      for (Port& p : s->ports) {
        p.tx->flush(
            0, [](Packet* k) { delete k; }, true);
        p.rx->flush(
            0, [](Packet* k) { delete k; }, true);
      }
    }
  }

  size_t workers() const { return workers_.size(); }

  // Runs allreduce number `iteration` of `n` floats on every worker.
  // Returns 0 completed, 1 wrong, 2 failed.
  int allreduce(uint32_t iteration, size_t n, std::string& why) {
    const uint32_t world = static_cast<uint32_t>(workers_.size());
    for (uint32_t r = 0; r < world; ++r) {
      Worker& w = workers_[r];
      w.data.resize(n);
      cluster::fill_tensor(w.data.data(), n, opt_.seed, iteration, r);
      w.op = w.core->start(w.data.data(), n, now_);
    }
    const uint64_t deadline = now_ + 60'000'000'000ull;
    for (;;) {
      bool pending = false;
      for (Worker& w : workers_) pending = pending || w.core->status(w.op) == runtime::OpStatus::kPending;
      if (!pending) break;
      if (now_ > deadline) {
        why = fmt::format("allreduce {} made no progress for a virtual minute", iteration);
        return 2;
      }
      step();
    }
    std::vector<float> ref(n);
    cluster::reference_sum(ref.data(), n, opt_.seed, iteration, world);
    int result = 0;
    for (uint32_t r = 0; r < world; ++r) {
      Worker& w = workers_[r];
      const runtime::OpStatus st = w.core->status(w.op);
      if (st == runtime::OpStatus::kFailed) {
        if (why.empty()) why = fmt::format("rank {}: {}", r, w.core->op_error(w.op));
        result = 2;
      } else if (result == 0 && cluster::count_mismatches(w.data.data(), ref.data(), n, nullptr) != 0) {
        why = fmt::format("rank {}: allreduce {} of {} floats has wrong bits", r, iteration, n);
        result = 1;
      }
      w.core->release(w.op);
    }
    return result;
  }

  void add_counters(Totals& t) const {
    for (const auto& s : switches_) {
      for (const Port& p : s->ports) {
        for (const Injector* inj : {p.tx.get(), p.rx.get()}) {
          t.lost += inj->counters().lost;
          t.duplicated += inj->counters().duplicated;
          t.reordered += inj->counters().reordered;
        }
      }
      t.engine_drops += s->core->counters().engine_drops;
    }
    for (const Worker& w : workers_) {
      const runtime::CommStats st = w.core->stats();
      t.retransmissions += st.retransmissions;
      t.duplicate_results += st.duplicate_results;
    }
    t.frames += frames_;
    t.virtual_ns += now_;
  }

 private:
  // Advances virtual time to the next thing that happens and handles it.
  void step() {
    uint64_t next = now_ + opt_.link_delay_ns * 25;  // held frames are released after hold_ns (50 us)
    if (!events_.empty()) next = std::min(next, events_.top().at_ns);
    for (const Worker& w : workers_) next = std::min(next, w.core->next_timer_ns());
    now_ = std::max(now_, next);
    while (!events_.empty() && events_.top().at_ns <= now_) {
      const Event e = events_.top();
      events_.pop();
      arrive(e.to, e.pkt);
    }
    for (size_t s = 0; s < switches_.size(); ++s) {
      for (size_t i = 0; i < switches_[s]->ports.size(); ++i) {
        Port& p = switches_[s]->ports[i];
        Packet* held = nullptr;
        p.rx->flush(now_, [&](Packet* k) { held = k; });
        if (held) to_switch(static_cast<int>(s), static_cast<uint32_t>(i), held);
        p.tx->flush(now_, [&](Packet* k) { schedule(p.peer, k); });
      }
    }
    for (size_t w = 0; w < workers_.size(); ++w) poll_worker(w);
  }

  void schedule(Endpoint to, Packet* k) { events_.push(Event{now_ + opt_.link_delay_ns, order_++, to, k}); }

  void arrive(Endpoint to, Packet* k) {
    ++frames_;
    if (to.sw < 0) {
      Worker& w = workers_[to.index];
      w.core->on_frame(k->bytes.data(), static_cast<uint32_t>(k->bytes.size()), now_);
      delete k;
      poll_worker(to.index);
      return;
    }
    // The injector may still copy a frame after handing it out (a duplicate
    // that follows it), so frames are processed once send() has returned.
    std::vector<Packet*> admitted;
    switches_[to.sw]->ports[to.index].rx->send(
        k, now_, [&](Packet* a) { admitted.push_back(a); }, clone, release);
    for (Packet* a : admitted) to_switch(to.sw, to.index, a);
  }

  void to_switch(int s, uint32_t port, Packet* k) {
    PSwitch& p = *switches_[s];
    PortEmitFn out([&](uint32_t out_port, const uint8_t* d, uint32_t n) {
      Port& o = p.ports[out_port];
      o.tx->send(
          new Packet{std::vector<uint8_t>(d, d + n)}, now_, [&](Packet* a) { schedule(o.peer, a); }, clone,
          release);
    });
    p.core->on_frame(port, k->bytes.data(), static_cast<uint32_t>(k->bytes.size()), out);
    delete k;
  }

  void poll_worker(size_t index) {
    Worker& w = workers_[index];
    if (!w.core->can_send() && w.core->next_timer_ns() > now_) return;
    out_.frames.clear();
    w.core->poll(now_, out_, 256);
    for (auto& f : out_.frames) schedule(w.uplink, new Packet{std::move(f)});
  }

  static Packet* clone(Packet* k) { return new Packet{k->bytes}; }
  static void release(Packet* k) { delete k; }

  const Options& opt_;
  std::vector<std::unique_ptr<PSwitch>> switches_;
  std::vector<Worker> workers_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  runtime::VectorFrameOut out_;
  uint64_t now_ = 0;
  uint64_t order_ = 0;
  uint64_t frames_ = 0;
};

Totals soak(const std::string& topology, const Options& o) {
  const bool two_tier = topology == "two-tier";
  const uint32_t workers = two_tier ? o.workers_two_tier : o.workers_single;
  nlohmann::json cj = two_tier ? controller::two_tier_cluster(workers, 2, 2, 10.0)
                               : controller::single_switch_cluster(workers, 10.0);
  cj["port_defaults"] = {{"loss", o.loss}, {"dup", o.dup}, {"reorder", o.reorder}, {"seed", o.seed}};
  const controller::ClusterDesc cluster = controller::parse_cluster(cj);
  controller::JobsDesc jobs;
  controller::JobDesc job;
  job.id = 1;
  job.trees = o.trees;
  for (uint32_t w = 0; w < workers; ++w) job.workers.push_back("w" + std::to_string(w));
  jobs.jobs.push_back(job);
  jobs.elems_per_packet = o.elems_per_packet;

  fmt::print(
      "{}: {} workers, {} trees, {} allreduces of {} floats in turn, {} floats per packet; "
      "per PSwitch port and direction: loss {}, duplication {}, reordering {}; seed {}\n",
      topology, workers, o.trees, o.allreduces, fmt::join(o.sizes, "/"), o.elems_per_packet, o.loss, o.dup,
      o.reorder, o.seed);
  std::fflush(stdout);

  Totals t;
  auto fabric = std::make_unique<Fabric>(cluster, jobs, o);
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (uint64_t i = 0; i < o.allreduces; ++i) {
    std::string why;
    const int r = fabric->allreduce(static_cast<uint32_t>(i), o.sizes[i % o.sizes.size()], why);
    if (r == 0) ++t.completed;
    if (r == 1) ++t.wrong;
    if (r == 2) ++t.failed;
    if (r != 0) {
      if (t.first_failure.empty()) t.first_failure = fmt::format("allreduce {}: {}", i, why);
      fmt::print(stderr, "{}: allreduce {}: {}\n", topology, i, why);
    }
    if (r == 2) {  // the communicator is dead: restart the job on a fresh fabric
      fabric->add_counters(t);
      fabric = std::make_unique<Fabric>(cluster, jobs, o);
      ++t.restarts;
    }
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last).count() >= o.progress_s || i + 1 == o.allreduces) {
      last = now;
      fmt::print(stderr, "{}: {}/{} done: completed {} wrong {} failed {} ({:.0f} s)\n", topology, i + 1,
                 o.allreduces, t.completed, t.wrong, t.failed,
                 std::chrono::duration<double>(now - start).count());
    }
  }
  fabric->add_counters(t);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: completed {} wrong {} failed {} (restarts {})\n", topology, t.completed, t.wrong, t.failed,
             t.restarts);
  fmt::print(
      "{}: faults injected: {} lost, {} duplicated, {} reordered of {} frames delivered; "
      "{} retransmissions, {} duplicate results, {} engine drops\n",
      topology, t.lost, t.duplicated, t.reordered, t.frames, t.retransmissions, t.duplicate_results,
      t.engine_drops);
  fmt::print("{}: {:.1f} s wall, {:.0f} allreduces/s, {:.1f} s virtual time\n", topology, secs,
             static_cast<double>(o.allreduces) / secs, static_cast<double>(t.virtual_ns) * 1e-9);
  if (!t.first_failure.empty()) fmt::print("{}: first problem: {}\n", topology, t.first_failure);
  std::fflush(stdout);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Loss soak: allreduces through AllreduceCore workers and engine-model PSwitches, in one "
      "process, under seeded loss, duplication and reordering. Prints completed / wrong / failed."};
  app.add_option("--allreduces", o.allreduces, "allreduces per topology")->capture_default_str();
  app.add_option("--topology", o.topology, "single, two-tier or both")
      ->check(CLI::IsMember({"single", "two-tier", "both"}))
      ->capture_default_str();
  app.add_option("--workers-single", o.workers_single, "workers on the single PSwitch")
      ->capture_default_str();
  app.add_option("--workers-two-tier", o.workers_two_tier, "workers on 2 leaves under 2 spines")
      ->capture_default_str();
  app.add_option("--trees", o.trees, "aggregation trees of the job")->capture_default_str();
  app.add_option("--loss", o.loss, "loss probability per PSwitch port and direction")->capture_default_str();
  app.add_option("--dup", o.dup, "duplication probability")->capture_default_str();
  app.add_option("--reorder", o.reorder, "reordering probability")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the faults and the tensors")->capture_default_str();
  app.add_option("--sizes", o.sizes, "allreduce sizes in floats, used in turn")->capture_default_str();
  app.add_option("--elems-per-packet", o.elems_per_packet, "floats per packet")->capture_default_str();
  app.add_option("--progress", o.progress_s, "seconds between progress lines (stderr)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (o.sizes.empty()) {
    fmt::print(stderr, "--sizes: at least one size is needed\n");
    return 2;
  }
  try {
    bool clean = true;
    for (const char* t : {"single", "two-tier"}) {
      if (o.topology != "both" && o.topology != t) continue;
      const Totals r = soak(t, o);
      clean = clean && r.wrong == 0 && r.failed == 0;
    }
    return clean ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "panama-bench-soak: {}\n", e.what());
    return 2;
  }
}
