// The baseline the virtual cluster compares against: a host ring allreduce
// (reduce-scatter then all-gather, 2(N-1) steps) between the workers, over
// the same DPDK ports and the same PSwitches, whose output queues pace every
// link. Its frames are ordinary Ethernet frames (EtherType 0x88B5, local
// experimental), so the PSwitches forward them by MAC and the engines never
// see them. A credit frame back to the sender every few frames bounds what
// is in flight (64 frames), so no switch queue overflows and nothing needs
// retransmission.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>

#include <rte_mbuf.h>
#include <nlohmann/json.hpp>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/plan_file.hpp"
#include "panama/wire.hpp"

namespace panama::cluster {

namespace {

constexpr uint16_t kRingEtherType = 0x88B5;
constexpr uint32_t kHeaderBytes = 32;  // payload 4-byte aligned after the Ethernet header
constexpr uint8_t kData = 1, kCredit = 2;
constexpr uint64_t kWindow = 128;      // frames in flight towards the right neighbour (512 KiB)
constexpr uint64_t kCreditEvery = 16;  // frames consumed between credits

// Header after Ethernet (offset 14): kind u8, pad u8, iteration u16, step u16, pad u16,
// index u32, count u16, pad 6; credit frames carry the consumed count (u64) at 16.
struct Ring {
  Ring(runtime::DpdkPort& p, runtime::MacAddress s, runtime::MacAddress l, runtime::MacAddress r, uint32_t rk,
       uint32_t w, uint64_t n, uint64_t e)
      : port(p), self(s), left(l), right(r), rank(rk), world(w), elems(n), epp(e) {}

  runtime::DpdkPort& port;
  runtime::MacAddress self, left, right;
  uint32_t rank, world;
  uint64_t elems, epp;
  uint64_t sent = 0, acked = 0, consumed = 0, credited = 0;
  std::deque<std::vector<uint8_t>> stash;  // frames of the next iteration that came early
  std::vector<rte_mbuf*> pending;

  uint64_t seg_begin(uint32_t s) const { return elems * s / world; }
  uint64_t seg_len(uint32_t s) const { return seg_begin(s + 1) - seg_begin(s); }
  uint64_t frames_of(uint32_t s) const { return (seg_len(s) + epp - 1) / epp; }
  uint32_t out_seg(uint32_t k) const {
    return k < world - 1 ? (rank + world - k % world) % world
                         : (rank + 1 + world - (k - (world - 1))) % world;
  }
  uint32_t in_seg(uint32_t k) const {
    const uint32_t l = (rank + world - 1) % world;
    return k < world - 1 ? (l + world - k % world) % world : (l + 1 + world - (k - (world - 1))) % world;
  }

  uint8_t* frame(uint32_t len, const runtime::MacAddress& dst, uint8_t kind, rte_mbuf** m) {
    uint8_t* d = nullptr;
    *m = port.alloc_frame(len, &d);
    if (!*m) return nullptr;
    std::memset(d, 0, kHeaderBytes);
    std::memcpy(d, dst.data(), 6);
    std::memcpy(d + 6, self.data(), 6);
    wire::store_be16(d + 12, kRingEtherType);
    d[14] = kind;
    return d;
  }

  void flush() {
    while (!pending.empty()) {
      const uint16_t n = port.tx_burst(pending.data(), static_cast<uint16_t>(pending.size()));
      pending.erase(pending.begin(), pending.begin() + n);
      if (n == 0) break;
    }
  }

  void credit() {
    rte_mbuf* m;
    uint8_t* d = frame(kHeaderBytes, left, kCredit, &m);
    if (!d) return;
    wire::store_be32(d + 16, static_cast<uint32_t>(consumed >> 32));
    wire::store_be32(d + 20, static_cast<uint32_t>(consumed));
    pending.push_back(m);
    credited = consumed;
  }

  // One allreduce of `data`; returns false (with a message) on a protocol error.
  bool allreduce(float* data, uint16_t iteration, std::string& error) {
    const uint32_t steps = 2 * (world - 1);
    uint32_t out_step = 0, in_step = 0;
    uint64_t out_idx = 0, in_idx = 0;
    rte_mbuf* burst[32];
    auto apply = [&](const uint8_t* d, uint32_t len) -> bool {
      const uint16_t step = wire::load_be16(d + 18);
      const uint32_t index = wire::load_be32(d + 22);
      const uint16_t count = wire::load_be16(d + 26);
      if (step != in_step || index != in_idx || len < kHeaderBytes + 4u * count) {
        error = "ring frame out of order (step " + std::to_string(step) + " index " + std::to_string(index) +
                ", expected " + std::to_string(in_step) + "/" + std::to_string(in_idx) + ")";
        return false;
      }
      const uint32_t seg = in_seg(in_step);
      float* dst = data + seg_begin(seg) + index * epp;
      const bool add = in_step < world - 1;
      for (uint32_t i = 0; i < count; ++i) {
        float v;
        std::memcpy(&v, d + kHeaderBytes + 4 * i, 4);
        dst[i] = add ? dst[i] + v : v;
      }
      ++consumed;
      if (++in_idx == frames_of(seg)) {
        ++in_step;
        in_idx = 0;
      }
      return true;
    };
    // Frames of this iteration that arrived during the previous one.
    while (!stash.empty()) {
      if (!apply(stash.front().data(), static_cast<uint32_t>(stash.front().size()))) return false;
      stash.pop_front();
    }
    // Done when everything arrived and the right neighbour has consumed all we
    // sent: a process that exits with frames still in its memif ring loses them.
    while (in_step < steps || out_step < steps || !pending.empty() || acked < sent) {
      while (out_step < steps && in_step >= out_step && sent - acked < kWindow && pending.size() < 32) {
        const uint32_t seg = out_seg(out_step);
        const uint64_t first = seg_begin(seg) + out_idx * epp;
        const uint32_t count =
            static_cast<uint32_t>(std::min<uint64_t>(epp, seg_begin(seg) + seg_len(seg) - first));
        rte_mbuf* m;
        uint8_t* d = frame(kHeaderBytes + 4 * count, right, kData, &m);
        if (!d) break;  // pool empty for now: retry after receiving
        wire::store_be16(d + 16, iteration);
        wire::store_be16(d + 18, static_cast<uint16_t>(out_step));
        wire::store_be32(d + 22, static_cast<uint32_t>(out_idx));
        wire::store_be16(d + 26, static_cast<uint16_t>(count));
        std::memcpy(d + kHeaderBytes, data + first, 4 * count);
        pending.push_back(m);
        ++sent;
        if (++out_idx == frames_of(seg)) {
          ++out_step;
          out_idx = 0;
        }
      }
      flush();
      const uint16_t n = port.rx_burst(burst, 32);
      for (uint16_t i = 0; i < n; ++i) {
        const uint8_t* d = rte_pktmbuf_mtod(burst[i], const uint8_t*);
        const uint32_t len = rte_pktmbuf_data_len(burst[i]);
        bool ok = true;
        if (len >= kHeaderBytes && wire::load_be16(d + 12) == kRingEtherType) {
          if (d[14] == kCredit) {
            const uint64_t c = (uint64_t{wire::load_be32(d + 16)} << 32) | wire::load_be32(d + 20);
            acked = std::max(acked, c);
          } else if (d[14] == kData && wire::load_be16(d + 16) == iteration) {
            ok = apply(d, len);
          } else if (d[14] == kData) {
            stash.emplace_back(d, d + len);
          }
        }
        runtime::DpdkPort::free(burst[i]);
        if (!ok) return false;
      }
      if (consumed - credited >= kCreditEvery || (in_step == steps && consumed != credited)) credit();
    }
    return true;
  }
};

}  // namespace

int run_ring_worker(const WorkerOptions& opt, const RingPeers& peers) {
  nlohmann::json report;
  try {
    const runtime::Plan plan = runtime::load_plan(opt.plan_path);
    report["job"] = plan.job_id;
    report["rank"] = plan.rank;
    report["baseline"] = "ring";
    auto eal = runtime::DpdkEal::initialize(node_eal_args(opt.vdev, 512, opt.file_prefix));
    runtime::PortConfig pc;
    pc.name = opt.vdev.substr(0, opt.vdev.find(','));
    pc.link_wait_ms = 10000;
    runtime::DpdkPort port(eal, pc);
    Ring ring(port, plan.local_mac, peers.left, peers.right, plan.rank, plan.world_size, opt.elems,
              plan.elems_per_packet);
    std::vector<float> data(opt.elems), ref(opt.elems);
    std::vector<double> seconds;
    uint64_t mismatches = 0;
    for (uint32_t it = 0; it < opt.iterations; ++it) {
      fill_tensor(data.data(), data.size(), opt.seed, it, plan.rank);
      const auto t0 = std::chrono::steady_clock::now();
      std::string error;
      if (!ring.allreduce(data.data(), static_cast<uint16_t>(it), error)) {
        const runtime::PortCounters pc = port.counters();
        throw std::runtime_error(error + " (port: rx " + std::to_string(pc.rx_packets) + ", missed " +
                                 std::to_string(pc.rx_missed) + ", nombuf " + std::to_string(pc.rx_nombuf) +
                                 ", errors " + std::to_string(pc.rx_errors) + ")");
      }
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      reference_sum(ref.data(), ref.size(), opt.seed, it, plan.world_size);
      size_t first = 0;
      const size_t bad = count_mismatches(data.data(), ref.data(), data.size(), &first);
      if (bad != 0)
        std::fprintf(stderr, "ring rank %u iteration %u: %zu elements differ\n", plan.rank, it, bad);
      mismatches += bad;
      std::printf("P %u %llu\n", it + 1, 0ull);
      std::fflush(stdout);
    }
    // The last credit may still sit in this process's memif ring, which goes
    // away with the process: give the PSwitch time to read it before exiting.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    report["seconds"] = seconds;
    report["mismatches"] = mismatches;
    report["trees"] = nlohmann::json::array();
    report["ok"] = mismatches == 0;
  } catch (const std::exception& e) {
    report["ok"] = false;
    report["error"] = e.what();
    std::fprintf(stderr, "ring worker: error: %s\n", e.what());
  }
  std::printf("R %s\n", report.dump().c_str());
  std::fflush(stdout);
  std::_Exit(report.value("ok", false) ? 0 : 1);
}

}  // namespace panama::cluster
