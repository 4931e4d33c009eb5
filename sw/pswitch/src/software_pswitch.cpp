// The software PSwitch's DPDK loop: receive, switch, queue, pace, inject, send.
#include "panama/pswitch/software_pswitch.hpp"

#include <rte_mbuf.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "panama/engine/apply_config.hpp"
#include "panama/engine/backend.hpp"
#include "panama/engine/counters.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/pswitch/fault_injector.hpp"
#include "panama/pswitch/output_queue.hpp"
#include "panama/pswitch/pool_json.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "panama/runtime/idle_backoff.hpp"

namespace panama::pswitch {

namespace {

constexpr uint16_t kBurst = 32;
constexpr uint32_t kMaxPending = 256;
constexpr uint32_t kEngineBatch =
    64;  // frames switched per pass  // frames a port's TX ring refused, retried next pass

std::string device_of(const std::string& vdev) {
  return vdev.substr(0, vdev.find(','));
}

// A queue's counters per band, highest priority first (band 1, ..., L, then
// the default band 0), each with its level and DSCP.
template <class Queue>
nlohmann::json bands_json(const Queue& q) {
  nlohmann::json a = nlohmann::json::array();
  for (uint32_t k = 1; k <= q.bands(); ++k) {
    const uint32_t b = k % q.bands();
    const BandCounters& c = q.band_counters(b);
    nlohmann::json j = {{"band", b}};
    if (b > 0) {
      j["level"] = b - 1;
      j["dscp"] = q.config().priority_dscp[b - 1];
    }
    j.update({{"enqueued", c.enqueued},
              {"dequeued", c.dequeued},
              {"bytes_in", c.bytes_in},
              {"bytes_out", c.bytes_out},
              {"tail_drops", c.tail_drops},
              {"ecn_marked", c.ecn_marked},
              {"max_queue_bytes", c.max_depth_bytes}});
    a.push_back(j);
  }
  return a;
}

// One line of the counter table: a queue's bands, "frames out/tail drops/CE marks".
std::string bands_line(const std::string& name, const nlohmann::json& bands) {
  std::string line = "  " + name + ":";
  for (const auto& b : bands) {
    line += b.contains("level") ? " L" + std::to_string(b["level"].get<unsigned>()) + " (dscp " +
                                      std::to_string(b["dscp"].get<unsigned>()) + ") "
                                : " other ";
    line += std::to_string(b["dequeued"].get<uint64_t>()) + "/" +
            std::to_string(b["tail_drops"].get<uint64_t>()) + "/" +
            std::to_string(b["ecn_marked"].get<uint64_t>());
  }
  return line + "\n";
}

}  // namespace

struct SoftwarePswitch::Impl {
  struct Port {
    std::unique_ptr<runtime::DpdkPort> dev;
    std::unique_ptr<OutputQueue<rte_mbuf*>> queue;
    std::unique_ptr<FaultInjector<rte_mbuf*>> faults;  // frames this port sends
    std::unique_ptr<FaultInjector<rte_mbuf*>>
        rx_faults;                   // frames it receives (the other direction of the link)
    std::vector<rte_mbuf*> pending;  // ready to send, in order
    uint64_t no_mbuf = 0;            // frames lost because the pool was empty
  };

  struct RxFrame {
    rte_mbuf* m = nullptr;
    uint32_t port = 0;
  };

  config::NodeConfig cfg;
  std::vector<config::EntryConfig> fixed_entries;  // the entries committed as they are (not pooled)
  PswitchSettings settings;
  std::unique_ptr<OutputQueue<RxFrame>> engine_queue;
  std::unique_ptr<EngineBackend> engine;
  std::unique_ptr<SwitchCore<EngineBackend>> core;
  std::vector<Port> ports;
  uint64_t segmented_drops = 0;   // multi-segment frames too long to be joined into one mbuf
  uint64_t joined_frames = 0;     // multi-segment frames of another shape, joined into one mbuf
  uint64_t split_frames = 0;      // header + payload frames the engine read in place
  uint64_t shared_copies = 0;     // replicated frames sent as a reference to a shared mbuf, not a copy
  uint64_t staged_emissions = 0;  // engine emissions written straight into the mbuf that was sent
  uint64_t multicast_turn = 0;    // which port's pool lends the next shared mbuf
  uint64_t stage_turn = 0;        // which port's pool lends the next staged mbuf
  // The mbuf the engine writes its next emission into (the buffer() of the
  // emit target SwitchCore sends to).
  rte_mbuf* staged = nullptr;
  uint8_t* staged_data = nullptr;

  uint8_t* stage(uint32_t n) {
    if (!staged) {
      Port& p = ports[stage_turn++ % ports.size()];
      staged = p.dev->alloc_frame(p.dev->max_frame_bytes(), &staged_data);
      if (!staged) return nullptr;  // the copy path counts it if it fails too
    }
    return n <= rte_pktmbuf_data_len(staged) ? staged_data : nullptr;
  }

  // A frame of `n` bytes at `d` in an mbuf of port p's pool: the staged mbuf
  // when `d` is its data (and `take_staged`), else a copy.
  rte_mbuf* copy_into(Port& p, const uint8_t* d, uint32_t n, bool take_staged = true) {
    if (take_staged && staged && d == staged_data) {
      rte_mbuf* m = staged;
      staged = nullptr;
      m->data_len = static_cast<uint16_t>(n);
      m->pkt_len = n;
      ++staged_emissions;
      return m;
    }
    uint8_t* buf = nullptr;
    rte_mbuf* m = p.dev->alloc_frame(n, &buf);
    if (!m) {
      ++p.no_mbuf;
      return nullptr;
    }
    std::memcpy(buf, d, n);
    return m;
  }

  // A received frame of several segments as one, in an mbuf of port p.
  rte_mbuf* join_segments(Port& p, const rte_mbuf* m) {
    uint8_t* buf = nullptr;
    rte_mbuf* c = p.dev->alloc_frame(m->pkt_len, &buf);  // null when longer than one mbuf holds
    if (!c) return nullptr;
    if (!rte_pktmbuf_read(m, 0, m->pkt_len, buf)) {
      runtime::DpdkPort::free(c);
      return nullptr;
    }
    return c;
  }

  void enqueue(uint32_t port, const uint8_t* d, uint32_t n, uint64_t now, bool take_staged = true) {
    Port& p = ports[port];
    rte_mbuf* m = copy_into(p, d, n, take_staged);
    if (!m) return;
    if (p.queue->enqueue(m, rte_pktmbuf_mtod(m, uint8_t*), n, now) == EnqueueResult::kDropped) {
      runtime::DpdkPort::free(m);
    }
  }

  // One frame to several ports (a result to a tree's children): the ports
  // whose queues would not mark it share one reference-counted mbuf (a
  // receiver reads it and frees its reference; net_ring passes the pointer,
  // memif copies it); a queue that marks CE writes into the frame, so it
  // gets a copy of its own.
  void multicast(Ports out_ports, const uint8_t* d, uint32_t n, uint64_t now) {
    rte_mbuf* shared = nullptr;
    // The shared mbuf comes from the pool of the first port that takes it:
    // start at a rotating port so that every port's pool lends in turn.
    const size_t first = multicast_turn++ % std::max<size_t>(1, out_ports.count);
    for (size_t k = 0; k < out_ports.count; ++k) {
      const uint32_t port = out_ports.list[(first + k) % out_ports.count];
      Port& p = ports[port];
      if (p.queue->marks_now(d, n)) {  // a copy of its own, never the staged mbuf others share
        enqueue(port, d, n, now, false);
        continue;
      }
      rte_mbuf* m = shared;
      if (m) {
        rte_mbuf_refcnt_update(m, 1);
      } else {
        m = copy_into(p, d, n);
        if (!m) continue;
      }
      if (p.queue->enqueue(m, rte_pktmbuf_mtod(m, uint8_t*), n, now) == EnqueueResult::kDropped) {
        runtime::DpdkPort::free(m);  // one reference; the others keep it
        continue;
      }
      shared = m;
      ++shared_copies;
    }
    // Every reference but the first is a copy not made.
    if (shared) --shared_copies;
  }

  // The target SwitchCore emits into: one port's queue, or several sharing
  // one mbuf; the engine's emissions are written into a staged mbuf.
  struct Emit final : EmitTarget {
    Impl* s;
    uint64_t now;
    Emit(Impl* impl, uint64_t t) : s(impl), now(t) {}
    uint8_t* buffer(uint32_t n) override { return s->stage(n); }
    void emit(const uint8_t* d, uint32_t n, Ports to) override {
      if (to.count == 1) {
        s->enqueue(to.list[0], d, n, now);
      } else {
        s->multicast(to, d, n, now);
      }
    }
  };

  // A received frame as the engine reads it: header and payload in place
  // when a worker chained its 64 header bytes to its payload (zero-copy
  // send); one segment otherwise.
  static bool split_shape(const rte_mbuf* m) {
    return m->nb_segs == 2 && m->data_len == wire::kPayloadOffset && m->next->next == nullptr &&
           m->next->data_len == m->pkt_len - wire::kPayloadOffset;
  }

  uint32_t poll(uint64_t now) {
    uint32_t work = 0;
    rte_mbuf* burst[kBurst];
    // Receive everything waiting into the engine's queue (marking CE above
    // its K), then switch a bounded batch: the engine is the slow stage.
    for (uint32_t pi = 0; pi < ports.size(); ++pi) {
      Port& p = ports[pi];
      auto admit = [&](rte_mbuf* m) {
        if (m->nb_segs != 1 && !split_shape(m)) {
          rte_mbuf* c = join_segments(p, m);
          runtime::DpdkPort::free(m);
          if (!c) {
            ++segmented_drops;
            return;
          }
          ++joined_frames;
          m = c;
        }
        if (rte_mbuf_refcnt_read(m) > 1 &&
            engine_queue->marks_now(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m))) {
          // A frame another receiver shares (a result replicated by a PSwitch
          // of this process): marking CE writes into it, so mark a copy.
          rte_mbuf* c = copy_into(p, rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), false);
          runtime::DpdkPort::free(m);
          if (!c) return;
          m = c;
        }
        // Marking CE writes into the IP header: the first segment.
        if (engine_queue->enqueue(RxFrame{m, pi}, rte_pktmbuf_mtod(m, uint8_t*), m->pkt_len, now) ==
            EnqueueResult::kDropped) {
          runtime::DpdkPort::free(m);
        }
      };
      const uint16_t n = p.dev->rx_burst(burst, kBurst);
      if (p.rx_faults->active()) {
        auto clone = [this, &p](rte_mbuf* m) {
          return m->nb_segs == 1
                     ? copy_into(p, rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), false)
                     : join_segments(p, m);
        };
        auto release = [](rte_mbuf* m) { runtime::DpdkPort::free(m); };
        for (uint16_t i = 0; i < n; ++i) p.rx_faults->send(burst[i], now, admit, clone, release);
        p.rx_faults->flush(now, admit);
      } else {
        for (uint16_t i = 0; i < n; ++i) admit(burst[i]);
      }
      work += n;
    }
    core->advance(now);  // the pool's leases
    work += engine_queue->dequeue(now, kEngineBatch, [&](RxFrame f) {
      const uint8_t* payload = nullptr;
      if (f.m->nb_segs == 2) {
        payload = rte_pktmbuf_mtod(f.m->next, const uint8_t*);
        ++split_frames;
      }
      Emit out(this, now);
      core->on_frame_parts(f.port, rte_pktmbuf_mtod(f.m, const uint8_t*), payload, f.m->pkt_len, out);
      runtime::DpdkPort::free(f.m);  // a worker's attached payload is released here
    });
    for (Port& p : ports) {
      auto push = [&p](rte_mbuf* m) { p.pending.push_back(m); };
      auto clone = [this, &p](rte_mbuf* m) {
        return copy_into(p, rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m), false);
      };
      auto release = [](rte_mbuf* m) { runtime::DpdkPort::free(m); };
      if (p.pending.size() < kMaxPending / 2) {
        p.queue->dequeue(now, kBurst, [&](rte_mbuf* m) { p.faults->send(m, now, push, clone, release); });
      }
      p.faults->flush(now, push);
      if (!p.pending.empty()) {
        const uint16_t sent = p.dev->tx_burst(p.pending.data(), static_cast<uint16_t>(p.pending.size()));
        p.pending.erase(p.pending.begin(), p.pending.begin() + sent);
        work += sent;
      }
    }
    return work;
  }
};

SoftwarePswitch::SoftwarePswitch(const config::NodeConfig& cfg, std::shared_ptr<runtime::DpdkEal> eal,
                                 const std::vector<std::string>& device_names)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.cfg = cfg;
  if (s.cfg.pswitch.is_null())
    throw SettingsError("node config '" + cfg.node + "' has no \"pswitch\" section");
  s.settings = settings_from_json(s.cfg.pswitch);
  if (!device_names.empty() && device_names.size() != s.settings.ports.size()) {
    throw SettingsError("pswitch '" + s.settings.name + "': " + std::to_string(s.settings.ports.size()) +
                        " ports configured but " + std::to_string(device_names.size()) + " devices given");
  }
  try {
    s.engine = make_engine_backend(s.settings.engine);
  } catch (const std::invalid_argument& e) {
    throw SettingsError("pswitch '" + s.settings.name + "': engine: " + e.what());
  }
  check_trees_against_entries(s.settings, s.cfg.entries);
  EngineRegisters<EngineBackend> regs(*s.engine);
  // A pooled tree's entry is the template of its claim entries, which
  // SwitchCore commits as groups take slots: it is not committed itself.
  config::NodeConfig fixed = s.cfg;
  if (s.settings.pool) {
    fixed.entries.clear();
    for (const config::EntryConfig& e : s.cfg.entries) {
      if (!s.settings.pool->find(e.job, e.tree)) fixed.entries.push_back(e);
    }
  }
  config::apply_node_config(regs, fixed);
  s.fixed_entries = fixed.entries;
  s.core = std::make_unique<SwitchCore<EngineBackend>>(s.settings, *s.engine, s.cfg.entries);
  // The engine queue serves the priority levels too: the engine is often
  // the slowest stage, so that is where the levels matter most.
  s.engine_queue = std::make_unique<OutputQueue<Impl::RxFrame>>(QueueConfig{
      0.0, s.settings.engine_queue_bytes, s.settings.engine_ecn_k_bytes, s.settings.priority_dscp});
  for (size_t i = 0; i < s.settings.ports.size(); ++i) {
    const PortSettings& ps = s.settings.ports[i];
    runtime::PortConfig pc;
    pc.name = device_names.empty() ? device_of(ps.vdev) : device_names[i];
    if (pc.name.empty())
      throw SettingsError("pswitch port '" + ps.name + "' has no vdev (and no device was given)");
    pc.mbufs = 4095;
    Impl::Port p;
    p.dev = std::make_unique<runtime::DpdkPort>(eal, pc);
    p.queue = std::make_unique<OutputQueue<rte_mbuf*>>(
        QueueConfig{ps.rate_gbps, ps.queue_bytes, ps.ecn_k_bytes, s.settings.priority_dscp});
    p.faults = std::make_unique<FaultInjector<rte_mbuf*>>(FaultConfig{ps.loss, ps.dup, ps.reorder},
                                                          s.settings.seed * 0x9E3779B97F4A7C15ull + 2 * i);
    p.rx_faults = std::make_unique<FaultInjector<rte_mbuf*>>(
        FaultConfig{ps.loss, ps.dup, ps.reorder}, s.settings.seed * 0x9E3779B97F4A7C15ull + 2 * i + 1);
    p.pending.reserve(kMaxPending + 2 * kBurst);
    s.ports.push_back(std::move(p));
  }
}

SoftwarePswitch::~SoftwarePswitch() {
  impl_->engine_queue->drain([](Impl::RxFrame f) { runtime::DpdkPort::free(f.m); });
  if (impl_->staged) runtime::DpdkPort::free(impl_->staged);
  for (Impl::Port& p : impl_->ports) {
    p.queue->drain([](rte_mbuf* m) { runtime::DpdkPort::free(m); });
    p.faults->flush(
        0, [](rte_mbuf* m) { runtime::DpdkPort::free(m); }, true);
    runtime::DpdkPort::free_bulk(p.pending.data(), static_cast<unsigned>(p.pending.size()));
  }
}

uint64_t SoftwarePswitch::now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint32_t SoftwarePswitch::poll(uint64_t now) {
  return impl_->poll(now);
}

void SoftwarePswitch::run(const std::atomic<bool>& stop, const runtime::IdlePolicy& idle) {
  runtime::IdleBackoff backoff(idle.backoff());
  while (!stop.load(std::memory_order_relaxed)) backoff.after_poll(impl_->poll(now_ns()));
}

uint64_t SoftwarePswitch::drain(uint64_t quiet_ns, uint64_t limit_ns) {
  const uint64_t start = now_ns();
  uint64_t last_work = start;
  uint64_t handled = 0;
  for (uint64_t now = start; now - last_work < quiet_ns && now - start < limit_ns; now = now_ns()) {
    const uint32_t n = impl_->poll(now);
    if (n > 0) {
      handled += n;
      last_work = now;
    } else {
      std::this_thread::yield();
    }
  }
  return handled;
}

const PswitchSettings& SoftwarePswitch::settings() const {
  return impl_->settings;
}
const std::string& SoftwarePswitch::name() const {
  return impl_->settings.name;
}

nlohmann::json SoftwarePswitch::counters_json() {
  Impl& s = *impl_;
  nlohmann::json j;
  j["name"] = s.settings.name;
  j["ports"] = nlohmann::json::array();
  for (size_t i = 0; i < s.ports.size(); ++i) {
    const Impl::Port& p = s.ports[i];
    const runtime::PortCounters dc = p.dev->counters();
    const QueueCounters& q = p.queue->counters();
    FaultCounters f = p.faults->counters();
    f.lost += p.rx_faults->counters().lost;
    f.duplicated += p.rx_faults->counters().duplicated;
    f.reordered += p.rx_faults->counters().reordered;
    const PortSwitchCounters& sc = s.core->port_counters(static_cast<uint32_t>(i));
    j["ports"].push_back({{"name", s.settings.ports[i].name},
                          {"rx_frames", dc.rx_packets},
                          {"rx_bytes", dc.rx_bytes},
                          {"tx_frames", dc.tx_packets},
                          {"tx_bytes", dc.tx_bytes},
                          {"to_engine", sc.to_engine},
                          {"forwarded", sc.forwarded},
                          {"flooded", sc.flooded},
                          {"binding_drops", sc.binding_drops},
                          {"queue_tail_drops", q.tail_drops},
                          {"ecn_marked", q.ecn_marked},
                          {"max_queue_bytes", q.max_depth_bytes},
                          {"injected_loss", f.lost},
                          {"injected_dup", f.duplicated},
                          {"injected_reorder", f.reordered},
                          {"no_mbuf_drops", p.no_mbuf}});
    if (p.queue->bands() > 1) j["ports"].back()["bands"] = bands_json(*p.queue);
  }
  EngineRegisters<EngineBackend> regs(*s.engine);
  const config::CounterSnapshot snap = config::read_counters(regs, s.fixed_entries);
  const nlohmann::json engine = config::counters_to_json(snap);
  j["engine"] = engine["global"];
  j["trees"] = nlohmann::json::array();
  for (size_t t = 0; t < s.settings.trees.size(); ++t) {
    const TreePorts& tp = s.settings.trees[t];
    const TreeSwitchCounters& tc = s.core->tree_counters(static_cast<uint32_t>(t));
    nlohmann::json tj = {{"job", tp.job},
                         {"tree", tp.tree},
                         {"contributions_in", tc.contributions_in},
                         {"aggregates_up", tc.aggregates_up},
                         {"results_emitted", tc.results_emitted},
                         {"results_from_parent", tc.results_from_parent},
                         {"result_copies", tc.result_copies},
                         {"results_resent", tc.results_resent}};
    for (const auto& e : engine["entries"]) {
      if (e["job"] == tp.job && e["tree"] == tp.tree) tj["engine"] = e["counters"];
    }
    if (const int pe = s.core->pool_entry(static_cast<uint32_t>(t)); pe >= 0)
      tj["pool"] = pool_counters_json(s.core->pool_tree_counters(static_cast<uint32_t>(t)),
                                      s.core->pool()->entry_counters(static_cast<uint32_t>(pe)));
    j["trees"].push_back(tj);
  }
  if (s.core->pool()) {
    j["pool"] = pool_counters_json(s.core->pool_counters(), s.core->pool()->counters());
    j["pool"]["free_slots"] = s.core->pool()->free_slots();
  }
  const SwitchCounters& c = s.core->counters();
  const QueueCounters& eq = s.engine_queue->counters();
  j["engine_queue"] = {{"frames", eq.enqueued},
                       {"tail_drops", eq.tail_drops},
                       {"ecn_marked", eq.ecn_marked},
                       {"max_queue_bytes", eq.max_depth_bytes}};
  if (s.engine_queue->bands() > 1) j["engine_queue"]["bands"] = bands_json(*s.engine_queue);
  j["switch"] = {{"engine_drops", c.engine_drops},       {"claim_malformed", c.claim_malformed},
                 {"segmented_drops", s.segmented_drops}, {"joined_frames", s.joined_frames},
                 {"split_frames", s.split_frames},       {"staged_emissions", s.staged_emissions},
                 {"shared_copies", s.shared_copies},     {"result_wrong_port", c.result_wrong_port},
                 {"binding_drops", c.binding_drops},     {"no_parent", c.no_parent},
                 {"hairpin_drops", c.hairpin_drops},     {"transit", c.transit}};
  return j;
}

std::string SoftwarePswitch::counters_table() {
  const nlohmann::json j = counters_json();
  std::ostringstream os;
  os << "PSwitch " << j["name"].get<std::string>() << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-10s %10s %10s %8s %8s %8s %8s %8s %8s\n", "port", "rx", "tx", "ecn",
                "qdrop", "maxq_KiB", "loss", "dup", "reord");
  os << line;
  for (const auto& p : j["ports"]) {
    std::snprintf(line, sizeof line, "  %-10s %10llu %10llu %8llu %8llu %8llu %8llu %8llu %8llu\n",
                  p["name"].get<std::string>().c_str(), (unsigned long long)p["rx_frames"].get<uint64_t>(),
                  (unsigned long long)p["tx_frames"].get<uint64_t>(),
                  (unsigned long long)p["ecn_marked"].get<uint64_t>(),
                  (unsigned long long)p["queue_tail_drops"].get<uint64_t>(),
                  (unsigned long long)(p["max_queue_bytes"].get<uint64_t>() / 1024),
                  (unsigned long long)p["injected_loss"].get<uint64_t>(),
                  (unsigned long long)p["injected_dup"].get<uint64_t>(),
                  (unsigned long long)p["injected_reorder"].get<uint64_t>());
    os << line;
  }
  if (j["engine_queue"].contains("bands")) {
    os << "  priority bands, highest first (frames out/tail drops/CE marks):\n";
    for (const auto& p : j["ports"]) os << bands_line(p["name"].get<std::string>(), p["bands"]);
    os << bands_line("engine queue", j["engine_queue"]["bands"]);
  }
  if (const uint64_t bd = j["switch"]["binding_drops"].get<uint64_t>(); bd > 0) {
    os << "  binding drops (frames speaking for a (job, tree, child) not bound to their port): " << bd
       << " (";
    const char* sep = "";
    for (const auto& p : j["ports"]) {
      if (p["binding_drops"].get<uint64_t>() == 0) continue;
      os << sep << p["name"].get<std::string>() << " " << p["binding_drops"].get<uint64_t>();
      sep = ", ";
    }
    os << ")\n";
  }
  for (const auto& t : j["trees"]) {
    // A pooled tree has no engine entry of its own (its claim entries come and go).
    const nlohmann::json e = t.contains("engine") ? t["engine"] : nlohmann::json::object();
    std::snprintf(line, sizeof line,
                  "  job %u tree %u: in %llu, up %llu, results %llu (+%llu from parent), copies %llu, "
                  "dup %llu, retrans served %llu, seq-window drops %llu\n",
                  t["job"].get<unsigned>(), t["tree"].get<unsigned>(),
                  (unsigned long long)t["contributions_in"].get<uint64_t>(),
                  (unsigned long long)t["aggregates_up"].get<uint64_t>(),
                  (unsigned long long)t["results_emitted"].get<uint64_t>(),
                  (unsigned long long)t["results_from_parent"].get<uint64_t>(),
                  (unsigned long long)t["result_copies"].get<uint64_t>(),
                  (unsigned long long)e.value("duplicates", 0ull),
                  (unsigned long long)e.value("retrans_served", 0ull),
                  (unsigned long long)e.value("drop_seq_window", 0ull));
    os << line;
  }
  if (j.contains("pool")) {
    const auto& p = j["pool"];
    auto n = [&](const char* k) { return static_cast<unsigned long long>(p[k].get<uint64_t>()); };
    std::snprintf(line, sizeof line,
                  "  pool: %llu slots free (high water %llu held), claims %llu, granted %llu, expired %llu, "
                  "no-claim drops %llu, stale drops %llu, claim entries %llu (%llu refused)\n",
                  n("free_slots"), n("slots_high_water"), n("claims_in"), n("granted"), n("expired"),
                  n("drop_no_claim"), n("drop_stale_group"), n("entry_commits"), n("commit_failures"));
    os << line;
  }
  return os.str();
}

namespace {

// "0000:3b:00.0" (optionally followed by ",devargs"): a NIC, not a virtual device.
bool is_pci_address(const std::string& spec) {
  const std::string dev = spec.substr(0, spec.find(','));
  if (dev.size() != 12 || dev[4] != ':' || dev[7] != ':' || dev[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!std::isxdigit(static_cast<unsigned char>(dev[i]))) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> pswitch_eal_args(const PswitchSettings& s, const std::string& file_prefix) {
  // One lcore allowed on every CPU: a pinned PSwitch would fight the workers for one core.
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  bool any_nic = false;
  for (const PortSettings& p : s.ports) any_nic = any_nic || is_pci_address(p.vdev);
  std::vector<std::string> a;
  if (!any_nic) a = {"--no-huge", "-m", "1024", "--no-pci"};  // virtual devices only: no hugepages needed
  for (const char* arg : {"--no-telemetry", "--log-level=*:warning"}) a.push_back(arg);
  a.push_back("--file-prefix=" + file_prefix);
  a.push_back("--lcores=0@(0-" + std::to_string(cpus - 1) + ")");
  for (const PortSettings& p : s.ports) {
    if (p.vdev.empty()) continue;
    a.push_back((is_pci_address(p.vdev) ? "--allow=" : "--vdev=") + p.vdev);
  }
  return a;
}

}  // namespace panama::pswitch
