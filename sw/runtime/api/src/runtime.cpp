// The allreduce API: Runtime (EAL, ports, progress engine), Communicator,
// AllreduceHandle.
#include "panama/runtime/runtime.hpp"

#include <pthread.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "panama/runtime/idle_backoff.hpp"

namespace panama::runtime {
namespace detail {

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Frames the protocol core writes go straight into mbufs; they are sent in
// bursts. Frames the TX queue did not take stay queued for the next flush,
// and a full queue makes begin_frame fail, which the core treats as
// back-pressure (it sends them later).
class MbufOut : public FrameOut {
 public:
  static constexpr uint16_t kBurst = 64;
  explicit MbufOut(DpdkPort& port, RuntimeCounters& counters) : port_(port), counters_(counters) {}
  ~MbufOut() override { DpdkPort::free_bulk(pending_, n_); }

  uint8_t* begin_frame(uint32_t len) override {
    if (!room()) return nullptr;
    uint8_t* d = nullptr;
    cur_ = port_.alloc_frame(len, &d);
    return cur_ ? d : nullptr;
  }
  void end_frame(uint32_t) override { pending_[n_++] = cur_; }
  bool read_elsewhere() const override { return port_.tx_hands_over_mbufs(); }
  bool can_attach() const override { return port_.tx_can_attach(); }
  uint8_t* begin_frame_attached(const uint8_t* payload, uint32_t payload_len, BufferHold* hold) override {
    if (!room()) return nullptr;
    uint8_t* d = nullptr;
    hold->acquire();
    cur_ = port_.attach_frame(wire::kPayloadOffset, &d, payload, payload_len, &release_hold, hold);
    if (!cur_) hold->release();
    return cur_ ? d : nullptr;
  }
  // For UplinkOut: the frame just written, handed to another port's queue.
  rte_mbuf* take_current() { return cur_; }
  bool push(rte_mbuf* m) {
    if (!room()) return false;
    pending_[n_++] = m;
    return true;
  }

  // Runs on the thread that frees the frame's last reference (the reader's).
  static void release_hold(void*, void* opaque) { static_cast<BufferHold*>(opaque)->release(); }

  // A slot for one more frame, flushing first when the burst is full.
  bool room() { return n_ < kBurst || flush() > 0; }

  uint16_t flush() {
    if (n_ == 0) return 0;
    const uint16_t sent = port_.tx_burst(pending_, n_);
    counters_.tx_frames += sent;
    if (sent < n_) ++counters_.tx_busy;
    std::copy(pending_ + sent, pending_ + n_, pending_);
    n_ = static_cast<uint16_t>(n_ - sent);
    return sent;
  }

 private:
  DpdkPort& port_;
  RuntimeCounters& counters_;
  rte_mbuf* pending_[kBurst];
  uint16_t n_ = 0;
  rte_mbuf* cur_ = nullptr;
};

// A dual-homed worker's frames: written into an mbuf of its first port, then
// queued on the port of the tree's uplink (plan trees[].uplink), read from the
// frame's tree id. A full queue drops the frame (the core retransmits it).
class UplinkOut : public FrameOut {
 public:
  std::vector<MbufOut*> outs;  // per uplink
  uint8_t uplink_of_tree[256] = {};
  uint8_t* begin_frame(uint32_t len) override {
    data_ = outs[0]->begin_frame(len);
    return data_;
  }
  // The frame is written into the first port's mbuf and queued on either.
  bool read_elsewhere() const override {
    for (const MbufOut* o : outs) {
      if (!o->read_elsewhere()) return false;
    }
    return !outs.empty();
  }
  void end_frame(uint32_t) override {
    rte_mbuf* m = outs[0]->take_current();
    if (!outs[uplink_of_tree[data_[wire::kPanamaTreeId]]]->push(m)) DpdkPort::free_bulk(&m, 1);
  }

 private:
  uint8_t* data_ = nullptr;
};

struct PortState {
  std::unique_ptr<DpdkPort> port;
  std::string requested_name;
  std::vector<CommState*> comms;
  std::unique_ptr<MbufOut> out;
  std::vector<uint8_t> scratch;
};

struct CommState {
  std::shared_ptr<Shared> shared;
  AllreduceCore core;
  PortState* port = nullptr;
  std::vector<PortState*> uplinks;  // dual-homed: both ports (port == uplinks[0])
  std::unique_ptr<UplinkOut> uplink_out;
  std::string device;
  CommState(std::shared_ptr<Shared> s, const Plan& p, const RuntimeOptions& o)
      : shared(std::move(s)), core(p) {
    core.set_streaming_copy_bytes(o.streaming_copy_bytes);
    core.set_zero_copy_send(o.zero_copy_send);
  }
};

struct Shared {
  std::shared_ptr<DpdkEal> eal;
  RuntimeOptions options;
  mutable std::mutex mu;
  std::condition_variable done_cv;  // some allreduce finished
  std::condition_variable work_cv;  // an allreduce started, or stop
  std::vector<std::unique_ptr<PortState>> ports;
  RuntimeCounters counters;
  bool stop = false;
  std::thread thread;

  size_t pending_locked() const {
    size_t n = 0;
    for (const auto& p : ports) {
      for (const CommState* c : p->comms) n += c->core.pending_ops();
    }
    return n;
  }

  static constexpr uint16_t kRxBurst = 32;
  // Bursts one pass reads from a port at most (a bound on the pass, far
  // above what a ring holds between two passes).
  static constexpr uint32_t kMaxRxBurstsPerPass = 64;

  // One burst from `ps`: results to their communicators. Returns the frames read.
  uint16_t receive_burst(detail::PortState& ps, uint64_t now, bool& finished) {
    rte_mbuf* burst[kRxBurst];
    const uint16_t n = ps.port->rx_burst(burst, kRxBurst);
    counters.rx_frames += n;
    for (uint16_t i = 0; i < n; ++i) {
      uint32_t len = 0;
      const uint8_t* d =
          DpdkPort::frame_data(burst[i], ps.scratch.data(), static_cast<uint32_t>(ps.scratch.size()), &len);
      if (!d) {
        ++counters.rx_oversize;
        continue;
      }
      bool consumed = false;
      for (CommState* c : ps.comms) {
        const size_t before = c->core.pending_ops();
        if (c->core.on_frame(d, len, now)) {
          consumed = true;
          finished |= c->core.pending_ops() != before;
          break;
        }
      }
      if (consumed) {
        ++counters.rx_results;
      } else if (len > wire::kPanamaType && len >= wire::kPayloadOffset &&
                 d[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown)) {
        ++counters.rx_unknown_job;
      } else {
        ++counters.rx_other;
      }
    }
    DpdkPort::free_bulk(burst, n);
    return n;
  }

  // One pass: read every result waiting on every port, then let every
  // communicator send and handle its timers. Returns whether anything
  // happened. Lock held.
  //
  // The receive rings are drained before any timer is looked at: after this
  // thread was off the CPU for a while, the results of chunks whose timers
  // expired meanwhile may already wait in a ring, and only reading them
  // tells which chunks are really late (docs/cluster.md, "Timeouts"). Every
  // port is read first, so a dual-homed communicator has the results of
  // both its uplinks before its timers run.
  bool pass_locked() {
    bool did = false;
    bool finished = false;
    const uint64_t now = now_ns();
    for (auto& ps : ports) {
      for (uint32_t b = 0; b < kMaxRxBurstsPerPass; ++b) {
        const uint16_t n = receive_burst(*ps, now, finished);
        did |= n > 0;
        if (n < kRxBurst) break;  // the ring is empty
      }
    }
    // Timers and send times from after the reading, which may have taken a while.
    const uint64_t send_now = now_ns();
    for (auto& ps : ports) {
      for (CommState* c : ps->comms) {
        if (c->core.pending_ops() == 0 || c->port != ps.get())
          continue;  // dual-homed: once, from its first port
        const size_t before = c->core.pending_ops();
        did |= c->core.poll(send_now, c->uplink_out ? static_cast<FrameOut&>(*c->uplink_out) : *ps->out) > 0;
        finished |= c->core.pending_ops() != before;  // failed after its retry budget
      }
      did |= ps->out->flush() > 0;
    }
    if (finished) done_cv.notify_all();
    return did;
  }

  // Until `done()` holds or `until` passes (returns false then): woken by
  // the progress thread, or driving the passes itself without one. `lk`
  // holds `mu`.
  template <typename Pred>
  bool wait_until(std::unique_lock<std::mutex>& lk, std::chrono::steady_clock::time_point until, Pred done) {
    if (options.progress_thread) return done_cv.wait_until(lk, until, done);
    while (!done()) {
      if (std::chrono::steady_clock::now() >= until) return false;
      if (!pass_locked() && options.idle.max_sleep_us > 0) {
        lk.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(options.idle.max_sleep_us));
        lk.lock();
      }
    }
    return true;
  }

  void run() {
    IdleBackoff backoff(options.idle.backoff());
    std::unique_lock<std::mutex> lk(mu);
    while (!stop) {
      if (pending_locked() == 0) {
        work_cv.wait(lk);
        continue;
      }
      const bool did = pass_locked();
      lk.unlock();
      // Let API calls take the lock between passes; back off when idle
      // (spin, then sleep 1, 2, 4 .. options.idle.max_sleep_us) so a waiting worker does
      // not occupy a whole core.
      if (!backoff.after_poll(did ? 1 : 0)) std::this_thread::yield();
      lk.lock();
    }
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lk(mu);
      if (stop) return;
      stop = true;
      for (auto& p : ports) {
        for (CommState* c : p->comms) {
          c->core.abort("the runtime was shut down");
          c->port = nullptr;
          c->uplinks.clear();
        }
        p->comms.clear();
      }
    }
    work_cv.notify_all();
    done_cv.notify_all();
    if (thread.joinable()) thread.join();
    std::lock_guard<std::mutex> lk(mu);
    ports.clear();
  }
};

}  // namespace detail

using detail::CommState;
using detail::Shared;

// ------------------------------------------------------------------ Runtime

std::unique_ptr<Runtime> Runtime::create(const std::vector<std::string>& eal_args, RuntimeOptions options) {
  return create(DpdkEal::initialize(eal_args), std::move(options));
}

std::unique_ptr<Runtime> Runtime::create(std::shared_ptr<DpdkEal> eal, RuntimeOptions options) {
  if (!eal) throw RuntimeError("Runtime needs an initialised DPDK EAL");
  auto s = std::make_shared<Shared>();
  s->eal = std::move(eal);
  s->options = std::move(options);
  if (s->options.progress_thread) {
    s->thread = std::thread([raw = s.get()] {
      pthread_setname_np(pthread_self(), "panama-progress");  // as top -H and perf show it
      const EalThreadScope lcore;                             // per-lcore mempool caches for this thread
      raw->run();
    });
  }
  return std::unique_ptr<Runtime>(new Runtime(std::move(s)));
}

Runtime::~Runtime() {
  shared_->shutdown();
}

std::shared_ptr<DpdkEal> Runtime::eal() const {
  return shared_->eal;
}

RuntimeCounters Runtime::counters() const {
  std::lock_guard<std::mutex> lk(shared_->mu);
  return shared_->counters;
}

PortCounters Runtime::port_counters(const std::string& device) const {
  std::lock_guard<std::mutex> lk(shared_->mu);
  for (const auto& p : shared_->ports) {
    if (p->port->name() == device || p->requested_name == device) return p->port->counters();
  }
  throw RuntimeError("no port \"" + device + "\" open in this runtime");
}

bool Runtime::link_up(const std::string& device) const {
  std::lock_guard<std::mutex> lk(shared_->mu);
  for (const auto& p : shared_->ports) {
    if (p->port->name() == device || p->requested_name == device) return p->port->link_up();
  }
  throw RuntimeError("no port \"" + device + "\" open in this runtime");
}

std::unique_ptr<Communicator> Runtime::communicator(const Plan& plan, const std::string& device) {
  return communicator(plan, device, {});
}

std::unique_ptr<Communicator> Runtime::communicator(const Plan& plan, const std::string& device,
                                                    const std::vector<uint32_t>& first_sequences) {
  validate_plan(plan);
  const std::string dev = device.empty() ? plan.device : device;
  if (dev.empty()) {
    throw RuntimeError("job " + std::to_string(plan.job_id) +
                       ": no DPDK port given (pass a device or set \"device\" in the plan)");
  }
  Shared& s = *shared_;
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.stop) throw RuntimeError("the runtime was shut down");
  auto open_port = [&](const std::string& name) {
    for (auto& p : s.ports) {
      if (p->port->name() == name || p->requested_name == name) return p.get();
    }
    auto np = std::make_unique<detail::PortState>();
    PortConfig pc = s.options.port;
    pc.name = name;
    pc.attach_payloads = pc.attach_payloads || s.options.zero_copy_send;
    np->port = std::make_unique<DpdkPort>(s.eal, pc);  // throws DpdkPortNotFound / DpdkError
    np->requested_name = name;
    np->out = std::make_unique<detail::MbufOut>(*np->port, s.counters);
    np->scratch.resize(np->port->max_frame_bytes());
    s.ports.push_back(std::move(np));
    return s.ports.back().get();
  };
  detail::PortState* ps = open_port(dev);
  // A dual-homed plan (devices[]): the second uplink's port too.
  std::vector<detail::PortState*> uplinks = {ps};
  if (plan.devices.size() == 2) uplinks.push_back(open_port(plan.devices[1]));
  // fp32 frames are the largest: 16-bit allreduces send as many elements in half the payload.
  if (wire::frame_length(plan.elems_per_packet) > ps->port->max_frame_bytes()) {
    throw RuntimeError("job " + std::to_string(plan.job_id) + ": elems_per_packet " +
                       std::to_string(plan.elems_per_packet) + " makes " +
                       std::to_string(wire::frame_length(plan.elems_per_packet)) +
                       "-byte frames, more than port " + ps->port->name() + " carries (" +
                       std::to_string(ps->port->max_frame_bytes()) + ")");
  }
  for (const CommState* c : ps->comms) {
    if (c->core.plan().job_id == plan.job_id && c->core.plan().udp_port == plan.udp_port) {
      throw RuntimeError("job " + std::to_string(plan.job_id) + " already has a communicator on port " +
                         ps->port->name());
    }
  }
  auto cs = std::make_shared<CommState>(shared_, plan, shared_->options);
  if (!first_sequences.empty()) {
    try {
      cs->core.continue_sequences(first_sequences);
    } catch (const std::exception& e) {
      throw RuntimeError("job " + std::to_string(plan.job_id) + ": " + e.what());
    }
  }
  cs->port = ps;
  cs->device = ps->port->name();
  if (uplinks.size() > 1) {
    cs->uplinks = uplinks;
    cs->uplink_out = std::make_unique<detail::UplinkOut>();
    for (detail::PortState* u : uplinks) cs->uplink_out->outs.push_back(u->out.get());
    for (const TreePlan& t : plan.trees) cs->uplink_out->uplink_of_tree[t.tree_id] = t.uplink;
    uplinks[1]->comms.push_back(cs.get());  // its results arrive on both ports
  }
  ps->comms.push_back(cs.get());
  return std::unique_ptr<Communicator>(new Communicator(std::move(cs)));
}

// ------------------------------------------------------------- Communicator

Communicator::~Communicator() {
  Shared& s = *state_->shared;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    state_->core.abort("the communicator was destroyed");
    if (state_->port) {
      auto& v = state_->port->comms;
      v.erase(std::remove(v.begin(), v.end(), state_.get()), v.end());
      state_->port = nullptr;
    }
    for (size_t i = 1; i < state_->uplinks.size(); ++i) {
      auto& v = state_->uplinks[i]->comms;
      v.erase(std::remove(v.begin(), v.end(), state_.get()), v.end());
    }
    state_->uplinks.clear();
  }
  s.done_cv.notify_all();
}

AllreduceHandle Communicator::allreduce_async(void* data, size_t count, wire::ElemType type) {
  if (wire::elem_bytes(static_cast<uint8_t>(type)) == 0) {
    throw RuntimeError("allreduce: element type " + std::to_string(static_cast<unsigned>(type)) +
                       " is none of fp32 (1), bf16 (2) and fp16 (3)");
  }
  Shared& s = *state_->shared;
  OpId id;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    id = state_->core.start(data, count, type, detail::now_ns());
  }
  s.work_cv.notify_all();
  return AllreduceHandle(state_, id);
}

void Communicator::allreduce(void* data, size_t count, wire::ElemType type) {
  allreduce_async(data, count, type).wait();
}

AllreduceHandle Communicator::allreduce_async(float* data, size_t count) {
  return allreduce_async(data, count, wire::ElemType::kFloat32);
}

void Communicator::allreduce(float* data, size_t count) {
  allreduce_async(data, count, wire::ElemType::kFloat32).wait();
}

CommStats Communicator::stats() const {
  std::lock_guard<std::mutex> lk(state_->shared->mu);
  return state_->core.stats();
}

std::vector<uint32_t> Communicator::next_sequences() const {
  std::lock_guard<std::mutex> lk(state_->shared->mu);
  try {
    return state_->core.next_sequences();
  } catch (const std::logic_error& e) {
    throw RuntimeError("job " + std::to_string(state_->core.plan().job_id) +
                       ": no sequences to continue from: " + e.what());
  }
}

void Communicator::defer_failure_until(std::chrono::steady_clock::time_point until) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_since_epoch()).count();
  std::lock_guard<std::mutex> lk(state_->shared->mu);
  state_->core.defer_failure_until(
      until == std::chrono::steady_clock::time_point{} || ns <= 0 ? 0 : static_cast<uint64_t>(ns));
}

void Communicator::set_skew_allowance(std::chrono::microseconds allowance) {
  std::lock_guard<std::mutex> lk(state_->shared->mu);
  state_->core.set_skew_allowance_ns(allowance.count() > 0 ? static_cast<uint64_t>(allowance.count()) * 1000
                                                           : 0);
}

const Plan& Communicator::plan() const {
  return state_->core.plan();
}
const std::string& Communicator::device() const {
  return state_->device;
}

// ----------------------------------------------------------- AllreduceHandle

AllreduceHandle::~AllreduceHandle() {
  if (!comm_) return;
  std::lock_guard<std::mutex> lk(comm_->shared->mu);
  comm_->core.release(id_);  // no-op while unfinished
}

AllreduceHandle& AllreduceHandle::operator=(AllreduceHandle&& o) noexcept {
  if (this != &o) {
    AllreduceHandle old(std::move(*this));
    comm_ = std::move(o.comm_);
    id_ = o.id_;
  }
  return *this;
}

bool AllreduceHandle::test() {
  if (!comm_) throw RuntimeError("test() on an empty allreduce handle");
  Shared& s = *comm_->shared;
  std::lock_guard<std::mutex> lk(s.mu);
  if (!s.options.progress_thread && !s.stop && comm_->core.status(id_) == OpStatus::kPending) s.pass_locked();
  return comm_->core.status(id_) != OpStatus::kPending;
}

bool Communicator::settle(std::chrono::milliseconds timeout) {
  Shared& s = *state_->shared;
  std::unique_lock<std::mutex> lk(s.mu);
  if (s.options.progress_thread) s.work_cv.notify_all();
  s.wait_until(lk, std::chrono::steady_clock::now() + timeout,
               [&] { return state_->core.pending_ops() == 0 || state_->core.failed(); });
  return state_->core.pending_ops() == 0 && !state_->core.failed();
}

bool AllreduceHandle::wait_for(std::chrono::milliseconds timeout) {
  if (!comm_) throw RuntimeError("wait() on an empty allreduce handle");
  Shared& s = *comm_->shared;
  std::unique_lock<std::mutex> lk(s.mu);
  if (!s.wait_until(lk, std::chrono::steady_clock::now() + timeout,
                    [&] { return comm_->core.status(id_) != OpStatus::kPending; }))
    return false;
  if (comm_->core.status(id_) == OpStatus::kFailed) {
    throw RuntimeError("allreduce failed: " + comm_->core.op_error(id_));
  }
  return true;
}

void AllreduceHandle::wait() {
  while (!wait_for(std::chrono::hours(24))) {
  }
}

OpStatus AllreduceHandle::status() const {
  if (!comm_) return OpStatus::kFailed;
  std::lock_guard<std::mutex> lk(comm_->shared->mu);
  return comm_->core.status(id_);
}

std::string AllreduceHandle::error() const {
  if (!comm_) return "empty allreduce handle";
  std::lock_guard<std::mutex> lk(comm_->shared->mu);
  return comm_->core.op_error(id_);
}

}  // namespace panama::runtime
