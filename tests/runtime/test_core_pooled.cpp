// The protocol core in pooled mode (docs/hybrid-allreduce.md; docs/runtime.md,
// "Pooled mode"): claims before each group's chunks, the root's answer
// deciding every worker's way for the group, the ring fallback for denied
// groups, releases, leases.
//
// The rig: jobs of N workers whose AllreduceCores exchange frames through a
// one-level switch model, the real ClaimPool (sw/pswitch) answering claims at
// the root, and the real engine model summing the granted groups' chunks in
// a fixed share per (job, tree) entry. The pool's mapping of a group onto
// its slots is the switch's business, not the runtime's: the rig gives each
// granted group G fresh sequences of the entry's share instead (a share so
// large that no slot is used twice). Ring frames go from worker to worker
// directly. Every frame (claims, claim-results, releases, chunks, results,
// ring data and acknowledgements) may be lost, duplicated or delayed.
// Results are checked bit for bit against references computed here: sums
// of small exact values, rounded once to bf16/fp16 by
// sw/cluster/test_data.hpp's round16.
//
// Seed: PANAMA_TEST_SEED overrides the random seed (printed on failure).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core_rig.hpp"
#include "panama/claim.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/engine.hpp"
#include "panama/pswitch/claim_pool.hpp"
#include "panama/pswitch/output_queue.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/table_entry.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::runtime;
using panama::pswitch::ClaimAction;
using panama::pswitch::ClaimPool;
using panama::pswitch::PoolConfig;
using panama::pswitch::PoolDrop;
using panama::pswitch::PooledEntry;

namespace {

using Frame = std::vector<uint8_t>;
using PoolEngine = Engine<8, 4096, 4>;  // 64 elements per slot
constexpr uint32_t kShare = 1024;       // engine sequences per entry: no slot is used twice
constexpr uint16_t kPort = wire::kDefaultUdpPort;
constexpr uint16_t kRingPort = kPort + 1;

struct JobSpec {
  uint16_t job = 1;
  uint32_t world = 3;
  uint32_t trees = 1;
  uint32_t group_size = 4;
  uint32_t claim_cap = 64;
  std::vector<size_t> sizes;          // elements of each allreduce
  std::vector<wire::ElemType> types;  // per allreduce; missing: fp32
  std::vector<uint32_t> ring;         // the rank at each ring position; empty: rank order
};

struct RigOptions {
  uint32_t elems = 16;  // elements per packet
  uint32_t pool_slots = 64;
  uint64_t lease_ns = 1000000000;  // L
  uint32_t retry_budget = 100000;
  uint32_t ring_window = 64;
  bool ring_congestion = false;  // PooledPlan::ring_congestion
  double ring_ce = 0;            // ring data frames marked CE on the way (a queue over K)
  double loss = 0, dup = 0;
  uint64_t jitter_ns = 0;            // > 0: frames overtake each other
  uint64_t start_spread_ns = 20000;  // workers issue their allreduces up to this late
  bool answer_claims = true;         // false: an engine without a pool (claims dropped)
  uint32_t leaves = 0;               // > 0: two levels, this many leaf switches under the root
  int drop_ring_to = -1;             // >= 0: ring frames to this rank (of every job) are lost
  // Drops a frame on its way to the switch (besides `loss`).
  std::function<bool(const Frame&, uint64_t now, uint16_t job, uint32_t rank)> drop_up;
};

MacAddress worker_mac(uint16_t job, uint32_t rank) {
  return {0x02, 0, static_cast<uint8_t>(job >> 8), static_cast<uint8_t>(job), 1, static_cast<uint8_t>(rank)};
}
uint32_t worker_ip(uint16_t job, uint32_t rank) {
  return 0x0A000000u + (uint32_t{job} << 8) + rank + 1;
}

Plan pooled_plan(const JobSpec& j, uint32_t rank, const RigOptions& o) {
  Plan p;
  p.job_id = j.job;
  p.rank = rank;
  p.world_size = j.world;
  p.local_mac = worker_mac(j.job, rank);
  p.local_ip = worker_ip(j.job, rank);
  p.elems_per_packet = o.elems;
  for (uint32_t t = 0; t < j.trees; ++t) {
    TreePlan tp;
    tp.tree_id = static_cast<uint8_t>(10 + t);
    tp.child_id = static_cast<uint16_t>(o.leaves ? rank / o.leaves : (rank + t) % j.world);
    tp.dst_mac = {0x02, 0, 0, 0, 0, 0xF0};
    tp.dst_ip = 0x0A0000F0u;
    tp.initial_cwnd_cap = 8;
    p.trees.push_back(tp);
  }
  p.congestion.rto_initial_us = 200;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 3000;
  p.congestion.retry_budget = o.retry_budget;
  PooledPlan q;
  q.group_size = j.group_size;
  uint32_t next = (rank + 1) % j.world, prev = (rank + j.world - 1) % j.world;
  if (!j.ring.empty()) {
    REQUIRE(j.ring.size() == j.world);
    const uint32_t pos =
        static_cast<uint32_t>(std::find(j.ring.begin(), j.ring.end(), rank) - j.ring.begin());
    REQUIRE(pos < j.world);
    q.ring_position = pos;
    next = j.ring[(pos + 1) % j.world];
    prev = j.ring[(pos + j.world - 1) % j.world];
  }
  q.next_mac = worker_mac(j.job, next);
  q.next_ip = worker_ip(j.job, next);
  q.prev_mac = worker_mac(j.job, prev);
  q.prev_ip = worker_ip(j.job, prev);
  q.ring_window = o.ring_window;
  q.ring_congestion = o.ring_congestion;
  p.pooled = q;
  return p;
}

wire::ElemType type_of(const JobSpec& j, size_t op) {
  return op < j.types.size() ? j.types[op] : wire::ElemType::kFloat32;
}

// The data of job j: a seed per job, so two jobs sum different tensors.
uint64_t data_seed(uint64_t seed, uint16_t job) {
  return seed * 31 + job;
}

class PoolRig {
 public:
  struct Worker {
    size_t job = 0;  // index into jobs
    uint32_t rank = 0;
    std::unique_ptr<AllreduceCore> core;
    uint64_t start_ns = 0;
    bool started = false;
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<OpId> ops;
    std::map<std::pair<uint8_t, uint32_t>, std::vector<bool>> finished;  // (tree, group) -> ways (true: ring)
  };

  PoolRig(uint64_t seed, std::vector<JobSpec> jobs, RigOptions o)
      : jobs_(std::move(jobs)), o_(std::move(o)), seed_(seed), rng_(seed) {
    // Worker indices first: the switches' children refer to them.
    for (size_t ji = 0; ji < jobs_.size(); ++ji) {
      const JobSpec& j = jobs_[ji];
      REQUIRE(j.world >= std::max<uint32_t>(1, o_.leaves));
      for (uint32_t r = 0; r < j.world; ++r) {
        Worker w;
        w.job = ji;
        w.rank = r;
        w.core = std::make_unique<AllreduceCore>(pooled_plan(j, r, o_));
        w.start_ns = std::uniform_int_distribution<uint64_t>(0, o_.start_spread_ns)(rng_);
        const size_t wi = workers_.size();
        mac_to_worker_[worker_mac(j.job, r)] = wi;
        workers_.push_back(std::move(w));
        workers_.back().core->set_group_observer([this, wi](uint8_t tree, uint32_t group, bool on_ring) {
          workers_[wi].finished[{tree, group}].push_back(on_ring);
        });
      }
    }
    // Switch 0 is the root; with leaves, switches 1..K are the leaves and
    // rank r sits at leaf 1 + r mod K with child id r div K.
    const uint32_t k = o_.leaves;
    switches_.resize(1 + k);
    for (uint32_t si = 0; si <= k; ++si) {
      Switch& sw = switches_[si];
      sw.root = si == 0;
      sw.up_child = static_cast<uint16_t>(si - 1);
      sw.eng = std::make_unique<PoolEngine>();
      std::vector<PooledEntry> entries;
      for (size_t ji = 0; ji < jobs_.size(); ++ji) {
        const JobSpec& j = jobs_[ji];
        // This switch's children for job j: destinations by child id.
        std::vector<int> dest;
        for (size_t wi = 0; wi < workers_.size(); ++wi) {
          if (workers_[wi].job != ji) continue;
          const uint32_t r = workers_[wi].rank;
          if (k == 0 && si == 0) {
            dest.resize(j.world);
            dest[r] = static_cast<int>(wi);  // one level: child id (rank + t) mod world, set per tree below
          } else if (si > 0 && 1 + r % k == si) {
            dest.resize(std::max<size_t>(dest.size(), r / k + 1));
            dest[r / k] = static_cast<int>(wi);
          }
        }
        if (k > 0 && si == 0) {
          for (uint32_t l = 0; l < k; ++l) dest.push_back(-2 - static_cast<int>(l));  // leaf l + 1
        }
        for (uint32_t t = 0; t < j.trees; ++t) {
          const uint32_t e = static_cast<uint32_t>(entries.size());
          std::vector<int> by_child = dest;
          if (k == 0) {  // one level: worker rank r has child id (r + t) mod world
            for (uint32_t r = 0; r < j.world; ++r) by_child[(r + t) % j.world] = dest[r];
          }
          PooledEntry pe;
          pe.job = j.job;
          pe.tree = static_cast<uint8_t>(10 + t);
          pe.group_size = j.group_size;
          pe.claim_cap = j.claim_cap;
          pe.children = static_cast<uint32_t>(by_child.size());
          pe.root = sw.root;
          entries.push_back(pe);
          sw.children.push_back(by_child);
          TableEntry te;
          te.job = j.job;
          te.tree = pe.tree;
          te.root = sw.root;
          te.fan_in = pe.children;
          te.child_mask = (uint64_t{1} << pe.children) - 1;
          te.slot_base = e * kShare;
          te.slot_count = kShare;
          te.out_child_id = sw.up_child;
          te.udp_src = te.udp_dst = kPort;
          REQUIRE(commit_entry(*sw.eng, e, te) == regmap::kStatusOk);
        }
      }
      REQUIRE(entries.size() * kShare <= PoolEngine::kPacketSlots);
      sw.pool = std::make_unique<ClaimPool>(PoolConfig{0, o_.pool_slots, o_.lease_ns}, entries);
      sw.next_base.assign(entries.size(), 0);
      sw.back.resize(entries.size());
    }
  }

  // Runs until every worker has finished (or failed) and the network is
  // empty; false when simulated time ran past `limit_ns` (a stuck job).
  bool run(uint64_t limit_ns = 20000000000ull) {
    while (true) {
      for (Worker& w : workers_) {
        if (!w.started && now_ >= w.start_ns) start(w);
      }
      while (!q_.empty() && q_.top().at <= now_) {
        Ev ev = q_.top();
        q_.pop();
        if (ev.to < 0) {
          to_switch(static_cast<size_t>(-ev.to - 1), ev.frame);
        } else {
          workers_[static_cast<size_t>(ev.to)].core->on_frame(ev.frame.data(),
                                                              static_cast<uint32_t>(ev.frame.size()), now_);
        }
      }
      for (Switch& sw : switches_) {
        const size_t n = sw.pool->advance(now_).size();
        if (sw.root) expiries_ += n;
      }
      std::vector<size_t> order(workers_.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng_);
      for (size_t wi : order) {
        Worker& w = workers_[wi];
        if (!w.started) continue;
        VectorFrameOut out;
        w.core->poll(now_, out, 16);
        for (Frame& f : out.frames) from_worker(wi, std::move(f));
      }
      bool done = true;
      for (const Worker& w : workers_) done &= w.started && (w.core->pending_ops() == 0 || w.core->failed());
      if (done && q_.empty()) return true;
      uint64_t next = UINT64_MAX;
      if (!q_.empty()) next = q_.top().at;
      for (const Worker& w : workers_) {
        if (!w.started) {
          next = std::min(next, w.start_ns);
          continue;
        }
        if (w.core->failed()) continue;
        next = std::min(next, w.core->next_timer_ns());
        if (w.core->can_send()) next = std::min(next, now_ + 500);
      }
      if (next == UINT64_MAX) return done;  // nothing will ever happen again
      now_ = std::max(now_ + 1, next);
      if (now_ > limit_ns) {
        dump();
        return false;
      }
    }
  }

  // What each worker's core says, for a stuck run.
  void dump() const {
    for (const Worker& w : workers_) {
      const CommStats st = w.core->stats();
      const PoolStats& p = st.pool;
      std::cerr << "job " << jobs_[w.job].job << " rank " << w.rank << ": pending " << w.core->pending_ops()
                << " failed " << w.core->failed() << " groups " << p.groups << " granted " << p.granted
                << " denied " << p.denied << " expired " << p.expired << " by peer " << p.denied_by_peer
                << " in network " << p.in_network << " on ring " << p.on_ring << " released " << p.released
                << " ring sent " << p.ring_frames_sent << " retx " << p.ring_retransmissions << " acks "
                << p.ring_acks_sent << "/" << p.ring_acks_received << " received " << p.ring_frames_received
                << " dup " << p.ring_duplicates << " early " << p.ring_early << " malformed "
                << p.ring_malformed << " next timer " << w.core->next_timer_ns() << " can send "
                << w.core->can_send() << "\n";
    }
  }

  // Every allreduce done on every worker, bit for bit the reference; every
  // group finished once on every worker of its job, the same way; the
  // engines emitted nothing for a group on the ring.
  void check() {
    for (const Worker& w : workers_) {
      const JobSpec& j = jobs_[w.job];
      INFO("job " << j.job << " rank " << w.rank);
      REQUIRE(!w.core->failed());
      const CommStats st = w.core->stats();
      CHECK(st.pool.denied_after_result == 0);
      CHECK(st.pool.ring_malformed == 0);
      for (size_t k = 0; k < j.sizes.size(); ++k) {
        INFO("allreduce " << k);
        REQUIRE(w.core->status(w.ops[k]) == OpStatus::kDone);
        const size_t n = j.sizes[k];
        const wire::ElemType t = type_of(j, k);
        const uint64_t ds = data_seed(seed_, j.job);
        if (t == wire::ElemType::kFloat32) {
          std::vector<float> want(n);
          cluster::reference_sum(want.data(), n, ds, static_cast<uint32_t>(k), j.world);
          CHECK(std::memcmp(want.data(), w.bufs[k].data(), 4 * n) == 0);
        } else {
          // One rounding on the ring and at a one-level root; in a two-level
          // tree each leaf rounds its partial too (docs/protocol.md §7).
          const std::vector<uint32_t> base = tree_bases(j, k);
          size_t bad = 0;
          for (size_t i = 0; i < n; ++i) {
            double sum = 0;
            for (uint32_t r = 0; r < j.world; ++r)
              sum += cluster::exact_value16(cluster::stream_base(ds, static_cast<uint32_t>(k), r), i, t);
            uint16_t want = cluster::round16(sum, t);
            const size_t c = i / o_.elems;
            const uint32_t tree = static_cast<uint32_t>(c % j.trees);
            const uint32_t group = static_cast<uint32_t>((base[tree] + c / j.trees) / j.group_size);
            if (o_.leaves > 0 && !w.finished.at({static_cast<uint8_t>(10 + tree), group}).at(0)) {
              double two = 0;
              for (uint32_t l = 0; l < o_.leaves; ++l) {
                double leaf = 0;
                for (uint32_t r = l; r < j.world; r += o_.leaves)
                  leaf += cluster::exact_value16(cluster::stream_base(ds, static_cast<uint32_t>(k), r), i, t);
                two += cluster::value16(cluster::round16(leaf, t), t);
              }
              want = cluster::round16(two, t);
            }
            uint16_t got;
            std::memcpy(&got, w.bufs[k].data() + 2 * i, 2);
            bad += got != want;
          }
          CHECK(bad == 0);
        }
      }
      // Groups: each once, the same way on every worker of the job.
      CHECK(w.finished.size() == groups_of(j));
      for (const auto& kv : w.finished) {
        INFO("tree " << int(kv.first.first) << " group " << kv.first.second);
        REQUIRE(kv.second.size() == 1);
        const Worker& first = workers_[first_worker(w.job)];
        CHECK(first.finished.at(kv.first) == kv.second);
        if (kv.second[0]) CHECK(emitted_.count({j.job, kv.first.first, kv.first.second}) == 0);
      }
      CHECK(st.pool.groups == groups_of(j));
      CHECK(st.pool.in_network + st.pool.on_ring == groups_of(j));
    }
  }

  // The first sequence of allreduce k on each tree: every allreduce starts
  // at a group boundary.
  std::vector<uint32_t> tree_bases(const JobSpec& j, size_t k) const {
    std::vector<uint32_t> base(j.trees, 0);
    for (size_t q = 0; q < k; ++q) {
      const size_t chunks = (j.sizes[q] + o_.elems - 1) / o_.elems;
      for (uint32_t t = 0; t < j.trees && t < chunks; ++t) {
        const size_t c = (chunks - t + j.trees - 1) / j.trees;
        base[t] = static_cast<uint32_t>((base[t] + c + j.group_size - 1) / j.group_size * j.group_size);
      }
    }
    return base;
  }

  // Groups of a job: per allreduce and tree, ceil(chunks on the tree / G).
  size_t groups_of(const JobSpec& j) const {
    size_t g = 0;
    for (size_t n : j.sizes) {
      const size_t chunks = (n + o_.elems - 1) / o_.elems;
      for (uint32_t t = 0; t < j.trees && t < chunks; ++t) {
        const size_t c = (chunks - t + j.trees - 1) / j.trees;
        g += (c + j.group_size - 1) / j.group_size;
      }
    }
    return g;
  }

  PoolStats job_stats(size_t ji) const {
    PoolStats s;
    for (const Worker& w : workers_) {
      if (w.job != ji) continue;
      const PoolStats p = w.core->stats().pool;
      s.granted += p.granted;
      s.denied += p.denied;
      s.expired += p.expired;
      s.denied_by_peer += p.denied_by_peer;
      s.in_network += p.in_network;
      s.on_ring += p.on_ring;
      s.ring_frames_sent += p.ring_frames_sent;
      s.ring_bytes_sent += p.ring_bytes_sent;
      s.releases_sent += p.releases_sent;
      s.claims_sent += p.claims_sent;
      s.claimed += p.claimed;
    }
    return s;
  }

  std::vector<Worker>& workers() { return workers_; }
  // Rule 5 with its confirmations: once every worker is done (none gave
  // up asking: the rig's retry budget is unlimited), every engine has heard
  // every release, whatever was lost, so every group is freed everywhere.
  void check_pools() {
    for (size_t si = 0; si < switches_.size(); ++si) {
      INFO("switch " << si);
      const ClaimPool& p = *switches_[si].pool;
      CHECK(p.counters().slots_held == 0);
      for (const JobSpec& j : jobs_) {
        INFO("job " << j.job);
        size_t released = 0;
        for (uint32_t t = 0; t < j.trees; ++t) {
          const int e = p.find_entry(j.job, static_cast<uint8_t>(10 + t));
          if (e >= 0) released += p.released(static_cast<uint32_t>(e));
        }
        CHECK(released == groups_of(j));
      }
    }
  }

  ClaimPool& pool() { return *switches_[0].pool; }  // the root's
  uint64_t now() const { return now_; }
  uint64_t ring_frames = 0, ring_marked = 0, contributions = 0, claims = 0, expiries_ = 0;
  std::map<std::tuple<uint16_t, uint8_t, uint32_t>, std::vector<claim::Answer>>
      answers;  // the root's, in order

 private:
  struct Ev {
    uint64_t at;
    uint64_t order;
    int to;       // -1: the switch; else a worker index
    size_t from;  // the sending worker (to the switch)
    Frame frame;
    bool operator<(const Ev& o) const { return at != o.at ? at > o.at : order > o.order; }
  };

  size_t first_worker(size_t job) const {
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (workers_[i].job == job) return i;
    }
    return 0;
  }

  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  void send(int to, size_t from, const Frame& f) {
    if (chance(o_.loss)) return;
    const int copies = chance(o_.dup) ? 2 : 1;
    for (int c = 0; c < copies; ++c) {
      const uint64_t jitter =
          o_.jitter_ns ? std::uniform_int_distribution<uint64_t>(0, o_.jitter_ns)(rng_) : 0;
      q_.push(Ev{now_ + 2000 + jitter, order_++, to, from, f});
    }
  }

  void start(Worker& w) {
    const JobSpec& j = jobs_[w.job];
    const uint64_t ds = data_seed(seed_, j.job);
    for (size_t k = 0; k < j.sizes.size(); ++k) {
      const size_t n = j.sizes[k];
      const wire::ElemType t = type_of(j, k);
      std::vector<uint8_t> buf(n * wire::elem_bytes(static_cast<uint8_t>(t)));
      if (t == wire::ElemType::kFloat32) {
        cluster::fill_tensor(reinterpret_cast<float*>(buf.data()), n, ds, static_cast<uint32_t>(k), w.rank);
      } else {
        cluster::fill_tensor16(reinterpret_cast<uint16_t*>(buf.data()), n, t, ds, static_cast<uint32_t>(k),
                               w.rank);
      }
      w.bufs.push_back(std::move(buf));
    }
    for (size_t k = 0; k < j.sizes.size(); ++k)
      w.ops.push_back(w.core->start(w.bufs[k].data(), j.sizes[k], type_of(j, k), now_));
    w.started = true;
  }

  void from_worker(size_t wi, Frame f) {
    const Worker& w = workers_[wi];
    const JobSpec& j = jobs_[w.job];
    REQUIRE(f.size() >= 42);
    if (wire::load_be16(f.data() + wire::kUdpDstPort) == kRingPort) {
      ++ring_frames;
      MacAddress dst;
      std::memcpy(dst.data(), f.data() + wire::kEthDst, 6);
      auto it = mac_to_worker_.find(dst);
      REQUIRE(it != mac_to_worker_.end());
      if (o_.drop_ring_to >= 0 && workers_[it->second].rank == static_cast<uint32_t>(o_.drop_ring_to)) return;
      if (f.size() > 66 && chance(o_.ring_ce) &&  // a data frame through a queue over K
          pswitch::mark_ce(f.data(), static_cast<uint32_t>(f.size())) == pswitch::EcnMark::kMarked)
        ++ring_marked;
      send(static_cast<int>(it->second), wi, f);
      return;
    }
    if (o_.drop_up && o_.drop_up(f, now_, j.job, w.rank)) return;
    send(o_.leaves == 0 ? -1 : -2 - static_cast<int>(w.rank % o_.leaves), wi, f);
  }

  struct Switch {
    bool root = true;
    uint16_t up_child = 0;  // a leaf's child id at the root
    std::unique_ptr<PoolEngine> eng;
    std::unique_ptr<ClaimPool> pool;
    std::vector<std::vector<int>> children;  // per entry: destination of each child id
    // The granted groups' sequences in each entry's share, and back.
    std::vector<uint32_t> next_base;
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> base;
    std::vector<std::map<uint32_t, uint32_t>> back;
  };

  uint32_t entry_of(const Switch& sw, uint16_t job, uint8_t tree) {
    const int e = sw.pool->find_entry(job, tree);
    REQUIRE(e >= 0);
    return static_cast<uint32_t>(e);
  }

  void claim_result(int to, uint16_t job, uint8_t tree, uint16_t child, uint32_t group, claim::Answer a,
                    claim::Reason r) {
    wire::Header addr{};
    addr.ttl = 64;
    addr.udp_src = addr.udp_dst = kPort;
    Frame f(claim::kFrameBytes);
    REQUIRE(claim::build_claim_result(f.data(), claim::kFrameBytes, addr, job, tree, child, group, a, r) ==
            claim::kFrameBytes);
    send(to, 0, f);
  }

  // To every child of the entry (a claim-result with each child's id).
  void down_all(const Switch& sw, uint32_t e, const Frame& f) {
    for (size_t c = 0; c < sw.children[e].size(); ++c) down_one(sw, e, c, f);
  }

  void down_one(const Switch& sw, uint32_t e, size_t c, const Frame& f) {
    Frame g = f;
    wire::store_be16(g.data() + wire::kPanamaChildId, static_cast<uint16_t>(c));
    if (g.size() == claim::kFrameBytes) {
      wire::store_be16(g.data() + wire::kIpChecksum, 0);
      wire::store_be16(g.data() + wire::kIpChecksum, wire::ipv4_header_checksum(g.data() + wire::kIpOffset));
    }
    send(sw.children[e][c], 0, g);
  }

  // A release confirmation with the root's count (as sw/pswitch's switch core).
  Frame confirmation(uint16_t job, uint8_t tree, uint32_t count) {
    wire::Header addr{};
    addr.ttl = 64;
    addr.udp_src = addr.udp_dst = kPort;
    Frame f(claim::kFrameBytes);
    REQUIRE(claim::build_release(f.data(), claim::kFrameBytes, addr, job, tree, 0, count, true) ==
            claim::kFrameBytes);
    return f;
  }

  void to_switch(size_t si, const Frame& f) {
    Switch& sw = switches_[si];
    wire::Header h{};
    claim::Frame cf;
    const claim::Class c = claim::parse_frame(f.data(), static_cast<uint32_t>(f.size()), kPort, h, cf);
    if (c == claim::Class::kClaim) {
      if (sw.root) ++claims;
      if (!o_.answer_claims) return;
      const uint32_t e = entry_of(sw, cf.job_id, cf.tree_id);
      const auto step = sw.pool->on_claim(e, cf.child_id, cf.seq, cf.denied_below, now_);
      if (step.action == ClaimAction::kAnswer) {
        answers[{cf.job_id, cf.tree_id, cf.seq}].push_back(step.answer);
        Frame r(claim::kFrameBytes);
        wire::Header addr{};
        addr.ttl = 64;
        addr.udp_src = addr.udp_dst = kPort;
        REQUIRE(claim::build_claim_result(r.data(), claim::kFrameBytes, addr, cf.job_id, cf.tree_id, 0,
                                          cf.seq, step.answer, step.reason) == claim::kFrameBytes);
        down_all(sw, e, r);
      } else if (step.action == ClaimAction::kPassUp) {
        Frame up(claim::kFrameBytes);
        REQUIRE(claim::build_claim(up.data(), claim::kFrameBytes, h, cf.job_id, cf.tree_id, sw.up_child,
                                   cf.seq, step.denied_below) == claim::kFrameBytes);
        send(-1, 0, up);
      }
      return;
    }
    if (c == claim::Class::kClaimResult) {  // at a leaf, from the root
      const uint32_t e = entry_of(sw, cf.job_id, cf.tree_id);
      sw.pool->on_claim_result(e, cf.seq, cf.answer);
      down_all(sw, e, f);
      return;
    }
    if (c == claim::Class::kRelease) {
      const uint32_t e = entry_of(sw, cf.job_id, cf.tree_id);
      if (cf.confirmation) {  // at a leaf, from the root
        REQUIRE(!sw.root);
        const pswitch::ConfirmStep cs = sw.pool->on_confirmation(e, cf.seq);
        if (cs.to == pswitch::ConfirmTo::kAll) down_all(sw, e, f);
        for (uint16_t k : cs.children) down_one(sw, e, k, f);
        return;
      }
      const auto rs = sw.pool->on_release(e, cf.child_id, cf.seq, cf.ask);
      if (!sw.root) {  // passed up again with every release from below, an ask as an ask
        Frame up(claim::kFrameBytes);
        REQUIRE(claim::build_release(up.data(), claim::kFrameBytes, h, cf.job_id, cf.tree_id, sw.up_child,
                                     rs.released, false, cf.ask) == claim::kFrameBytes);
        send(-1, 0, up);
      } else if (rs.confirm == pswitch::ConfirmTo::kAll) {
        down_all(sw, e, confirmation(cf.job_id, cf.tree_id, rs.released));
      } else if (rs.confirm == pswitch::ConfirmTo::kSender) {
        down_one(sw, e, cf.child_id, confirmation(cf.job_id, cf.tree_id, rs.released));
      }
      return;
    }
    REQUIRE(c == claim::Class::kNotClaim);
    const wire::FrameClass fc = wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), kPort, h);
    const uint32_t e = entry_of(sw, h.job_id, h.tree_id);
    if (fc == wire::FrameClass::kResultDown) {  // at a leaf, from the root
      down_all(sw, e, f);
      return;
    }
    REQUIRE(fc == wire::FrameClass::kOk);
    if (sw.root) ++contributions;
    const pswitch::SlotLookup lk = sw.pool->lookup(e, h.seq);
    if (lk.drop == PoolDrop::kNoClaim && lk.has_answer) {
      claim_result(sw.children[e].at(h.child_id), h.job_id, h.tree_id, h.child_id, lk.group, lk.answer,
                   lk.reason);
      return;
    }
    if (lk.drop != PoolDrop::kNone) return;
    // The group's sequences in the entry's share.
    const uint32_t g_size = sw.pool->entry(e).group_size;
    auto b = sw.base.find({e, lk.group});
    if (b == sw.base.end()) {
      b = sw.base.emplace(std::make_pair(e, lk.group), sw.next_base[e]).first;
      sw.next_base[e] += g_size;
      REQUIRE(sw.next_base[e] <= kShare);
    }
    const uint32_t eseq = b->second + (h.seq - lk.group * g_size);
    sw.back[e][eseq] = h.seq;
    Frame g = f;
    wire::store_be32(g.data() + wire::kPanamaSeq, eseq);
    std::vector<Frame> emitted;
    auto sink = [&](const uint8_t* p, uint32_t len) { emitted.emplace_back(p, p + len); };
    EmitFn<decltype(sink)> target(sink);
    const EngineOutcome out = sw.eng->process_frame(g.data(), static_cast<uint32_t>(g.size()), target);
    if (out.action == EngineAction::kAggregated || out.action == EngineAction::kEmitted) {
      sw.pool->renew(e, h.seq, now_);  // a contribution the engine counted
    }
    for (Frame& r : emitted) {
      const uint32_t s = sw.back[e].at(wire::load_be32(r.data() + wire::kPanamaSeq));
      wire::store_be32(r.data() + wire::kPanamaSeq, s);
      sw.pool->on_emitted(e, s);
      if (sw.root) {
        emitted_.insert({h.job_id, h.tree_id, s / g_size});
        down_all(sw, e, r);
      } else {
        send(-1, 0, r);  // the leaf's partial, up to the root
      }
    }
  }

  std::vector<JobSpec> jobs_;
  RigOptions o_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<Switch> switches_;
  std::set<std::tuple<uint16_t, uint8_t, uint32_t>> emitted_;
  std::map<MacAddress, size_t> mac_to_worker_;
  std::vector<Worker> workers_;
  std::priority_queue<Ev> q_;
  uint64_t order_ = 0;
  uint64_t now_ = 0;
};

}  // namespace

TEST_CASE("pooled: every group granted: exact sums in the network, no ring frame") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec j;
  j.world = 3;
  j.trees = 2;
  j.group_size = 4;
  j.sizes = {100, 37, 300, 16};
  j.types = {wire::ElemType::kFloat32, wire::ElemType::kBfloat16, wire::ElemType::kFloat32,
             wire::ElemType::kFloat16};
  RigOptions o;
  o.pool_slots = 256;
  PoolRig rig(seed, {j}, o);
  REQUIRE(rig.run());
  rig.check();
  const PoolStats s = rig.job_stats(0);
  const size_t groups = rig.groups_of(j) * j.world;
  CHECK(s.in_network == groups);
  CHECK(s.granted == groups);
  CHECK(s.claimed == groups);
  CHECK(s.on_ring == 0);
  CHECK(s.denied == 0);
  CHECK(s.ring_frames_sent == 0);
  CHECK(rig.ring_frames == 0);
  CHECK(s.releases_sent > 0);
  // Every release arrived: the pool is empty again.
  CHECK(rig.pool().counters().slots_held == 0);
  CHECK(rig.pool().released(0) + rig.pool().released(1) == rig.groups_of(j));
}

TEST_CASE("pooled: two levels: claims gathered at the leaves, granted and denied groups exact") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  for (uint32_t slots : {64u, 12u, 3u}) {
    INFO("pool slots " << slots);
    JobSpec j;
    j.world = 5;
    j.trees = 2;
    j.group_size = 4;
    j.sizes = {300, 45, 600};
    j.types = {wire::ElemType::kFloat32, wire::ElemType::kFloat16, wire::ElemType::kBfloat16};
    RigOptions o;
    o.leaves = 2;
    o.pool_slots = slots;  // per switch
    PoolRig rig(seed, {j}, o);
    REQUIRE(rig.run());
    rig.check();
    const PoolStats s = rig.job_stats(0);
    if (slots == 64) {
      CHECK(s.on_ring == 0);
      CHECK(rig.pool().counters().slots_held == 0);
    }
    if (slots == 3) CHECK(s.in_network == 0);
    if (slots == 12) CHECK(s.in_network + s.on_ring == rig.groups_of(j) * j.world);
  }
}

TEST_CASE("pooled: a pool too small for a group: every group on the ring, exact and identical bits") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  for (uint32_t world : {1u, 2u, 4u}) {
    INFO("world " << world);
    JobSpec j;
    j.world = world;
    j.trees = 2;
    j.group_size = 4;
    j.sizes = {100, 3, 1000, 64, 77};
    j.types = {wire::ElemType::kBfloat16, wire::ElemType::kFloat32, wire::ElemType::kFloat16,
               wire::ElemType::kBfloat16, wire::ElemType::kFloat32};
    RigOptions o;
    o.pool_slots = 3;  // fewer than G
    PoolRig rig(seed, {j}, o);
    REQUIRE(rig.run());
    rig.check();
    const PoolStats s = rig.job_stats(0);
    const size_t groups = rig.groups_of(j) * world;
    CHECK(s.on_ring == groups);
    CHECK(s.denied == groups);
    CHECK(s.in_network == 0);
    CHECK(rig.contributions == 0);  // no chunk went to the engine
    if (world > 1) {
      CHECK(s.ring_frames_sent > 0);
      CHECK(s.ring_bytes_sent > 0);
    }
    for (auto& kv : rig.answers) CHECK(kv.second == std::vector<claim::Answer>{claim::Answer::kDenied});
    // Every worker's buffers are the same bytes.
    for (auto& w : rig.workers()) CHECK(w.bufs == rig.workers()[0].bufs);
  }
}

TEST_CASE("pooled: larger allreduces through a pool that fits part of the window, with loss") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec j;
  j.world = 4;
  j.trees = 2;
  j.group_size = 8;
  j.claim_cap = 32;
  j.sizes = {40000, 25000};
  j.types = {wire::ElemType::kFloat32, wire::ElemType::kBfloat16};
  RigOptions o;
  o.elems = 64;
  o.pool_slots = 40;
  o.loss = 0.01;
  o.jitter_ns = 3000;
  o.ring_window = 16;
  PoolRig rig(seed, {j}, o);
  REQUIRE(rig.run());
  rig.check();
  const PoolStats s = rig.job_stats(0);
  CHECK(s.in_network > 0);
  CHECK(s.on_ring > 0);
}

TEST_CASE("pooled: a job with a claim cap of 0 cannot claim and finishes on the ring") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec a;
  a.job = 1;
  a.world = 3;
  a.sizes = {200, 50};
  a.types = {wire::ElemType::kFloat32, wire::ElemType::kBfloat16};
  JobSpec b = a;
  b.job = 2;
  b.claim_cap = 0;
  RigOptions o;
  o.pool_slots = 64;
  PoolRig rig(seed, {a, b}, o);
  REQUIRE(rig.run());
  rig.check();
  CHECK(rig.job_stats(0).on_ring == 0);
  CHECK(rig.job_stats(1).in_network == 0);
  CHECK(rig.job_stats(1).on_ring == rig.groups_of(b) * b.world);
}

TEST_CASE("pooled: two jobs compete for a pool that fits one: both exact, groups granted and denied") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec a;
  a.job = 1;
  a.world = 3;
  a.trees = 1;
  a.group_size = 4;
  a.claim_cap = 12;
  a.sizes = {800, 800};
  a.types = {wire::ElemType::kFloat32, wire::ElemType::kBfloat16};
  JobSpec b = a;
  b.job = 2;
  b.world = 4;
  RigOptions o;
  o.pool_slots = 12;  // one job's claims ahead
  o.start_spread_ns = 0;
  PoolRig rig(seed, {a, b}, o);
  REQUIRE(rig.run());
  rig.check();
  const PoolStats sa = rig.job_stats(0), sb = rig.job_stats(1);
  CHECK(sa.in_network + sb.in_network > 0);
  CHECK(sa.on_ring + sb.on_ring > 0);
  CHECK(rig.pool().counters().slots_high_water <= 12);
}

TEST_CASE("pooled: a lease that ends mid-group moves the group to the ring on every worker") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec j;
  j.world = 3;
  j.trees = 1;
  j.group_size = 4;
  j.sizes = {16 * 12};  // groups 0, 1, 2
  j.types = {wire::ElemType::kBfloat16};
  RigOptions o;
  o.pool_slots = 64;
  o.lease_ns = 500000;  // 0.5 ms
  o.start_spread_ns = 0;
  // Rank 2's chunks of group 1 (sequences 4..7) do not reach the switch for 5 ms:
  // the group emits nothing, and its lease ends.
  o.drop_up = [](const Frame& f, uint64_t now, uint16_t, uint32_t rank) {
    const uint8_t type = f[wire::kPanamaType];
    if (rank != 2 || now > 5000000 || (type != 1 && type != 3)) return false;
    const uint32_t seq = wire::load_be32(f.data() + wire::kPanamaSeq);
    return seq >= 4 && seq < 8;
  };
  PoolRig rig(seed, {j}, o);
  REQUIRE(rig.run());
  rig.check();
  CHECK(rig.expiries_ >= 1);
  const auto& ans = rig.answers.at({1, 10, 1});
  CHECK(ans.front() == claim::Answer::kGranted);
  CHECK(ans.back() == claim::Answer::kDenied);
  uint64_t expired = 0;
  for (auto& w : rig.workers()) {
    INFO("rank " << w.rank);
    CHECK(w.finished.at({10, 0}) == std::vector<bool>{false});
    CHECK(w.finished.at({10, 1}) == std::vector<bool>{true});  // on the ring
    CHECK(w.finished.at({10, 2}) == std::vector<bool>{false});
    const PoolStats s = w.core->stats().pool;
    CHECK(s.granted >= 2);
    CHECK(s.expired + s.denied_by_peer >= 1);
    expired += s.expired;
  }
  CHECK(expired >= 1);
}

TEST_CASE("pooled: claims that get no answer fail the job after the retry budget") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec j;
  j.world = 2;
  j.sizes = {64};
  RigOptions o;
  o.answer_claims = false;  // an engine without a pool drops claims
  o.retry_budget = 3;
  PoolRig rig(seed, {j}, o);
  REQUIRE(rig.run());
  for (auto& w : rig.workers()) {
    REQUIRE(w.core->failed());
    CHECK(w.core->status(w.ops[0]) == OpStatus::kFailed);
    CHECK_THAT(w.core->op_error(w.ops[0]),
               Catch::Contains("job 1 tree 10: the claim of group 0 got no answer after") &&
                   Catch::Contains("retransmissions (retry_budget)") &&
                   Catch::Contains("an engine without a pool drops claims"));
    CHECK(w.core->stats().pool.claim_timeouts >= 3);
  }
  CHECK(rig.contributions == 0);  // no chunk of an unanswered group was sent
  CHECK(rig.claims >= 8);
}

TEST_CASE("pooled: ring frames that are never acknowledged fail the job after the retry budget") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  JobSpec j;
  j.world = 3;
  j.sizes = {64};
  RigOptions o;
  o.pool_slots = 0;  // every group on the ring
  o.retry_budget = 3;
  o.drop_ring_to = 1;  // rank 1 hears nothing from rank 0 (the ring in rank order)
  PoolRig rig(seed, {j}, o);
  REQUIRE(rig.run());
  auto& w0 = rig.workers()[0];
  REQUIRE(w0.core->failed());
  CHECK_THAT(w0.core->op_error(w0.ops[0]),
             Catch::Contains("job 1 tree 10: ring frame of group 0") &&
                 Catch::Contains("to ring position 1 got no acknowledgement after") &&
                 Catch::Contains("retransmissions (retry_budget)"));
  CHECK(w0.core->stats().pool.ring_retransmissions >= 3);
  CHECK(w0.core->status(w0.ops[0]) == OpStatus::kFailed);
  // The ranks after it hear nothing from their previous rank, and fail too.
  for (uint32_t r = 1; r < 3; ++r) {
    auto& w = rig.workers()[r];
    REQUIRE(w.core->failed());
    CHECK_THAT(w.core->op_error(w.ops[0]),
               Catch::Contains("job 1 tree 10: the ring of group 0 got nothing from ring position " +
                               std::to_string(r - 1)) &&
                   Catch::Contains("(retry_budget x rto_max_us); the job cannot finish"));
  }
}

TEST_CASE("pooled: random loss, duplication and reordering of every frame: exact, never stuck") {
  const uint64_t base = test::core::seed_from_env();
  const int runs = 60;
  PoolStats seen;  // over the runs: what the scenarios exercised
  for (int run = 0; run < runs; ++run) {
    const uint64_t seed = base + static_cast<uint64_t>(run) * 7919;
    std::mt19937_64 r(seed);
    auto pick = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(r); };
    const wire::ElemType types[3] = {wire::ElemType::kFloat32, wire::ElemType::kBfloat16,
                                     wire::ElemType::kFloat16};
    std::vector<JobSpec> jobs;
    const uint32_t njobs = pick(1, 2);
    for (uint32_t k = 0; k < njobs; ++k) {
      JobSpec j;
      j.job = static_cast<uint16_t>(k + 1);
      j.world = pick(2, 5);
      j.trees = pick(1, 2);
      if (pick(0, 2) > 0) {  // a ring order other than the ranks'
        j.ring.resize(j.world);
        for (uint32_t i = 0; i < j.world; ++i) j.ring[i] = i;
        std::shuffle(j.ring.begin(), j.ring.end(), r);
      }
      j.group_size = pick(1, 5);
      j.claim_cap = pick(0, 4) == 0 ? 0 : pick(1, 16);
      const uint32_t ops = pick(1, 3);
      for (uint32_t i = 0; i < ops; ++i) {
        j.sizes.push_back(pick(1, 400));
        j.types.push_back(types[pick(0, 2)]);
      }
      jobs.push_back(j);
    }
    RigOptions o;
    o.elems = pick(4, 32);
    o.pool_slots = pick(0, 24);
    o.lease_ns = pick(0, 1) ? 1000000000ull : uint64_t{pick(5, 500)} * 1000;
    o.loss = pick(0, 10) / 100.0;
    o.dup = pick(0, 10) / 100.0;
    o.jitter_ns = pick(0, 1) ? 0 : uint64_t{pick(1, 20)} * 1000;
    o.ring_window = pick(1, 16);
    o.ring_congestion = pick(0, 1) == 1;
    o.ring_ce = o.ring_congestion && pick(0, 1) ? pick(1, 30) / 100.0 : 0;
    o.start_spread_ns = uint64_t{pick(0, 3000)} * 1000;
    uint32_t min_world = 5;
    for (const JobSpec& j : jobs) min_world = std::min(min_world, j.world);
    o.leaves = pick(0, 2) == 0 ? pick(2, std::min<uint32_t>(4, min_world)) : 0;
    INFO("seed " << seed << " (PANAMA_TEST_SEED=" << base << ", run " << run << "): jobs " << njobs
                 << ", elems " << o.elems << ", pool " << o.pool_slots << ", lease " << o.lease_ns
                 << " ns, loss " << o.loss << ", dup " << o.dup << ", jitter " << o.jitter_ns
                 << ", ring window " << o.ring_window << (o.ring_congestion ? " (congestion control)" : "")
                 << ", ring CE " << o.ring_ce << ", leaves " << o.leaves);
    PoolRig rig(seed, jobs, o);
    const bool finished = rig.run();
    if (!finished) std::cerr << "stuck: seed " << seed << " at " << rig.now() << " ns\n";
    REQUIRE(finished);
    rig.check();
    rig.check_pools();  // lost releases, the last ones too, repeated until confirmed
    for (size_t k = 0; k < jobs.size(); ++k) {
      if (jobs[k].claim_cap == 0 || o.pool_slots < jobs[k].group_size)
        CHECK(rig.job_stats(k).in_network == 0);  // cannot claim: all on the ring
    }
    for (auto& w : rig.workers()) {
      const PoolStats p = w.core->stats().pool;
      seen.in_network += p.in_network;
      seen.on_ring += p.on_ring;
      seen.expired += p.expired;
      seen.denied_by_peer += p.denied_by_peer;
      seen.claim_timeouts += p.claim_timeouts;
      seen.answers_ignored += p.answers_ignored;
      seen.ring_retransmissions += p.ring_retransmissions;
      seen.ring_duplicates += p.ring_duplicates;
      seen.ring_early += p.ring_early;
      seen.release_asks += p.release_asks;
      seen.ring_ce_echoes += p.ring_ce_echoes;
    }
  }
  INFO("base seed " << base);
  CHECK(seen.in_network > 0);
  CHECK(seen.on_ring > 0);
  CHECK(seen.expired > 0);
  CHECK(seen.denied_by_peer > 0);
  CHECK(seen.claim_timeouts > 0);
  CHECK(seen.answers_ignored > 0);
  CHECK(seen.ring_retransmissions > 0);
  CHECK(seen.ring_duplicates > 0);
  CHECK(seen.ring_early > 0);
  CHECK(seen.release_asks > 0);
  CHECK(seen.ring_ce_echoes > 0);
}

namespace {

// A ring frame as the core writes it (docs/hybrid-allreduce.md, "Ring frames").
struct RingFields {
  uint8_t kind = 1, tree = 10, elem_type = 1;
  uint16_t job = 1;
  uint32_t rank = 0, group = 0;
  uint16_t step = 0, piece = 0;
  uint32_t offset = 0;
  std::vector<uint32_t> values;
};

Frame ring_frame(const RingFields& r, const MacAddress& dst, uint32_t dst_ip, const MacAddress& src,
                 uint32_t src_ip) {
  const uint32_t count = static_cast<uint32_t>(r.values.size());
  Frame f(66 + 4 * count);
  std::memcpy(f.data() + wire::kEthDst, dst.data(), 6);
  std::memcpy(f.data() + wire::kEthSrc, src.data(), 6);
  wire::store_be16(f.data() + wire::kEthType, 0x0800);
  f[wire::kIpVerIhl] = 0x45;
  wire::store_be16(f.data() + wire::kIpTotalLen, static_cast<uint16_t>(52 + 4 * count));
  wire::store_be16(f.data() + wire::kIpFlagsFrag, 0x4000);
  f[wire::kIpTtl] = 64;
  f[wire::kIpProto] = 17;
  wire::store_be32(f.data() + wire::kIpSrc, src_ip);
  wire::store_be32(f.data() + wire::kIpDst, dst_ip);
  wire::store_be16(f.data() + wire::kIpChecksum, wire::ipv4_header_checksum(f.data() + wire::kIpOffset));
  wire::store_be16(f.data() + wire::kUdpSrcPort, kRingPort);
  wire::store_be16(f.data() + wire::kUdpDstPort, kRingPort);
  wire::store_be16(f.data() + wire::kUdpLength, static_cast<uint16_t>(32 + 4 * count));
  f[42] = 1;
  f[43] = r.kind;
  wire::store_be16(f.data() + 44, r.job);
  f[46] = r.tree;
  f[47] = r.elem_type;
  wire::store_be32(f.data() + 48, r.rank);
  wire::store_be32(f.data() + 52, r.group);
  wire::store_be16(f.data() + 56, r.step);
  wire::store_be16(f.data() + 58, r.piece);
  wire::store_be32(f.data() + 60, r.offset);
  wire::store_be16(f.data() + 64, static_cast<uint16_t>(count));
  for (uint32_t i = 0; i < count; ++i) wire::store_le32(f.data() + 66 + 4 * i, r.values[i]);
  return f;
}

Frame answer(uint32_t group, bool granted) {
  wire::Header addr{};
  addr.ttl = 64;
  addr.udp_src = addr.udp_dst = kPort;
  Frame f(claim::kFrameBytes);
  REQUIRE(claim::build_claim_result(f.data(), claim::kFrameBytes, addr, 1, 10, 0, group,
                                    granted ? claim::Answer::kGranted : claim::Answer::kDenied,
                                    granted ? claim::Reason::kNone : claim::Reason::kPoolFull) ==
          claim::kFrameBytes);
  return f;
}

// The root's release confirmation of `count` (tree 10 of job 1).
Frame confirmation_of(uint32_t count) {
  wire::Header addr{};
  addr.ttl = 64;
  addr.udp_src = addr.udp_dst = kPort;
  Frame f(claim::kFrameBytes);
  REQUIRE(claim::build_release(f.data(), claim::kFrameBytes, addr, 1, 10, 0, count, true) ==
          claim::kFrameBytes);
  return f;
}

std::vector<Frame> poll_all(AllreduceCore& c, uint64_t now) {
  VectorFrameOut out;
  c.poll(now, out);
  return out.frames;
}

}  // namespace

TEST_CASE("pooled: frames of one worker: claims first, chunks once granted, ring frames byte by byte") {
  JobSpec j;
  j.world = 2;
  j.group_size = 2;
  RigOptions o;
  o.elems = 4;
  const Plan plan = pooled_plan(j, 0, o);
  AllreduceCore c(plan);
  std::vector<float> buf(16);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i + 1);
  const OpId id = c.start(buf.data(), buf.size(), 0);  // chunks 0..3: groups 0 (seqs 0, 1) and 1 (seqs 2, 3)
  auto on = [&](const Frame& f) { return c.on_frame(f.data(), static_cast<uint32_t>(f.size()), 1000); };

  // Claims for both groups (the claim-ahead limit is 2), nothing else.
  std::vector<Frame> f = poll_all(c, 0);
  REQUIRE(f.size() == 2);
  for (uint32_t g = 0; g < 2; ++g) {
    wire::Header h;
    claim::Frame cf;
    REQUIRE(claim::parse_frame(f[g].data(), static_cast<uint32_t>(f[g].size()), kPort, h, cf) ==
            claim::Class::kClaim);
    CHECK(cf.job_id == 1);
    CHECK(cf.tree_id == 10);
    CHECK(cf.child_id == plan.trees[0].child_id);
    CHECK(cf.seq == g);
    CHECK(!cf.denied_below);
    CHECK(std::memcmp(h.eth_dst, plan.trees[0].dst_mac.data(), 6) == 0);
  }
  CHECK(poll_all(c, 10).empty());  // nothing before an answer
  CHECK(!c.can_send());

  // Group 0 granted: its first chunk (window 1). Group 1 denied: the ring.
  CHECK(on(answer(0, true)));
  CHECK(on(answer(1, false)));
  CHECK(on(answer(1, false)));  // a repeated answer changes nothing
  f = poll_all(c, 1000);
  std::vector<Frame> chunks, ring;
  for (Frame& x : f)
    (wire::load_be16(x.data() + wire::kUdpDstPort) == kRingPort ? ring : chunks).push_back(x);
  REQUIRE(chunks.size() == 1);
  CHECK(chunks[0][wire::kPanamaType] == 1);
  CHECK(wire::load_be32(chunks[0].data() + wire::kPanamaSeq) == 0);
  // Group 1 is chunks 2 and 3 (elements 8..15): two pieces, so two segments
  // of one piece each, rotated by the group index (1): segment 0 is the
  // group's elements 4..7 (buf[12..15]), segment 1 its elements 0..3
  // (buf[8..11]). Rank 0 (ring position 0) sends segment 0 at step 0.
  REQUIRE(ring.size() == 1);
  const Frame& r = ring[0];
  REQUIRE(r.size() == 66 + 16);
  CHECK(std::memcmp(r.data() + wire::kEthDst, plan.pooled->next_mac.data(), 6) == 0);
  CHECK(std::memcmp(r.data() + wire::kEthSrc, plan.local_mac.data(), 6) == 0);
  CHECK(wire::load_be16(r.data() + wire::kEthType) == 0x0800);
  CHECK(wire::load_be16(r.data() + wire::kIpTotalLen) == 52 + 16);
  CHECK(wire::ipv4_header_checksum(r.data() + wire::kIpOffset) == 0);
  CHECK(wire::load_be32(r.data() + wire::kIpSrc) == plan.local_ip);
  CHECK(wire::load_be32(r.data() + wire::kIpDst) == plan.pooled->next_ip);
  CHECK(wire::load_be16(r.data() + wire::kUdpSrcPort) == kRingPort);
  CHECK(wire::load_be16(r.data() + wire::kUdpLength) == 32 + 16);
  RingFields want;
  want.group = 1;
  want.offset = 4;
  for (uint32_t i = 0; i < 4; ++i) want.values.push_back(test::f2u(buf[12 + i]));
  Frame expect = ring_frame(want, plan.pooled->next_mac, plan.pooled->next_ip, plan.local_mac, plan.local_ip);
  CHECK(std::vector<uint8_t>(r.begin() + 42, r.end()) ==
        std::vector<uint8_t>(expect.begin() + 42, expect.end()));

  // Rank 1 acknowledges it and sends segment 1 (the group's elements 0..3)
  // at step 0: rank 0 owns it, completes the sum, writes it and sends it on
  // (step 1).
  const MacAddress m1 = worker_mac(1, 1);
  const uint32_t ip1 = worker_ip(1, 1);
  RingFields ack = want;
  ack.kind = 2;
  ack.elem_type = 0;
  ack.rank = 1;
  ack.values.clear();
  CHECK(on(ring_frame(ack, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.stats().pool.ring_acks_received == 1);
  RingFields seg1;
  seg1.rank = 1;
  seg1.group = 1;
  seg1.offset = 0;
  seg1.values = {test::f2u(100.0f), test::f2u(200.0f), test::f2u(300.0f), test::f2u(400.0f)};
  CHECK(on(ring_frame(seg1, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(on(ring_frame(seg1, plan.local_mac, plan.local_ip, m1, ip1)));  // duplicate: acknowledged again
  CHECK(buf[8] == 109.0f);
  CHECK(buf[11] == 412.0f);
  f = poll_all(c, 2000);
  std::vector<Frame> acks, data;
  for (Frame& x : f) {
    if (wire::load_be16(x.data() + wire::kUdpDstPort) != kRingPort) continue;
    (x[43] == 2 ? acks : data).push_back(x);
  }
  REQUIRE(acks.size() == 2);
  CHECK(std::memcmp(acks[0].data() + wire::kEthDst, plan.pooled->prev_mac.data(), 6) == 0);
  CHECK(acks[0].size() == 66);
  CHECK(wire::load_be16(acks[0].data() + 56) == 0);  // step
  CHECK(wire::load_be32(acks[0].data() + 60) == 0);  // offset: none in an acknowledgement
  REQUIRE(data.size() == 1);
  CHECK(wire::load_be16(data[0].data() + 56) == 1);  // all-gather
  CHECK(wire::load_be32(data[0].data() + 60) == 0);
  CHECK(wire::load_le32(data[0].data() + 66) == test::f2u(109.0f));

  // Malformed: the wrong sender, a step past the last, a wrong offset, a short frame.
  RingFields bad = seg1;
  bad.rank = 0;
  CHECK(on(ring_frame(bad, plan.local_mac, plan.local_ip, m1, ip1)));
  bad = seg1;
  bad.step = 2;
  CHECK(on(ring_frame(bad, plan.local_mac, plan.local_ip, m1, ip1)));
  bad = seg1;
  bad.offset = 5;
  CHECK(on(ring_frame(bad, plan.local_mac, plan.local_ip, m1, ip1)));
  Frame shortf = ring_frame(seg1, plan.local_mac, plan.local_ip, m1, ip1);
  shortf.resize(shortf.size() - 4);
  CHECK(on(shortf));
  CHECK(c.stats().pool.ring_malformed == 4);
  // Another job's ring frame is not this core's.
  bad = seg1;
  bad.job = 2;
  CHECK(!on(ring_frame(bad, plan.local_mac, plan.local_ip, m1, ip1)));

  // The all-gather of segment 0 finishes group 1 on the ring.
  RingFields seg0;
  seg0.rank = 1;
  seg0.group = 1;
  seg0.step = 1;
  seg0.offset = 4;
  seg0.values = {test::f2u(-1.0f), test::f2u(-2.0f), test::f2u(-3.0f), test::f2u(-4.0f)};
  CHECK(on(ring_frame(seg0, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(buf[12] == -1.0f);
  CHECK(buf[15] == -4.0f);
  PoolStats ps = c.stats().pool;
  CHECK(ps.on_ring == 1);
  CHECK(ps.released == 0);  // group 0 is not finished
  CHECK(ps.denied == 1);
  CHECK(ps.granted == 1);
  CHECK(ps.answers_ignored == 1);
  CHECK(ps.ring_duplicates == 1);
  CHECK(c.status(id) == OpStatus::kPending);

  // Group 0's results: the allreduce is done, and the release says 2.
  auto result = [&](uint32_t seq) {
    wire::Header h = test::contribution(1, 10, 0, seq, 4);
    h.type = static_cast<uint8_t>(wire::PacketType::kResultDown);
    std::vector<uint32_t> p(4);
    for (uint32_t i = 0; i < 4; ++i) p[i] = test::f2u(static_cast<float>(1000 * (seq + 1) + i));
    return test::make_frame(h, p);
  };
  CHECK(on(result(0)));
  f = poll_all(c, 3000);
  bool seq1 = false;
  for (Frame& x : f) seq1 |= x[wire::kPanamaType] == 1 && wire::load_be32(x.data() + wire::kPanamaSeq) == 1;
  CHECK(seq1);
  CHECK(on(result(1)));
  CHECK(c.status(id) == OpStatus::kDone);
  CHECK(buf[0] == 1000.0f);
  CHECK(buf[7] == 2003.0f);
  f = poll_all(c, 4000);
  uint32_t release = UINT32_MAX;
  for (Frame& x : f) {
    wire::Header h;
    claim::Frame cf;
    if (claim::parse_frame(x.data(), static_cast<uint32_t>(x.size()), kPort, h, cf) == claim::Class::kRelease)
      release = cf.seq;
  }
  CHECK(release == 2);
  ps = c.stats().pool;
  CHECK(ps.released == 2);
  CHECK(ps.in_network == 1);
  CHECK(ps.releases_sent == 1);
  CHECK(on(confirmation_of(2)));  // the root freed both groups
  CHECK(c.stats().pool.confirmed == 2);
  // The step-1 frame still waits for its acknowledgement: the worker owes it.
  CHECK(c.pending_ops() == 1);
  RingFields ack1;
  ack1.kind = 2;
  ack1.elem_type = 0;
  ack1.rank = 1;
  ack1.group = 1;
  ack1.step = 1;
  CHECK(on(ring_frame(ack1, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.pending_ops() == 0);
  // A late retransmission from rank 1 of a released group is acknowledged again.
  CHECK(on(ring_frame(seg0, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.pending_ops() == 1);
  f = poll_all(c, 5000);
  REQUIRE(f.size() == 1);
  CHECK(f[0][43] == 2);
  CHECK(c.pending_ops() == 0);
}

TEST_CASE("pooled: the last release is pending work until the root confirms it") {
  JobSpec j;
  j.world = 2;
  j.group_size = 2;
  RigOptions o;
  o.elems = 4;
  Plan plan = pooled_plan(j, 0, o);
  plan.congestion.retry_budget = 6;
  AllreduceCore c(plan);
  std::vector<float> buf(8, 1.0f);
  const OpId id = c.start(buf.data(), buf.size(), 0);  // chunks 0, 1: group 0
  auto on = [&](const Frame& f) { return c.on_frame(f.data(), static_cast<uint32_t>(f.size()), 1000); };
  auto result = [&](uint32_t seq) {
    wire::Header h = test::contribution(1, 10, 0, seq, 4);
    h.type = static_cast<uint8_t>(wire::PacketType::kResultDown);
    return test::make_frame(h, std::vector<uint32_t>(4, test::f2u(2.0f)));
  };
  poll_all(c, 0);
  CHECK(on(answer(0, true)));
  poll_all(c, 1000);
  CHECK(on(result(0)));
  poll_all(c, 2000);
  CHECK(on(result(1)));
  CHECK(c.status(id) == OpStatus::kDone);
  // The allreduce is done, but the engines still hold group 0's slots: the
  // release is owed, so a caller keeps polling.
  CHECK(c.stats().pool.releases_sent == 0);
  CHECK(c.pending_ops() == 1);
  CHECK(c.can_send());
  // It is no unfinished allreduce: a next communicator may continue from here
  // (and repeats the release with its first claims).
  CHECK(c.next_sequences() == std::vector<uint32_t>{2});
  const std::vector<Frame> f = poll_all(c, 3000);
  REQUIRE(f.size() == 1);
  wire::Header h;
  claim::Frame cf;
  REQUIRE(claim::parse_frame(f[0].data(), static_cast<uint32_t>(f[0].size()), kPort, h, cf) ==
          claim::Class::kRelease);
  CHECK(cf.seq == 1);
  CHECK_FALSE(cf.ask);
  // Sent, but the engines may not have heard it: owed until the root confirms the count.
  CHECK(c.pending_ops() == 1);
  const uint64_t rto = uint64_t{plan.congestion.rto_initial_us} * 1000;
  REQUIRE(c.next_timer_ns() > 3000);
  CHECK(c.next_timer_ns() <= 3000 + rto);
  CHECK(poll_all(c, 3000 + 1000).empty());
  SECTION("a confirmation ends it") {
    const uint64_t t = c.next_timer_ns();
    std::vector<Frame> again = poll_all(c, t);  // the RTO: repeated, asking
    REQUIRE(again.size() == 1);
    REQUIRE(claim::parse_frame(again[0].data(), static_cast<uint32_t>(again[0].size()), kPort, h, cf) ==
            claim::Class::kRelease);
    CHECK(cf.seq == 1);
    CHECK(cf.ask);
    CHECK(c.stats().pool.release_asks == 1);
    CHECK(on(confirmation_of(0)));  // an older count confirms nothing
    CHECK(c.pending_ops() == 1);
    CHECK(on(confirmation_of(1)));
    CHECK(c.pending_ops() == 0);
    CHECK(c.stats().pool.confirmations == 2);
    CHECK(c.stats().pool.confirmed == 1);
    CHECK(poll_all(c, t + 10 * rto).empty());
  }
  SECTION("without one, it is asked for retry_budget times, then given up") {
    uint32_t asks = 0;
    for (int i = 0; i < 100 && c.pending_ops() > 0; ++i) {
      const uint64_t t = c.next_timer_ns();
      REQUIRE(t != UINT64_MAX);
      for (const Frame& x : poll_all(c, t)) {
        REQUIRE(claim::parse_frame(x.data(), static_cast<uint32_t>(x.size()), kPort, h, cf) ==
                claim::Class::kRelease);
        CHECK(cf.ask);
        ++asks;
      }
    }
    CHECK(asks == plan.congestion.retry_budget);
    CHECK(c.pending_ops() == 0);
    CHECK(c.stats().pool.release_asks == plan.congestion.retry_budget);
    CHECK_FALSE(c.failed());  // every allreduce succeeded: nothing to fail
  }
}

TEST_CASE("pooled: a group finished on the ring outlives its forgotten allreduce safely") {
  JobSpec j;
  j.world = 2;
  j.group_size = 1;
  RigOptions o;
  o.elems = 4;
  const Plan plan = pooled_plan(j, 0, o);
  AllreduceCore c(plan);
  std::vector<float> a(4, 1.0f), b(4, 2.0f);
  const OpId ida = c.start(a.data(), a.size(), 0);  // group 0
  const OpId idb = c.start(b.data(), b.size(), 0);  // group 1
  auto on = [&](const Frame& f) { return c.on_frame(f.data(), static_cast<uint32_t>(f.size()), 1000); };
  poll_all(c, 0);
  CHECK(on(answer(0, true)));
  CHECK(on(answer(1, false)));
  poll_all(c, 1000);
  const MacAddress m1 = worker_mac(1, 1);
  const uint32_t ip1 = worker_ip(1, 1);
  // Group 1 is one piece: one segment, rotated by the group index to
  // segment 1, which rank 1 sends at step 0 and rank 0 owns. Segment 0 is
  // empty: rank 0 sends nothing at step 0 and receives nothing at step 1.
  CHECK(c.stats().pool.ring_frames_sent == 0);
  RingFields seg1;
  seg1.rank = 1;
  seg1.group = 1;
  seg1.values = {test::f2u(5.0f), test::f2u(6.0f), test::f2u(7.0f), test::f2u(8.0f)};
  CHECK(on(ring_frame(seg1, plan.local_mac, plan.local_ip, m1, ip1)));
  REQUIRE(c.status(idb) == OpStatus::kDone);
  CHECK(b == std::vector<float>{7.0f, 8.0f, 9.0f, 10.0f});
  RingFields seg0 = seg1;  // anything of the empty segment does not fit
  seg0.step = 1;
  seg0.values = {test::f2u(1.0f)};
  CHECK(on(ring_frame(seg0, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.stats().pool.ring_malformed == 1);
  CHECK(c.status(ida) == OpStatus::kPending);
  CHECK(c.stats().pool.released == 0);  // group 0 is not finished: group 1 is kept
  c.release(idb);
  c.start(nullptr, 0, 0);  // forgets released allreduces
  // Late duplicates of the finished group: acknowledged again, nothing read or written.
  CHECK(on(ring_frame(seg1, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(on(ring_frame(seg1, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.stats().pool.ring_duplicates == 2);
  CHECK(c.stats().pool.ring_malformed == 1);
  CHECK(on(answer(1, false)));  // a late answer too
  CHECK(c.stats().pool.answers_ignored == 1);
}

TEST_CASE("pooled: ring frames of a worker whose ring position is not its rank") {
  // Ranks 1, 2, 0 at ring positions 0, 1, 2: rank 0 sends to rank 1, hears
  // rank 2, and writes position 2 into its frames.
  JobSpec j;
  j.world = 3;
  j.group_size = 3;
  j.ring = {1, 2, 0};
  RigOptions o;
  o.elems = 4;
  const Plan plan = pooled_plan(j, 0, o);
  REQUIRE(ring_position(plan) == 2);
  REQUIRE(plan.pooled->next_mac == worker_mac(1, 1));
  REQUIRE(plan.pooled->prev_mac == worker_mac(1, 2));
  AllreduceCore c(plan);
  std::vector<float> buf(12);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i + 1);
  const OpId id = c.start(buf.data(), buf.size(), 0);  // group 0: three pieces, one segment each
  auto on = [&](const Frame& f) { return c.on_frame(f.data(), static_cast<uint32_t>(f.size()), 1000); };
  poll_all(c, 0);
  CHECK(on(answer(0, false)));
  // Position 2 sends segment 2 (elements 8..11) at step 0, to rank 1.
  std::vector<Frame> f = poll_all(c, 1000);
  REQUIRE(f.size() == 1);
  RingFields want;
  want.rank = 2;
  want.offset = 8;
  for (uint32_t i = 0; i < 4; ++i) want.values.push_back(test::f2u(buf[8 + i]));
  const Frame expect =
      ring_frame(want, plan.pooled->next_mac, plan.pooled->next_ip, plan.local_mac, plan.local_ip);
  CHECK(std::vector<uint8_t>(f[0].begin() + 42, f[0].end()) ==
        std::vector<uint8_t>(expect.begin() + 42, expect.end()));
  CHECK(std::memcmp(f[0].data() + wire::kEthDst, worker_mac(1, 1).data(), 6) == 0);

  const MacAddress m1 = worker_mac(1, 1), m2 = worker_mac(1, 2);
  const uint32_t ip1 = worker_ip(1, 1), ip2 = worker_ip(1, 2);
  // Its acknowledgement comes from position 0 (rank 1); one naming rank 1's
  // rank, or position 1, is not taken.
  RingFields ack = want;
  ack.kind = 2;
  ack.elem_type = 0;
  ack.values.clear();
  ack.rank = 1;
  CHECK(on(ring_frame(ack, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.stats().pool.ring_malformed == 1);
  CHECK(c.stats().pool.ring_acks_received == 0);
  ack.rank = 0;
  CHECK(on(ring_frame(ack, plan.local_mac, plan.local_ip, m1, ip1)));
  CHECK(c.stats().pool.ring_acks_received == 1);

  // Data from position 1 (rank 2): segment 1 at step 0, segment 0 at step 1
  // (position 2 owns segment 0). A frame naming rank 2's rank is not taken.
  RingFields d;
  d.rank = 2;
  d.offset = 4;
  d.values = {test::f2u(10.0f), test::f2u(20.0f), test::f2u(30.0f), test::f2u(40.0f)};
  CHECK(on(ring_frame(d, plan.local_mac, plan.local_ip, m2, ip2)));
  CHECK(c.stats().pool.ring_malformed == 2);
  d.rank = 1;
  CHECK(on(ring_frame(d, plan.local_mac, plan.local_ip, m2, ip2)));
  f = poll_all(c, 2000);
  std::vector<Frame> data;
  for (Frame& x : f) {
    if (x[43] == 1) data.push_back(x);
  }
  REQUIRE(data.size() == 1);  // segment 1 passed on at step 1, this rank's part added
  CHECK(wire::load_be32(data[0].data() + 48) == 2);
  CHECK(wire::load_be16(data[0].data() + 56) == 1);
  CHECK(wire::load_be32(data[0].data() + 60) == 4);
  CHECK(wire::load_le32(data[0].data() + 66) == test::f2u(15.0f));
  RingFields s0 = d;
  s0.step = 1;
  s0.offset = 0;
  s0.values = {test::f2u(100.0f), test::f2u(200.0f), test::f2u(300.0f), test::f2u(400.0f)};
  CHECK(on(ring_frame(s0, plan.local_mac, plan.local_ip, m2, ip2)));
  CHECK(buf[0] == 101.0f);
  CHECK(buf[3] == 404.0f);
  // The all-gather: segment 2 at step 2, segment 1 at step 3.
  RingFields a2 = d;
  a2.step = 2;
  a2.offset = 8;
  a2.values = {test::f2u(-9.0f), test::f2u(-10.0f), test::f2u(-11.0f), test::f2u(-12.0f)};
  CHECK(on(ring_frame(a2, plan.local_mac, plan.local_ip, m2, ip2)));
  RingFields a1 = d;
  a1.step = 3;
  a1.values = {test::f2u(-5.0f), test::f2u(-6.0f), test::f2u(-7.0f), test::f2u(-8.0f)};
  CHECK(on(ring_frame(a1, plan.local_mac, plan.local_ip, m2, ip2)));
  CHECK(c.status(id) == OpStatus::kDone);
  CHECK(buf == std::vector<float>{101, 202, 303, 404, -5, -6, -7, -8, -9, -10, -11, -12});
  CHECK(c.stats().pool.ring_malformed == 2);
  CHECK(c.stats().pool.on_ring == 1);
}

TEST_CASE("pooled: ring segments of whole pieces, fewer than the ranks or as many, over a permuted ring") {
  const uint64_t seed = test::core::seed_from_env();
  INFO("seed " << seed << " (PANAMA_TEST_SEED)");
  // Every group on the ring (no pool). With 4 elements a piece and G = 7, a
  // group has 1 to 7 pieces against 5 ranks: fewer segments than ranks
  // (some empty), or as many, some of several pieces.
  JobSpec j;
  j.world = 5;
  j.trees = 1;
  j.group_size = 7;
  j.ring = {3, 0, 4, 2, 1};
  j.sizes = {1, 4, 5, 13, 20, 21, 28, 57, 140, 3};
  j.types = {wire::ElemType::kFloat32,  wire::ElemType::kBfloat16, wire::ElemType::kFloat32,
             wire::ElemType::kFloat16,  wire::ElemType::kFloat32,  wire::ElemType::kFloat32,
             wire::ElemType::kBfloat16, wire::ElemType::kFloat32,  wire::ElemType::kFloat32,
             wire::ElemType::kFloat16};
  RigOptions o;
  o.elems = 4;
  o.pool_slots = 0;
  PoolRig rig(seed, {j}, o);
  REQUIRE(rig.run());
  rig.check();
  const PoolStats s = rig.job_stats(0);
  CHECK(s.on_ring == rig.groups_of(j) * j.world);
  // Every piece of a group crosses N - 1 links in the reduce-scatter and
  // N - 1 in the all-gather, each time one frame of one whole piece: a
  // group of P pieces is 2 (N - 1) P data frames (P: its chunks here).
  uint64_t pieces = 0, retransmissions = 0;
  for (size_t n : j.sizes) pieces += (n + o.elems - 1) / o.elems;
  for (auto& w : rig.workers()) retransmissions += w.core->stats().pool.ring_retransmissions;
  CHECK(s.ring_frames_sent - retransmissions == 2 * (j.world - 1) * pieces);
  for (auto& w : rig.workers()) CHECK(w.bufs == rig.workers()[0].bufs);
}

TEST_CASE("pooled: congestion control on the ring: marks echoed, the window follows the echoes") {
  JobSpec j;
  j.world = 2;
  j.group_size = 2;
  RigOptions o;
  o.elems = 4;
  o.ring_window = 16;
  // Every group denied; returns the ring data frames sent and counts the claims answered.
  auto deny_all = [](AllreduceCore& c, uint64_t now, uint32_t& claims) {
    std::vector<Frame> ring;
    for (int round = 0; round < 20; ++round) {
      std::vector<Frame> f = poll_all(c, now);
      if (f.empty()) break;
      for (Frame& x : f) {
        wire::Header h;
        claim::Frame cf;
        if (wire::load_be16(x.data() + wire::kUdpDstPort) == kRingPort) {
          ring.push_back(x);
        } else if (claim::parse_frame(x.data(), static_cast<uint32_t>(x.size()), kPort, h, cf) ==
                   claim::Class::kClaim) {
          ++claims;
          REQUIRE(c.on_frame(answer(cf.seq, false).data(), claim::kFrameBytes, now));
        }
      }
    }
    return ring;
  };
  const MacAddress m1 = worker_mac(1, 1);
  const uint32_t ip1 = worker_ip(1, 1);
  auto ack_of = [&](const Frame& data, bool echo) {
    RingFields a;
    a.kind = 2;
    a.elem_type = echo ? 1 : 0;  // an ack's flags: bit 0, the mark echoed
    a.rank = 1;
    a.group = wire::load_be32(data.data() + 52);
    a.step = wire::load_be16(data.data() + 56);
    a.piece = wire::load_be16(data.data() + 58);
    a.offset = 0;
    return ring_frame(a, worker_mac(1, 0), worker_ip(1, 0), m1, ip1);
  };
  std::vector<float> buf(64, 1.0f);  // 16 chunks: 8 groups of 2

  SECTION("off: a fixed window, ring groups within the claim-ahead limit") {
    const Plan plan = pooled_plan(j, 0, o);
    AllreduceCore c(plan);
    c.start(buf.data(), buf.size(), 0);
    uint32_t claims = 0;
    const std::vector<Frame> ring = deny_all(c, 1000, claims);
    CHECK(claims == 2);  // two groups on the ring hold back the next claims
    CHECK(ring.size() == 2);
  }
  SECTION("on: every group goes to the ring, the window starts at one frame") {
    o.ring_congestion = true;
    const Plan plan = pooled_plan(j, 0, o);
    REQUIRE(plan.congestion.initial_cwnd == 1.0);
    AllreduceCore c(plan);
    c.start(buf.data(), buf.size(), 0);
    uint32_t claims = 0;
    std::vector<Frame> ring = deny_all(c, 1000, claims);
    CHECK(claims == 8);
    REQUIRE(ring.size() == 1);
    // Acknowledged without a mark: slow start, two frames.
    REQUIRE(c.on_frame(ack_of(ring[0], false).data(), 66, 2000));
    ring = poll_all(c, 2000);
    REQUIRE(ring.size() == 2);
    // Both acknowledged with the mark echoed: the window halves (alpha starts at 1), once per window.
    REQUIRE(c.on_frame(ack_of(ring[0], true).data(), 66, 3000));
    REQUIRE(c.on_frame(ack_of(ring[1], true).data(), 66, 3000));
    CHECK(c.stats().pool.ring_ce_echoes == 2);
    CHECK(poll_all(c, 3000).size() == 1);
  }
  SECTION("a marked data frame is acknowledged with the mark echoed, an unmarked one without") {
    o.ring_congestion = true;
    const Plan plan = pooled_plan(j, 0, o);
    AllreduceCore c(plan);
    c.start(buf.data(), buf.size(), 0);
    uint32_t claims = 0;
    deny_all(c, 1000, claims);
    for (uint32_t g : {0u, 1u}) {
      const bool marked = g == 0;
      RingFields d;
      d.kind = 1;
      d.elem_type = 1;  // fp32
      d.rank = 1;
      d.group = g;
      d.step = 0;
      d.piece = 0;
      d.offset = 4 * ((1 + g) % 2);  // ring position 1's segment of the group
      d.values = std::vector<uint32_t>(4, test::f2u(1.0f));
      Frame f = ring_frame(d, plan.local_mac, plan.local_ip, m1, ip1);
      if (marked) {
        f[wire::kIpTos] |= wire::kEcnEct0;  // as the core sends ring frames; mark_ce rewrites the checksum
        REQUIRE(pswitch::mark_ce(f.data(), static_cast<uint32_t>(f.size())) == pswitch::EcnMark::kMarked);
      }
      REQUIRE(c.on_frame(f.data(), static_cast<uint32_t>(f.size()), 2000));
      const std::vector<Frame> out = poll_all(c, 2000);
      std::vector<Frame> acks;
      for (const Frame& x : out)
        if (wire::load_be16(x.data() + wire::kUdpDstPort) == kRingPort && x[43] == 2) acks.push_back(x);
      INFO("group " << g);
      REQUIRE(acks.size() == 1);
      CHECK(acks[0][47] == (marked ? 1 : 0));
      CHECK(wire::load_be32(acks[0].data() + 52) == g);
    }
    CHECK(c.stats().pool.ring_ce_received == 1);
    CHECK(c.stats().pool.ring_malformed == 0);
  }
}
