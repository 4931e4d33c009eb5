// Tenant isolation at the software PSwitch (docs/pswitch.md, Isolation): a
// worker of one job attacks another job on the same PSwitch by speaking as
// one of its children. Each attack is reproduced on SwitchCore around the
// real engine with the controller's own configuration, and must leave the
// victim's results exact and be counted as a binding drop at the ingress port.
#include <catch2/catch.hpp>
#include <memory>

#include "panama/controller/controller.hpp"
#include "panama/engine.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/register_access.hpp"
#include "panama/pswitch/switch_core.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::pswitch;
using namespace panama::test;

namespace {

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
  void rx(uint32_t port, const wire::Header& h, const std::vector<uint32_t>& payload) {
    const std::vector<uint8_t> f = make_frame(h, payload);
    PortEmitFn out([&](uint32_t p, const uint8_t* d, uint32_t n) { sent.push_back(Sent{p, {d, d + n}}); });
    core->on_frame(port, f.data(), static_cast<uint32_t>(f.size()), out);
  }
  uint64_t binding_drops(uint32_t port) const { return core->port_counters(port).binding_drops; }
  // Entry counter `c` of (job, tree) through the register map.
  uint64_t entry_counter(uint16_t job, uint32_t c) const {
    for (const auto& e : cfg.node.entries) {
      if (e.job == job) return eng->entry_counter(e.index, c);
    }
    return ~uint64_t{0};
  }
};

// One PSwitch, four hosts: job 1 on w0, w1 (ports 0, 1), job 2 on w2, w3
// (ports 2, 3), one tree each; 64 slots, so each entry's share Q is 32.
controller::Deployment two_jobs() {
  nlohmann::json c = controller::single_switch_cluster(4, 10.0);
  c["packet_memory"] = 64;
  const nlohmann::json jobs = {{"jobs",
                                {{{"id", 1}, {"workers", {"w0", "w1"}}, {"trees", 1}},
                                 {{"id", 2}, {"workers", {"w2", "w3"}}, {"trees", 1}}}},
                               {"elems_per_packet", 4}};
  return controller::plan_deployment(controller::parse_cluster(c), controller::parse_jobs(jobs));
}

constexpr uint32_t kQ = 32;
constexpr auto kRetrans = wire::PacketType::kRetransmission;

// Job 2's honest sequence `seq`: w2 sends 1.0, w3 sends 2.0; every result
// copy must be 3.0 and go to ports 2 and 3 only.
void job2_round(Rig& rig, uint32_t seq) {
  rig.sent.clear();
  rig.rx(2, contribution(2, 0, 0, seq, 1), {f2u(1.0f)});
  rig.rx(3, contribution(2, 0, 1, seq, 1), {f2u(2.0f)});
  REQUIRE(rig.sent.size() == 2);
  CHECK(rig.sent[0].port == 2);
  CHECK(rig.sent[1].port == 3);
  for (const Sent& s : rig.sent) {
    CHECK(s.bytes[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown));
    CHECK(wire::load_be32(s.bytes.data() + wire::kPanamaSeq) == seq);
    CHECK(payload_of(s.bytes) == std::vector<uint32_t>{f2u(3.0f)});
  }
}

}  // namespace

TEST_CASE("the controller binds every child port to its (job, tree, child)", "[isolation]") {
  const auto d = two_jobs();
  REQUIRE(d.switches.size() == 1);
  const PswitchSettings& s = d.switches[0].settings;
  REQUIRE(s.trees.size() == 2);
  for (const TreePorts& t : s.trees) {
    const uint32_t first = t.job == 1 ? 0 : 2;
    CHECK(t.children == std::vector<uint32_t>{first, first + 1});
    CHECK(t.child_ids == std::vector<uint16_t>{0, 1});
  }
  // The binding survives the node config file.
  const PswitchSettings back = settings_from_json(settings_to_json(s));
  CHECK(back.trees[1].child_ids == s.trees[1].child_ids);
}

TEST_CASE("attack: a worker of job 1 contributes as job 2's child 0", "[isolation]") {
  Rig rig(two_jobs().switches[0]);
  rig.rx(0, contribution(2, 0, 0, 0, 1), {f2u(1e6f)});  // w0 forges job 2, child 0
  CHECK(rig.sent.empty());
  CHECK(rig.binding_drops(0) == 1);
  job2_round(rig, 0);                                       // 3.0, not 1e6 + 2.0
  CHECK(rig.entry_counter(2, regmap::kEcDuplicates) == 0);  // the real child 0 was not a duplicate
  CHECK(rig.core->counters().binding_drops == 1);
  // Within its own job a worker cannot speak as another member either.
  rig.rx(1, contribution(1, 0, 0, 0, 1), {f2u(5.0f)});  // w1 (child 1) as child 0
  CHECK(rig.binding_drops(1) == 1);
  CHECK(rig.entry_counter(1, regmap::kEcAggregated) == 0);
}

TEST_CASE("attack: a crafted retransmission to read job 2's finished sum", "[isolation]") {
  Rig rig(two_jobs().switches[0]);
  job2_round(rig, 0);
  rig.sent.clear();
  rig.rx(0, contribution(2, 0, 0, 0, 1, wire::kEcnEct0, 0xFFFF, kRetrans), {0});
  CHECK(rig.sent.empty());  // nothing comes back to the attacker's port
  CHECK(rig.binding_drops(0) == 1);
  CHECK(rig.entry_counter(2, regmap::kEcRetransServed) == 0);
  // The member that asks gets the stored result, and only it.
  rig.rx(3, contribution(2, 0, 1, 0, 1, wire::kEcnEct0, 0xFFFF, kRetrans), {f2u(2.0f)});
  REQUIRE(rig.sent.size() == 1);
  CHECK(rig.sent[0].port == 3);
  CHECK(payload_of(rig.sent[0].bytes) == std::vector<uint32_t>{f2u(3.0f)});
}

TEST_CASE("attack: sequences two generations ahead to stall job 2", "[isolation]") {
  Rig rig(two_jobs().switches[0]);
  // Both of job 2's children at sequence 2Q, a generation the honest workers have not reached.
  rig.rx(0, contribution(2, 0, 0, 2 * kQ, 1), {f2u(7.0f)});
  rig.rx(0, contribution(2, 0, 1, 2 * kQ, 1), {f2u(7.0f)});
  CHECK(rig.sent.empty());
  CHECK(rig.binding_drops(0) == 2);
  for (uint32_t seq = 0; seq < 3; ++seq) job2_round(rig, seq);  // not dropped as out of window
  CHECK(rig.eng->global_counter(regmap::kGcDropSeqWindow) == 0);
  CHECK(rig.entry_counter(2, regmap::kEcDropSeqWindow) == 0);
}

TEST_CASE("attack: forcing job 2's cwnd_cap to 1", "[isolation]") {
  Rig rig(two_jobs().switches[0]);
  rig.rx(0, contribution(2, 0, 0, 0, 1, wire::kEcnEct0, 1), {f2u(1.0f)});
  CHECK(rig.binding_drops(0) == 1);
  job2_round(rig, 0);
  for (const Sent& s : rig.sent) CHECK(wire::load_be16(s.bytes.data() + wire::kPanamaCwndCap) == kQ);
}

TEST_CASE("a child port speaks only for its bindings, also for trees served elsewhere", "[isolation]") {
  Rig rig(two_jobs().switches[0]);
  // A job this PSwitch does not serve, from a bound host port: not flooded to the others.
  rig.rx(0, contribution(9, 0, 0, 0, 1), {0});
  CHECK(rig.sent.empty());
  CHECK(rig.binding_drops(0) == 1);
  // A forged result-down for job 2 from a host port reaches nobody.
  rig.rx(0, contribution(2, 0, 0, 0, 1, wire::kEcnEct0, 8, wire::PacketType::kResultDown), {f2u(1e6f)});
  rig.rx(0, contribution(9, 0, 0, 0, 1, wire::kEcnEct0, 8, wire::PacketType::kResultDown), {f2u(1e6f)});
  CHECK(rig.sent.empty());
  CHECK(rig.core->counters().result_wrong_port == 1);
  CHECK(rig.binding_drops(0) == 2);
}

TEST_CASE("spine: a leaf's port speaks only as that leaf's child id", "[isolation]") {
  nlohmann::json c = controller::two_tier_cluster(4, 2, 1, 10.0);
  c["packet_memory"] = 64;
  const nlohmann::json jobs = {{"jobs", {{{"id", 5}, {"workers", {"w0", "w1", "w2", "w3"}}, {"trees", 1}}}},
                               {"elems_per_packet", 4}};
  const auto d = controller::plan_deployment(controller::parse_cluster(c), controller::parse_jobs(jobs));
  const controller::SwitchOutput* spine = nullptr;
  for (const auto& s : d.switches) {
    if (s.node.node == "spine0") spine = &s;
  }
  REQUIRE(spine);
  Rig rig(*spine);                                      // ports: leaf0, leaf1 (child ids 0, 1)
  rig.rx(0, contribution(5, 0, 1, 0, 1), {f2u(1e6f)});  // leaf0's port claims leaf1's child id
  CHECK(rig.binding_drops(0) == 1);
  rig.rx(0, contribution(5, 0, 0, 0, 1), {f2u(1.0f)});
  rig.rx(1, contribution(5, 0, 1, 0, 1), {f2u(2.0f)});
  REQUIRE(rig.sent.size() == 2);
  CHECK(payload_of(rig.sent[0].bytes) == std::vector<uint32_t>{f2u(3.0f)});
}
