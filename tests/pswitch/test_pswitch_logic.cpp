// Software PSwitch logic without DPDK: ECN marking, the output queue's rate,
// threshold and tail drop, fault injection, and the switch's routing around
// a real engine. Deterministic (explicit clock, seeded faults).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>

#include "panama/controller/controller.hpp"
#include "panama/engine.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/pswitch/fault_injector.hpp"
#include "panama/pswitch/output_queue.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::pswitch;
using namespace panama::test;

namespace {

std::vector<uint8_t> ip_frame(uint32_t len, uint8_t ecn) {
  wire::Header h = contribution(1, 0, 0, 0, static_cast<uint16_t>((len - wire::kPayloadOffset) / 4), ecn);
  return make_frame(h, std::vector<uint32_t>(h.elem_count, 0));
}

}  // namespace

TEST_CASE("pswitch section: bad values are rejected with the key named") {
  const nlohmann::json good = {{"ports", {{{"name", "a"}, {"vdev", "net_null0"}}}}};
  CHECK(settings_from_json(good).ports[0].queue_bytes == 4u << 20);  // default
  auto bad = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j["ports"][0][key] = v;
    return j;
  };
  CHECK_THROWS_WITH(settings_from_json(bad("queue_bytes", -1)), Catch::Contains("ports[0].queue_bytes"));
  CHECK_THROWS_WITH(settings_from_json(bad("loss", 2.0)),
                    Catch::Equals("node config: pswitch.ports[0].loss: out of range: 2.0 is not in 0..1"));
  CHECK_THROWS_WITH(settings_from_json(bad("rate_gbps", "fast")), Catch::Contains("wrong type"));
  nlohmann::json dup = good;
  dup["ports"].push_back({{"name", "a"}});
  CHECK_THROWS_WITH(settings_from_json(dup), Catch::Contains("appears twice"));
  nlohmann::json tree = good;
  tree["trees"] = {{{"job", 1}, {"tree", 0}, {"parent", "a"}, {"children", {"a"}}}};
  CHECK_THROWS_WITH(settings_from_json(tree), Catch::Contains("both parent and child"));
  CHECK_THROWS_WITH(settings_from_json(nlohmann::json::object()),
                    Catch::Equals("node config: pswitch.ports: missing key"));
  CHECK_THROWS_WITH(
      settings_from_json(bad("colour", "red"), "leaf0.json"),
      Catch::StartsWith("leaf0.json: pswitch.ports[0].colour: unknown key (known keys here: name, vdev,"));
}

TEST_CASE("pswitch section: the children of a tree and their bound child ids are checked") {
  nlohmann::json j = {{"ports", {{{"name", "a"}}, {{"name", "b"}}, {{"name", "up"}}}}};
  auto with_tree = [&](nlohmann::json tree) {
    nlohmann::json k = j;
    tree["job"] = 1;
    tree["tree"] = 0;
    k["trees"] = {tree};
    return k;
  };
  // Default binding: the position in "children".
  const PswitchSettings ok = settings_from_json(with_tree({{"children", {"b", "a"}}}));
  CHECK(ok.trees[0].child_ids == std::vector<uint16_t>{0, 1});
  CHECK(
      settings_from_json(with_tree({{"children", {"b", "a"}}, {"child_ids", {7, 63}}})).trees[0].child_ids ==
      std::vector<uint16_t>{7, 63});
  CHECK_THROWS_WITH(settings_from_json(with_tree({{"children", {"a", "b", "a"}}})),
                    Catch::Contains("trees[0].children[2]: port 'a' is listed twice"));
  CHECK_THROWS_WITH(settings_from_json(with_tree({{"children", {"a", "b"}}, {"child_ids", {1}}})),
                    Catch::Contains("one child id per entry"));
  CHECK_THROWS_WITH(settings_from_json(with_tree({{"children", {"a", "b"}}, {"child_ids", {0, 64}}})),
                    Catch::Contains("trees[0].child_ids[1]: out of range: 64 is not in 0..63"));
  CHECK_THROWS_WITH(settings_from_json(with_tree({{"children", {"a", "b"}}, {"child_ids", {2, 2}}})),
                    Catch::Contains("trees[0].child_ids[1]: child id 2 is listed twice"));
  CHECK_THROWS_WITH(settings_from_json(with_tree({{"children", {"a", "b"}}, {"child_ids", {0, -1}}})),
                    Catch::Contains("child_ids[1]"));
}

TEST_CASE("pswitch section against the engine table: every tree has its entry and every entry a tree") {
  const nlohmann::json j = {{"ports", {{{"name", "a"}}, {{"name", "b"}}, {{"name", "up"}}}},
                            {"trees", {{{"job", 1}, {"tree", 0}, {"children", {"a", "b"}}}}}};
  const PswitchSettings s = settings_from_json(j);
  config::EntryConfig e;
  e.job = 1;
  e.tree = 0;
  e.root = true;
  e.fan_in = 2;
  e.children = {0, 1};
  e.slot_count = 4;
  CHECK_NOTHROW(check_trees_against_entries(s, {e}));
  CHECK_THROWS_WITH(check_trees_against_entries(s, {}),
                    Catch::Contains("pswitch.trees[0]: job 1 tree 0 has no engine entry"));
  config::EntryConfig other = e;
  other.tree = 1;
  CHECK_THROWS_WITH(check_trees_against_entries(s, {e, other}),
                    Catch::Contains("entries[1]: job 1 tree 1 has no tree in \"pswitch.trees\""));
  config::EntryConfig narrow = e;
  narrow.children = {0, 5};
  CHECK_THROWS_WITH(
      check_trees_against_entries(s, {narrow}),
      Catch::Contains(
          "port 'b' is bound to child id 1, which the engine entry of job 1 tree 0 does not allow"));
  config::EntryConfig leaf = e;
  leaf.root = false;
  CHECK_THROWS_WITH(check_trees_against_entries(s, {leaf}), Catch::Contains("has no parent port"));
}

TEST_CASE("mark_ce sets CE on ECT frames only and keeps the IPv4 checksum valid") {
  auto f = ip_frame(1000, wire::kEcnEct0);
  CHECK(mark_ce(f.data(), static_cast<uint32_t>(f.size())) == EcnMark::kMarked);
  CHECK((f[wire::kIpTos] & 3) == wire::kEcnCe);
  CHECK(wire::ipv4_header_checksum(f.data() + wire::kIpOffset) == 0);
  CHECK(mark_ce(f.data(), static_cast<uint32_t>(f.size())) == EcnMark::kAlreadyCe);
  auto g = ip_frame(1000, wire::kEcnNotEct);
  const auto before = g;
  CHECK(mark_ce(g.data(), static_cast<uint32_t>(g.size())) == EcnMark::kNotEct);
  CHECK(g == before);
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  CHECK(mark_ce(arp.data(), 60) == EcnMark::kNotIpv4);
}

TEST_CASE("output queue paces to the link rate with a two-jumbo-frame burst") {
  // 10 Gbit/s = 1.25 bytes/ns. Frames of 1000 bytes cost 1024 with overhead.
  OutputQueue<int> q(QueueConfig{10.0, 1u << 20, 0});
  std::vector<std::vector<uint8_t>> frames(100, ip_frame(1000, wire::kEcnEct0));
  for (int i = 0; i < 100; ++i) REQUIRE(q.enqueue(i, frames[i].data(), 1000, 1000) == EnqueueResult::kQueued);
  std::vector<int> sent;
  auto send = [&](int h) { sent.push_back(h); };
  // Burst 2 * (9216 + 24) = 18480 bytes -> 18 frames at once, 48 bytes left.
  CHECK(q.dequeue(1000, 1000, send) == 18);
  // 8192 ns later: 48 + 10240 bytes of credit -> 10 more frames.
  CHECK(q.dequeue(1000 + 8192, 1000, send) == 10);
  CHECK(q.dequeue(1000 + 8192, 1000, send) == 0);
  // Order is FIFO.
  for (size_t i = 0; i < sent.size(); ++i) CHECK(sent[i] == static_cast<int>(i));
  CHECK(q.counters().bytes_out == 28000);
  CHECK(q.depth_frames() == 72);
  // The max argument bounds a burst.
  CHECK(q.dequeue(1'000'000, 5, send) == 5);

  OutputQueue<int> unlimited(QueueConfig{0.0, 1u << 20, 0});
  for (int i = 0; i < 50; ++i) unlimited.enqueue(i, frames[i].data(), 1000, 0);
  CHECK(unlimited.dequeue(0, 1000, send) == 50);
}

TEST_CASE("output queue: a busy link catches up after a gap, an idle link saves only a burst") {
  std::vector<uint8_t> f = ip_frame(1000, wire::kEcnEct0);
  OutputQueue<int> busy(QueueConfig{10.0, 1u << 20, 0});
  for (int i = 0; i < 100; ++i) busy.enqueue(i, f.data(), 1000, 0);
  int n = 0;
  auto count = [&](int) { ++n; };
  busy.dequeue(0, 1000, count);  // 18 from the initial burst
  // Not polled for 40960 ns: the link would have sent 51200 bytes = 50 frames meanwhile.
  busy.dequeue(40960, 1000, count);
  CHECK(n == 18 + 50);
  OutputQueue<int> idle(QueueConfig{10.0, 1u << 20, 0});
  idle.dequeue(0, 1000, count);                                              // starts the clock, empty
  for (int i = 0; i < 100; ++i) idle.enqueue(i, f.data(), 1000, 1'000'000);  // idle 1 ms: burst only
  n = 0;
  idle.dequeue(1'000'000, 1000, count);
  CHECK(n == 18);
}

TEST_CASE("ECN: frames arriving above K bytes are marked CE (DCTCP), below are not") {
  OutputQueue<int> q(QueueConfig{10.0, 1u << 20, 3000});
  std::vector<std::vector<uint8_t>> frames(8, ip_frame(1000, wire::kEcnEct0));
  frames[6] = ip_frame(1000, wire::kEcnNotEct);
  for (int i = 0; i < 8; ++i) q.enqueue(i, frames[i].data(), 1000, 0);
  // Depth at arrival: 0,1000,2000,3000 (not above K), then 4000.. -> marked.
  for (int i = 0; i < 4; ++i) CHECK((frames[i][wire::kIpTos] & 3) == wire::kEcnEct0);
  for (int i : {4, 5, 7}) CHECK((frames[i][wire::kIpTos] & 3) == wire::kEcnCe);
  CHECK((frames[6][wire::kIpTos] & 3) == wire::kEcnNotEct);
  CHECK(q.counters().ecn_marked == 3);
  CHECK(q.counters().over_k_not_ect == 1);
  // Once drained below K, new frames are not marked.
  q.dequeue(0, 1000, [](int) {});
  q.dequeue(100'000, 1000, [](int) {});
  auto late = ip_frame(1000, wire::kEcnEct0);
  CHECK(q.enqueue(9, late.data(), 1000, 100'000) == EnqueueResult::kQueued);
  CHECK((late[wire::kIpTos] & 3) == wire::kEcnEct0);
}

TEST_CASE("output queue tail-drops what exceeds its capacity and counts it") {
  OutputQueue<int> q(QueueConfig{1.0, 10000, 0});
  auto f = ip_frame(1000, wire::kEcnEct0);
  for (int i = 0; i < 10; ++i) CHECK(q.enqueue(i, f.data(), 1000, 0) == EnqueueResult::kQueued);
  CHECK(q.enqueue(10, f.data(), 1000, 0) == EnqueueResult::kDropped);
  CHECK(q.counters().tail_drops == 1);
  CHECK(q.depth_bytes() == 10000);
  CHECK(q.counters().max_depth_bytes == 10000);
  int released = 0;
  q.drain([&](int) { ++released; });
  CHECK(released == 10);
}

TEST_CASE("fault injection: certain loss, duplication and reordering") {
  std::vector<int> out;
  auto send = [&](int h) { out.push_back(h); };
  auto clone = [](int h) { return h + 100; };
  auto release = [](int) {};
  FaultInjector<int> lossy(FaultConfig{1.0, 0, 0}, 1);
  for (int i = 1; i <= 3; ++i) lossy.send(i, 0, send, clone, release);
  CHECK(out.empty());
  CHECK(lossy.counters().lost == 3);
  FaultInjector<int> dup(FaultConfig{0, 1.0, 0}, 1);
  dup.send(1, 0, send, clone, release);
  CHECK(out == std::vector<int>{1, 101});
  out.clear();
  FaultInjector<int> reo(FaultConfig{0, 0, 1.0, 1000}, 1);
  for (int i = 1; i <= 5; ++i) reo.send(i, 0, send, clone, release);
  CHECK(out == std::vector<int>{2, 1, 4, 3});  // 5 is held
  reo.flush(500, send);
  CHECK(out.size() == 4);
  reo.flush(1000, send);
  CHECK(out.back() == 5);
}

TEST_CASE("fault injection: 1% rates hold statistically and replay from the seed") {
  uint64_t seed = 12345;
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) seed = std::strtoull(s, nullptr, 0);
  INFO("seed " << seed << " (override with PANAMA_TEST_SEED)");
  auto run = [&](uint64_t sd) {
    FaultInjector<int> f(FaultConfig{0.01, 0.01, 0.01, 1u << 30}, sd);
    uint64_t sent = 0;
    for (int i = 1; i <= 100000; ++i)
      f.send(
          i, 0, [&](int) { ++sent; }, [](int h) { return h; }, [](int) {});
    return std::make_pair(f.counters().lost, sent);
  };
  const auto a = run(seed);
  // Binomial(100000, 0.01): mean 1000, sd ~31.5; 6 sd bounds.
  CHECK(a.first > 811);
  CHECK(a.first < 1189);
  CHECK(run(seed) == a);
}

namespace {

// A small engine: 8 entries, 64 slots of 64 elements.
using SmallEngine = Engine<8, 64, 4>;

struct Sent {
  uint32_t port;
  std::vector<uint8_t> bytes;
};

struct Rig {
  std::unique_ptr<SmallEngine> eng = std::make_unique<SmallEngine>();
  controller::SwitchOutput cfg;
  std::unique_ptr<SwitchCore<SmallEngine>> core;
  std::vector<Sent> sent;

  explicit Rig(const controller::SwitchOutput& s) : cfg(s) {
    EngineRegisters<SmallEngine> regs(*eng);
    config::apply_node_config(regs, cfg.node);
    core = std::make_unique<SwitchCore<SmallEngine>>(cfg.settings, *eng);
  }
  void rx(uint32_t port, const std::vector<uint8_t>& f) {
    PortEmitFn out([&](uint32_t p, const uint8_t* d, uint32_t n) { sent.push_back(Sent{p, {d, d + n}}); });
    core->on_frame(port, f.data(), static_cast<uint32_t>(f.size()), out);
  }
};

controller::Deployment small_deployment(const nlohmann::json& cluster, uint32_t workers, uint32_t trees) {
  nlohmann::json c = cluster;
  c["packet_memory"] = 64;
  nlohmann::json ws = nlohmann::json::array();
  for (uint32_t i = 0; i < workers; ++i) ws.push_back("w" + std::to_string(i));
  nlohmann::json jobs = {{"jobs", nlohmann::json::array({{{"id", 5}, {"workers", ws}, {"trees", trees}}})},
                         {"elems_per_packet", 64}};
  return controller::plan_deployment(controller::parse_cluster(c), controller::parse_jobs(jobs));
}

}  // namespace

TEST_CASE("root PSwitch: contributions go to the engine, the result is replicated to every child port") {
  const auto d = small_deployment(controller::single_switch_cluster(4, 10.0), 4, 1);
  Rig rig(d.switches[0]);
  float expect = 0;
  for (uint16_t c = 0; c < 4; ++c) {
    const float v = 1.5f * (c + 1);
    expect = c == 0 ? v : expect + v;
    rig.rx(c, make_frame(contribution(5, 0, c, 0, 2, c == 1 ? wire::kEcnCe : wire::kEcnEct0),
                         {f2u(v), f2u(-v)}));
    if (c < 3) CHECK(rig.sent.empty());
  }
  REQUIRE(rig.sent.size() == 4);
  for (uint32_t p = 0; p < 4; ++p) {
    CHECK(rig.sent[p].port == p);
    CHECK(rig.sent[p].bytes[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown));
    CHECK((rig.sent[p].bytes[wire::kIpTos] & 3) == wire::kEcnCe);
    CHECK(payload_of(rig.sent[p].bytes) == std::vector<uint32_t>{f2u(15.0f), f2u(-15.0f)});
  }
  CHECK(expect == 15.0f);
  CHECK(rig.core->tree_counters(0).contributions_in == 4);
  CHECK(rig.core->tree_counters(0).results_emitted == 1);
  CHECK(rig.core->tree_counters(0).result_copies == 4);
  // A retransmission for the finished slot: the stored result goes back to that child only.
  rig.sent.clear();
  rig.rx(2, make_frame(contribution(5, 0, 2, 0, 2, wire::kEcnEct0, 0xFFFF, wire::PacketType::kRetransmission),
                       {f2u(3.0f), f2u(-3.0f)}));
  REQUIRE(rig.sent.size() == 1);
  CHECK(rig.sent[0].port == 2);
  CHECK(payload_of(rig.sent[0].bytes) == std::vector<uint32_t>{f2u(15.0f), f2u(-15.0f)});
  CHECK(rig.core->tree_counters(0).results_resent == 1);
  // A retransmission that completes a slot is a normal emission: every child gets it.
  rig.sent.clear();
  for (uint16_t c = 0; c < 4; ++c) {
    rig.rx(c, make_frame(
                  contribution(5, 0, c, 1, 1, wire::kEcnEct0, 0xFFFF,
                               c == 3 ? wire::PacketType::kRetransmission : wire::PacketType::kAggregateUp),
                  {f2u(1.0f)}));
  }
  CHECK(rig.sent.size() == 4);
  CHECK(payload_of(rig.sent[3].bytes) == std::vector<uint32_t>{f2u(4.0f)});
  // A result-down for this tree from a child port is not replicated.
  rig.sent.clear();
  rig.rx(2, make_frame(contribution(5, 0, 2, 2, 1, wire::kEcnEct0, 8, wire::PacketType::kResultDown), {0}));
  CHECK(rig.sent.empty());
  CHECK(rig.core->counters().result_wrong_port == 1);
  // Malformed PANAMA frames are the engine's to drop and count.
  auto bad = make_frame(contribution(5, 0, 0, 2, 1), {0});
  bad[wire::kPanamaVersion] = 9;
  wire::store_be16(bad.data() + wire::kIpChecksum, 0);
  wire::store_be16(bad.data() + wire::kIpChecksum, wire::ipv4_header_checksum(bad.data() + wire::kIpOffset));
  rig.rx(0, bad);
  CHECK(rig.sent.empty());
  CHECK(rig.eng->global_counter(regmap::kGcDropBadVersion) == 1);
  CHECK(rig.core->counters().engine_drops == 1);
}

TEST_CASE("ordinary traffic: known MACs are forwarded, unknown flooded, nothing hairpins") {
  const auto d = small_deployment(controller::single_switch_cluster(4, 10.0), 4, 1);
  Rig rig(d.switches[0]);
  std::vector<uint8_t> f(60, 0xAB);
  const config::MacAddress w2 = {0x02, 0, 0, 0x01, 0, 2};  // w2's automatic MAC
  std::copy(w2.begin(), w2.end(), f.begin());
  f[12] = 0x88;
  f[13] = 0xB5;
  rig.rx(0, f);
  REQUIRE(rig.sent.size() == 1);
  CHECK(rig.sent[0].port == 2);
  CHECK(rig.sent[0].bytes == f);
  rig.sent.clear();
  rig.rx(2, f);  // destination behind the ingress port
  CHECK(rig.sent.empty());
  CHECK(rig.core->counters().hairpin_drops == 1);
  f[0] = 0x02;
  f[5] = 0x77;  // unknown unicast: flooded to the three other ports
  rig.rx(1, f);
  REQUIRE(rig.sent.size() == 3);
  CHECK(rig.sent[0].port == 0);
  CHECK(rig.sent[1].port == 2);
  CHECK(rig.sent[2].port == 3);
  // A PANAMA frame of a job this switch does not serve, from a port with
  // bindings (a worker's), is dropped: a child port speaks only as its child.
  rig.sent.clear();
  rig.rx(0, make_frame(contribution(99, 0, 0, 0, 1), {0}));
  CHECK(rig.sent.empty());
  CHECK(rig.core->port_counters(0).binding_drops == 1);
  CHECK(rig.eng->global_counter(regmap::kGcPanamaIn) == 0);
}

// A target with a buffer of its own (as the software PSwitch's mbufs): which
// frames arrived in it, every frame's bytes per port, and the emissions.
struct StagingOut final : EmitTarget {
  std::vector<uint8_t> staged = std::vector<uint8_t>(wire::kMaxFrameBytes, 0);
  std::vector<Sent>* sent = nullptr;
  uint32_t stages = 0, from_stage = 0, emits = 0;
  uint8_t* buffer(uint32_t n) override {
    ++stages;
    return n <= staged.size() ? staged.data() : nullptr;
  }
  void emit(const uint8_t* d, uint32_t n, Ports to) override {
    ++emits;
    for (uint32_t p : to) {
      from_stage += d == staged.data();
      sent->push_back(Sent{p, {d, d + n}});
    }
  }
};

TEST_CASE("frames in two pieces: the engine adds them in place, others leave joined; emissions staged") {
  const auto d = small_deployment(controller::single_switch_cluster(4, 10.0), 4, 1);
  Rig whole(d.switches[0]);
  Rig parts(d.switches[0]);
  StagingOut out;
  out.sent = &parts.sent;
  auto rx_parts = [&](uint32_t port, const std::vector<uint8_t>& f) {
    std::vector<uint8_t> head(f.begin(), f.begin() + std::min<size_t>(f.size(), wire::kPayloadOffset));
    const std::vector<uint8_t> payload(f.begin() + static_cast<long>(head.size()), f.end());
    parts.core->on_frame_parts(port, head.data(), payload.empty() ? nullptr : payload.data(),
                               static_cast<uint32_t>(f.size()), out);
  };
  for (uint32_t seq = 0; seq < 3; ++seq) {
    for (uint16_t c = 0; c < 4; ++c) {
      std::vector<uint32_t> v(50);
      for (size_t i = 0; i < v.size(); ++i) v[i] = f2u(static_cast<float>(c * 100 + i + seq));
      const std::vector<uint8_t> f = make_frame(contribution(5, 0, c, seq, 50), v);
      whole.rx(c, f);
      rx_parts(c, f);
    }
  }
  // A result from the parent arriving in pieces is replicated whole; so is
  // ordinary traffic forwarded by MAC.
  std::vector<uint8_t> other(300);
  for (size_t i = 0; i < other.size(); ++i) other[i] = static_cast<uint8_t>(i * 3);
  const config::MacAddress w2 = {0x02, 0, 0, 0x01, 0, 2};
  std::copy(w2.begin(), w2.end(), other.begin());
  other[12] = 0x88;
  other[13] = 0xB5;
  whole.rx(0, other);
  rx_parts(0, other);

  REQUIRE(whole.sent.size() == 3 * 4 + 1);
  REQUIRE(parts.sent.size() == whole.sent.size());
  for (size_t i = 0; i < whole.sent.size(); ++i) {
    CHECK(parts.sent[i].port == whole.sent[i].port);
    CHECK(parts.sent[i].bytes == whole.sent[i].bytes);
  }
  CHECK(out.stages == 3);          // one per emission
  CHECK(out.from_stage == 3 * 4);  // each result's four copies came from the staged buffer
  CHECK(out.emits == 3 + 1);       // a result is one emission to its four ports; the forwarded frame one
  CHECK(parts.eng->global_counter(regmap::kGcAggregated) == whole.eng->global_counter(regmap::kGcAggregated));
}

TEST_CASE("leaf PSwitch: aggregates go up to the tree's spine, results from it go down") {
  const auto d = small_deployment(controller::two_tier_cluster(4, 2, 2, 10.0), 4, 2);
  const controller::SwitchOutput* leaf1 = nullptr;
  for (const auto& s : d.switches) {
    if (s.node.node == "leaf1") leaf1 = &s;
  }
  REQUIRE(leaf1);
  Rig rig(*leaf1);  // ports: w1, w3, spine0, spine1
  rig.rx(0, make_frame(contribution(5, 1, 0, 0, 1), {f2u(2.0f)}));
  rig.rx(1, make_frame(contribution(5, 1, 1, 0, 1), {f2u(0.25f)}));
  REQUIRE(rig.sent.size() == 1);
  CHECK(rig.sent[0].port == 3);  // tree 1 -> spine1
  CHECK(rig.sent[0].bytes[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kAggregateUp));
  CHECK(wire::load_be16(rig.sent[0].bytes.data() + wire::kPanamaChildId) == 1);  // leaf1 is child 1
  CHECK(payload_of(rig.sent[0].bytes) == std::vector<uint32_t>{f2u(2.25f)});
  rig.sent.clear();
  auto result =
      make_frame(contribution(5, 1, 0, 0, 1, wire::kEcnEct0, 8, wire::PacketType::kResultDown), {7});
  rig.rx(3, result);
  REQUIRE(rig.sent.size() == 2);
  CHECK(rig.sent[0].port == 0);
  CHECK(rig.sent[1].port == 1);
  CHECK(rig.sent[1].bytes == result);
  rig.rx(2, result);  // from spine0, which is not tree 1's parent
  CHECK(rig.core->counters().result_wrong_port == 1);
  // Unknown unicast from an uplink floods to hosts only; from a host, to hosts and one uplink.
  rig.sent.clear();
  std::vector<uint8_t> f(60, 0);
  f[0] = 0x02;
  f[5] = 0x55;
  rig.rx(2, f);
  REQUIRE(rig.sent.size() == 2);
  CHECK(rig.sent[1].port == 1);
  rig.sent.clear();
  rig.rx(0, f);
  REQUIRE(rig.sent.size() == 2);
  CHECK(rig.sent[0].port == 1);
  CHECK(rig.sent[1].port == 2);
}
