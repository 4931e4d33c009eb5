// The pool in the software PSwitch (SwitchCore around the real engine
// model, docs/hybrid-allreduce.md): a two-level tree, two leaves under a
// root, with the pooled trees of two jobs (job 1: G 4, job 2: G 2) and a
// fixed-share job 3 at each leaf. Workers claim groups, contribute through
// the claimed slots and release them; every expectation (sums, bf16
// rounding, placements, counters) is computed here, independently of the
// engine and the pool.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>

#include "panama/claim.hpp"
#include "panama/engine.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "support/frames.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::pswitch;
using namespace panama::test;

namespace {

using PoolEngine = Engine<16, 64, 4>;  // 16 table entries, 64 slots of 64 elements

constexpr uint32_t kUp = 6;  // a leaf's uplink port; ports 0..5 are workers
constexpr uint32_t kElems = 8;
constexpr uint64_t kLease = 1000;
constexpr uint32_t kPoolBase = 32;
constexpr uint32_t kTableBase = 8;
constexpr uint32_t kTableCount = 8;
constexpr uint16_t kClaimJob = 0xFFFF;
constexpr uint32_t kG1 = 4, kCap1 = 8;  // job 1
constexpr uint32_t kG2 = 2, kCap2 = 4;  // job 2
constexpr int kRoot = 2;                // node index of the root; leaves are 0 and 1

// Leaf ports: job 1's workers on 0, 1; job 2's on 2, 3; job 3's (fixed
// share, rooted at the leaf) on 4, 5; the uplink on 6. Root ports: leaf 0, leaf 1.
std::string leaf_json(uint32_t pool_size) {
  return R"({"name": "leaf", "ports": [{"name": "w0"}, {"name": "w1"}, {"name": "w2"}, {"name": "w3"},
    {"name": "w4"}, {"name": "w5"}, {"name": "up", "uplink": true}],
   "trees": [{"job": 1, "tree": 0, "parent": "up", "children": ["w0", "w1"]},
             {"job": 2, "tree": 0, "parent": "up", "children": ["w2", "w3"]},
             {"job": 3, "tree": 0, "children": ["w4", "w5"]}],
   "pool": {"base": 32, "size": )" +
         std::to_string(pool_size) + R"(, "lease_ns": 1000, "table_base": 8, "table_count": 8,
            "trees": [{"job": 1, "tree": 0, "group_size": 4, "claim_cap": 8},
                      {"job": 2, "tree": 0, "group_size": 2, "claim_cap": 4}]}})";
}
std::string root_json(uint32_t pool_size) {
  return R"({"name": "root", "ports": [{"name": "l0"}, {"name": "l1"}],
   "trees": [{"job": 1, "tree": 0, "children": ["l0", "l1"]},
             {"job": 2, "tree": 0, "children": ["l0", "l1"]}],
   "pool": {"base": 32, "size": )" +
         std::to_string(pool_size) + R"(, "lease_ns": 1000, "table_base": 8, "table_count": 8,
            "trees": [{"job": 1, "tree": 0, "group_size": 4, "claim_cap": 8},
                      {"job": 2, "tree": 0, "group_size": 2, "claim_cap": 4}]}})";
}

config::EntryConfig entry(uint32_t index, uint16_t job, bool root, uint16_t out_child, uint32_t slot_base,
                          uint32_t slot_count) {
  config::EntryConfig e;
  e.index = index;
  e.job = job;
  e.tree = 0;
  e.root = root;
  e.fan_in = 2;
  e.children = {0, 1};
  e.slot_base = slot_base;
  e.slot_count = slot_count;
  e.out_child_id = out_child;
  e.eth_src = {0x02, 0, 0, 0, 9, static_cast<uint8_t>(out_child)};
  e.eth_dst = root ? config::MacAddress{0x02, 0, 0, 0, 8, 0xFF} : config::MacAddress{0x02, 0, 0, 0, 9, 0xEE};
  e.ip_src = 0x0A000900u + out_child;
  e.ip_dst = root ? 0x0A0008FFu : 0x0A0009EEu;
  e.udp_src = wire::kDefaultUdpPort;
  e.udp_dst = wire::kDefaultUdpPort;
  return e;
}

// One PSwitch: engine, settings, the node config's entries, SwitchCore.
struct Node {
  std::unique_ptr<PoolEngine> eng = std::make_unique<PoolEngine>();
  PswitchSettings s;
  std::vector<config::EntryConfig> entries;
  std::unique_ptr<SwitchCore<PoolEngine>> core;

  Node(const std::string& settings, std::vector<config::EntryConfig> e) : entries(std::move(e)) {
    s = settings_from_json(nlohmann::json::parse(settings));
    check_trees_against_entries(s, entries);
    config::NodeConfig cfg;
    cfg.node = s.name;
    for (const config::EntryConfig& c : entries) {
      if (!s.pool->find(c.job, c.tree)) cfg.entries.push_back(c);  // pooled: templates only
    }
    EngineRegisters<PoolEngine> regs(*eng);
    config::apply_node_config(regs, cfg);
    core = std::make_unique<SwitchCore<PoolEngine>>(s, *eng, entries);
  }

  const ClaimPool& pool() const { return *core->pool(); }
  uint32_t pe(uint16_t job) const { return static_cast<uint32_t>(pool().find_entry(job, 0)); }
  uint64_t gc(uint32_t c) const { return eng->global_counter(c); }
  uint64_t drops() const {
    uint64_t n = gc(regmap::kGcDuplicates);
    for (uint32_t c = regmap::kGcDropOversize; c <= regmap::kGcDropRxOverflow; ++c) n += gc(c);
    return n;
  }
};

// The target a switch emits into: with `buffers`, it offers its own buffer
// (as the DPDK PSwitch's mbufs), so the engine writes emissions there and
// the switch rewrites a claim entry's emission in place.
class Target final : public EmitTarget {
 public:
  Target(bool buffers, std::function<void(uint32_t, const uint8_t*, uint32_t)> f)
      : buffers_(buffers), f_(std::move(f)) {}
  uint8_t* buffer(uint32_t n) override {
    if (!buffers_) return nullptr;
    buf_.assign(n, 0xAA);
    return buf_.data();
  }
  void emit(const uint8_t* d, uint32_t n, Ports to) override {
    for (uint32_t p : to) f_(p, d, n);
  }

 private:
  bool buffers_;
  std::function<void(uint32_t, const uint8_t*, uint32_t)> f_;
  std::vector<uint8_t> buf_;
};

using Bytes = std::vector<uint8_t>;

struct Fabric {
  std::unique_ptr<Node> nodes[3];
  struct Pending {
    int node;
    uint32_t port;
    Bytes b;
  };
  std::deque<Pending> q;
  std::map<std::pair<int, uint32_t>, std::vector<Bytes>> inbox;     // (leaf, worker port) -> frames received
  std::vector<std::pair<int, Bytes>> up;                            // (leaf, frame) sent to the root
  std::function<bool(int node, uint32_t port, const Bytes&)> lose;  // drops a frame on the wire
  std::mt19937_64* rng = nullptr;         // set: frames between switches are delivered in random order,
  double dup = 0;                         // and each is sent twice with this probability
  bool buffers[3] = {false, true, true};  // leaf 0 without buffers: the mapped-copy path
  bool split = false;                     // frames arrive as header + payload (on_frame_parts)

  explicit Fabric(uint32_t pool_size = 32) {
    for (int l = 0; l < 2; ++l) {
      const uint16_t c = static_cast<uint16_t>(l);
      nodes[l] = std::make_unique<Node>(
          leaf_json(pool_size),
          std::vector<config::EntryConfig>{entry(0, 3, true, 0, 0, 16), entry(1, 1, false, c, 16, 1),
                                           entry(2, 2, false, c, 17, 1)});
    }
    nodes[kRoot] = std::make_unique<Node>(
        root_json(pool_size),
        std::vector<config::EntryConfig>{entry(1, 1, true, 0, 0, 1), entry(2, 2, true, 0, 1, 1)});
  }
  Node& leaf(int l) { return *nodes[l]; }
  Node& root() { return *nodes[kRoot]; }

  void emitted(int node, uint32_t port, const uint8_t* d, uint32_t n) {
    Bytes b(d, d + n);
    if (lose && lose(node, port, b)) return;
    const int copies = rng && std::uniform_real_distribution<double>(0, 1)(*rng) < dup ? 2 : 1;
    for (int c = 0; c < copies; ++c) deliver(node, port, b);
  }
  void deliver(int node, uint32_t port, const Bytes& b) {
    if (node == kRoot) {
      q.push_back({static_cast<int>(port), kUp, b});
    } else if (port == kUp) {
      up.push_back({node, b});
      q.push_back({kRoot, static_cast<uint32_t>(node), b});
    } else {
      inbox[{node, port}].push_back(b);
    }
  }
  void rx(int node, uint32_t port, const Bytes& b) {
    Target out(buffers[node], [&](uint32_t p, const uint8_t* d, uint32_t n) { emitted(node, p, d, n); });
    const uint32_t len = static_cast<uint32_t>(b.size());
    if (split && len > wire::kPayloadOffset) {
      // In two pieces, as a worker sending from its own memory: the header
      // and, in a buffer of its own, the payload.
      const Bytes head(b.begin(), b.begin() + wire::kPayloadOffset),
          payload(b.begin() + wire::kPayloadOffset, b.end());
      nodes[node]->core->on_frame_parts(port, head.data(), payload.data(), len, out);
      return;
    }
    nodes[node]->core->on_frame(port, b.data(), len, out);
  }
  // A worker's frame into its leaf, then everything it causes.
  void send(int l, uint32_t port, const Bytes& b) {
    rx(l, port, b);
    while (!q.empty()) {
      if (rng) std::swap(q.front(), q[(*rng)() % q.size()]);
      Pending m = std::move(q.front());
      q.pop_front();
      rx(m.node, m.port, m.b);
    }
  }
  void advance(uint64_t now) {
    for (auto& n : nodes) n->core->advance(now);
  }
  std::vector<Bytes> take(int l, uint32_t port) {
    std::vector<Bytes> r = std::move(inbox[{l, port}]);
    inbox[{l, port}].clear();
    return r;
  }
  void clear() {
    inbox.clear();
    up.clear();
  }
};

// A worker: its leaf, port and child id (the port's position among its tree's children).
struct Worker {
  int leaf;
  uint32_t port;
  uint16_t job;
  uint16_t child;
};
std::vector<Worker> workers_of(uint16_t job) {
  const uint32_t first = job == 1 ? 0 : job == 2 ? 2 : 4;
  return {{0, first, job, 0}, {0, first + 1, job, 1}, {1, first, job, 0}, {1, first + 1, job, 1}};
}

wire::Header addr_of(const Worker& w) {
  return contribution(w.job, 0, w.child, 0, 1);
}
Bytes claim_frame(const Worker& w, uint32_t group, bool denied_below = false) {
  Bytes b(claim::kFrameBytes);
  REQUIRE(claim::build_claim(b.data(), claim::kFrameBytes, addr_of(w), w.job, 0, w.child, group,
                             denied_below) == claim::kFrameBytes);
  return b;
}
Bytes release_frame(const Worker& w, uint32_t released, bool ask = false) {
  Bytes b(claim::kFrameBytes);
  REQUIRE(claim::build_release(b.data(), claim::kFrameBytes, addr_of(w), w.job, 0, w.child, released, false,
                               ask) == claim::kFrameBytes);
  return b;
}

Bytes fp32_frame(const Worker& w, uint32_t seq, const std::vector<float>& v, uint16_t cwnd_cap,
                 wire::PacketType type = wire::PacketType::kAggregateUp) {
  std::vector<uint32_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) bits[i] = f2u(v[i]);
  return make_frame(
      contribution(w.job, 0, w.child, seq, static_cast<uint16_t>(v.size()), wire::kEcnEct0, cwnd_cap, type),
      bits);
}

// bf16 by hand: the high half of a binary32, rounded to nearest even.
uint16_t to_bf16(float f) {
  const uint32_t u = f2u(f);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t b) {
  return u2f(uint32_t{b} << 16);
}
Bytes bf16_frame(const Worker& w, uint32_t seq, const std::vector<uint16_t>& v, uint16_t cwnd_cap) {
  wire::Header h =
      contribution(w.job, 0, w.child, seq, static_cast<uint16_t>(v.size()), wire::kEcnEct0, cwnd_cap);
  h.elem_type = static_cast<uint8_t>(wire::ElemType::kBfloat16);
  Bytes b(wire::frame_length(h.elem_count, h.elem_type));
  REQUIRE(wire::build_frame16(b.data(), static_cast<uint32_t>(b.size()), h, v.data()) == b.size());
  return b;
}
std::vector<uint16_t> payload16(const Bytes& f) {
  const uint32_t n = wire::load_be16(f.data() + wire::kPanamaElemCount);
  std::vector<uint16_t> p(n);
  for (uint32_t i = 0; i < n; ++i)
    p[i] =
        static_cast<uint16_t>(f[wire::kPayloadOffset + 2 * i] | (f[wire::kPayloadOffset + 2 * i + 1] << 8));
  return p;
}

uint8_t type_of(const Bytes& f) {
  return f[wire::kPanamaType];
}
uint32_t seq_of(const Bytes& f) {
  return wire::load_be32(f.data() + wire::kPanamaSeq);
}
uint16_t job_of(const Bytes& f) {
  return wire::load_be16(f.data() + wire::kPanamaJobId);
}
uint16_t cap_of(const Bytes& f) {
  return wire::load_be16(f.data() + wire::kPanamaCwndCap);
}
bool is_result(const Bytes& f) {
  return type_of(f) == static_cast<uint8_t>(wire::PacketType::kResultDown);
}

// The claim-results among `frames`: (group, answer, reason).
struct Verdict {
  uint32_t group;
  claim::Answer answer;
  claim::Reason reason;
};
std::vector<Verdict> verdicts(const std::vector<Bytes>& frames) {
  std::vector<Verdict> v;
  for (const Bytes& f : frames) {
    wire::Header h;
    claim::Frame c;
    if (claim::parse_frame(f.data(), static_cast<uint32_t>(f.size()), wire::kDefaultUdpPort, h, c) ==
        claim::Class::kClaimResult) {
      v.push_back({c.seq, c.answer, c.reason});
    }
  }
  return v;
}

// Every worker of `job` claims `group` (`only`: worker `only` alone, as
// after the root's answer, which every worker hears); each must hear
// exactly one answer.
void claim_all(Fabric& f, uint16_t job, uint32_t group, claim::Answer want,
               claim::Reason why = claim::Reason::kNone, int only = -1) {
  const std::vector<Worker> ws = workers_of(job);
  for (int k = 0; k < 4; ++k) {
    if (only < 0 || only == k) f.send(ws[k].leaf, ws[k].port, claim_frame(ws[k], group));
  }
  for (const Worker& w : workers_of(job)) {
    const std::vector<Verdict> v = verdicts(f.take(w.leaf, w.port));
    REQUIRE(v.size() == 1);
    CHECK(v[0].group == group);
    CHECK(v[0].answer == want);
    CHECK(v[0].reason == why);
  }
}

// The release confirmations in what reached a worker (nothing else may be there).
std::vector<uint32_t> confirmations(const std::vector<Bytes>& got, uint16_t job) {
  std::vector<uint32_t> counts;
  for (const Bytes& b : got) {
    wire::Header h;
    claim::Frame cf;
    REQUIRE(claim::parse_frame(b.data(), static_cast<uint32_t>(b.size()), wire::kDefaultUdpPort, h, cf) ==
            claim::Class::kRelease);
    CHECK(cf.confirmation);
    CHECK_FALSE(cf.ask);
    CHECK(cf.job_id == job);
    counts.push_back(cf.seq);
  }
  return counts;
}

// Every worker of `job` releases `released` groups (asking for a
// confirmation when `ask`). The last release at the root frees them there,
// and the root's confirmation of the new count reaches every worker, once.
// A count the root had already (repeated releases) is confirmed only to the
// workers that ask.
void release_all(Fabric& f, uint16_t job, uint32_t released, bool ask = false) {
  const std::vector<Worker> ws = workers_of(job);
  for (const Worker& w : ws) f.send(w.leaf, w.port, release_frame(w, released, ask));
  for (const Worker& w : ws) {
    INFO("job " << job << " worker at leaf " << w.leaf << " port " << w.port << (ask ? ", asking" : ""));
    const std::vector<uint32_t> c = confirmations(f.take(w.leaf, w.port), job);
    REQUIRE_FALSE(c.empty());
    CHECK(c.back() == released);
    if (!ask) CHECK(c.size() == 1);
  }
}

// One fp32 sequence of `job`: random values and caps from every worker; each
// worker must receive exactly the result, with seq and cwnd_cap as expected.
void fp32_round(Fabric& f, std::mt19937_64& rng, uint16_t job, uint32_t seq, uint32_t cap) {
  std::uniform_real_distribution<float> val(-100.0f, 100.0f);
  std::uniform_int_distribution<int> capd(0, 3);
  const std::vector<Worker> ws = workers_of(job);
  std::vector<std::vector<float>> v(4, std::vector<float>(kElems));
  uint32_t want_cap = cap;
  for (int k = 0; k < 4; ++k) {
    for (float& x : v[k]) x = val(rng);
    const uint16_t c = capd(rng) == 0 ? static_cast<uint16_t>(2 + k) : 0xFFFF;
    want_cap = std::min<uint32_t>(want_cap, c);
    f.send(ws[k].leaf, ws[k].port, fp32_frame(ws[k], seq, v[k], c));
  }
  // Each leaf adds its two workers' values, the root the two partials.
  std::vector<uint32_t> want(kElems);
  for (uint32_t i = 0; i < kElems; ++i) want[i] = f2u((v[0][i] + v[1][i]) + (v[2][i] + v[3][i]));
  for (const Worker& w : ws) {
    const std::vector<Bytes> got = f.take(w.leaf, w.port);
    REQUIRE(got.size() == 1);
    CHECK(is_result(got[0]));
    CHECK(job_of(got[0]) == job);
    CHECK(got[0][wire::kPanamaTreeId] == 0);
    CHECK(seq_of(got[0]) == seq);
    CHECK(cap_of(got[0]) == want_cap);
    CHECK(payload_of(got[0]) == want);
  }
}

void bf16_round(Fabric& f, std::mt19937_64& rng, uint16_t job, uint32_t seq) {
  std::uniform_real_distribution<float> val(-100.0f, 100.0f);
  const std::vector<Worker> ws = workers_of(job);
  std::vector<std::vector<uint16_t>> v(4, std::vector<uint16_t>(kElems));
  for (int k = 0; k < 4; ++k) {
    for (uint16_t& x : v[k]) x = to_bf16(val(rng));
    f.send(ws[k].leaf, ws[k].port, bf16_frame(ws[k], seq, v[k], 0xFFFF));
  }
  // A leaf's partial is rounded to bf16 when it leaves; the root widens,
  // adds and rounds again.
  std::vector<uint16_t> want(kElems);
  for (uint32_t i = 0; i < kElems; ++i) {
    const uint16_t p0 = to_bf16(from_bf16(v[0][i]) + from_bf16(v[1][i]));
    const uint16_t p1 = to_bf16(from_bf16(v[2][i]) + from_bf16(v[3][i]));
    want[i] = to_bf16(from_bf16(p0) + from_bf16(p1));
  }
  for (const Worker& w : ws) {
    const std::vector<Bytes> got = f.take(w.leaf, w.port);
    REQUIRE(got.size() == 1);
    CHECK(is_result(got[0]));
    CHECK(seq_of(got[0]) == seq);
    CHECK(payload16(got[0]) == want);
  }
}

// Job 3's fixed share at leaf `l`: two workers, the leaf is the root.
void fixed_round(Fabric& f, std::mt19937_64& rng, int l, uint32_t seq) {
  std::uniform_real_distribution<float> val(-100.0f, 100.0f);
  std::vector<float> a(kElems), b(kElems);
  for (uint32_t i = 0; i < kElems; ++i) {
    a[i] = val(rng);
    b[i] = val(rng);
  }
  const Worker w4{l, 4, 3, 0}, w5{l, 5, 3, 1};
  f.send(l, 4, fp32_frame(w4, seq, a, 0xFFFF));
  f.send(l, 5, fp32_frame(w5, seq, b, 0xFFFF));
  std::vector<uint32_t> want(kElems);
  for (uint32_t i = 0; i < kElems; ++i) want[i] = f2u(a[i] + b[i]);
  for (uint32_t p : {4u, 5u}) {
    const std::vector<Bytes> got = f.take(l, p);
    REQUIRE(got.size() == 1);
    CHECK(seq_of(got[0]) == seq);
    CHECK(cap_of(got[0]) == 16);  // the share
    CHECK(payload_of(got[0]) == want);
  }
}

// No two live groups of any entry of `n`'s pool share a slot, and every
// group that holds slots has a claim entry.
void check_slots(const Node& n) {
  std::vector<int> owner(64, -1);
  for (uint32_t e = 0; e < n.pool().entry_count(); ++e) {
    for (const GroupView& g : n.pool().groups(e)) {
      if (!g.holds) {
        CHECK(n.core->claim_entry(e, g.group) < 0);
        continue;
      }
      CHECK(n.core->claim_entry(e, g.group) >= static_cast<int>(kTableBase));
      for (uint32_t s = g.slot; s < g.slot + n.pool().entry(e).group_size; ++s) {
        CHECK(owner[s] == -1);
        owner[s] = static_cast<int>(e);
      }
    }
  }
}

}  // namespace

TEST_CASE("pool: granted groups aggregate through the pool, fp32 and bf16 bit-exact", "[pool]") {
  std::mt19937_64 rng(test_seed("pool: granted groups"));
  Fabric f;
  SECTION("contiguous frames") {}
  SECTION("frames in two pieces") {
    f.split = true;
  }
  claim_all(f, 1, 0, claim::Answer::kGranted);
  claim_all(f, 1, 1, claim::Answer::kGranted);
  claim_all(f, 2, 0, claim::Answer::kGranted);
  // First fit on every engine: job 1's groups at 32..35 and 36..39, job 2's at 40..41.
  for (int n = 0; n < 3; ++n) {
    const Node& node = *f.nodes[n];
    CHECK(node.pool().group(node.pe(1), 0)->slot == 32);
    CHECK(node.pool().group(node.pe(1), 1)->slot == 36);
    CHECK(node.pool().group(node.pe(2), 0)->slot == 40);
    CHECK(node.core->live_claim_entries() == 3);
    check_slots(node);
  }
  // Interleaved: group 0 of job 1 in fp32, group 1 in bf16, job 2's group 0.
  for (uint32_t s = 0; s < kG1; ++s) {
    fp32_round(f, rng, 1, s, kCap1);
    bf16_round(f, rng, 1, kG1 + s);
    if (s < kG2) fp32_round(f, rng, 2, s, kCap2);
  }
  // What left the leaves for the root carries the tree's key and seq, never a claim entry's.
  for (const auto& [l, b] : f.up) {
    CHECK(job_of(b) != kClaimJob);
    if (type_of(b) == static_cast<uint8_t>(wire::PacketType::kAggregateUp)) {
      CHECK(wire::load_be16(b.data() + wire::kPanamaChildId) == l);
      CHECK(seq_of(b) < kG1 * 2);
    }
  }
  for (int n = 0; n < 3; ++n) {
    const Node& node = *f.nodes[n];
    CHECK(node.drops() == 0);
    const PoolSwitchCounters c = node.core->pool_counters();
    CHECK(c.entry_commits == 3);
    CHECK(c.commit_failures == 0);
    CHECK(c.mapped == c.counted);
    CHECK(c.emissions == kG1 * 2 + kG2);
    CHECK(node.pool().counters().granted == 3);
  }
  CHECK(f.leaf(0).core->pool_tree_counters(0).claims_up == 2);  // job 1: two groups, passed up once each
  CHECK(f.root().core->pool_tree_counters(0).answers_down == 2);
  // Releases free the slots and disable the claim entries.
  release_all(f, 1, 2);
  release_all(f, 2, 1);
  for (int n = 0; n < 3; ++n) {
    CHECK(f.nodes[n]->pool().free_slots() == 32);
    CHECK(f.nodes[n]->core->live_claim_entries() == 0);
    CHECK(f.nodes[n]->core->pool_counters().entry_disables == 3);
  }
  CHECK(f.leaf(1).core->pool_tree_counters(0).releases_up == 2);
}

TEST_CASE("pool: a denied group never reaches the engine", "[pool]") {
  std::mt19937_64 rng(test_seed("pool: denied"));
  SECTION("over the claim cap") {
    Fabric f;
    claim_all(f, 2, 0, claim::Answer::kGranted);
    claim_all(f, 2, 1, claim::Answer::kGranted);
    // Job 2 holds 4 slots, its cap: the leaves deny, the root answers denied below.
    claim_all(f, 2, 2, claim::Answer::kDenied, claim::Reason::kDeniedBelow);
    for (int n = 0; n < 2; ++n) {
      CHECK(f.nodes[n]->pool().entry_counters(f.nodes[n]->pe(2)).denied[uint8_t(claim::Reason::kOverCap)] ==
            1);
    }
    const uint64_t frames_in = f.leaf(0).gc(regmap::kGcFramesIn);
    const Worker w = workers_of(2)[0];
    f.send(w.leaf, w.port, fp32_frame(w, 2 * kG2, std::vector<float>(kElems, 1.0f), 0xFFFF));
    CHECK(f.leaf(0).gc(regmap::kGcFramesIn) == frames_in);
    CHECK(f.leaf(0).pool().entry_counters(f.leaf(0).pe(2)).drop_no_claim == 1);
    CHECK(f.take(w.leaf, w.port).empty());  // a leaf is not the root: no answer from it
    // The granted groups still work.
    fp32_round(f, rng, 2, 0, kCap2);
    fp32_round(f, rng, 2, 3, kCap2);
  }
  SECTION("pool full") {
    Fabric f(8);  // 8 slots: job 1's two groups fill it
    claim_all(f, 1, 0, claim::Answer::kGranted);
    claim_all(f, 1, 1, claim::Answer::kGranted);
    claim_all(f, 2, 0, claim::Answer::kDenied, claim::Reason::kDeniedBelow);
    for (int n = 0; n < 3; ++n) {
      CHECK(f.nodes[n]->pool().entry_counters(f.nodes[n]->pe(2)).denied[uint8_t(claim::Reason::kPoolFull)] +
                f.nodes[n]
                    ->pool()
                    .entry_counters(f.nodes[n]->pe(2))
                    .denied[uint8_t(claim::Reason::kDeniedBelow)] ==
            1);
      CHECK(f.nodes[n]->core->live_claim_entries() == 2);
    }
    uint64_t frames_in[3];
    for (int n = 0; n < 3; ++n) frames_in[n] = f.nodes[n]->gc(regmap::kGcFramesIn);
    for (const Worker& w : workers_of(2))
      f.send(w.leaf, w.port, fp32_frame(w, 0, std::vector<float>(kElems, 2.0f), 0xFFFF));
    for (int n = 0; n < 3; ++n) CHECK(f.nodes[n]->gc(regmap::kGcFramesIn) == frames_in[n]);
    for (const Worker& w : workers_of(2)) CHECK(f.take(w.leaf, w.port).empty());
    fp32_round(f, rng, 1, 5, kCap1);
  }
}

TEST_CASE("pool: a retransmission after the result gets the stored result, original seq", "[pool]") {
  std::mt19937_64 rng(test_seed("pool: retransmission"));
  Fabric f;
  claim_all(f, 1, 0, claim::Answer::kGranted);
  claim_all(f, 1, 1, claim::Answer::kGranted);
  fp32_round(f, rng, 1, 6, kCap1);
  // Run seq 6 again by hand to keep the result bytes.
  f.clear();
  const std::vector<Worker> ws = workers_of(1);
  std::vector<float> v[4];
  for (int k = 0; k < 4; ++k) {
    v[k].assign(kElems, static_cast<float>(k + 1) * 0.5f);
    f.send(ws[k].leaf, ws[k].port, fp32_frame(ws[k], 5, v[k], 0xFFFF));
  }
  const Bytes result = f.take(1, 1).at(0);
  CHECK(seq_of(result) == 5);
  f.clear();
  // Worker 3 (leaf 1, port 1) lost it and retransmits: leaf 1 re-emits its
  // partial up, the root re-emits the result to leaf 1 only.
  const uint64_t served = f.root().gc(regmap::kGcRetransServed);
  f.send(1, 1, fp32_frame(ws[3], 5, v[3], 0xFFFF, wire::PacketType::kRetransmission));
  CHECK(f.root().gc(regmap::kGcRetransServed) == served + 1);
  CHECK(f.take(0, 0).empty());
  CHECK(f.take(0, 1).empty());
  const std::vector<Bytes> got = f.take(1, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0] == result);
  CHECK(f.root().core->tree_counters(0).results_resent == 1);
  for (int n = 0; n < 3; ++n) CHECK(f.nodes[n]->drops() == 0);
}

TEST_CASE("pool: an expired claim's slots serve two later claims in a row", "[pool]") {
  std::mt19937_64 rng(test_seed("pool: expiry"));
  Fabric f;
  claim_all(f, 1, 0, claim::Answer::kGranted);
  // One contribution only: slot 32 of leaf 0 holds an unfinished generation.
  const std::vector<Worker> ws = workers_of(1);
  f.send(ws[0].leaf, ws[0].port, fp32_frame(ws[0], 0, std::vector<float>(kElems, 7.0f), 0xFFFF));
  f.advance(kLease - 1);
  for (int n = 0; n < 3; ++n) CHECK(f.nodes[n]->pool().counters().expired == 0);
  f.advance(kLease + 10);
  for (int n = 0; n < 3; ++n) {
    CHECK(f.nodes[n]->pool().counters().expired == 1);
    CHECK(f.nodes[n]->pool().free_slots() == 32);
    CHECK(f.nodes[n]->core->live_claim_entries() == 0);
  }
  // The group is denied (expired) now: the root says so to a claim again.
  claim_all(f, 1, 0, claim::Answer::kDenied, claim::Reason::kExpired, 3);
  // Finished on the ring: released. Group 1 takes slots 32..35 again.
  release_all(f, 1, 1);
  f.advance(2 * kLease);
  claim_all(f, 1, 1, claim::Answer::kGranted);
  for (int n = 0; n < 3; ++n) CHECK(f.nodes[n]->pool().group(f.nodes[n]->pe(1), 1)->slot == kPoolBase);
  for (uint32_t s = kG1; s < 2 * kG1; ++s) fp32_round(f, rng, 1, s, kCap1);
  release_all(f, 1, 2);
  // And group 2 once more on the same slots.
  claim_all(f, 1, 2, claim::Answer::kGranted);
  for (int n = 0; n < 3; ++n) CHECK(f.nodes[n]->pool().group(f.nodes[n]->pe(1), 2)->slot == kPoolBase);
  for (uint32_t s = 2 * kG1; s < 3 * kG1; ++s) fp32_round(f, rng, 1, s, kCap1);
  for (int n = 0; n < 3; ++n) {
    CHECK(f.nodes[n]->drops() == 0);
    CHECK(f.nodes[n]->gc(regmap::kGcDropSeqWindow) == 0);
  }
}

TEST_CASE("pool: a contribution without a claim is answered with the claim-result", "[pool]") {
  Fabric f;
  claim_all(f, 1, 0, claim::Answer::kGranted);
  const std::vector<Worker> ws = workers_of(1);
  // Leaf 0's workers complete seq 0: its partial reaches the root; leaf 1 stays silent.
  for (int k = 0; k < 2; ++k)
    f.send(ws[k].leaf, ws[k].port, fp32_frame(ws[k], 0, std::vector<float>(kElems, 1.0f), 0xFFFF));
  CHECK(f.take(0, 0).empty());
  f.advance(kLease);
  // The root and leaf 1 expired the group; leaf 0 emitted, it keeps it.
  CHECK(f.root().pool().counters().expired == 1);
  CHECK(f.leaf(1).pool().counters().expired == 1);
  CHECK(f.leaf(0).pool().counters().expired == 0);
  // Worker 0 retransmits: leaf 0 re-emits its partial, the root drops it
  // (DROP_NO_CLAIM) and answers leaf 0 with the group's claim-result.
  const uint64_t root_in = f.root().gc(regmap::kGcFramesIn);
  f.send(0, 0,
         fp32_frame(ws[0], 0, std::vector<float>(kElems, 1.0f), 0xFFFF, wire::PacketType::kRetransmission));
  CHECK(f.root().gc(regmap::kGcFramesIn) == root_in);
  CHECK(f.root().pool().counters().drop_no_claim == 1);
  CHECK(f.root().core->pool_tree_counters(0).no_claim_answers == 1);
  for (uint32_t p : {0u, 1u}) {
    const std::vector<Verdict> v = verdicts(f.take(0, p));
    REQUIRE(v.size() == 1);
    CHECK(v[0].group == 0);
    CHECK(v[0].answer == claim::Answer::kDenied);
    CHECK(v[0].reason == claim::Reason::kExpired);
  }
  CHECK(f.take(1, 0).empty());
  // Leaf 1's worker contributes late: its leaf has no claim and is not the root.
  const uint64_t leaf1_in = f.leaf(1).gc(regmap::kGcFramesIn);
  f.send(1, 0, fp32_frame(ws[2], 1, std::vector<float>(kElems, 1.0f), 0xFFFF));
  CHECK(f.leaf(1).gc(regmap::kGcFramesIn) == leaf1_in);
  CHECK(f.leaf(1).pool().counters().drop_no_claim == 1);
  CHECK(f.take(1, 0).empty());
}

TEST_CASE("pool: contributions and claims of released groups are stale", "[pool]") {
  std::mt19937_64 rng(test_seed("pool: stale"));
  Fabric f;
  claim_all(f, 2, 0, claim::Answer::kGranted);
  fp32_round(f, rng, 2, 0, kCap2);
  fp32_round(f, rng, 2, 1, kCap2);
  release_all(f, 2, 1);
  uint64_t frames_in[3];
  for (int n = 0; n < 3; ++n) frames_in[n] = f.nodes[n]->gc(regmap::kGcFramesIn);
  const Worker w = workers_of(2)[1];
  f.send(w.leaf, w.port,
         fp32_frame(w, 1, std::vector<float>(kElems, 1.0f), 0xFFFF, wire::PacketType::kRetransmission));
  f.send(w.leaf, w.port, claim_frame(w, 0));
  for (int n = 0; n < 3; ++n) CHECK(f.nodes[n]->gc(regmap::kGcFramesIn) == frames_in[n]);
  CHECK(f.leaf(0).pool().entry_counters(f.leaf(0).pe(2)).drop_stale_group == 2);
  CHECK(f.take(w.leaf, w.port).empty());
  CHECK(f.leaf(0).core->live_claim_entries() == 0);
}

TEST_CASE("pool: a new released count is confirmed to every worker, a repeated one to the one that asks",
          "[pool]") {
  Fabric f;
  const std::vector<Worker> ws = workers_of(2);
  // Three of four release 1: the root's count stays 0, nobody hears anything.
  for (int k = 0; k < 3; ++k) f.send(ws[k].leaf, ws[k].port, release_frame(ws[k], 1));
  for (const Worker& w : ws) CHECK(f.take(w.leaf, w.port).empty());
  // The fourth: the root's count grows to 1, every worker hears it once.
  f.send(ws[3].leaf, ws[3].port, release_frame(ws[3], 1));
  for (const Worker& w : ws) CHECK(confirmations(f.take(w.leaf, w.port), 2) == std::vector<uint32_t>{1});
  // A repeated release that does not ask: nothing.
  f.send(ws[0].leaf, ws[0].port, release_frame(ws[0], 1));
  for (const Worker& w : ws) CHECK(f.take(w.leaf, w.port).empty());
  // One that asks (its confirmation was lost): the root answers its leaf,
  // the leaf passes it to that worker only.
  f.send(ws[1].leaf, ws[1].port, release_frame(ws[1], 1, true));
  for (const Worker& w : ws)
    CHECK(confirmations(f.take(w.leaf, w.port), 2) ==
          (&w == &ws[1] ? std::vector<uint32_t>{1} : std::vector<uint32_t>{}));
  // The root and the leaves counted what they sent down: 4 + 1 at the leaves, 2 + 1 at the root.
  CHECK(f.root().core->pool_tree_counters(1).confirmations_down == 3);
  CHECK(f.leaf(0).core->pool_tree_counters(1).confirmations_down +
            f.leaf(1).core->pool_tree_counters(1).confirmations_down ==
        5);
  // A confirmation from a child port is not the parent's: dropped, counted.
  Bytes forged(claim::kFrameBytes);
  REQUIRE(claim::build_release(forged.data(), claim::kFrameBytes, addr_of(ws[0]), 2, 0, ws[0].child, 9,
                               true) == claim::kFrameBytes);
  const uint64_t wrong = f.leaf(ws[0].leaf).core->counters().result_wrong_port;
  f.send(ws[0].leaf, ws[0].port, forged);
  CHECK(f.leaf(ws[0].leaf).core->counters().result_wrong_port == wrong + 1);
  for (const Worker& w : ws) CHECK(f.take(w.leaf, w.port).empty());
}

TEST_CASE("pool: jobs are isolated, and a fixed share beside the pool is unaffected", "[pool][isolation]") {
  std::mt19937_64 rng(test_seed("pool: isolation"));
  Fabric f;
  // Interleave both pooled jobs and job 3's fixed share, group by group.
  uint32_t g1 = 0, g2 = 0;
  uint32_t fixed[2] = {0, 0};  // job 3's next sequence at each leaf
  for (int round = 0; round < 6; ++round) {
    claim_all(f, 1, g1, claim::Answer::kGranted);
    claim_all(f, 2, g2, claim::Answer::kGranted);
    claim_all(f, 2, g2 + 1, claim::Answer::kGranted);
    for (int n = 0; n < 3; ++n) check_slots(*f.nodes[n]);
    std::vector<std::pair<uint16_t, uint32_t>> seqs;
    for (uint32_t s = 0; s < kG1; ++s) seqs.push_back({1, g1 * kG1 + s});
    for (uint32_t s = 0; s < 2 * kG2; ++s) seqs.push_back({2, g2 * kG2 + s});
    std::shuffle(seqs.begin(), seqs.end(), rng);
    for (const auto& [job, seq] : seqs) {
      fp32_round(f, rng, job, seq, job == 1 ? kCap1 : kCap2);
      const int l = static_cast<int>(rng() % 2);
      fixed_round(f, rng, l, fixed[l]++);
    }
    ++g1;
    g2 += 2;
    release_all(f, 1, g1);
    release_all(f, 2, g2);
  }
  // Attacks: a job 2 worker speaks for job 1 (a claim, a contribution), and
  // sends a frame with a claim entry's own key.
  const Worker thief{0, 2, 1, 0};  // port 2 is job 2's child 0
  claim_all(f, 1, g1, claim::Answer::kGranted);
  const uint64_t bd = f.leaf(0).core->counters().binding_drops;
  const PoolCounters before = f.leaf(0).pool().entry_counters(f.leaf(0).pe(1));
  f.send(0, 2, claim_frame(thief, g1 + 1));
  f.send(0, 2, fp32_frame(thief, g1 * kG1, std::vector<float>(kElems, 1e6f), 0xFFFF));
  CHECK(f.leaf(0).core->counters().binding_drops == bd + 2);
  CHECK(f.leaf(0).pool().entry_counters(f.leaf(0).pe(1)).claims_in == before.claims_in);
  const uint64_t frames_in = f.leaf(0).gc(regmap::kGcFramesIn);
  Worker forged{0, 2, kClaimJob, 0};
  f.send(0, 2, fp32_frame(forged, 0, std::vector<float>(kElems, 1e6f), 0xFFFF));
  CHECK(f.leaf(0).gc(regmap::kGcFramesIn) == frames_in);  // never reaches the engine
  for (uint32_t s = 0; s < kG1; ++s) fp32_round(f, rng, 1, g1 * kG1 + s, kCap1);
  for (int n = 0; n < 3; ++n) {
    CHECK(f.nodes[n]->drops() == 0);
    CHECK(f.nodes[n]->pool().counters().slots_high_water <= kG1 + 2 * kG2);
  }
  // Job 3's entry saw only its own traffic.
  for (int l = 0; l < 2; ++l) {
    CHECK(f.leaf(l).eng->entry_counter(0, regmap::kEcEmitted) == fixed[l]);
    CHECK(f.leaf(l).eng->entry_counter(0, regmap::kEcDropSeqWindow) == 0);
  }
}

TEST_CASE("pool: malformed claim frames are dropped and counted, touching nothing", "[pool]") {
  Fabric f;
  claim_all(f, 1, 0, claim::Answer::kGranted);
  const Worker w = workers_of(1)[0];
  const uint64_t frames_in = f.leaf(0).gc(regmap::kGcFramesIn);
  const PoolCounters before = f.leaf(0).pool().counters();
  Bytes bad = claim_frame(w, 1);
  bad[claim::kClaimFlags] = 0x80;  // an unknown flag
  f.send(0, 0, bad);
  Bytes shortf = claim_frame(w, 1);
  shortf.resize(70);
  f.send(0, 0, shortf);
  Bytes count = claim_frame(w, 1);
  wire::store_be16(count.data() + wire::kPanamaElemCount, 1);
  f.send(0, 0, count);
  CHECK(f.leaf(0).core->counters().claim_malformed == 3);
  CHECK(f.leaf(0).gc(regmap::kGcFramesIn) == frames_in);
  CHECK(f.leaf(0).pool().counters().claims_in == before.claims_in);
  CHECK(f.leaf(0).pool().free_slots() == 32 - kG1);
  CHECK(f.up.size() == 2);  // only the two claims for group 0 went up
}

TEST_CASE("pool settings: keys, errors and round trip", "[pool]") {
  const nlohmann::json leaf = nlohmann::json::parse(leaf_json(32));
  const PswitchSettings s = settings_from_json(leaf);
  REQUIRE(s.pool);
  CHECK(s.pool->base == 32);
  CHECK(s.pool->size == 32);
  CHECK(s.pool->lease_ns == 1000);
  CHECK(s.pool->table_base == 8);
  CHECK(s.pool->table_count == 8);
  CHECK(s.pool->claim_job == 0xFFFF);
  REQUIRE(s.pool->trees.size() == 2);
  CHECK(s.pool->trees[1].group_size == 2);
  CHECK(s.pool->trees[1].claim_cap == 4);
  const PswitchSettings back = settings_from_json(settings_to_json(s));
  REQUIRE(back.pool);
  CHECK(settings_to_json(back) == settings_to_json(s));
  CHECK_FALSE(settings_to_json(settings_from_json(nlohmann::json::parse(R"({"ports": [{"name": "a"}]})")))
                  .contains("pool"));

  auto error = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = leaf;
    edit(j);
    try {
      settings_from_json(j, "leaf.json");
    } catch (const SettingsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  using Catch::Matchers::Contains;
  CHECK_THAT(error([](auto& j) { j["pool"]["base"] = 500; }),
             Contains("pswitch.pool.size") && Contains("run past"));
  CHECK_THAT(error([](auto& j) { j["pool"]["size"] = 0; }), Contains("pswitch.pool.size"));
  CHECK_THAT(error([](auto& j) { j["pool"]["size"] = 513; }), Contains("pswitch.pool.size"));
  CHECK_THAT(error([](auto& j) { j["pool"]["lease_ns"] = 0; }), Contains("pswitch.pool.lease_ns"));
  CHECK_THAT(error([](auto& j) { j["pool"]["table_base"] = 60; }), Contains("pswitch.pool.table_count"));
  CHECK_THAT(error([](auto& j) { j["pool"]["trees"][0]["group_size"] = 9; }),
             Contains("pswitch.pool.trees[0].claim_cap") && Contains("below the group size"));
  CHECK_THAT(error([](auto& j) { j["pool"]["trees"][0]["claim_cap"] = 33; }),
             Contains("larger than the pool"));
  CHECK_THAT(error([](auto& j) { j["pool"]["trees"][0]["group_size"] = 33; }),
             Contains("pswitch.pool.trees[0].group_size"));
  CHECK_THAT(error([](auto& j) { j["pool"]["trees"][1]["job"] = 1; }), Contains("pooled twice"));
  CHECK_THAT(error([](auto& j) { j["pool"]["trees"][1]["job"] = 7; }), Contains("is not in \"trees\""));
  CHECK_THAT(error([](auto& j) { j["pool"]["claim_job"] = 3; }), Contains("pswitch.pool.claim_job"));
  CHECK_THAT(error([](auto& j) { j["pool"]["trees"] = nlohmann::json::array(); }),
             Contains("pswitch.pool.trees"));
  CHECK_THAT(error([](auto& j) { j["pool"]["bogus"] = 1; }), Contains("bogus"));

  // Against the engine table.
  std::vector<config::EntryConfig> entries{entry(0, 3, true, 0, 0, 16), entry(1, 1, false, 0, 16, 1),
                                           entry(2, 2, false, 0, 17, 1)};
  CHECK_NOTHROW(check_trees_against_entries(s, entries));
  auto entry_error = [&](const std::function<void(std::vector<config::EntryConfig>&)>& edit) {
    std::vector<config::EntryConfig> e = entries;
    edit(e);
    try {
      check_trees_against_entries(s, e);
    } catch (const SettingsError& x) {
      return std::string(x.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(entry_error([](auto& e) { e[0].slot_count = 40; }), Contains("reach into the pool"));
  CHECK_THAT(entry_error([](auto& e) { e[0].index = 9; }), Contains("claim entries"));
  CHECK_THAT(entry_error([](auto& e) { e[1].fan_in = 3; }), Contains("fan-in"));
  // A pooled tree's own range may lie anywhere: it is never committed.
  CHECK_NOTHROW(check_trees_against_entries(s, [&] {
    auto e = entries;
    e[1].slot_base = 32;
    return e;
  }()));

  // SwitchCore checks the pool against the engine it is given.
  PoolEngine eng;
  nlohmann::json big = leaf;
  big["pool"]["size"] = 64;  // fits 512 slots, not this engine's 64 from slot 32
  const PswitchSettings sb = settings_from_json(big);
  CHECK_THROWS_AS(SwitchCore<PoolEngine>(sb, eng, entries), SettingsError);
  CHECK_THROWS_AS(SwitchCore<PoolEngine>(s, eng), SettingsError);  // no templates
}

TEST_CASE("pool: contributions the engine counts renew the lease, others do not", "[pool]") {
  Fabric f;
  claim_all(f, 1, 0, claim::Answer::kGranted);  // at 0: every lease ends at 1000
  const Worker w = workers_of(1)[0];
  f.advance(600);
  f.send(w.leaf, w.port, fp32_frame(w, 0, std::vector<float>(kElems, 1.0f), 0xFFFF));  // counted at leaf 0
  f.advance(1100);
  CHECK(f.leaf(0).pool().counters().expired == 0);  // renewed until 1600
  CHECK(f.leaf(1).pool().counters().expired == 1);
  CHECK(f.root().pool().counters().expired == 1);
  f.advance(1500);
  const uint64_t dups = f.leaf(0).gc(regmap::kGcDuplicates);
  f.send(w.leaf, w.port, fp32_frame(w, 0, std::vector<float>(kElems, 1.0f), 0xFFFF));  // a duplicate
  CHECK(f.leaf(0).gc(regmap::kGcDuplicates) == dups + 1);
  CHECK(f.leaf(0).core->pool_tree_counters(0).counted == 1);
  f.advance(1600);
  CHECK(f.leaf(0).pool().counters().expired == 1);
  CHECK(f.leaf(0).core->live_claim_entries() == 0);
}

// Random loss, duplication and reordering on every link, workers following
// the rules (claims ahead, contributions and retransmissions, the ring for
// denied groups, releases). Values are small integers, so every sum is exact
// in any order of addition.
TEST_CASE("pool: random loss, duplication and reordering", "[pool]") {
  const uint64_t seed = test_seed("pool: random");
  const uint64_t runs = env_count("PANAMA_POOL_RUNS", 200);
  std::mt19937_64 rng(seed);
  constexpr uint32_t kGroups = 8;
  constexpr uint32_t kAhead = 3;  // groups claimed ahead of the first unfinished one
  uint64_t in_network = 0, on_ring = 0, expired = 0;
  for (uint64_t run = 0; run < runs; ++run) {
    Fabric f;
    std::uniform_real_distribution<double> u(0, 1);
    const double loss = u(rng) * 0.15;
    f.rng = &rng;
    f.dup = u(rng) * 0.1;
    f.split = run % 2 == 1;
    f.lose = [&](int, uint32_t, const Bytes&) { return u(rng) < loss; };
    INFO("run " << run << " loss " << loss << " dup " << f.dup);
    auto value = [](uint16_t job, uint32_t seq, int k, uint32_t i) {
      return static_cast<float>((job * 7 + seq * 3 + static_cast<uint32_t>(k) * 5 + i) % 64);
    };
    struct State {
      std::vector<int> answer = std::vector<int>(kGroups, 0);  // 0 none, 1 granted, 2 denied (ring)
      std::vector<int> mode = std::vector<int>(kGroups, 0);    // finished: 1 in the network, 2 on the ring
      std::vector<std::vector<bool>> got = std::vector<std::vector<bool>>(kGroups);
      std::vector<std::vector<bool>> sent = std::vector<std::vector<bool>>(kGroups);
      uint32_t released = 0;
    };
    std::map<std::pair<uint16_t, int>, State> st;
    uint64_t wrong = 0, result_on_ring = 0;
    uint64_t now = 0;
    for (int tick = 0; tick < 400; ++tick) {
      now += 100;
      f.advance(now);
      bool all_done = true;
      for (uint16_t job : {uint16_t{1}, uint16_t{2}}) {
        const uint32_t g_size = job == 1 ? kG1 : kG2;
        const std::vector<Worker> ws = workers_of(job);
        for (int k = 0; k < 4; ++k) {
          State& w = st[{job, k}];
          const Worker& me = ws[k];
          while (w.released < kGroups && w.mode[w.released] != 0) ++w.released;
          if (w.released < kGroups) all_done = false;
          if (tick % 4 == 0 || w.released == kGroups) {
            if (u(rng) >= loss) f.send(me.leaf, me.port, release_frame(me, w.released));
          }
          for (uint32_t g = w.released; g < std::min(kGroups, w.released + kAhead); ++g) {
            if (w.got[g].empty()) w.got[g].assign(g_size, false), w.sent[g].assign(g_size, false);
            if (w.answer[g] == 0 && tick % 3 == 0) {
              if (u(rng) >= loss) f.send(me.leaf, me.port, claim_frame(me, g));
            } else if (w.answer[g] == 1 && w.mode[g] == 0 && tick % 2 == 0) {
              // With its retransmissions, the claim again: a worker whose
              // leaf expired the group hears the root's answer this way.
              if (std::count(w.sent[g].begin(), w.sent[g].end(), true) > 0 && u(rng) >= loss)
                f.send(me.leaf, me.port, claim_frame(me, g));
              for (uint32_t i = 0; i < g_size; ++i) {
                if (w.got[g][i]) continue;
                const uint32_t seq = g * g_size + i;
                std::vector<float> v(kElems);
                for (uint32_t e = 0; e < kElems; ++e) v[e] = value(job, seq, k, e);
                const auto type =
                    w.sent[g][i] ? wire::PacketType::kRetransmission : wire::PacketType::kAggregateUp;
                w.sent[g][i] = true;
                if (u(rng) >= loss) f.send(me.leaf, me.port, fp32_frame(me, seq, v, 0xFFFF, type));
              }
            }
          }
          // What reached the worker.
          for (const Bytes& b : f.take(me.leaf, me.port)) {
            wire::Header h;
            claim::Frame c;
            if (claim::parse_frame(b.data(), static_cast<uint32_t>(b.size()), wire::kDefaultUdpPort, h, c) ==
                claim::Class::kClaimResult) {
              const uint32_t g = c.seq;
              if (g >= kGroups || w.mode[g] != 0) continue;
              const bool any_result =
                  !w.got[g].empty() && std::count(w.got[g].begin(), w.got[g].end(), true) > 0;
              if (c.answer == claim::Answer::kGranted && w.answer[g] == 0) w.answer[g] = 1;
              if (c.answer == claim::Answer::kDenied && !any_result) {
                w.answer[g] = 2;
                w.mode[g] = 2;  // the ring reduces it
              }
              continue;
            }
            if (!is_result(b)) continue;
            const uint32_t seq = seq_of(b), g = seq / g_size;
            REQUIRE(g < kGroups);
            if (w.mode[g] == 2) ++result_on_ring;
            if (w.got[g].empty()) w.got[g].assign(g_size, false), w.sent[g].assign(g_size, false);
            std::vector<uint32_t> want(kElems);
            for (uint32_t e = 0; e < kElems; ++e) {
              float sum = 0;
              for (int j = 0; j < 4; ++j) sum += value(job, seq, j, e);
              want[e] = f2u(sum);
            }
            if (payload_of(b) != want || job_of(b) != job) ++wrong;
            w.got[g][seq % g_size] = true;
            if (std::count(w.got[g].begin(), w.got[g].end(), true) == static_cast<long>(g_size) &&
                w.mode[g] == 0)
              w.mode[g] = 1;
          }
        }
      }
      if (all_done && tick > 10) break;
    }
    CHECK(wrong == 0);
    CHECK(result_on_ring == 0);
    for (uint16_t job : {uint16_t{1}, uint16_t{2}}) {
      for (uint32_t g = 0; g < kGroups; ++g) {
        const int m = st[{job, 0}].mode[g];
        CHECK(m != 0);  // finished
        (m == 1 ? in_network : on_ring) += 1;
        for (int k = 1; k < 4; ++k) CHECK(st[{job, k}].mode[g] == m);  // all the same way
      }
    }
    // A clean last release from everyone frees everything.
    f.lose = nullptr;
    f.dup = 0;
    for (uint16_t job : {uint16_t{1}, uint16_t{2}}) {
      for (const Worker& w : workers_of(job)) f.take(w.leaf, w.port);  // the loop's last frames
      release_all(f, job, kGroups, true);  // the count may be the root's already: ask
    }
    for (int n = 0; n < 3; ++n) {
      const Node& node = *f.nodes[n];
      CHECK(node.pool().free_slots() == 32);
      CHECK(node.core->live_claim_entries() == 0);
      CHECK(node.gc(regmap::kGcDropSeqWindow) == 0);
      CHECK(node.core->pool_counters().commit_failures == 0);
      CHECK(node.core->pool_counters().unmapped == 0);
      check_slots(node);
      expired += node.pool().counters().expired;
    }
    if (wrong != 0 || result_on_ring != 0) break;
  }
  // Both ways of finishing a group, and expired leases, were exercised.
  std::printf("pool: random: %llu groups in the network, %llu on the ring, %llu leases expired\n",
              static_cast<unsigned long long>(in_network), static_cast<unsigned long long>(on_ring),
              static_cast<unsigned long long>(expired));
  CHECK(in_network > 0);
  CHECK(on_ring > 0);
}

TEST_CASE("pool: claim frames pass a chain tree's hop through a switch that does not serve it", "[pool]") {
  // A spine between two leaves of job 1's chain: no pool, no tree, one hop.
  const PswitchSettings s = settings_from_json(nlohmann::json::parse(
      R"({"ports": [{"name": "below"}, {"name": "above"}, {"name": "other"}],
          "transit": [{"job": 1, "tree": 0, "child": "below", "parent": "above"}]})"));
  PoolEngine eng;
  SwitchCore<PoolEngine> core(s, eng);
  std::vector<std::pair<uint32_t, Bytes>> out;
  PortEmitFn to([&](uint32_t p, const uint8_t* d, uint32_t n) { out.push_back({p, Bytes(d, d + n)}); });
  const Worker w{0, 0, 1, 3};
  const Bytes claim = claim_frame(w, 5), release = release_frame(w, 2);
  Bytes result(claim::kFrameBytes);
  REQUIRE(claim::build_claim_result(result.data(), claim::kFrameBytes, addr_of(w), 1, 0, 0, 5,
                                    claim::Answer::kGranted, claim::Reason::kNone) == claim::kFrameBytes);
  core.on_frame(0, claim.data(), claim::kFrameBytes, to);
  core.on_frame(0, release.data(), claim::kFrameBytes, to);
  core.on_frame(1, result.data(), claim::kFrameBytes, to);
  REQUIRE(out.size() == 3);
  CHECK(out[0].first == 1);
  CHECK(out[0].second == claim);
  CHECK(out[1].first == 1);
  CHECK(out[1].second == release);
  CHECK(out[2].first == 0);
  CHECK(out[2].second == result);
  CHECK(core.counters().transit == 3);
  // Not along the hop (a claim-result going up, a claim from elsewhere):
  // the engine drops them as a bad type, as any engine without pools.
  out.clear();
  core.on_frame(0, result.data(), claim::kFrameBytes, to);
  core.on_frame(2, claim.data(), claim::kFrameBytes, to);
  CHECK(out.empty());
  CHECK(eng.global_counter(regmap::kGcDropBadType) == 2);
}
