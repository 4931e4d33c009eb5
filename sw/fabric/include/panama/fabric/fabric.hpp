// An in-memory fabric: PSwitches and workers in one process on a virtual
// clock, for the tests and benchmarks that run whole allreduces through the
// real components (the loss soak, the protocol core's scenario tests, the
// two-tier recovery test, the allreduce core's fuzzer). Production programs
// never link it.
//
// Every PSwitch is what panama-pswitch runs, without DPDK: an engine backend
// (the C++ model by default) programmed with its node configuration through
// the register map (apply_node_config), the switch logic around it
// (SwitchCore) and a FaultInjector on each port for each direction, seeded
// as panama-pswitch seeds them, so the faults of a port's `loss`, `dup` and
// `reorder` settings are those of a virtual cluster. Every worker is an
// unmodified AllreduceCore. Ports are wired by name, as the controller names
// them: a port named after a host leads to that worker, one named after a
// PSwitch to that PSwitch's port named after this one.
//
// A frame on a link arrives link_delay_ns later (plus a random jitter up to
// link_jitter_ns, which reorders); frames due at the same time arrive in the
// order they were sent. A worker sending with zero-copy (Options::zero_copy)
// keeps its payload in its buffer, holding a reference on it, until the
// engine has read it where it lies (SwitchCore::on_frame_parts) or the frame
// is lost, as over net_ring.
//
// Hooks let a test watch and change what happens: see Fabric's members.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "panama/config/node_config.hpp"
#include "panama/emit_target.hpp"
#include "panama/engine/backend.hpp"
#include "panama/pswitch/fault_injector.hpp"
#include "panama/pswitch/settings.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "panama/runtime/allreduce_core.hpp"

namespace panama::fabric {

using Frame = std::vector<uint8_t>;

// One PSwitch: its engine's table and its own section (the controller's
// SwitchOutput).
struct SwitchSpec {
  config::NodeConfig node;
  pswitch::PswitchSettings settings;
};

// One worker: the host name its switch port carries, and its plan.
struct WorkerSpec {
  std::string host;
  runtime::Plan plan;
};

struct Topology {
  std::vector<SwitchSpec> switches;
  std::vector<WorkerSpec> workers;
};

// One PSwitch at the root of every tree the plans name (one job): port r
// leads to worker r (host "w<r>"), each tree is an engine entry of fan-in
// plans.size() that admits each worker's child id for it, with
// `slots_per_tree` slots of its own; results go to every worker.
Topology one_switch_topology(const std::vector<runtime::Plan>& plans, uint32_t slots_per_tree);

// An end of a link: a PSwitch's port, or a worker.
struct Endpoint {
  int sw = -1;         // PSwitch index; -1: a worker
  uint32_t index = 0;  // the port of that PSwitch, or the worker

  static Endpoint worker(uint32_t w) { return Endpoint{-1, w}; }
  static Endpoint port(uint32_t s, uint32_t p) { return Endpoint{static_cast<int>(s), p}; }
  bool is_worker() const { return sw < 0; }
};

struct Options {
  // The engine behind every PSwitch; default: the "model" backend.
  std::function<std::unique_ptr<EngineBackend>()> make_engine;
  uint64_t link_delay_ns = 2000;
  uint64_t link_jitter_ns = 0;
  // step() moves time on by at least min_step_ns (0: to the next event).
  uint64_t min_step_ns = 0;
  // Frames a worker may send per poll, and whether each poll instead gets a
  // random budget up to that and a transmit path full after a random 1..16
  // frames (the core's handling of a path that refuses frames).
  uint32_t poll_budget = 256;
  bool random_poll = false;
  // Every worker sends payloads from its buffer (AllreduceCore::set_zero_copy_send).
  bool zero_copy = false;
  // What the workers' frame output says about who reads the frames next
  // (VectorFrameOut::elsewhere: streaming stores into frames).
  bool frames_read_elsewhere = false;
  uint64_t seed = 1;  // jitter and random polls
};

class Fabric {
 public:
  explicit Fabric(const Topology& topology, Options options = Options{});
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // One step: everything due now happens (arrivals, held frames released),
  // every worker polls, what that sends over
  // zero-delay links arrives; then time moves on to the next thing that
  // happens (an arrival, a held frame's release, a worker's timer), by at
  // least min_step_ns and at most max_advance_ns.
  void step(uint64_t max_advance_ns = UINT64_MAX);
  uint64_t now() const { return now_; }
  // Nothing on a link and nothing held back by an injector.
  bool idle() const;

  // ------------------------------------------------------------ nodes
  size_t worker_count() const { return workers_.size(); }
  runtime::AllreduceCore& worker(size_t w) { return *workers_[w].core; }
  const runtime::AllreduceCore& worker(size_t w) const { return *workers_[w].core; }
  const std::string& host(size_t w) const { return workers_[w].host; }
  // The PSwitch port a worker's link leads to.
  Endpoint uplink(size_t w) const { return workers_[w].uplink; }
  size_t switch_count() const { return switches_.size(); }
  const pswitch::PswitchSettings& settings(size_t s) const;
  EngineBackend& engine(size_t s);
  const pswitch::SwitchCore<EngineBackend>& core(size_t s) const;
  // -1 when there is no such node.
  int switch_index(const std::string& name) const;
  int worker_index(const std::string& host) const;
  // The node at an end: the PSwitch's name or the worker's host.
  const std::string& name(Endpoint e) const;

  // ------------------------------------------------------------ faults
  // Replaces the faults of a PSwitch port: `rx` on what it receives, `tx` on
  // what it sends (the same seeds as before).
  void set_port_faults(size_t s, uint32_t port, const pswitch::FaultConfig& rx,
                       const pswitch::FaultConfig& tx);
  // Every injector's counters added up.
  pswitch::FaultCounters fault_counters() const;
  uint64_t frames_delivered() const { return delivered_; }

  // ------------------------------------------------------------ hooks
  // Every frame a worker sends (whole, before any fault).
  std::function<void(uint32_t worker, const Frame& frame)> on_worker_send;
  // Every frame as it arrives at a node (a PSwitch after its port's receive
  // faults), from the sending end: may change the bytes (a zero-copy frame's
  // are its 64 header bytes, the payload lies in the worker's buffer);
  // false: the frame is lost.
  std::function<bool(Endpoint from, Endpoint to, Frame& bytes)> on_arrival;
  // Every emission of a PSwitch, once (a replicated result once for all its
  // ports), before its copies leave: may change the bytes.
  std::function<void(uint32_t sw, Frame& frame, Ports to)> on_switch_emit;
  // Hands a frame that arrived to a worker; default: its core's on_frame.
  std::function<void(uint32_t worker, const Frame& frame)> deliver;

  // ------------------------------------------------------------ frames
  // Puts a frame on the link from `from` into `to`, arriving after `delay_ns`.
  void inject(Endpoint from, Endpoint to, Frame frame, uint64_t delay_ns);
  // Takes the frames on links for which `pred(to, bytes)` holds off their
  // links (they are lost); returns how many. Frames an injector holds back
  // are not on a link.
  size_t erase_in_flight(const std::function<bool(Endpoint to, const Frame& bytes)>& pred);
  // Frames on links or held back whose attached payload lies in [p, p + bytes).
  size_t frames_referencing(const void* p, size_t bytes) const;

 private:
  struct Packet;
  using Injector = pswitch::FaultInjector<Packet*>;
  struct Port;
  struct Switch;
  struct Worker {
    std::string host;
    std::unique_ptr<runtime::AllreduceCore> core;
    Endpoint uplink;
  };
  struct Event {
    uint64_t at_ns;
    uint64_t order;  // FIFO among equal times
    Endpoint from, to;
    Packet* pkt;
  };
  class SwitchOut;

  void settle();
  void poll_worker(uint32_t w);
  void advance(uint64_t max_advance_ns);
  void schedule(Endpoint from, Endpoint to, Packet* k, uint64_t delay_ns);
  void arrive(const Event& e);
  void to_switch(uint32_t s, uint32_t port, Packet* k);
  void send_port(uint32_t s, uint32_t port, Packet* k);
  bool flush_held(bool force);
  static Packet* clone(Packet* k);
  static void release(Packet* k);

  Options opt_;
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<Worker> workers_;
  std::vector<Event> events_;  // a min-heap on (at_ns, order)
  runtime::VectorFrameOut out_;
  std::mt19937_64 rng_;
  uint64_t now_ = 0;
  uint64_t order_ = 0;
  uint64_t delivered_ = 0;
};

}  // namespace panama::fabric
