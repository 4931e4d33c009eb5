// The in-memory fabric (panama/fabric/fabric.hpp).
#include "panama/fabric/fabric.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "panama/engine/apply_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/wire.hpp"

namespace panama::fabric {

namespace {

constexpr uint64_t kNever = UINT64_MAX;

// panama-pswitch's seed of port `i`'s injector: 2i for what it sends, 2i+1
// for what it receives (software_pswitch.cpp).
uint64_t port_seed(uint64_t seed, size_t i, bool rx) {
  return seed * 0x9E3779B97F4A7C15ull + 2 * i + (rx ? 1 : 0);
}

}  // namespace

// A frame in flight. With an attached payload, `bytes` holds its 64 header
// bytes and the payload stays in the worker's buffer, referenced by `hold`.
struct Fabric::Packet {
  Frame bytes;
  const uint8_t* payload = nullptr;
  uint32_t payload_len = 0;
  runtime::BufferHold* hold = nullptr;

  uint32_t len() const { return static_cast<uint32_t>(bytes.size()) + payload_len; }
  bool references(const uint8_t* lo, const uint8_t* hi) const {
    return payload && payload >= lo && payload < hi;
  }
};

struct Fabric::Port {
  Endpoint peer;
  std::unique_ptr<Injector> tx, rx;
};

struct Fabric::Switch {
  SwitchSpec spec;
  std::unique_ptr<EngineBackend> engine;
  std::unique_ptr<pswitch::SwitchCore<EngineBackend>> core;
  std::vector<Port> ports;
};

// Where a PSwitch's SwitchCore sends: a copy of the frame per port, through
// that port's transmit faults onto its link.
class Fabric::SwitchOut final : public EmitTarget {
 public:
  SwitchOut(Fabric& f, uint32_t s) : f_(f), s_(s) {}
  void emit(const uint8_t* d, uint32_t n, Ports to) override {
    Frame frame(d, d + n);
    if (f_.on_switch_emit) f_.on_switch_emit(s_, frame, to);
    for (uint32_t p : to) f_.send_port(s_, p, new Packet{frame});
  }

 private:
  Fabric& f_;
  uint32_t s_;
};

Topology one_switch_topology(const std::vector<runtime::Plan>& plans, uint32_t slots_per_tree) {
  Topology t;
  SwitchSpec sw;
  sw.node.node = "root";
  sw.settings.name = "root";
  for (size_t r = 0; r < plans.size(); ++r) {
    pswitch::PortSettings ps;
    ps.name = "w" + std::to_string(r);
    sw.settings.ports.push_back(ps);
    t.workers.push_back(WorkerSpec{ps.name, plans[r]});
  }
  if (!plans.empty()) {
    const runtime::Plan& p0 = plans[0];
    for (size_t k = 0; k < p0.trees.size(); ++k) {
      config::EntryConfig e;
      e.index = static_cast<uint32_t>(k);
      e.job = p0.job_id;
      e.tree = p0.trees[k].tree_id;
      e.root = true;
      e.fan_in = static_cast<uint32_t>(plans.size());
      e.slot_base = static_cast<uint32_t>(k) * slots_per_tree;
      e.slot_count = slots_per_tree;
      e.udp_src = e.udp_dst = p0.udp_port;
      pswitch::TreePorts tp;
      tp.job = p0.job_id;
      tp.tree = p0.trees[k].tree_id;
      for (size_t r = 0; r < plans.size(); ++r) {
        const uint16_t child = plans[r].trees.at(k).child_id;
        e.children.push_back(static_cast<uint8_t>(child));
        tp.children.push_back(static_cast<uint32_t>(r));
        tp.child_ids.push_back(child);
      }
      sw.node.entries.push_back(e);
      sw.settings.trees.push_back(tp);
    }
    sw.node.engine.udp_port = p0.udp_port;
  }
  t.switches.push_back(std::move(sw));
  return t;
}

Fabric::Fabric(const Topology& topology, Options options) : opt_(std::move(options)), rng_(opt_.seed) {
  if (!opt_.make_engine) opt_.make_engine = [] { return make_engine_backend("model"); };
  std::map<std::string, int> worker_of;
  for (size_t w = 0; w < topology.workers.size(); ++w)
    worker_of[topology.workers[w].host] = static_cast<int>(w);

  for (const SwitchSpec& spec : topology.switches) {
    auto p = std::make_unique<Switch>();
    p->spec = spec;
    p->engine = opt_.make_engine();
    EngineRegisters<EngineBackend> regs(*p->engine);
    config::apply_node_config(regs, p->spec.node);
    p->core = std::make_unique<pswitch::SwitchCore<EngineBackend>>(p->spec.settings, *p->engine);
    const pswitch::PswitchSettings& s = p->spec.settings;
    for (size_t i = 0; i < s.ports.size(); ++i) {
      const pswitch::PortSettings& ps = s.ports[i];
      const pswitch::FaultConfig fc{ps.loss, ps.dup, ps.reorder};
      Port port;
      port.tx = std::make_unique<Injector>(fc, port_seed(s.seed, i, false));
      port.rx = std::make_unique<Injector>(fc, port_seed(s.seed, i, true));
      p->ports.push_back(std::move(port));
    }
    switches_.push_back(std::move(p));
  }
  for (size_t s = 0; s < switches_.size(); ++s) {
    Switch& p = *switches_[s];
    for (size_t i = 0; i < p.ports.size(); ++i) {
      const std::string& n = p.spec.settings.ports[i].name;
      if (auto w = worker_of.find(n); w != worker_of.end()) {
        p.ports[i].peer = Endpoint::worker(static_cast<uint32_t>(w->second));
        continue;
      }
      const int o = switch_index(n);
      const int back =
          o < 0 ? -1 : switches_[static_cast<size_t>(o)]->spec.settings.port_index(p.spec.settings.name);
      if (back < 0) {
        throw std::invalid_argument("fabric: port " + std::to_string(i) + " of " + p.spec.settings.name +
                                    " leads to \"" + n +
                                    "\", neither a worker nor a PSwitch with a port back");
      }
      p.ports[i].peer = Endpoint::port(static_cast<uint32_t>(o), static_cast<uint32_t>(back));
    }
  }
  for (size_t w = 0; w < topology.workers.size(); ++w) {
    Worker wk;
    wk.host = topology.workers[w].host;
    wk.core = std::make_unique<runtime::AllreduceCore>(topology.workers[w].plan);
    wk.core->set_zero_copy_send(opt_.zero_copy);
    wk.uplink.sw = -2;
    for (size_t s = 0; s < switches_.size(); ++s) {
      const int port = switches_[s]->spec.settings.port_index(wk.host);
      if (port >= 0) wk.uplink = Endpoint::port(static_cast<uint32_t>(s), static_cast<uint32_t>(port));
    }
    if (wk.uplink.sw < 0) throw std::invalid_argument("fabric: no PSwitch port leads to worker " + wk.host);
    workers_.push_back(std::move(wk));
  }
  out_.attach = opt_.zero_copy;
  out_.elsewhere = opt_.frames_read_elsewhere;
}

Fabric::~Fabric() {
  for (const Event& e : events_) release(e.pkt);
  events_.clear();
  flush_held(true);  // a forced flush hands out what the injectors hold, to be released
}

const pswitch::PswitchSettings& Fabric::settings(size_t s) const {
  return switches_[s]->spec.settings;
}
EngineBackend& Fabric::engine(size_t s) {
  return *switches_[s]->engine;
}
const pswitch::SwitchCore<EngineBackend>& Fabric::core(size_t s) const {
  return *switches_[s]->core;
}

int Fabric::switch_index(const std::string& name) const {
  for (size_t s = 0; s < switches_.size(); ++s) {
    if (switches_[s]->spec.settings.name == name) return static_cast<int>(s);
  }
  return -1;
}

int Fabric::worker_index(const std::string& host) const {
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (workers_[w].host == host) return static_cast<int>(w);
  }
  return -1;
}

const std::string& Fabric::name(Endpoint e) const {
  return e.is_worker() ? workers_[e.index].host : switches_[static_cast<size_t>(e.sw)]->spec.settings.name;
}

void Fabric::set_port_faults(size_t s, uint32_t port, const pswitch::FaultConfig& rx,
                             const pswitch::FaultConfig& tx) {
  Port& p = switches_[s]->ports[port];
  if (p.rx->holding() || p.tx->holding())
    throw std::logic_error("fabric: faults changed while a frame is held");
  const uint64_t seed = switches_[s]->spec.settings.seed;
  p.tx = std::make_unique<Injector>(tx, port_seed(seed, port, false));
  p.rx = std::make_unique<Injector>(rx, port_seed(seed, port, true));
}

pswitch::FaultCounters Fabric::fault_counters() const {
  pswitch::FaultCounters t;
  for (const auto& s : switches_) {
    for (const Port& p : s->ports) {
      for (const Injector* inj : {p.tx.get(), p.rx.get()}) {
        t.lost += inj->counters().lost;
        t.duplicated += inj->counters().duplicated;
        t.reordered += inj->counters().reordered;
      }
    }
  }
  return t;
}

bool Fabric::idle() const {
  if (!events_.empty()) return false;
  for (const auto& s : switches_) {
    for (const Port& p : s->ports) {
      if (p.tx->holding() || p.rx->holding()) return false;
    }
  }
  return true;
}

// ------------------------------------------------------------------ time

void Fabric::step(uint64_t max_advance_ns) {
  settle();
  for (uint32_t w = 0; w < workers_.size(); ++w) poll_worker(w);
  settle();
  advance(max_advance_ns);
}

void Fabric::settle() {
  auto later = [](const Event& a, const Event& b) {
    return a.at_ns != b.at_ns ? a.at_ns > b.at_ns : a.order > b.order;
  };
  for (;;) {
    bool any = false;
    while (!events_.empty() && events_.front().at_ns <= now_) {
      std::pop_heap(events_.begin(), events_.end(), later);
      const Event e = events_.back();
      events_.pop_back();
      arrive(e);
      any = true;
    }
    any |= flush_held(false);
    if (!any) return;
  }
}

void Fabric::advance(uint64_t max_advance_ns) {
  uint64_t next = events_.empty() ? kNever : events_.front().at_ns;
  for (const auto& s : switches_) {
    for (const Port& p : s->ports) {
      for (const Injector* inj : {p.tx.get(), p.rx.get()}) {
        if (inj->holding()) next = std::min(next, inj->release_at_ns());
      }
    }
  }
  for (const Worker& w : workers_) {
    next = std::min(next, w.core->next_timer_ns());
    if (w.core->can_send()) next = std::min(next, now_);
  }
  const uint64_t cap = max_advance_ns == kNever ? kNever : now_ + max_advance_ns;
  if (next == kNever) next = cap == kNever ? now_ + 1 : cap;
  next = std::max(next, now_ + opt_.min_step_ns);
  now_ = std::max(now_, std::min(next, cap));
}

// ------------------------------------------------------------------ frames

void Fabric::poll_worker(uint32_t w) {
  // Also with nothing to send: a zero-copy allreduce whose results are all
  // in finishes on the first poll after its frames released the buffer.
  runtime::AllreduceCore& core = *workers_[w].core;
  out_.frames.clear();
  out_.limit = opt_.random_poll ? 1 + rng_() % 16 : SIZE_MAX;
  const uint32_t budget = opt_.random_poll
                              ? 1 + static_cast<uint32_t>(rng_() % std::max<uint32_t>(1, opt_.poll_budget))
                              : opt_.poll_budget;
  core.poll(now_, out_, budget);
  // The references of attached payloads travel with the frames now.
  std::vector<const runtime::VectorFrameOut::Attached*> attached(out_.frames.size(), nullptr);
  for (const runtime::VectorFrameOut::Attached& a : out_.attached) attached[a.frame] = &a;
  for (size_t i = 0; i < out_.frames.size(); ++i) {
    Frame& f = out_.frames[i];
    if (on_worker_send) on_worker_send(w, f);
    auto* k = new Packet;
    if (const runtime::VectorFrameOut::Attached* a = attached[i]) {
      f.resize(wire::kPayloadOffset);
      k->payload = a->payload;
      k->payload_len = a->len;
      k->hold = a->hold;
    }
    k->bytes = std::move(f);
    schedule(Endpoint::worker(w), workers_[w].uplink, k, opt_.link_delay_ns);
  }
  out_.attached.clear();
}

void Fabric::schedule(Endpoint from, Endpoint to, Packet* k, uint64_t delay_ns) {
  if (opt_.link_jitter_ns > 0) delay_ns += rng_() % (opt_.link_jitter_ns + 1);
  events_.push_back(Event{now_ + delay_ns, order_++, from, to, k});
  std::push_heap(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return a.at_ns != b.at_ns ? a.at_ns > b.at_ns : a.order > b.order;
  });
}

void Fabric::inject(Endpoint from, Endpoint to, Frame frame, uint64_t delay_ns) {
  schedule(from, to, new Packet{std::move(frame)}, delay_ns);
}

void Fabric::arrive(const Event& e) {
  ++delivered_;
  Packet* k = e.pkt;
  if (e.to.is_worker()) {
    const uint32_t w = e.to.index;
    if (!on_arrival || on_arrival(e.from, e.to, k->bytes)) {
      if (deliver) {
        deliver(w, k->bytes);
      } else {
        workers_[w].core->on_frame(k->bytes.data(), static_cast<uint32_t>(k->bytes.size()), now_);
      }
    }
    release(k);
    return;
  }
  // The injector may still copy a frame after handing it out (a duplicate
  // that follows it), so frames are switched once send() has returned.
  const uint32_t s = static_cast<uint32_t>(e.to.sw);
  Port& port = switches_[s]->ports[e.to.index];
  std::vector<Packet*> admitted;
  port.rx->send(
      k, now_, [&](Packet* a) { admitted.push_back(a); }, clone, release);
  for (Packet* a : admitted) to_switch(s, e.to.index, a);
}

void Fabric::to_switch(uint32_t s, uint32_t port, Packet* k) {
  Switch& p = *switches_[s];
  if (!on_arrival || on_arrival(p.ports[port].peer, Endpoint::port(s, port), k->bytes)) {
    SwitchOut out(*this, s);
    p.core->on_frame_parts(port, k->bytes.data(), k->payload, k->len(), out);
  }
  release(k);  // a worker's attached payload is released here, as a PSwitch frees the mbuf
}

void Fabric::send_port(uint32_t s, uint32_t port, Packet* k) {
  Port& p = switches_[s]->ports[port];
  p.tx->send(
      k, now_, [&](Packet* a) { schedule(Endpoint::port(s, port), p.peer, a, opt_.link_delay_ns); }, clone,
      release);
}

// Releases what the injectors held back long enough (or everything, with
// `force`); true when something moved.
bool Fabric::flush_held(bool force) {
  bool any = false;
  for (uint32_t s = 0; s < switches_.size(); ++s) {
    Switch& p = *switches_[s];
    for (uint32_t i = 0; i < p.ports.size(); ++i) {
      Port& port = p.ports[i];
      Packet* held = nullptr;
      port.rx->flush(
          now_, [&](Packet* k) { held = k; }, force);
      if (held) {
        any = true;
        if (force) {
          release(held);
        } else {
          to_switch(s, i, held);
        }
      }
      port.tx->flush(
          now_,
          [&](Packet* k) {
            any = true;
            if (force) {
              release(k);
            } else {
              schedule(Endpoint::port(s, i), port.peer, k, opt_.link_delay_ns);
            }
          },
          force);
    }
  }
  return any;
}

size_t Fabric::erase_in_flight(const std::function<bool(Endpoint to, const Frame& bytes)>& pred) {
  const size_t before = events_.size();
  auto gone = [&](const Event& e) {
    if (!pred(e.to, e.pkt->bytes)) return false;
    release(e.pkt);
    return true;
  };
  events_.erase(std::remove_if(events_.begin(), events_.end(), gone), events_.end());
  std::make_heap(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return a.at_ns != b.at_ns ? a.at_ns > b.at_ns : a.order > b.order;
  });
  return before - events_.size();
}

size_t Fabric::frames_referencing(const void* p, size_t bytes) const {
  const auto* lo = static_cast<const uint8_t*>(p);
  const uint8_t* hi = lo + bytes;
  size_t n = 0;
  for (const Event& e : events_) n += e.pkt->references(lo, hi);
  for (const auto& s : switches_) {
    for (const Port& port : s->ports) {
      for (const Injector* inj : {port.tx.get(), port.rx.get()}) {
        if (inj->holding()) n += inj->held()->references(lo, hi);
      }
    }
  }
  return n;
}

Fabric::Packet* Fabric::clone(Packet* k) {
  if (k->hold) k->hold->acquire();
  return new Packet{*k};
}

void Fabric::release(Packet* k) {
  if (k->hold) k->hold->release();
  delete k;
}

}  // namespace panama::fabric
