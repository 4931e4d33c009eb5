// The allreduce state machine, driven without I/O: frames it emits are
// checked field by field against the mapping rules, and whole allreduces run
// through a real panama::Engine with seeded random loss, duplication,
// reordering, CE marks and cap changes. Expected sums are computed here from
// integer-valued floats (exact in any order); the window bound is checked
// from the frames this harness saw, not from the core's own counters.
//
// Seed: PANAMA_TEST_SEED overrides the random seed (printed on failure).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "panama/engine.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/runtime/payload_copy.hpp"
#include "panama/table_entry.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::runtime;
using panama::test::f2u;

namespace {

using Frame = std::vector<uint8_t>;
using TestEngine = Engine<16, 256, 4>;  // 64 elements per slot
constexpr uint16_t kJob = 42;

uint64_t seed_from_env() {
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

// Trees 10..10+trees-1 are the primaries; with `backups`, tree 10+trees+t
// stands by for tree 10+t.
Plan make_plan(uint32_t rank, uint32_t world, uint32_t trees, uint32_t elems, uint16_t initial_cap,
               bool backups = false) {
  Plan p;
  p.job_id = kJob;
  p.rank = rank;
  p.world_size = world;
  p.local_mac = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(rank)};
  p.local_ip = 0x0A000100u + rank;
  p.elems_per_packet = elems;
  for (uint32_t t = 0; t < trees; ++t) {
    TreePlan tp;
    tp.tree_id = static_cast<uint8_t>(10 + t);
    tp.child_id = static_cast<uint16_t>((rank + t) % world);  // a different child id per tree
    tp.dst_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(0xF0 + t)};
    tp.dst_ip = 0x0A0000F0u + t;
    tp.initial_cwnd_cap = initial_cap;
    p.trees.push_back(tp);
  }
  for (uint32_t t = 0; backups && t < trees; ++t) {
    TreePlan tp = p.trees[t];
    tp.tree_id = static_cast<uint8_t>(10 + trees + t);
    tp.child_id = static_cast<uint16_t>((rank + 1) % world);
    tp.dst_mac[5] = static_cast<uint8_t>(0xE0 + t);
    tp.dst_ip = 0x0A0000E0u + t;
    tp.backup_for = static_cast<int16_t>(10 + t);
    p.trees.push_back(tp);
  }
  p.congestion.rto_initial_us = 200;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 3000;
  p.congestion.retry_budget = 100000;
  return p;
}

void configure_engine(TestEngine& eng, uint32_t world, uint32_t trees, uint32_t q) {
  for (uint32_t t = 0; t < trees; ++t) {
    TableEntry e;
    e.job = kJob;
    e.tree = static_cast<uint8_t>(10 + t);
    e.root = true;
    e.fan_in = world;
    e.child_mask = (uint64_t{1} << world) - 1;
    e.slot_base = t * q;
    e.slot_count = q;
    e.udp_src = e.udp_dst = wire::kDefaultUdpPort;
    REQUIRE(commit_entry(eng, t, e) == regmap::kStatusOk);
  }
}

void set_ecn(Frame& f, uint8_t ecn) {
  f[wire::kIpTos] = static_cast<uint8_t>((f[wire::kIpTos] & ~3u) | ecn);
  wire::store_be16(f.data() + wire::kIpChecksum, 0);
  wire::store_be16(f.data() + wire::kIpChecksum, wire::ipv4_header_checksum(f.data() + wire::kIpOffset));
}

struct Faults {
  double loss_up = 0, loss_down = 0, dup = 0, ce_up = 0, ce_down = 0, cap_change = 0, poison = 0;
  uint32_t reorder_window = 1;  // deliver any of the first N queued frames
};

bool g_backups = false;  // set by the failover tests around a Cluster's construction

// W workers, one root engine with one entry per tree, and a faulty network.
struct Cluster {
  std::mt19937_64 rng;
  uint32_t world, trees, elems, q;
  Faults faults;
  std::unique_ptr<TestEngine> engine = std::make_unique<TestEngine>();
  std::vector<std::unique_ptr<AllreduceCore>> workers;
  // A frame on its way up. With zero-copy send its payload stays in the
  // worker's buffer (`payload`, a reference on `hold`) until the engine
  // reads it, as over net_ring: read then, released then.
  struct Up {
    Frame f;
    const uint8_t* payload = nullptr;
    BufferHold* hold = nullptr;
    void release() {
      if (hold) hold->release();
      hold = nullptr;
    }
  };
  std::vector<Up> up;
  std::vector<std::vector<Frame>> down;
  uint64_t now = 0;
  // Harness-side view per (worker, tree): sequences sent but whose result was
  // not delivered yet, results delivered, and the cap of the latest fresh result.
  std::vector<std::vector<std::set<uint32_t>>> unanswered;
  std::vector<std::vector<std::set<uint32_t>>> delivered;
  std::vector<std::vector<uint16_t>> latest_cap;
  std::vector<std::map<std::pair<OpId, size_t>, int>> writes;  // per worker
  std::vector<std::vector<std::vector<double>>> cwnd_trace;    // [worker][tree] after each fresh result
  uint64_t window_violations = 0, cap_violations = 0;
  bool frames_read_elsewhere = false;  // what the workers' FrameOut says (streaming stores into frames)
  bool attach = false;                 // the workers' FrameOut can attach payloads (zero-copy send)

  std::set<uint32_t> dead;  // tree indices (tree_id - 10) whose PSwitch is gone

  Cluster(uint64_t seed, uint32_t w, uint32_t t, uint32_t e, uint32_t slots, uint16_t initial_cap, Faults f)
      : rng(seed), world(w), trees(t), elems(e), q(slots), faults(f) {
    const uint32_t all = g_backups ? 2 * t : t;
    configure_engine(*engine, w, all, q);
    down.resize(w);
    unanswered.assign(w, std::vector<std::set<uint32_t>>(all));
    delivered.assign(w, std::vector<std::set<uint32_t>>(all));
    latest_cap.assign(w, std::vector<uint16_t>(all, initial_cap));
    writes.resize(w);
    cwnd_trace.assign(w, std::vector<std::vector<double>>(all));
    for (uint32_t r = 0; r < w; ++r) {
      workers.push_back(std::make_unique<AllreduceCore>(make_plan(r, w, t, e, initial_cap, g_backups)));
      workers.back()->set_write_observer([this, r](OpId op, size_t chunk) { ++writes[r][{op, chunk}]; });
    }
  }

  ~Cluster() {
    for (Up& u : up) u.release();
  }

  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  size_t pick(size_t n) {
    return std::uniform_int_distribution<size_t>(0, std::min<size_t>(n, faults.reorder_window) - 1)(rng);
  }

  void send_phase() {
    for (uint32_t w = 0; w < world; ++w) {
      VectorFrameOut out;
      out.elsewhere = frames_read_elsewhere;
      out.attach = attach;
      out.limit = 1 + rng() % 16;
      workers[w]->poll(now, out, 1 + static_cast<uint32_t>(rng() % 32));
      std::vector<VectorFrameOut::Attached> refs(out.frames.size(),
                                                 VectorFrameOut::Attached{0, nullptr, 0, nullptr});
      for (const VectorFrameOut::Attached& a : out.attached) refs[a.frame] = a;
      out.attached.clear();  // the references travel with the frames now
      for (size_t i = 0; i < out.frames.size(); ++i) {
        Up u{std::move(out.frames[i]), refs[i].payload, refs[i].hold};
        Frame& f = u.f;
        wire::Header h;
        REQUIRE(wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), wire::kDefaultUdpPort, h) ==
                wire::FrameClass::kOk);
        const uint32_t t = h.tree_id - 10u;
        if (h.type == static_cast<uint8_t>(wire::PacketType::kAggregateUp)) {
          auto& un = unanswered[w][t];
          const uint32_t lowest = un.empty() ? h.seq : *un.begin();
          if (h.seq - lowest >= latest_cap[w][t]) ++window_violations;
          un.insert(h.seq);
        }
        if (dead.count(t) || chance(faults.loss_up)) {  // nobody answers on a dead tree
          u.release();
          continue;
        }
        if (chance(faults.ce_up)) set_ecn(f, wire::kEcnCe);
        if (chance(faults.dup)) {
          if (u.hold) u.hold->acquire();
          up.push_back(Up{f, u.payload, u.hold});
        }
        up.push_back(std::move(u));
      }
    }
  }

  // Zero-copy send: no allreduce is reported finished while a frame still
  // references its buffer.
  void check_no_frame_references(const std::vector<float>& buf) {
    const auto* lo = reinterpret_cast<const uint8_t*>(buf.data());
    const auto* hi = lo + 4 * buf.size();
    for (const Up& u : up) {
      if (u.payload && u.payload >= lo && u.payload < hi) ++early_finishes;
    }
  }
  uint64_t early_finishes = 0;

  void engine_phase() {
    size_t n = up.empty() ? 0 : 1 + rng() % up.size();
    while (n-- > 0 && !up.empty()) {
      const size_t i = pick(up.size());
      Up u = std::move(up[i]);
      up.erase(up.begin() + static_cast<long>(i));
      Frame& f = u.f;
      if (u.payload) {  // the payload as the buffer holds it now, as a reader of the attached segment sees it
        std::memcpy(f.data() + wire::kPayloadOffset, u.payload, f.size() - wire::kPayloadOffset);
      }
      panama::test::CollectSink sink;
      engine->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
      u.release();
      for (Frame& r : sink.frames) {
        if (chance(faults.ce_down)) set_ecn(r, wire::kEcnCe);
        if (chance(faults.cap_change)) wire::store_be16(r.data() + wire::kPanamaCwndCap, 1 + rng() % q);
        for (uint32_t w = 0; w < world; ++w) {  // the switch replicates the result to every worker
          if (chance(faults.loss_down)) continue;
          if (chance(faults.dup)) down[w].push_back(r);
          down[w].push_back(r);
        }
      }
    }
  }

  void deliver_phase() {
    for (uint32_t w = 0; w < world; ++w) {
      size_t n = down[w].empty() ? 0 : 1 + rng() % down[w].size();
      while (n-- > 0 && !down[w].empty()) {
        const size_t i = pick(down[w].size());
        Frame f = std::move(down[w][i]);
        down[w].erase(down[w].begin() + static_cast<long>(i));
        const uint32_t t = f[wire::kPanamaTreeId] - 10u;
        const uint32_t seq = wire::load_be32(f.data() + wire::kPanamaSeq);
        const bool fresh = delivered[w][t].insert(seq).second;
        REQUIRE(workers[w]->on_frame(f.data(), static_cast<uint32_t>(f.size()), now));
        if (fresh) {
          unanswered[w][t].erase(seq);
          latest_cap[w][t] = wire::load_be16(f.data() + wire::kPanamaCwndCap);
          const double cwnd = workers[w]->congestion(t).cwnd();
          cwnd_trace[w][t].push_back(cwnd);
          if (cwnd > std::max<uint16_t>(1, latest_cap[w][t])) ++cap_violations;
          if (chance(faults.poison)) {
            // A late duplicate with a different payload: writing it would corrupt the buffer.
            for (size_t b = wire::kPayloadOffset; b < f.size(); ++b) f[b] ^= 0x5A;
            down[w].push_back(std::move(f));
          }
        }
      }
    }
  }

  // The PSwitch of tree t dies: frames queued for it are gone, and its last
  // results reached only some workers (the multicast was cut part-way).
  void kill(uint32_t t) {
    dead.insert(t);
    auto of_t = [t](const Frame& f) { return f[wire::kPanamaTreeId] - 10u == t; };
    for (Up& u : up) {
      if (of_t(u.f)) u.release();
    }
    up.erase(std::remove_if(up.begin(), up.end(), [&](const Up& u) { return of_t(u.f); }), up.end());
    for (auto& d : down) {
      if (rng() % 2) d.erase(std::remove_if(d.begin(), d.end(), of_t), d.end());
    }
  }

  // `may_jump`: time may skip to the next retransmission timer when the network
  // is idle (false while some worker is yet to start an allreduce: a worker
  // that is late by several RTOs looks like a dead tree to the others).
  void step(bool may_jump = true) {
    send_phase();
    engine_phase();
    deliver_phase();
    uint64_t next = now + 1000 + rng() % 50000;
    bool idle = may_jump && up.empty();
    for (auto& d : down) idle &= d.empty();
    if (idle) {
      bool sendable = false;
      uint64_t timer = UINT64_MAX;
      for (auto& w : workers) {
        sendable |= w->can_send();
        timer = std::min(timer, w->next_timer_ns());
      }
      if (!sendable && timer != UINT64_MAX) next = std::max(next, timer);
    }
    now = next;
  }
};

// Contribution of worker w to element i of allreduce r: small integers, so
// the fp32 sum is exact whatever order the engine adds them in.
float contribution(uint32_t w, uint32_t r, size_t i) {
  return static_cast<float>(static_cast<int>((w * 131 + r * 17 + i * 7) % 601) - 300);
}

struct Scenario {
  uint32_t world, trees, elems, q;
  uint16_t initial_cap;
  std::vector<size_t> sizes;
  Faults faults;
  int kill_tree = -1;      // with backups: this primary's PSwitch dies ...
  uint64_t kill_step = 0;  // ... at this step (no worker issues its last allreduce before)
  uint32_t failover_after = 6;
  size_t streaming_copy_bytes = 0;  // AllreduceCore::set_streaming_copy_bytes of every worker
  bool zero_copy = false;           // AllreduceCore::set_zero_copy_send of every worker
};

uint64_t g_replayed_kept = 0;  // summed over failover scenarios

void run_scenario(uint64_t seed, const Scenario& s) {
  INFO("seed " << seed << " (set PANAMA_TEST_SEED to reproduce)");
  g_backups = s.kill_tree >= 0;
  Cluster c(seed, s.world, s.trees, s.elems, s.q, s.initial_cap, s.faults);
  g_backups = false;
  for (auto& w : c.workers) REQUIRE(w->plan().congestion.failover_after == 6);
  if (s.kill_tree >= 0) {  // the plan's congestion keys are fixed at construction: rebuild the workers
    c.workers.clear();
    for (uint32_t r = 0; r < s.world; ++r) {
      Plan p = make_plan(r, s.world, s.trees, s.elems, s.initial_cap, true);
      p.congestion.failover_after = s.failover_after;
      c.workers.push_back(std::make_unique<AllreduceCore>(p));
      c.workers.back()->set_write_observer([&c, r](OpId op, size_t chunk) { ++c.writes[r][{op, chunk}]; });
    }
  }
  for (auto& w : c.workers) {
    w->set_streaming_copy_bytes(s.streaming_copy_bytes);
    w->set_zero_copy_send(s.zero_copy);
  }
  c.frames_read_elsewhere = s.streaming_copy_bytes != 0;
  c.attach = s.zero_copy;
  bool killed = s.kill_tree < 0;
  std::vector<std::vector<std::vector<float>>> bufs(s.world);
  std::vector<std::vector<OpId>> ids(s.world);
  for (uint32_t w = 0; w < s.world; ++w) {
    for (size_t r = 0; r < s.sizes.size(); ++r) {
      std::vector<float> b(s.sizes[r]);
      for (size_t i = 0; i < b.size(); ++i) b[i] = contribution(w, static_cast<uint32_t>(r), i);
      bufs[w].push_back(std::move(b));
    }
  }
  // Allreduces are issued at different times on different workers, several in flight.
  std::vector<size_t> issued(s.world, 0);
  auto all_done = [&] {
    for (uint32_t w = 0; w < s.world; ++w) {
      if (issued[w] < s.sizes.size() || c.workers[w]->pending_ops() > 0) return false;
    }
    return true;
  };
  uint64_t steps = 0;
  while (!all_done()) {
    bool answered = true;  // a tree dies only after it answered every worker once
    if (s.kill_tree >= 0) {
      for (uint32_t w = 0; w < s.world; ++w)
        answered &= !c.delivered[w][static_cast<size_t>(s.kill_tree)].empty();
    }
    if (!killed && steps >= s.kill_step && answered) {
      c.kill(static_cast<uint32_t>(s.kill_tree));
      killed = true;
    }
    bool lagging = false;
    for (uint32_t w = 0; w < s.world; ++w) {
      if (!killed && issued[w] + 1 >= s.sizes.size()) continue;
      if (issued[w] < s.sizes.size() && c.rng() % 3 == 0) {
        ids[w].push_back(c.workers[w]->start(bufs[w][issued[w]].data(), bufs[w][issued[w]].size(), c.now));
        ++issued[w];
      }
      lagging |= issued[w] < s.sizes.size() && (killed || issued[w] + 1 < s.sizes.size());
    }
    c.step(s.kill_tree < 0 || !lagging);
    for (uint32_t w = 0; w < s.world; ++w) {
      for (size_t r = 0; r < ids[w].size(); ++r) {
        if (c.workers[w]->status(ids[w][r]) != OpStatus::kPending) c.check_no_frame_references(bufs[w][r]);
      }
    }
    REQUIRE(++steps < 200000);
  }
  CHECK(c.early_finishes == 0);
  CHECK(c.window_violations == 0);
  CHECK(c.cap_violations == 0);
  if (std::getenv("PANAMA_TEST_VERBOSE")) {
    const CommStats st = c.workers[0]->stats();
    std::cout << "  world " << s.world << " trees " << s.trees << " ops " << s.sizes.size() << " steps "
              << steps << " sent " << st.packets_sent << " retrans " << st.retransmissions << " dup "
              << st.duplicate_results << " ce " << st.results_ce << " reductions "
              << st.trees[0].cwnd_reductions << " bytes " << st.bytes_completed << "\n";
  }
  for (uint32_t w = 0; w < s.world; ++w) {
    CHECK_FALSE(c.workers[w]->failed());
    size_t expected_writes = 0;
    for (size_t r = 0; r < s.sizes.size(); ++r) {
      REQUIRE(c.workers[w]->status(ids[w][r]) == OpStatus::kDone);
      expected_writes += (s.sizes[r] + s.elems - 1) / s.elems;
      size_t wrong = 0;
      for (size_t i = 0; i < s.sizes[r]; ++i) {
        float sum = 0;
        for (uint32_t k = 0; k < s.world; ++k) sum += contribution(k, static_cast<uint32_t>(r), i);
        if (f2u(bufs[w][r][i]) != f2u(sum)) ++wrong;
      }
      CHECK(wrong == 0);
    }
    size_t twice = 0;
    for (auto& kv : c.writes[w]) twice += kv.second != 1;
    CHECK(c.writes[w].size() == expected_writes);
    CHECK(twice == 0);
    const CommStats st = c.workers[w]->stats();
    CHECK(st.bytes_completed == st.bytes_issued);
    CHECK(st.ops_completed == s.sizes.size());
    if (s.kill_tree >= 0) {
      CHECK(st.failovers == 1);
      g_replayed_kept += st.trees[static_cast<size_t>(s.kill_tree)].replayed_kept;
      CHECK(st.trees[static_cast<size_t>(s.kill_tree)].state == "dead");
      CHECK(st.trees[s.trees + static_cast<size_t>(s.kill_tree)].state == "active");
      // Every worker restarted the dead tree's sequences at the same point.
      CHECK(st.trees[static_cast<size_t>(s.kill_tree)].restart_seq ==
            c.workers[0]->stats().trees[static_cast<size_t>(s.kill_tree)].restart_seq);
      for (size_t t = 0; t < st.trees.size(); ++t) {
        if (t != static_cast<size_t>(s.kill_tree) && t != s.trees + static_cast<size_t>(s.kill_tree)) {
          CHECK(st.trees[t].state == (t < s.trees ? "active" : "standby"));
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("core: frames follow the static chunk mapping, sequences continue across allreduces") {
  Plan p = make_plan(1, 4, 3, 5, 100);
  AllreduceCore core(p);
  std::vector<float> a(47), b(12);  // 10 chunks (last has 2 elements), then 3 chunks
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * static_cast<float>(i) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -1.25f * static_cast<float>(i);
  core.start(a.data(), a.size(), 0);
  core.start(b.data(), b.size(), 0);
  // Open every window: results for everything sent so far raise cwnd.
  std::map<std::pair<uint8_t, uint32_t>, Frame> seen;  // (tree, seq) -> frame
  for (int round = 0; round < 50; ++round) {
    VectorFrameOut out;
    core.poll(1000, out);
    for (Frame& f : out.frames) {
      const uint8_t tree = f[wire::kPanamaTreeId];
      const uint32_t seq = wire::load_be32(f.data() + wire::kPanamaSeq);
      REQUIRE(seen.emplace(std::make_pair(tree, seq), f).second);
      Frame r = f;  // echo as a result
      r[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
      REQUIRE(core.on_frame(r.data(), static_cast<uint32_t>(r.size()), 1000));
    }
  }
  REQUIRE(seen.size() == 13);
  // Expected from the rule: chunk k of op r -> tree k mod 3, sequence base_t(r) + k div 3.
  const size_t base_after_a[3] = {4, 3, 3};  // op a: 10 chunks -> trees get 4, 3, 3
  for (int op = 0; op < 2; ++op) {
    const std::vector<float>& v = op == 0 ? a : b;
    const size_t chunks = (v.size() + 4) / 5;
    for (size_t k = 0; k < chunks; ++k) {
      const uint8_t tree = static_cast<uint8_t>(10 + k % 3);
      const uint32_t seq = static_cast<uint32_t>((op == 0 ? 0 : base_after_a[k % 3]) + k / 3);
      auto it = seen.find({tree, seq});
      REQUIRE(it != seen.end());
      const Frame& f = it->second;
      wire::Header h;
      REQUIRE(wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), 9600, h) ==
              wire::FrameClass::kOk);
      CHECK(h.type == static_cast<uint8_t>(wire::PacketType::kAggregateUp));
      CHECK(h.ecn == wire::kEcnEct0);
      CHECK(h.job_id == kJob);
      CHECK(h.child_id == (1 + k % 3) % 4);
      CHECK(h.cwnd_cap == 0xFFFF);
      CHECK(wire::load_be16(f.data() + wire::kUdpChecksum) == 0);
      CHECK(h.ip_dst == 0x0A0000F0u + k % 3);
      CHECK(h.eth_dst[5] == 0xF0 + k % 3);
      const size_t n = std::min<size_t>(5, v.size() - 5 * k);
      REQUIRE(h.elem_count == n);
      // Results were echoes, so the buffer holds the original values.
      for (size_t i = 0; i < n; ++i) CHECK(wire::load_le32(f.data() + 64 + 4 * i) == f2u(v[5 * k + i]));
    }
  }
  const CommStats st = core.stats();
  CHECK(st.ops_completed == 2);
  CHECK(st.trees[0].next_seq == 5);
  CHECK(st.trees[1].next_seq == 4);
}

TEST_CASE("core: the initial cap bounds the window before any result") {
  Plan p = make_plan(0, 2, 1, 4, 3);
  p.congestion.initial_cwnd = 50;
  AllreduceCore core(p);
  std::vector<float> a(400, 1.0f);
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out, 1000);
  CHECK(out.frames.size() == 3);
  core.poll(10, out, 1000);
  CHECK(out.frames.size() == 3);  // nothing new without results (no timeout yet)
}

TEST_CASE("core: bad, duplicate and unexpected results are counted and change nothing") {
  Plan p = make_plan(0, 1, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  AllreduceCore core(p);
  std::vector<float> a = {1, 2, 3, 4, 5, 6};  // chunks of 4 and 2
  const OpId id = core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  REQUIRE(out.frames.size() == 2);
  auto result = [&](uint32_t seq, std::vector<float> vals) {
    std::vector<uint32_t> bits;
    for (float v : vals) bits.push_back(f2u(v));
    wire::Header h = panama::test::contribution(kJob, 10, 0, seq, static_cast<uint16_t>(vals.size()));
    h.type = static_cast<uint8_t>(wire::PacketType::kResultDown);
    h.cwnd_cap = 8;
    return panama::test::make_frame(h, bits);
  };
  Frame wrong_count = result(1, {9, 9, 9});
  CHECK(core.on_frame(wrong_count.data(), static_cast<uint32_t>(wrong_count.size()), 1));
  Frame never_sent = result(7, {9, 9, 9, 9});
  CHECK(core.on_frame(never_sent.data(), static_cast<uint32_t>(never_sent.size()), 1));
  Frame truncated = result(0, {9, 9, 9, 9});
  CHECK(core.on_frame(truncated.data(), static_cast<uint32_t>(truncated.size() - 1), 1));
  Frame other_job = result(0, {9, 9, 9, 9});
  wire::store_be16(other_job.data() + wire::kPanamaJobId, kJob + 1);
  CHECK_FALSE(core.on_frame(other_job.data(), static_cast<uint32_t>(other_job.size()), 1));
  Frame up = out.frames[0];  // an aggregate-up frame is not a result
  CHECK_FALSE(core.on_frame(up.data(), static_cast<uint32_t>(up.size()), 1));
  CHECK(a == std::vector<float>{1, 2, 3, 4, 5, 6});

  Frame good0 = result(0, {10, 20, 30, 40});
  Frame good1 = result(1, {50, 60});
  CHECK(core.on_frame(good1.data(), static_cast<uint32_t>(good1.size()), 2));
  CHECK(core.status(id) == OpStatus::kPending);
  CHECK(core.on_frame(good0.data(), static_cast<uint32_t>(good0.size()), 2));
  CHECK(core.status(id) == OpStatus::kDone);
  Frame late = result(0, {-1, -1, -1, -1});
  CHECK(core.on_frame(late.data(), static_cast<uint32_t>(late.size()), 3));
  CHECK(a == std::vector<float>{10, 20, 30, 40, 50, 60});
  const CommStats st = core.stats();
  CHECK(st.malformed_results == 1);
  CHECK(st.unexpected_results == 2);
  CHECK(st.duplicate_results == 1);
  CHECK(st.trees[0].bytes_completed == 24);
}

TEST_CASE("core: a job that cannot finish fails after the retry budget with a clear error, no hang") {
  Plan p = make_plan(0, 2, 2, 4, 8);
  p.congestion.retry_budget = 3;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 400;
  AllreduceCore core(p);
  std::vector<float> a(16, 1.0f);
  const OpId id = core.start(a.data(), a.size(), 0);
  uint64_t now = 0;
  uint64_t retrans_frames = 0;
  for (int i = 0; i < 100 && !core.failed(); ++i) {
    VectorFrameOut out;
    core.poll(now, out);
    for (auto& f : out.frames) retrans_frames += f[wire::kPanamaType] == 3;
    if (core.failed()) break;
    now = core.next_timer_ns();
    REQUIRE(now != UINT64_MAX);
  }
  REQUIRE(core.failed());
  CHECK(core.status(id) == OpStatus::kFailed);
  // 3 retransmissions (the budget) and 3 x 400 us (budget x rto_max) without any result.
  CHECK_THAT(core.op_error(id), Catch::Contains("no result after 4 retransmissions (retry_budget)") &&
                                    Catch::Contains("answered nothing for 1 ms"));
  CHECK(retrans_frames >= 3);
  // Backoff: 100, 200, 400 (capped) microseconds: the 4th timeout comes at >= 100+200+400+400.
  CHECK(now >= 1100 * 1000);
  const OpId later = core.start(a.data(), a.size(), now);
  CHECK(core.status(later) == OpStatus::kFailed);
  CHECK(a == std::vector<float>(16, 1.0f));  // the buffer is left untouched
}

TEST_CASE("core: zero-length allreduce completes at once; null buffer fails") {
  AllreduceCore core(make_plan(0, 1, 1, 4, 8));
  CHECK(core.status(core.start(nullptr, 0, 0)) == OpStatus::kDone);
  const OpId bad = core.start(nullptr, 5, 0);
  CHECK(core.status(bad) == OpStatus::kFailed);
  CHECK_THAT(core.op_error(bad), Catch::Contains("null buffer"));
}

TEST_CASE("core: workers fed identical result streams compute identical cwnd sequences") {
  const uint64_t seed = seed_from_env();
  INFO("seed " << seed);
  Faults f;
  f.ce_down = 0.2;
  f.cap_change = 0.1;
  f.ce_up = 0.05;
  Cluster c(seed, 3, 2, 16, 16, 4, f);  // no loss: every worker sees the same stream
  std::vector<std::vector<float>> bufs(3, std::vector<float>(16 * 400, 1.0f));
  for (uint32_t w = 0; w < 3; ++w) c.workers[w]->start(bufs[w].data(), bufs[w].size(), 0);
  for (int i = 0; i < 100000 &&
                  (c.workers[0]->pending_ops() || c.workers[1]->pending_ops() || c.workers[2]->pending_ops());
       ++i)
    c.step();
  for (uint32_t t = 0; t < 2; ++t) {
    REQUIRE(c.cwnd_trace[0][t].size() == 200);
    CHECK(c.cwnd_trace[1][t] == c.cwnd_trace[0][t]);
    CHECK(c.cwnd_trace[2][t] == c.cwnd_trace[0][t]);
    // The stream had CE marks: cwnd went down at some point.
    bool decreased = false;
    for (size_t i = 1; i < c.cwnd_trace[0][t].size(); ++i)
      decreased |= c.cwnd_trace[0][t][i] < c.cwnd_trace[0][t][i - 1];
    CHECK(decreased);
  }
  CHECK(c.cap_violations == 0);
  CHECK(bufs[0][123] == 3.0f);
}

TEST_CASE("payload copy: streaming and plain copies equal memcpy at every alignment and length") {
  // Source and destination offsets 0..63 and lengths around the 16-byte
  // head, the 64-byte blocks and the 128-byte streaming minimum; bytes
  // outside the destination range stay untouched.
  std::vector<uint8_t> src(8192 + 128), dst(8192 + 256), want(dst.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 11);
  const size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 191, 1000, 4096, 4097, 8191};
  size_t wrong = 0, cases = 0;
  for (bool streaming : {false, true}) {
    for (size_t so = 0; so < 64; so += 3) {
      for (size_t d_off = 0; d_off < 64; ++d_off) {
        for (size_t len : lengths) {
          std::fill(dst.begin(), dst.end(), uint8_t{0xEE});
          want = dst;
          std::memcpy(want.data() + 64 + d_off, src.data() + so, len);
          copy_payload(dst.data() + 64 + d_off, src.data() + so, len, streaming);
          wrong += dst != want;
          ++cases;
        }
      }
    }
  }
  CHECK(cases > 40000);
  CHECK(wrong == 0);
}

TEST_CASE("core: every chunk written exactly once and results exact under random event orders") {
  const uint64_t base_seed = seed_from_env();
  std::cout << "test_runtime_core: random event orders, seed " << base_seed
            << " (PANAMA_TEST_SEED to reproduce)\n";
  std::mt19937_64 meta(base_seed);
  for (int run = 0; run < 150; ++run) {
    const uint64_t seed = meta();
    std::mt19937_64 g(seed);
    Scenario s;
    s.world = 1 + static_cast<uint32_t>(g() % 4);
    s.trees = 1 + static_cast<uint32_t>(g() % 3);
    s.elems = 1 + static_cast<uint32_t>(g() % 64);
    s.q = 1 + static_cast<uint32_t>(g() % 16);
    s.initial_cap = static_cast<uint16_t>(1 + g() % s.q);
    const size_t nops = 1 + g() % 4;
    for (size_t i = 0; i < nops; ++i) {
      const size_t kind = g() % 5;
      s.sizes.push_back(kind == 0 ? 0 : kind == 1 ? 1 + g() % s.elems : 1 + g() % (s.elems * 300));
    }
    auto p = [&](double max) { return std::uniform_real_distribution<double>(0, max)(g); };
    s.faults.loss_up = p(0.2);
    s.faults.loss_down = p(0.2);
    s.faults.dup = p(0.2);
    s.faults.ce_up = p(0.2);
    s.faults.ce_down = p(0.3);
    s.faults.cap_change = p(0.3);
    s.faults.poison = p(0.5);
    s.faults.reorder_window = 1 + static_cast<uint32_t>(g() % 8);
    // Some allreduces at or above the threshold (streaming payload copies), some below.
    s.streaming_copy_bytes = g() % 3 == 0 ? 0 : 4 * (1 + g() % (s.elems * 150));
    s.zero_copy = g() % 2 == 0;
    INFO("run " << run << ": world " << s.world << " trees " << s.trees << " elems " << s.elems << " Q "
                << s.q << " streaming from " << s.streaming_copy_bytes << " bytes, zero-copy send "
                << s.zero_copy);
    run_scenario(seed, s);
  }
}

TEST_CASE("core: zero-copy send: frames carry the buffer's chunks, the allreduce waits for their release") {
  Plan plan = make_plan(0, 1, 1, 4, 8);
  plan.congestion.initial_cwnd = 4;
  AllreduceCore core(plan);
  auto eng = std::make_unique<TestEngine>();
  configure_engine(*eng, 1, 1, 8);
  core.set_zero_copy_send(true);
  std::vector<float> a(10);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i + 1);
  const OpId id = core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  out.attach = true;
  REQUIRE(core.poll(0, out) == 3);
  REQUIRE(out.attached.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(out.attached[k].frame == k);
    CHECK(out.attached[k].payload == reinterpret_cast<const uint8_t*>(a.data() + 4 * k));
    CHECK(out.attached[k].len == 4 * (k < 2 ? 4u : 2u));
    CHECK(out.frames[k].size() == wire::frame_length(k < 2 ? 4 : 2));  // header + the payload as sent
  }
  // World size 1: each frame comes straight back as its result.
  for (const Frame& f : out.frames) {
    panama::test::CollectSink sink;
    eng->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
    REQUIRE(sink.frames.size() == 1);
    REQUIRE(core.on_frame(sink.frames[0].data(), static_cast<uint32_t>(sink.frames[0].size()), 1));
  }
  CHECK(core.stats().bytes_completed == 40);
  // Every result is in, but two frames still reference the buffer.
  out.release_attached(1);
  VectorFrameOut idle;
  core.poll(2, idle);
  CHECK(core.status(id) == OpStatus::kPending);
  CHECK(core.pending_ops() == 1);
  out.release_attached();
  core.poll(3, idle);
  CHECK(core.status(id) == OpStatus::kDone);
  CHECK(core.pending_ops() == 0);
  CHECK(core.stats().ops_completed == 1);
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(a[i] == static_cast<float>(i + 1));  // world 1: the sum is itself

  // abort() (the communicator going away) does not wait for the frames.
  const OpId id2 = core.start(a.data(), a.size(), 4);
  VectorFrameOut out2;
  out2.attach = true;
  REQUIRE(core.poll(4, out2) == 3);
  core.abort("the communicator was destroyed");
  CHECK(core.status(id2) == OpStatus::kFailed);
  CHECK(core.pending_ops() == 0);
  out2.release_attached();

  // A FrameOut that cannot attach gets copies, and nothing waits.
  AllreduceCore plain(make_plan(0, 1, 1, 4, 8));
  plain.set_zero_copy_send(true);
  plain.start(a.data(), 4, 0);
  VectorFrameOut copies;
  REQUIRE(plain.poll(0, copies) == 1);
  CHECK(copies.attached.empty());
  CHECK(std::memcmp(copies.frames[0].data() + wire::kPayloadOffset, a.data(), 16) == 0);
}

TEST_CASE("core: a full transmit path does not stop the retry budget: the allreduce fails, no hang") {
  Plan p = make_plan(0, 2, 1, 4, 8);
  p.congestion.retry_budget = 3;
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 400;
  AllreduceCore core(p);
  std::vector<float> a(8, 2.0f);
  const OpId id = core.start(a.data(), a.size(), 0);
  VectorFrameOut first;
  core.poll(0, first);
  REQUIRE(first.frames.size() == 1);  // initial window
  // The peer is gone and the transmit queue never drains: nothing can be written.
  uint64_t now = 0;
  for (int i = 0; i < 100 && !core.failed(); ++i) {
    now = std::max(now + 1, core.next_timer_ns());
    REQUIRE(now != UINT64_MAX);
    VectorFrameOut full;
    full.limit = 0;
    CHECK(core.poll(now, full) == 0);
  }
  REQUIRE(core.failed());
  CHECK(core.status(id) == OpStatus::kFailed);
  CHECK_THAT(core.op_error(id), Catch::Contains("retry_budget"));
  CHECK(core.stats().timeouts == 4);  // 100, 300, 700, 1100 us; fails at 1500 us (>= 3 x 400 us of silence)
  CHECK(core.stats().retransmissions == 0);
  CHECK(now >= 1500 * 1000);  // the backed-off deadlines still apply
}

TEST_CASE("core: a retransmission the transmit path refused goes out on the next poll") {
  Plan p = make_plan(0, 1, 1, 4, 8);
  p.congestion.rto_initial_us = 100;
  p.congestion.rto_min_us = 100;
  AllreduceCore core(p);
  std::vector<float> a(4, 1.0f);
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  REQUIRE(out.frames.size() == 1);
  VectorFrameOut full;
  full.limit = 0;
  core.poll(100 * 1000, full);  // the deadline passes while the path is full
  CHECK(core.stats().timeouts == 1);
  CHECK(core.stats().retransmissions == 0);
  VectorFrameOut room;
  core.poll(100 * 1000 + 1, room);
  REQUIRE(room.frames.size() == 1);
  CHECK(room.frames[0][wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kRetransmission));
  CHECK(core.stats().timeouts == 1);  // one timeout, one retransmission
  CHECK(core.stats().retransmissions == 1);
}

TEST_CASE("core: plans with backup trees are validated") {
  Plan p = make_plan(0, 2, 2, 4, 8, true);
  CHECK_NOTHROW(validate_plan(p));
  Plan bad = p;
  bad.trees[2].backup_for = 99;
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("trees[2].backup_for"));
  bad = p;
  bad.trees[3].backup_for = 10;  // tree 10 has two backups
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("already has a backup"));
  bad = p;
  bad.trees[3].backup_for = 12;  // a backup of a backup
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("no primary tree with id 12"));
  bad = p;
  bad.congestion.failover_after = 0;
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("failover_after"));
}

TEST_CASE("core: a tree without a backup that dies fails the job after the retry budget") {
  const uint64_t seed = seed_from_env();
  Scenario s{3, 2, 8, 8, 4, {8 * 40, 8 * 40}, Faults{}};
  g_backups = false;
  Cluster c(seed, s.world, s.trees, s.elems, s.q, s.initial_cap, s.faults);
  for (uint32_t r = 0; r < s.world; ++r) {
    Plan p = make_plan(r, s.world, s.trees, s.elems, s.initial_cap);
    p.congestion.retry_budget = 8;
    c.workers[r] = std::make_unique<AllreduceCore>(p);
  }
  std::vector<std::vector<float>> bufs(s.world, std::vector<float>(s.sizes[0], 1.0f));
  for (uint32_t w = 0; w < s.world; ++w) c.workers[w]->start(bufs[w].data(), bufs[w].size(), 0);
  for (int i = 0; i < 5; ++i) c.step();
  c.kill(0);
  bool all_failed = false;
  for (int i = 0; i < 100000 && !all_failed; ++i) {
    c.step();
    all_failed = true;
    for (auto& w : c.workers) all_failed &= w->failed();
  }
  CHECK(all_failed);
  CHECK_THAT(c.workers[0]->failure(), Catch::Contains("tree 10"));
}

TEST_CASE(
    "core: tree failover: a dead tree's chunks finish on its backup, bit-exact, agreed by every worker") {
  const uint64_t base_seed = seed_from_env();
  std::cout << "test_runtime_core: tree failover, seed " << base_seed << " (PANAMA_TEST_SEED to reproduce)\n";
  std::mt19937_64 meta(base_seed ^ 0xFA11);
  g_replayed_kept = 0;
  for (int run = 0; run < 60; ++run) {
    const uint64_t seed = meta();
    std::mt19937_64 g(seed);
    Scenario s;
    s.world = 2 + static_cast<uint32_t>(g() % 3);
    s.trees = 1 + static_cast<uint32_t>(g() % 3);
    s.elems = 1 + static_cast<uint32_t>(g() % 64);
    s.q = 2 + static_cast<uint32_t>(g() % 15);
    s.initial_cap = static_cast<uint16_t>(1 + g() % s.q);
    const size_t nops = 2 + g() % 4;
    for (size_t i = 0; i < nops; ++i) s.sizes.push_back(s.trees * s.elems + g() % (s.elems * 200));
    auto p = [&](double max) { return std::uniform_real_distribution<double>(0, max)(g); };
    const bool faulty = run % 2 == 1;  // half the runs on a clean network
    if (faulty) {
      s.faults.loss_up = p(0.1);
      s.faults.loss_down = p(0.1);
      s.faults.dup = p(0.1);
      s.faults.ce_down = p(0.3);
      s.faults.cap_change = p(0.3);
      s.faults.poison = p(0.5);
      s.faults.reorder_window = 1 + static_cast<uint32_t>(g() % 8);
    }
    s.kill_tree = static_cast<int>(g() % s.trees);
    s.kill_step = 1 + g() % 80;
    s.failover_after = faulty ? 14 : 4;  // a live tree must not look dead under loss
    s.zero_copy = g() % 2 == 0;
    INFO("run " << run << ": world " << s.world << " trees " << s.trees << " elems " << s.elems << " Q "
                << s.q << " kill tree " << s.kill_tree << " at step " << s.kill_step << ", zero-copy send "
                << s.zero_copy);
    run_scenario(seed, s);
  }
  // The hard case happened: workers re-sent contributions whose result they
  // already had, because others had not received it when the tree died.
  CHECK(g_replayed_kept > 0);
}

TEST_CASE("core: a tree that never answered is not failed over (a late worker looks the same)") {
  const uint64_t seed = seed_from_env();
  g_backups = true;
  Cluster c(seed, 2, 2, 8, 8, 4, Faults{});
  g_backups = false;
  for (uint32_t r = 0; r < 2; ++r) {
    Plan p = make_plan(r, 2, 2, 8, 4, true);
    p.congestion.retry_budget = 10;
    p.congestion.failover_after = 2;
    c.workers[r] = std::make_unique<AllreduceCore>(p);
  }
  std::vector<std::vector<float>> bufs(2, std::vector<float>(8 * 20, 1.0f));
  c.kill(0);  // before anything was sent
  for (uint32_t w = 0; w < 2; ++w) c.workers[w]->start(bufs[w].data(), bufs[w].size(), 0);
  for (int i = 0; i < 100000 && !(c.workers[0]->failed() && c.workers[1]->failed()); ++i) c.step();
  for (auto& w : c.workers) {
    REQUIRE(w->failed());
    CHECK_THAT(w->failure(), Catch::Contains("tree 10") && Catch::Contains("retry_budget"));
    CHECK(w->stats().failovers == 0);
  }
}
