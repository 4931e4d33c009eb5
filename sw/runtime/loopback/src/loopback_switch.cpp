// A one-engine switch on DPDK ports (see loopback_switch.hpp).
#include "panama/runtime/loopback_switch.hpp"

#include <rte_mbuf.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "panama/engine/backend.hpp"
#include "panama/table_entry.hpp"

namespace panama::runtime {

struct LoopbackSwitch::Impl {
  LoopbackSwitchConfig config;
  std::vector<std::unique_ptr<DpdkPort>> ports;
  std::unique_ptr<EngineBackend> engine = make_engine_backend("model");
  mutable std::mutex mu;  // engine counters vs. the thread
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> lost{0};
  std::thread thread;
  std::vector<uint8_t> scratch = std::vector<uint8_t>(wire::kMaxFrameBytes);

  // Where the engine emits: every result replicated to all ports.
  struct Replicate final : EmitTarget {
    Impl* self;
    explicit Replicate(Impl* impl) : self(impl) {}
    void emit(const uint8_t* d, uint32_t len, Ports) override {
      if (len < wire::kPayloadOffset ||
          d[wire::kPanamaType] != static_cast<uint8_t>(wire::PacketType::kResultDown)) {
        return;  // a root engine emits results only; passed-through frames go nowhere
      }
      for (auto& p : self->ports) {
        uint8_t* out = nullptr;
        rte_mbuf* m = p->alloc_frame(len, &out);
        if (!m) continue;  // pool exhausted: the frame is lost, workers retransmit
        std::memcpy(out, d, len);
        p->tx_burst_or_drop(&m, 1);
      }
    }
  };

  void run() {
    std::mt19937_64 rng(config.seed);
    std::uniform_real_distribution<double> u(0, 1);
    Replicate sink(this);
    while (!stop.load(std::memory_order_relaxed)) {
      bool any = false;
      for (auto& p : ports) {
        rte_mbuf* burst[32];
        const uint16_t n = p->rx_burst(burst, 32);
        any |= n > 0;
        std::lock_guard<std::mutex> lk(mu);
        for (uint16_t i = 0; i < n; ++i) {
          uint32_t len = 0;
          const uint8_t* d =
              DpdkPort::frame_data(burst[i], scratch.data(), static_cast<uint32_t>(scratch.size()), &len);
          if (!d) continue;
          if (config.rx_loss > 0 && u(rng) < config.rx_loss) {
            ++lost;
            continue;
          }
          engine->process_frame(d, len, sink);
        }
        DpdkPort::free_bulk(burst, n);
      }
      if (!any) std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
  }
};

LoopbackSwitch::LoopbackSwitch(std::shared_ptr<DpdkEal> eal, const LoopbackSwitchConfig& config)
    : impl_(std::make_unique<Impl>()) {
  impl_->config = config;
  EngineBackend& e = *impl_->engine;
  e.reg_write(regmap::kUdpPort, config.udp_port);
  uint32_t base = 0;
  for (size_t i = 0; i < config.entries.size(); ++i) {
    const auto& en = config.entries[i];
    TableEntry t;
    t.job = en.job_id;
    t.tree = en.tree_id;
    t.root = true;
    t.fan_in = en.fan_in;
    t.child_mask = en.child_mask;
    t.slot_base = base;
    t.slot_count = en.slot_count;
    t.udp_src = t.udp_dst = config.udp_port;
    const uint32_t st = commit_entry(e, static_cast<uint32_t>(i), t);
    if (st != regmap::kStatusOk) {
      throw std::runtime_error("loopback switch: engine rejected entry " + std::to_string(i) + " (job " +
                               std::to_string(en.job_id) + ", tree " + std::to_string(en.tree_id) +
                               "), status " + std::to_string(st));
    }
    base += en.slot_count;
  }
  for (const std::string& name : config.ports) {
    PortConfig pc;
    pc.name = name;
    impl_->ports.push_back(std::make_unique<DpdkPort>(eal, pc));
  }
  impl_->thread = std::thread([this] { impl_->run(); });
}

LoopbackSwitch::~LoopbackSwitch() {
  impl_->stop = true;
  if (impl_->thread.joinable()) impl_->thread.join();
}

uint64_t LoopbackSwitch::global_counter(uint32_t counter) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->engine->global_counter(counter);
}

uint64_t LoopbackSwitch::frames_lost() const {
  return impl_->lost.load();
}

}  // namespace panama::runtime
