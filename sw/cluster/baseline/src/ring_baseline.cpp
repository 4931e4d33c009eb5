// The baseline the virtual cluster compares against: a host ring allreduce
// (reduce-scatter then all-gather, 2(N-1) steps) between the workers, over
// the same DPDK ports and the same PSwitches, whose output queues pace every
// link. It is built the way NCCL's and Gloo's rings are, so that it can
// reach its own bandwidth bound (every worker sends 2(N-1)/N of the tensor):
//
// - Pipelined across steps: frame i of step k goes out as soon as frame i of
//   step k-1 has arrived (and been added), not when all of step k-1 has.
// - Several channels: the tensor is split into `channels` parts, each its
//   own ring with its own window, sequence numbers and credits, served
//   round-robin by the one polling thread.
// - Vectorised reduction (SSE binary32 addition, round to nearest even,
//   no FTZ/DAZ): element e of segment s is summed along the ring starting at
//   rank s, i.e. ((x[s] + x[s+1]) + x[s+2]) + ... + x[s-1], in that order.
// - Its own loss handling: frames carry a per-channel sequence number; the
//   receiver accepts only the next one (go-back-N), drops others and answers
//   them and duplicates with a credit; the sender goes back to the last
//   credited frame after 3 credits that did not advance (fast retransmit) or
//   when no credit advanced for an RTO. A credit (the count of frames
//   consumed) every kCreditEvery frames is also the window's ACK.
//
// Its frames are ordinary Ethernet frames (EtherType 0x88B5, local
// experimental), so the PSwitches forward them by MAC and the engines never
// see them.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>

#include <rte_mbuf.h>
#include <nlohmann/json.hpp>

#include "panama/cluster/ring_baseline.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/idle_backoff.hpp"
#include "panama/runtime/plan_file.hpp"
#include "panama/wire.hpp"

namespace panama::cluster {

namespace {

constexpr uint16_t kRingEtherType = 0x88B5;
constexpr uint32_t kHeaderBytes = 40;  // payload 4-byte aligned after the Ethernet header
constexpr uint8_t kData = 1, kCredit = 2;
constexpr uint64_t kWindowFrames = 256;   // frames in flight towards the right neighbour, all channels
constexpr uint64_t kCreditEvery = 8;      // frames consumed between credits
constexpr uint64_t kRtoNs = 200'000'000;  // no credit progress this long: go back to the last credit
constexpr uint32_t kDupCredits = 3;       // credits that did not advance before a fast go-back

// Header after Ethernet (offset 14): kind u8, channel u8, iteration u16, step u16,
// pad u16, index u32, count u16, pad 4, seq u64 (at 32). Credit frames carry
// the channel at 15 and the consumed count (u64) at 16.

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void store_be64(uint8_t* d, uint64_t v) {
  wire::store_be32(d, static_cast<uint32_t>(v >> 32));
  wire::store_be32(d + 4, static_cast<uint32_t>(v));
}
uint64_t load_be64(const uint8_t* d) {
  return (uint64_t{wire::load_be32(d)} << 32) | wire::load_be32(d + 4);
}

// dst[i] = dst[i] + src[i] (binary32, round to nearest even); src is the
// frame's payload, native byte order, any alignment.
void add_run(float* dst, const uint8_t* src, uint32_t n) {
  uint32_t i = 0;
#if defined(__SSE2__)
  for (; i + 8 <= n; i += 8) {
    const __m128 a0 = _mm_loadu_ps(dst + i), a1 = _mm_loadu_ps(dst + i + 4);
    const __m128 b0 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 4 * i)));
    const __m128 b1 = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 4 * i + 16)));
    _mm_storeu_ps(dst + i, _mm_add_ps(a0, b0));
    _mm_storeu_ps(dst + i + 4, _mm_add_ps(a1, b1));
  }
#endif
  for (; i < n; ++i) {
    float v;
    std::memcpy(&v, src + 4 * i, 4);
    dst[i] += v;
  }
}

struct RingCounters {
  uint64_t retransmitted = 0;  // frames sent again after a go-back
  uint64_t go_backs = 0;       // RTO expiries
  uint64_t out_of_order = 0;   // frames dropped because an earlier one was missing
  uint64_t duplicates = 0;     // frames received again (answered with a credit)
};

// One channel: a ring over elements [begin, begin + elems) of the tensor.
struct Channel {
  uint8_t id = 0;
  uint64_t begin = 0, elems = 0;
  // Sender: position (step, idx) of the next frame, cumulative sequence
  // numbers, and where this iteration's first frame was.
  uint32_t out_step = 0;
  uint64_t out_idx = 0, next_seq = 0, high_seq = 0, acked = 0, out_base = 0;
  uint64_t last_ack_ns = 0;
  uint32_t dup_credits = 0;
  bool fast_armed = true;  // a fast go-back is allowed (credits advanced since the last one)
  // Receiver.
  uint32_t in_step = 0;
  uint64_t in_idx = 0, consumed = 0, credited = 0, gap_frames = 0;
  bool credit_now = false;
  std::deque<std::vector<uint8_t>> stash;  // in-order frames of the next iteration that came early
};

struct Ring {
  Ring(runtime::DpdkPort& p, runtime::MacAddress s, runtime::MacAddress l, runtime::MacAddress r, uint32_t rk,
       uint32_t w, uint64_t n, uint64_t e, uint32_t nch, const runtime::IdlePolicy& idle)
      : port(p), self(s), left(l), right(r), rank(rk), world(w), epp(e), backoff(idle.backoff()) {
    nch = static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(nch, std::max<uint64_t>(1, n / w))));
    channels.resize(nch);
    for (uint32_t c = 0; c < nch; ++c) {
      channels[c].id = static_cast<uint8_t>(c);
      channels[c].begin = n * c / nch;
      channels[c].elems = n * (c + 1) / nch - channels[c].begin;
    }
    window = std::max<uint64_t>(8, kWindowFrames / nch);
    // Before the first allreduce every channel is "done" with iteration
    // 0xFFFF, so frames of iteration 0 that come early are stashed.
    for (Channel& c : channels) c.in_step = c.out_step = steps();
  }

  runtime::DpdkPort& port;
  runtime::MacAddress self, left, right;
  uint32_t rank, world;
  uint64_t epp;
  uint64_t window = kWindowFrames;
  std::vector<Channel> channels;
  std::vector<rte_mbuf*> pending;
  runtime::IdleBackoff backoff;
  RingCounters counters;
  float* data = nullptr;
  uint16_t iteration = 0xFFFF;
  std::string error;

  uint32_t steps() const { return 2 * (world - 1); }
  uint64_t seg_begin(const Channel& c, uint32_t s) const { return c.begin + c.elems * s / world; }
  uint64_t seg_len(const Channel& c, uint32_t s) const {
    return c.elems * (s + 1) / world - c.elems * s / world;
  }
  uint64_t frames_of(const Channel& c, uint32_t s) const { return (seg_len(c, s) + epp - 1) / epp; }
  uint32_t out_seg(uint32_t k) const {
    return k < world - 1 ? (rank + world - k % world) % world
                         : (rank + 1 + world - (k - (world - 1))) % world;
  }
  uint32_t in_seg(uint32_t k) const {
    const uint32_t l = (rank + world - 1) % world;
    return k < world - 1 ? (l + world - k % world) % world : (l + 1 + world - (k - (world - 1))) % world;
  }
  // Frames of a segment may be empty (elements < world): skip steps with none.
  void skip_empty_out(Channel& c) const {
    while (c.out_step < steps() && frames_of(c, out_seg(c.out_step)) == 0) ++c.out_step;
  }
  void skip_empty_in(Channel& c) const {
    while (c.in_step < steps() && frames_of(c, in_seg(c.in_step)) == 0) ++c.in_step;
  }

  uint8_t* frame(uint32_t len, const runtime::MacAddress& dst, uint8_t kind, uint8_t channel, rte_mbuf** m) {
    uint8_t* d = nullptr;
    *m = port.alloc_frame(len, &d);
    if (!*m) return nullptr;
    std::memset(d, 0, kHeaderBytes);
    std::memcpy(d, dst.data(), 6);
    std::memcpy(d + 6, self.data(), 6);
    wire::store_be16(d + 12, kRingEtherType);
    d[14] = kind;
    d[15] = channel;
    return d;
  }

  uint32_t flush() {
    uint32_t sent = 0;
    while (!pending.empty()) {
      const uint16_t n =
          port.tx_burst(pending.data(), static_cast<uint16_t>(std::min<size_t>(pending.size(), 64)));
      pending.erase(pending.begin(), pending.begin() + n);
      sent += n;
      if (n == 0) break;
    }
    return sent;
  }

  void credit(Channel& c) {
    rte_mbuf* m;
    uint8_t* d = frame(kHeaderBytes, left, kCredit, c.id, &m);
    if (!d) return;
    store_be64(d + 16, c.consumed);
    pending.push_back(m);
    c.credited = c.consumed;
    c.credit_now = false;
  }

  // Applies one in-order data frame of this iteration; false on a protocol error.
  bool apply(Channel& c, const uint8_t* d, uint32_t len) {
    const uint16_t step = wire::load_be16(d + 18);
    const uint32_t index = wire::load_be32(d + 22);
    const uint16_t count = wire::load_be16(d + 26);
    const uint32_t seg = c.in_step < steps() ? in_seg(c.in_step) : 0;
    const uint64_t first = seg_begin(c, seg) + c.in_idx * epp;
    const uint64_t expect =
        c.in_step < steps() ? std::min<uint64_t>(epp, seg_begin(c, seg) + seg_len(c, seg) - first) : 0;
    if (step != c.in_step || index != c.in_idx || count != expect || len < kHeaderBytes + 4u * count) {
      error = "ring channel " + std::to_string(c.id) + ": frame (step " + std::to_string(step) + " index " +
              std::to_string(index) + " count " + std::to_string(count) + ") where (" +
              std::to_string(c.in_step) + "/" + std::to_string(c.in_idx) + "/" + std::to_string(expect) +
              ") was expected";
      return false;
    }
    float* dst = data + first;
    if (c.in_step < world - 1) {
      add_run(dst, d + kHeaderBytes, count);
    } else {
      std::memcpy(dst, d + kHeaderBytes, 4u * count);
    }
    ++c.consumed;
    if (++c.in_idx == frames_of(c, seg)) {
      ++c.in_step;
      c.in_idx = 0;
      skip_empty_in(c);
    }
    return true;
  }

  // Frame (step k, index i) may go when frame i of step k-1 has arrived.
  bool may_send(const Channel& c) const {
    if (c.out_step == 0) return true;
    const uint32_t prev = c.out_step - 1;
    return c.in_step > prev || (c.in_step == prev && c.in_idx > c.out_idx);
  }

  uint32_t send_some(Channel& c) {
    uint32_t n = 0;
    while (c.out_step < steps() && c.next_seq - c.acked < window && pending.size() < 64 && may_send(c)) {
      const uint32_t seg = out_seg(c.out_step);
      const uint64_t first = seg_begin(c, seg) + c.out_idx * epp;
      const uint32_t count =
          static_cast<uint32_t>(std::min<uint64_t>(epp, seg_begin(c, seg) + seg_len(c, seg) - first));
      rte_mbuf* m;
      uint8_t* d = frame(kHeaderBytes + 4 * count, right, kData, c.id, &m);
      if (!d) break;  // pool empty for now: retry after receiving
      wire::store_be16(d + 16, iteration);
      wire::store_be16(d + 18, static_cast<uint16_t>(c.out_step));
      wire::store_be32(d + 22, static_cast<uint32_t>(c.out_idx));
      wire::store_be16(d + 26, static_cast<uint16_t>(count));
      store_be64(d + 32, c.next_seq);
      std::memcpy(d + kHeaderBytes, data + first, 4 * count);
      pending.push_back(m);
      if (c.next_seq < c.high_seq) ++counters.retransmitted;
      ++c.next_seq;
      c.high_seq = std::max(c.high_seq, c.next_seq);
      ++n;
      if (++c.out_idx == frames_of(c, seg)) {
        ++c.out_step;
        c.out_idx = 0;
        skip_empty_out(c);
      }
    }
    return n;
  }

  // Go back to the last credited frame of this iteration.
  void go_back(Channel& c) {
    ++counters.go_backs;
    c.dup_credits = 0;
    c.fast_armed = false;
    uint64_t pos = c.acked - c.out_base;
    c.next_seq = c.acked;
    c.out_step = 0;
    c.out_idx = 0;
    skip_empty_out(c);
    while (c.out_step < steps() && pos >= frames_of(c, out_seg(c.out_step))) {
      pos -= frames_of(c, out_seg(c.out_step));
      ++c.out_step;
      skip_empty_out(c);
    }
    c.out_idx = pos;
  }

  // One frame from the wire; false on a protocol error.
  bool receive(const uint8_t* d, uint32_t len) {
    if (len < kHeaderBytes || wire::load_be16(d + 12) != kRingEtherType || d[15] >= channels.size())
      return true;
    Channel& c = channels[d[15]];
    if (d[14] == kCredit) {
      const uint64_t v = load_be64(d + 16);
      if (v > c.acked && v <= c.high_seq) {
        c.acked = v;
        c.last_ack_ns = now_ns();
        c.dup_credits = 0;
        c.fast_armed = true;
        if (c.next_seq < c.acked) go_back(c);  // a credit beyond a go-back point
      } else if (v == c.acked && c.acked < c.high_seq && c.fast_armed && ++c.dup_credits >= kDupCredits) {
        go_back(c);  // the receiver keeps asking for frame `acked`: it was lost
      }
      return true;
    }
    if (d[14] != kData) return true;
    const uint64_t seq = load_be64(d + 32);
    const uint16_t it = wire::load_be16(d + 16);
    if (seq < c.consumed) {  // a duplicate: the sender missed our credit
      ++counters.duplicates;
      c.credit_now = true;
      return true;
    }
    if (it == iteration && c.stash.empty() && seq == c.consumed && c.in_step < steps())
      return apply(c, d, len);
    if (it == static_cast<uint16_t>(iteration + 1) && c.in_step == steps() &&
        seq == c.consumed + c.stash.size()) {
      c.stash.emplace_back(d, d + len);  // the left neighbour is one iteration ahead
      return true;
    }
    ++counters.out_of_order;  // a gap before it (loss): tell the sender what is missing
    if (c.gap_frames++ % 4 == 0) c.credit_now = true;
    return true;
  }

  // One pass: send, receive, credit, timeouts. Returns frames handled;
  // false in `ok` on a protocol error.
  uint32_t pass(bool& ok) {
    uint32_t work = 0;
    for (Channel& c : channels) work += send_some(c);
    work += flush();
    rte_mbuf* burst[32];
    const uint16_t n = port.rx_burst(burst, 32);
    for (uint16_t i = 0; i < n && ok; ++i) {
      ok = receive(rte_pktmbuf_mtod(burst[i], const uint8_t*), rte_pktmbuf_data_len(burst[i]));
    }
    runtime::DpdkPort::free_bulk(burst, n);
    work += n;
    const uint64_t now = now_ns();
    for (Channel& c : channels) {
      if (c.credit_now || c.consumed - c.credited >= kCreditEvery ||
          (c.in_step == steps() && c.consumed != c.credited))
        credit(c);
      if (c.acked < c.high_seq && now - c.last_ack_ns > kRtoNs) {
        c.last_ack_ns = now;
        go_back(c);
      }
    }
    work += flush();
    return work;
  }

  // Keeps answering the neighbours (credits for duplicates) while this rank
  // does something else, e.g. waits at the iteration barrier.
  void serve() {
    bool ok = true;
    pass(ok);
  }

  bool done() const {
    for (const Channel& c : channels) {
      if (c.in_step < steps() || c.out_step < steps() || c.acked < c.high_seq || c.consumed != c.credited)
        return false;
    }
    return pending.empty();
  }

  // One allreduce of `tensor`; returns false (with `error`) on a protocol error.
  bool allreduce(float* tensor, uint16_t it) {
    data = tensor;
    iteration = it;
    const uint64_t now = now_ns();
    for (Channel& c : channels) {
      c.out_step = c.in_step = 0;
      c.out_idx = c.in_idx = 0;
      c.out_base = c.next_seq;
      c.last_ack_ns = now;
      skip_empty_out(c);
      skip_empty_in(c);
    }
    // Frames of this iteration that arrived during the previous one.
    for (Channel& c : channels) {
      while (!c.stash.empty()) {
        const std::vector<uint8_t> f = std::move(c.stash.front());
        c.stash.pop_front();
        if (!apply(c, f.data(), static_cast<uint32_t>(f.size()))) return false;
      }
    }
    // Done when everything arrived and the right neighbour has consumed all
    // we sent: a process that exits with frames still in its memif ring loses them.
    while (!done()) {
      bool ok = true;
      backoff.after_poll(pass(ok));
      if (!ok) return false;
    }
    return true;
  }
};

}  // namespace

nlohmann::json ring_iterations(const WorkerOptions& opt, const RingPeers& peers,
                               const std::shared_ptr<runtime::DpdkEal>& shared_eal, const std::string& device,
                               const WorkerProgress& progress, std::shared_ptr<void>* keep_alive) {
  nlohmann::json report;
  try {
    const runtime::Plan plan = runtime::load_plan(opt.plan_path);
    report["job"] = plan.job_id;
    report["rank"] = plan.rank;
    report["baseline"] = "ring";
    if (!shared_eal && opt.vdevs.empty()) throw std::runtime_error("a ring worker needs a device");
    auto eal = shared_eal ? shared_eal
                          : runtime::DpdkEal::initialize(node_eal_args(opt.vdevs, 512, opt.file_prefix));
    runtime::PortConfig pc;
    pc.name = shared_eal ? device : opt.vdevs[0].substr(0, opt.vdevs[0].find(','));
    pc.link_wait_ms = 10000;
    if (!shared_eal) pc.mbufs = port_mbufs(opt.vdevs);
    auto port_ptr = std::make_shared<runtime::DpdkPort>(eal, pc);
    if (keep_alive) *keep_alive = port_ptr;  // other threads may still hold its mbufs
    runtime::DpdkPort& port = *port_ptr;
    Ring ring(port, plan.local_mac, peers.left, peers.right, plan.rank, plan.world_size, opt.elems,
              plan.elems_per_packet, opt.ring_channels, opt.idle);
    std::vector<float> data(opt.elems), ref(opt.elems);
    std::vector<double> seconds;
    uint64_t mismatches = 0;
    for (uint32_t it = 0; it < opt.iterations; ++it) {
      fill_tensor(data.data(), data.size(), opt.seed, it, plan.rank);
      // As run_worker: no rank's test data work overlaps a timed allreduce.
      // The ring keeps answering its neighbours meanwhile (a lost last credit).
      iteration_barrier(opt.plan_path, plan.job_id, plan.rank, plan.world_size, it, 600.0,
                        [&ring] { ring.serve(); });
      const auto t0 = std::chrono::steady_clock::now();
      if (!ring.allreduce(data.data(), static_cast<uint16_t>(it))) {
        const runtime::PortCounters pc = port.counters();
        throw std::runtime_error(ring.error + " (port: rx " + std::to_string(pc.rx_packets) + ", missed " +
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
      progress(it + 1, 0);
    }
    // The left neighbour may still wait for our last credit (lost, or still
    // in this process's memif ring, which goes away with the process): keep
    // answering for a while before exiting.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until) {
      ring.serve();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    report["seconds"] = seconds;
    report["mismatches"] = mismatches;
    report["retransmissions"] = ring.counters.retransmitted;
    report["timeouts"] = ring.counters.go_backs;
    report["ring"] = {{"channels", ring.channels.size()},
                      {"window_frames", ring.window * ring.channels.size()},
                      {"retransmitted_frames", ring.counters.retransmitted},
                      {"go_backs", ring.counters.go_backs},
                      {"out_of_order_drops", ring.counters.out_of_order},
                      {"duplicates", ring.counters.duplicates}};
    report["trees"] = nlohmann::json::array();
    report["ok"] = mismatches == 0;
  } catch (const std::exception& e) {
    report["ok"] = false;
    report["error"] = e.what();
    std::fprintf(stderr, "ring worker: error: %s\n", e.what());
  }
  return report;
}

void run_ring_worker(const WorkerOptions& opt, const RingPeers& peers) {
  const nlohmann::json report = ring_iterations(opt, peers, nullptr, "", print_progress_line, nullptr);
  print_report_line(report.dump());
  std::_Exit(report.value("ok", false) ? 0 : 1);
}

}  // namespace panama::cluster
