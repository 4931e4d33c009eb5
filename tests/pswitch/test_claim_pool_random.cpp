// The claim pool under random loss, duplication and reordering: a two-level
// tree (two leaf engines under a root) shared by several jobs, each with two
// workers per leaf, running whole pooled allreduces against three ClaimPools.
// Every message (claim, claim-result, release, contribution, result) may be
// lost or duplicated, and is delayed at random (now and then much longer),
// so that messages overtake each other. Workers follow the
// rules of docs/hybrid-allreduce.md: every worker claims the groups of its
// window and acts on the first answer (granted: contributions to the
// engines; denied: the ring, modelled as finishing at once), resends its
// claim, unanswered contributions and its release on a timeout, and moves a
// granted group to the ring on a denied (expired). Engines count a
// contribution once per child, emit when every child counted, re-emit for
// a repeat, and renew the lease only on counted contributions.
//
// Checked: no pool slot held by two groups at once, and the bitmap agrees
// with the groups; no entry over its claim cap; every worker hears the same
// first answer for a group, except a denied (expired) for a group whose
// root emitted nothing; every worker finishes each group the same way (all
// in the network or all on the ring); no worker hears denied after a result;
// every run finishes; and after the last release every slot is free.
//
// Seed: PANAMA_TEST_SEED replays a run (tests/wire/seeded_rng.hpp);
// PANAMA_POOL_RUNS sets the number of scenarios.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "panama/pswitch/claim_pool.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::pswitch;
using namespace panama::test;
using claim::Answer;
using claim::Reason;

namespace {

constexpr int kLeaves = 2;
constexpr int kWorkersPerLeaf = 2;
constexpr int kWorkers = kLeaves * kWorkersPerLeaf;
constexpr int kRoot = kLeaves;  // node index of the root; leaves are 0 and 1
constexpr uint64_t kTickNs = 1000;

enum class Kind { kClaim, kClaimResult, kRelease, kContribution, kResult };

struct Msg {
  Kind kind = Kind::kClaim;
  int to = 0;  // node: 0..kLeaves-1 leaves, kRoot, or kRoot + 1 + job * kWorkers + w for a worker
  int job = 0;
  uint16_t child = 0;  // the sender's child id at `to` (upward messages)
  uint32_t value = 0;  // group (claim, claim-result), count (release), seq (contribution, result)
  bool flag = false;   // claim: denied below
  Answer answer = Answer::kDenied;
  Reason reason = Reason::kNone;
};

enum class Mode { kWaiting, kNetwork, kDoneNetwork, kDoneRing };

struct WorkerGroup {
  bool heard = false;
  Answer first = Answer::kDenied;
  Reason first_reason = Reason::kNone;
  Mode mode = Mode::kWaiting;
  std::vector<bool> got;
  bool any_result = false;
  uint64_t last_tx = 0;
  bool sent = false;
};

struct Worker {
  int job = 0;
  int leaf = 0;
  uint16_t child = 0;
  uint32_t finished = 0;  // groups below are done
  uint64_t last_release = 0;
  std::vector<WorkerGroup> groups;
};

struct Bank {
  uint64_t counted = 0;
  bool emitted = false;
};

struct Params {
  int jobs = 3;
  uint32_t groups = 16;  // per job
  uint32_t window = 3;   // groups a worker claims ahead
  double loss = 0;
  double dup = 0;
  uint64_t max_delay = 10;  // ticks: each message is delayed 1..max_delay, so they overtake each other
  double slow = 0;          // the chance that a message is held back up to slow_ticks longer
  uint64_t slow_ticks = 0;
  uint64_t lease_ticks = 200;
  uint64_t rto_ticks = 40;
  std::vector<uint32_t> g;         // group size per job
  std::vector<uint32_t> leaf_cap;  // claim cap per job at the leaves
  std::vector<uint32_t> root_cap;  // ... at the root
  uint32_t leaf_pool = 12;
  uint32_t root_pool = 10;
};

struct Totals {
  uint64_t network = 0, ring = 0, switched = 0, expired = 0, granted = 0, denied = 0, stale = 0, no_claim = 0,
           duplicates = 0;
};

class Scenario {
 public:
  Scenario(const Params& p, uint64_t seed) : p_(p), rng_(seed) {
    std::vector<PooledEntry> leaf_entries, root_entries;
    for (int j = 0; j < p.jobs; ++j) {
      PooledEntry e;
      e.job = static_cast<uint16_t>(j);
      e.group_size = p.g[j];
      e.children = kWorkersPerLeaf;
      e.claim_cap = p.leaf_cap[j];
      leaf_entries.push_back(e);
      e.children = kLeaves;
      e.claim_cap = p.root_cap[j];
      e.root = true;
      root_entries.push_back(e);
    }
    for (int l = 0; l < kLeaves; ++l) {
      PoolConfig c;
      c.base = 64u * static_cast<uint32_t>(l);
      c.size = p.leaf_pool;
      c.lease_ns = p.lease_ticks * kTickNs;
      pools_.emplace_back(c, leaf_entries);
    }
    PoolConfig c;
    c.base = 300;
    c.size = p.root_pool;
    c.lease_ns = p.lease_ticks * kTickNs;
    pools_.emplace_back(c, root_entries);
    banks_.resize(kLeaves + 1, std::vector<std::map<uint32_t, Bank>>(p.jobs));
    root_emitted_.assign(p.jobs, std::vector<bool>(p.groups, false));
    for (int j = 0; j < p.jobs; ++j) {
      for (int w = 0; w < kWorkers; ++w) {
        Worker k;
        k.job = j;
        k.leaf = w / kWorkersPerLeaf;
        k.child = static_cast<uint16_t>(w % kWorkersPerLeaf);
        k.groups.resize(p.groups);
        for (auto& g : k.groups) g.got.assign(p.g[j], false);
        workers_.push_back(k);
      }
    }
  }

  // Runs to the end; returns "" or what went wrong.
  std::string run(uint64_t max_ticks) {
    for (tick_ = 1; tick_ <= max_ticks; ++tick_) {
      const uint64_t now = tick_ * kTickNs;
      for (auto& pool : pools_) totals_.expired += pool.advance(now).size();
      for (size_t w = 0; w < workers_.size(); ++w) worker_tick(static_cast<int>(w));
      while (!inflight_.empty() && inflight_.begin()->first <= tick_) {
        const Msg m = inflight_.begin()->second;
        inflight_.erase(inflight_.begin());
        deliver(m);
        if (!error_.empty()) return error_;
      }
      check_pools();
      if (!error_.empty()) return error_;
      if (all_done()) return final_checks();
    }
    std::ostringstream o;
    o << "stuck after " << max_ticks << " ticks:";
    for (const Worker& k : workers_) o << " j" << k.job << "f" << k.finished;
    for (const auto& pool : pools_) {
      for (uint32_t e = 0; e < pool.entry_count(); ++e) o << " r" << pool.released(e);
    }
    o << describe_stuck();
    return o.str();
  }

  const Totals& totals() const { return totals_; }

 private:
  Worker& worker(int node) { return workers_[static_cast<size_t>(node - kRoot - 1)]; }
  int worker_node(int job, int leaf, int child) const {
    return kRoot + 1 + job * kWorkers + leaf * kWorkersPerLeaf + child;
  }
  uint64_t now() const { return tick_ * kTickNs; }

  void send(const Msg& m) {
    if (uniform01() < p_.loss) return;
    const int copies = uniform01() < p_.dup ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      uint64_t delay = 1 + rng_() % p_.max_delay;
      if (uniform01() < p_.slow) delay += rng_() % (p_.slow_ticks + 1);
      inflight_.emplace(tick_ + delay, m);
    }
  }
  double uniform01() { return std::uniform_real_distribution<double>(0, 1)(rng_); }

  void fail(const std::string& what) {
    if (error_.empty()) error_ = "tick " + std::to_string(tick_) + ": " + what;
  }

  // ------------------------------------------------------------- workers

  void worker_tick(int wi) {
    Worker& k = workers_[static_cast<size_t>(wi)];
    const uint32_t end = std::min<uint32_t>(k.finished + p_.window, p_.groups);
    for (uint32_t g = k.finished; g < end; ++g) {
      WorkerGroup& s = k.groups[g];
      if (s.mode != Mode::kWaiting && s.mode != Mode::kNetwork) continue;
      if (s.sent && tick_ - s.last_tx < p_.rto_ticks) continue;
      s.sent = true;
      s.last_tx = tick_;
      // The claim again, also in the network: a denied (expired) is heard through it
      // when the leaf below has expired the group and cannot answer.
      send_claim(k, g);
      if (s.mode == Mode::kNetwork) send_contributions(k, g);
    }
    if (k.finished > 0 && tick_ - k.last_release >= p_.rto_ticks) send_release(k);
  }

  void send_claim(const Worker& k, uint32_t g) {
    Msg m;
    m.kind = Kind::kClaim;
    m.to = k.leaf;
    m.job = k.job;
    m.child = k.child;
    m.value = g;
    send(m);
  }

  void send_contributions(const Worker& k, uint32_t g) {
    const uint32_t G = p_.g[k.job];
    for (uint32_t i = 0; i < G; ++i) {
      if (k.groups[g].got[i]) continue;
      Msg m;
      m.kind = Kind::kContribution;
      m.to = k.leaf;
      m.job = k.job;
      m.child = k.child;
      m.value = g * G + i;
      send(m);
    }
  }

  void send_release(Worker& k) {
    k.last_release = tick_;
    Msg m;
    m.kind = Kind::kRelease;
    m.to = k.leaf;
    m.job = k.job;
    m.child = k.child;
    m.value = k.finished;
    send(m);
  }

  void finish(Worker& k, uint32_t g, Mode how) {
    k.groups[g].mode = how;
    if (how == Mode::kDoneNetwork) ++totals_.network;
    if (how == Mode::kDoneRing) ++totals_.ring;
    const uint32_t before = k.finished;
    while (k.finished < p_.groups && (k.groups[k.finished].mode == Mode::kDoneNetwork ||
                                      k.groups[k.finished].mode == Mode::kDoneRing)) {
      ++k.finished;
    }
    if (k.finished > before) send_release(k);
  }

  void on_answer(Worker& k, uint32_t g, Answer a, Reason r) {
    if (g >= p_.groups) return fail("claim-result for a group never claimed");
    WorkerGroup& s = k.groups[g];
    if (!s.heard) {
      s.heard = true;
      s.first = a;
      s.first_reason = r;
      if (a == Answer::kGranted) {
        s.mode = Mode::kNetwork;
        s.last_tx = tick_;
        send_contributions(k, g);
      } else {
        finish(k, g, Mode::kDoneRing);
      }
      return;
    }
    if (s.mode == Mode::kNetwork && a == Answer::kDenied) {
      if (r != Reason::kExpired) return fail("a granted group heard denied for another reason than expiry");
      if (s.any_result) return fail("denied after a result of the group");
      ++totals_.switched;
      finish(k, g, Mode::kDoneRing);
    }
  }

  void on_result(Worker& k, uint32_t seq) {
    const uint32_t G = p_.g[k.job];
    const uint32_t g = seq / G;
    WorkerGroup& s = k.groups[g];
    if (s.mode == Mode::kDoneNetwork) return;
    if (s.mode != Mode::kNetwork) return fail("a result for a group not in the network at this worker");
    s.got[seq % G] = true;
    s.any_result = true;
    for (bool b : s.got) {
      if (!b) return;
    }
    finish(k, g, Mode::kDoneNetwork);
  }

  // ------------------------------------------------------------- engines

  void deliver(const Msg& m) {
    if (m.to > kRoot) {
      Worker& k = worker(m.to);
      if (m.kind == Kind::kClaimResult) on_answer(k, m.value, m.answer, m.reason);
      if (m.kind == Kind::kResult) on_result(k, m.value);
      return;
    }
    ClaimPool& pool = pools_[static_cast<size_t>(m.to)];
    const uint32_t e = static_cast<uint32_t>(m.job);
    const bool root = m.to == kRoot;
    switch (m.kind) {
      case Kind::kClaim: {
        const ClaimStep s = pool.on_claim(e, m.child, m.value, m.flag, now());
        if (s.duplicate) ++totals_.duplicates;
        if (s.action == ClaimAction::kDrop) ++totals_.stale;
        if (s.action == ClaimAction::kPassUp) {
          Msg up = m;
          up.to = kRoot;
          up.child = static_cast<uint16_t>(m.to);
          up.flag = s.denied_below;
          send(up);
        } else if (s.action == ClaimAction::kAnswer) {
          answer_down(m.job, m.value, s.answer, s.reason);
        }
        if (root && s.action == ClaimAction::kAnswer) {
          if (s.answer == Answer::kGranted) ++totals_.granted;
          if (s.answer == Answer::kDenied) ++totals_.denied;
        }
        return;
      }
      case Kind::kClaimResult:  // at a leaf, passing down
        pool.on_claim_result(e, m.value, m.answer);
        for (int c = 0; c < kWorkersPerLeaf; ++c) {
          Msg d = m;
          d.to = worker_node(m.job, m.to, c);
          send(d);
        }
        return;
      case Kind::kRelease: {
        const ReleaseStep s = pool.on_release(e, m.child, m.value);
        if (!root && s.released > 0) {  // passed up again with every release: repairs a lost one
          Msg up = m;
          up.to = kRoot;
          up.child = static_cast<uint16_t>(m.to);
          up.value = s.released;
          send(up);
        }
        return;
      }
      case Kind::kContribution:
        return contribution(pool, m);
      case Kind::kResult:  // at a leaf, passing down
        for (int c = 0; c < kWorkersPerLeaf; ++c) {
          Msg d = m;
          d.to = worker_node(m.job, m.to, c);
          send(d);
        }
        return;
    }
  }

  void answer_down(int job, uint32_t group, Answer a, Reason r) {
    for (int l = 0; l < kLeaves; ++l) {
      Msg d;
      d.kind = Kind::kClaimResult;
      d.to = l;
      d.job = job;
      d.value = group;
      d.answer = a;
      d.reason = r;
      send(d);
    }
  }

  void contribution(ClaimPool& pool, const Msg& m) {
    const uint32_t e = static_cast<uint32_t>(m.job);
    const bool root = m.to == kRoot;
    const uint32_t seq = m.value;
    const SlotLookup l = pool.lookup(e, seq);
    if (l.drop == PoolDrop::kNoClaim) ++totals_.no_claim;
    if (l.drop != PoolDrop::kNone) {
      if (l.has_answer) answer_down(m.job, l.group, l.answer, l.reason);
      return;
    }
    const auto gv = pool.group(e, l.group);
    const uint32_t G = p_.g[m.job];
    if (!gv || !gv->holds || l.slot != gv->slot + seq % G)
      return fail("lookup disagrees with the group's slots");
    Bank& b = banks_[static_cast<size_t>(m.to)][static_cast<size_t>(m.job)][seq];
    const uint64_t bit = uint64_t{1} << m.child;
    if (!b.emitted && (b.counted & bit) == 0) {
      b.counted |= bit;
      pool.renew(e, seq, now());
      const uint64_t all = (uint64_t{1} << (root ? kLeaves : kWorkersPerLeaf)) - 1;
      if (b.counted == all) {
        b.emitted = true;
        pool.on_emitted(e, seq);
        if (root) root_emitted_[static_cast<size_t>(m.job)][l.group] = true;
      }
    }
    if (!b.emitted) return;
    if (root) {  // the result to every worker, through the leaves
      for (int lf = 0; lf < kLeaves; ++lf) {
        Msg d;
        d.kind = Kind::kResult;
        d.to = lf;
        d.job = m.job;
        d.value = seq;
        send(d);
      }
    } else {  // the partial up (again, for a repeat)
      Msg up = m;
      up.to = kRoot;
      up.child = static_cast<uint16_t>(m.to);
      send(up);
    }
  }

  // ------------------------------------------------------------- checks

  // Each job's first unfinished group, as the workers and the pools see it.
  std::string describe_stuck() const {
    std::ostringstream o;
    for (int j = 0; j < p_.jobs; ++j) {
      uint32_t g = p_.groups;
      for (const Worker& k : workers_) {
        if (k.job == j) g = std::min(g, k.finished);
      }
      if (g == p_.groups) continue;
      o << "\njob " << j << " group " << g << ": workers";
      for (const Worker& k : workers_) {
        if (k.job != j) continue;
        const WorkerGroup& s = k.groups[g];
        o << " [f" << k.finished << " mode " << static_cast<int>(s.mode) << " heard " << s.heard << " first "
          << static_cast<int>(s.first) << "/" << static_cast<int>(s.first_reason) << "]";
      }
      for (size_t n = 0; n < pools_.size(); ++n) {
        const ClaimPool& pool = pools_[n];
        const uint32_t e = static_cast<uint32_t>(j);
        o << "\n  pool " << n << " released " << pool.released(e) << " children";
        for (uint32_t c = 0; c < pool.entry(e).children; ++c)
          o << " " << pool.child_released(e, static_cast<uint16_t>(c));
        const auto v = pool.group(e, g);
        if (!v) {
          o << " group unknown";
          continue;
        }
        o << " claimed " << v->claimed << " holds " << v->holds << " emitted " << v->emitted << " expired "
          << v->expired << " verdict " << v->verdict_given << " denied " << v->denied << " why "
          << static_cast<int>(v->why) << " answer " << v->has_answer << "/" << static_cast<int>(v->answer)
          << "/" << static_cast<int>(v->reason);
      }
    }
    return o.str();
  }

  void check_pools() {
    for (size_t n = 0; n < pools_.size(); ++n) {
      const ClaimPool& pool = pools_[n];
      const PoolConfig& c = pool.config();
      std::vector<int> owner(c.size, -1);
      for (uint32_t e = 0; e < pool.entry_count(); ++e) {
        const uint32_t G = pool.entry(e).group_size;
        uint32_t held = 0;
        for (const GroupView& g : pool.groups(e)) {
          if (g.group < pool.released(e)) return fail("a released group is still kept");
          if (!g.holds) continue;
          if (g.slot < c.base || g.slot + G > c.base + c.size)
            return fail("a group holds slots outside the pool");
          for (uint32_t i = 0; i < G; ++i) {
            int& o = owner[g.slot - c.base + i];
            if (o != -1) return fail("slot " + std::to_string(g.slot + i) + " held by two groups");
            o = static_cast<int>(e);
          }
          held += G;
        }
        if (held != pool.entry_counters(e).slots_held) return fail("slots_held disagrees with the groups");
        if (held > pool.entry(e).claim_cap) return fail("an entry over its claim cap");
      }
      for (uint32_t s = 0; s < c.size; ++s) {
        if (pool.slot_free(c.base + s) != (owner[s] == -1))
          return fail("the bitmap disagrees with the groups");
      }
    }
  }

  bool all_done() const {
    for (const Worker& k : workers_) {
      if (k.finished < p_.groups) return false;
    }
    for (const auto& pool : pools_) {
      for (uint32_t e = 0; e < pool.entry_count(); ++e) {
        if (pool.released(e) < p_.groups) return false;
      }
    }
    return true;
  }

  std::string final_checks() {
    for (size_t n = 0; n < pools_.size(); ++n) {
      const ClaimPool& pool = pools_[n];
      if (pool.free_slots() != pool.config().size || pool.counters().slots_held != 0) {
        return "pool " + std::to_string(n) + " leaks slots after every release";
      }
      for (uint32_t e = 0; e < pool.entry_count(); ++e) {
        if (!pool.groups(e).empty()) return "pool " + std::to_string(n) + " remembers released groups";
        if (pool.entry_counters(e).slots_high_water > pool.entry(e).claim_cap)
          return "high water over the cap";
      }
    }
    for (int j = 0; j < p_.jobs; ++j) {
      for (uint32_t g = 0; g < p_.groups; ++g) {
        std::set<std::pair<int, int>> answers;  // (answer, reason) first heard
        std::set<Mode> modes;
        for (const Worker& k : workers_) {
          if (k.job != j) continue;
          const WorkerGroup& s = k.groups[g];
          if (!s.heard) return "a worker finished a group without an answer";
          answers.insert({static_cast<int>(s.first), static_cast<int>(s.first_reason)});
          modes.insert(s.mode);
        }
        const std::string where = "job " + std::to_string(j) + " group " + std::to_string(g);
        if (modes.size() != 1) return where + ": finished partly in the network, partly on the ring";
        if (answers.size() > 2) return where + ": three different answers";
        if (answers.size() == 2) {
          const std::pair<int, int> granted{1, 0}, expired{0, static_cast<int>(Reason::kExpired)};
          if (answers.count(granted) == 0 || answers.count(expired) == 0)
            return where + ": two different answers";
          if (root_emitted_[static_cast<size_t>(j)][g]) return where + ": expired after the root emitted";
        }
      }
    }
    return "";
  }

  Params p_;
  Rng rng_;
  std::vector<ClaimPool> pools_;                              // leaves, then the root
  std::vector<std::vector<std::map<uint32_t, Bank>>> banks_;  // [node][job][seq]
  std::vector<std::vector<bool>> root_emitted_;               // [job][group]
  std::vector<Worker> workers_;
  std::multimap<uint64_t, Msg> inflight_;  // by delivery tick
  uint64_t tick_ = 0;
  std::string error_;
  Totals totals_;
};

}  // namespace

TEST_CASE("pool: random loss, duplication and reordering on a two-level tree", "[pool][random]") {
  const uint64_t base = test_seed("claim pool: random scenarios");
  const uint64_t runs = env_count("PANAMA_POOL_RUNS", 400);
  Rng meta(base);
  Totals sum;
  for (uint64_t run = 0; run < runs; ++run) {
    const uint64_t seed = meta();
    Rng r(seed);
    Params p;
    p.jobs = static_cast<int>(uniform(r, 1, 4));
    p.groups = uniform(r, 6, 24);
    p.window = uniform(r, 1, 4);
    p.loss = uniform(r, 0, 3) == 0 ? 0.0 : uniform(r, 1, 20) / 100.0;
    p.dup = uniform(r, 0, 2) == 0 ? 0.0 : uniform(r, 1, 10) / 100.0;
    p.max_delay = uniform(r, 1, 30);
    p.slow = uniform(r, 0, 1) ? uniform(r, 1, 5) / 100.0 : 0.0;
    p.slow_ticks = uniform(r, 50, 400);
    p.lease_ticks = uniform(r, 0, 1) ? uniform(r, 30, 150) : 100000;
    p.rto_ticks = uniform(r, 20, 80);
    p.leaf_pool = uniform(r, 4, 16);
    p.root_pool = uniform(r, 4, 12);
    for (int j = 0; j < p.jobs; ++j) {
      const uint32_t g = uniform(r, 1, 4);
      p.g.push_back(g);
      p.leaf_cap.push_back(g * uniform(r, 0, 3) + uniform(r, 0, 1));
      p.root_cap.push_back(g * uniform(r, 1, 3));
    }
    INFO("run " << run << " seed " << seed << " jobs " << p.jobs << " groups " << p.groups << " loss "
                << p.loss << " dup " << p.dup << " lease " << p.lease_ticks);
    Scenario s(p, seed);
    const std::string error = s.run(400000);
    REQUIRE(error == "");
    const Totals& t = s.totals();
    sum.network += t.network;
    sum.ring += t.ring;
    sum.switched += t.switched;
    sum.expired += t.expired;
    sum.granted += t.granted;
    sum.denied += t.denied;
    sum.stale += t.stale;
    sum.no_claim += t.no_claim;
    sum.duplicates += t.duplicates;
  }
  std::printf(
      "claim pool: %llu runs: %llu groups finished in the network, %llu on the ring (%llu moved after an "
      "expiry), %llu expiries, %llu no-claim drops, %llu duplicate claims, %llu stale claims\n",
      static_cast<unsigned long long>(runs), static_cast<unsigned long long>(sum.network),
      static_cast<unsigned long long>(sum.ring), static_cast<unsigned long long>(sum.switched),
      static_cast<unsigned long long>(sum.expired), static_cast<unsigned long long>(sum.no_claim),
      static_cast<unsigned long long>(sum.duplicates), static_cast<unsigned long long>(sum.stale));
  INFO("network " << sum.network << " ring " << sum.ring << " switched " << sum.switched << " expired "
                  << sum.expired << " granted " << sum.granted << " denied " << sum.denied << " stale "
                  << sum.stale << " no-claim " << sum.no_claim << " duplicates " << sum.duplicates);
  // The scenarios reached every rule (over enough runs to be sure of it).
  if (runs >= 40) {
    CHECK(sum.network > 0);
    CHECK(sum.ring > 0);
    CHECK(sum.expired > 0);
    CHECK(sum.switched > 0);
    CHECK(sum.no_claim > 0);
    CHECK(sum.duplicates > 0);
    CHECK(sum.stale > 0);
  }
}
