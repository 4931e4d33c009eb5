// apply_node_config on a real engine (the HLS C++ model): the table is
// verified by reading the registers back independently of the code under
// test and by the frames the engine emits; capacity, ENTRY_STATUS and
// read-back errors are reported with the entry and the reason. Also the
// counter reader and its table / JSON formatting.
#include <catch2/catch.hpp>

#include <map>
#include <memory>

#include "panama/engine.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine/counters.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::config;
using nlohmann::json;

namespace {

const char* kTwoEntries = R"({
  "node": "spine1",
  "engine": { "udp_port": 9700 },
  "entries": [
    { "index": 5, "job": 7, "tree": 1, "root": true, "fan_in": 2, "children": [0, 1, 40],
      "slot_base": 100, "slot_count": 32, "out_child_id": 9,
      "eth_src": "02:00:00:00:00:10", "eth_dst": "01:00:5e:01:02:03",
      "ip_src": "10.0.0.10", "ip_dst": "239.1.2.3", "udp_src": 9701, "udp_dst": 9702,
      "ttl": 17, "dscp": 46 },
    { "index": 0, "job": 8, "tree": 0, "children": [2, 3],
      "slot_base": 0, "slot_count": 100,
      "eth_src": "02:00:00:00:00:10", "eth_dst": "02:00:00:00:01:00",
      "ip_src": "10.0.0.10", "ip_dst": "10.0.1.1" }
  ]
})";

template <class E>
uint32_t load_reg(E& eng, uint32_t index, uint32_t reg) {
  eng.reg_write(regmap::kEntryIndex, index);
  eng.reg_write(regmap::kEntryCmd, regmap::kCmdLoad);
  REQUIRE(eng.reg_read(regmap::kEntryStatus) == regmap::kStatusOk);
  return eng.reg_read(reg);
}

std::string apply_error(RegisterAccess& regs, const NodeConfig& cfg) {
  try {
    apply_node_config(regs, cfg);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// Passes every access through to a real engine but corrupts writes to one
// register, like a broken bus or a mis-wired register file.
template <class E>
struct CorruptingRegisters : RegisterAccess {
  E& eng;
  uint32_t bad_addr;
  uint32_t read32(uint32_t a) override { return eng.reg_read(a); }
  void write32(uint32_t a, uint32_t v) override { eng.reg_write(a, a == bad_addr ? v ^ 0x100 : v); }
  CorruptingRegisters(E& e, uint32_t addr) : eng(e), bad_addr(addr) {}
};

// A register file that is not a PANAMA engine (reads what was stored).
struct PlainRegisters : RegisterAccess {
  std::map<uint32_t, uint32_t> regs;
  uint32_t read32(uint32_t a) override { return regs[a]; }
  void write32(uint32_t a, uint32_t v) override { regs[a] = v; }
};

EntryConfig entry(uint32_t index, uint16_t job, uint32_t slot_base, uint32_t slot_count,
                  uint32_t fan_in = 2) {
  EntryConfig e;
  e.index = index;
  e.job = job;
  e.fan_in = fan_in;
  e.children = {0, 1};
  e.slot_base = slot_base;
  e.slot_count = slot_count;
  e.udp_src = e.udp_dst = 9600;
  return e;
}

}  // namespace

TEST_CASE("apply_node_config programs every field of the table") {
  auto eng = std::make_unique<DefaultEngine>();
  EngineRegisters<DefaultEngine> regs(*eng);
  const NodeConfig cfg = parse_node_config(json::parse(kTwoEntries), "two.json");
  const EngineInfo info = apply_node_config(regs, cfg);
  CHECK(info.num_entries == 64);
  CHECK(info.num_slots == 512);
  CHECK(info.version_major == 1);

  // Expected register values worked out by hand from the JSON above.
  CHECK(eng->reg_read(regmap::kUdpPort) == 9700);
  CHECK(eng->reg_read(regmap::kControl) == regmap::kControlEnable);
  CHECK(load_reg(*eng, 5, regmap::kEKey) == 0x00010007u);
  CHECK(load_reg(*eng, 5, regmap::kEFlags) == 3u);
  CHECK(load_reg(*eng, 5, regmap::kEFanIn) == 2u);
  CHECK(load_reg(*eng, 5, regmap::kEChildMaskLo) == 3u);
  CHECK(load_reg(*eng, 5, regmap::kEChildMaskHi) == (1u << 8));
  CHECK(load_reg(*eng, 5, regmap::kESlotBase) == 100u);
  CHECK(load_reg(*eng, 5, regmap::kESlotCount) == 32u);
  CHECK(load_reg(*eng, 5, regmap::kEOutChildId) == 9u);
  CHECK(load_reg(*eng, 5, regmap::kEEthDstHi) == 0x0100u);
  CHECK(load_reg(*eng, 5, regmap::kEEthDstLo) == 0x5E010203u);
  CHECK(load_reg(*eng, 5, regmap::kEEthSrcHi) == 0x0200u);
  CHECK(load_reg(*eng, 5, regmap::kEEthSrcLo) == 0x00000010u);
  CHECK(load_reg(*eng, 5, regmap::kEIpSrc) == 0x0A00000Au);
  CHECK(load_reg(*eng, 5, regmap::kEIpDst) == 0xEF010203u);
  CHECK(load_reg(*eng, 5, regmap::kEUdpPorts) == ((9702u << 16) | 9701u));
  CHECK(load_reg(*eng, 5, regmap::kEIpTtlDscp) == ((46u << 8) | 17u));
  CHECK(load_reg(*eng, 0, regmap::kEKey) == 8u);
  CHECK(load_reg(*eng, 0, regmap::kEFlags) == 1u);  // enabled, not root
  CHECK(load_reg(*eng, 0, regmap::kEUdpPorts) == ((9700u << 16) | 9700u));
  CHECK(load_reg(*eng, 0, regmap::kEIpTtlDscp) == 64u);
  CHECK(load_reg(*eng, 1, regmap::kEFlags) == 0u);  // not configured: disabled

  // The engine aggregates with it: two children of job 7 tree 1 complete a slot.
  test::CollectSink sink;
  for (uint16_t child : {uint16_t{40}, uint16_t{1}}) {
    wire::Header h = test::contribution(7, 1, child, 3, 1);
    h.udp_dst = 9700;
    const auto f = test::make_frame(h, {test::f2u(child * 0.5f)});
    eng->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
  }
  REQUIRE(sink.frames.size() == 1);
  const auto& out = sink.frames[0];
  CHECK(out[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown));
  CHECK(std::vector<uint8_t>(out.begin(), out.begin() + 6) == std::vector<uint8_t>{1, 0, 0x5E, 1, 2, 3});
  CHECK(wire::load_be32(out.data() + wire::kIpDst) == 0xEF010203u);
  CHECK(out[wire::kIpTtl] == 17);
  CHECK(out[wire::kIpTos] >> 2 == 46);
  CHECK(wire::load_be16(out.data() + wire::kUdpSrcPort) == 9701);
  CHECK(wire::load_be16(out.data() + wire::kUdpDstPort) == 9702);
  CHECK(wire::load_be16(out.data() + wire::kPanamaChildId) == 9);
  CHECK(test::payload_of(out)[0] == test::f2u(20.5f));
}

TEST_CASE("re-applying replaces the previous table") {
  auto eng = std::make_unique<DefaultEngine>();
  EngineRegisters<DefaultEngine> regs(*eng);
  apply_node_config(regs, parse_node_config(json::parse(kTwoEntries), "two.json"));
  // Entry 5's old slots (100..131) are now entry 2's: no overlap with stale state.
  NodeConfig next;
  next.node = "n";
  next.entries = {entry(2, 1, 100, 40)};
  apply_node_config(regs, next);
  CHECK((load_reg(*eng, 5, regmap::kEFlags) & regmap::kEntryFlagEnable) == 0u);
  CHECK((load_reg(*eng, 0, regmap::kEFlags) & regmap::kEntryFlagEnable) == 0u);
  CHECK(load_reg(*eng, 2, regmap::kEFlags) == 1u);
  CHECK(eng->reg_read(regmap::kUdpPort) == 9600);
}

TEST_CASE("apply errors name the entry and the reason") {
  using SmallEngine = Engine<4, 64, 2>;
  auto eng = std::make_unique<SmallEngine>();
  EngineRegisters<SmallEngine> regs(*eng);
  NodeConfig cfg;
  cfg.node = "leaf3";

  SECTION("too many entries") {
    for (uint32_t i = 0; i < 5; ++i) cfg.entries.push_back(entry(i, static_cast<uint16_t>(i), 8 * i, 8));
    CHECK(apply_error(regs, cfg) == "node leaf3: 5 entries configured, the engine has only 4 table entries");
  }
  SECTION("index past the table") {
    cfg.entries = {entry(4, 1, 0, 8)};
    CHECK(apply_error(regs, cfg) ==
          "node leaf3: entries[0] (index 4, job 1 tree 0): index 4 is past the engine's 4 table entries "
          "(0..3)");
  }
  SECTION("slots past the packet memory") {
    cfg.entries = {entry(0, 1, 0, 8), entry(1, 2, 60, 8)};
    CHECK(apply_error(regs, cfg) ==
          "node leaf3: entries[1] (index 1, job 2 tree 0): slots 60..67 run past the engine's 64 slots");
  }
  SECTION("overlapping slot ranges are rejected by the engine") {
    cfg.entries = {entry(0, 1, 0, 16), entry(1, 2, 8, 16)};
    const std::string msg = apply_error(regs, cfg);
    CHECK(msg ==
          "node leaf3: entries[1] (index 1, job 2 tree 0): engine rejected the entry: SLOT_OVERLAP "
          "(the slot range overlaps another enabled entry's)");
  }
  SECTION("fan-in larger than the children") {
    cfg.entries = {entry(0, 1, 0, 16, 3)};
    CHECK(apply_error(regs, cfg) ==
          "node leaf3: entries[0] (index 0, job 1 tree 0): engine rejected the entry: BAD_FAN_IN "
          "(fan-in is 0, over 64, or more than the child mask allows)");
  }
  SECTION("the same job and tree twice") {
    cfg.entries = {entry(0, 1, 0, 16), entry(1, 1, 16, 16)};
    CHECK(apply_error(regs, cfg).find("DUPLICATE_KEY") != std::string::npos);
  }
  SECTION("a register that does not hold what was written") {
    CorruptingRegisters<SmallEngine> bad(*eng, regmap::kEIpDst);
    cfg.entries = {entry(0, 1, 0, 16)};
    cfg.entries[0].ip_dst = 0x0A000001;
    CHECK(apply_error(bad, cfg) ==
          "node leaf3: entries[0] (index 0, job 1 tree 0): read-back mismatch in "
          "E_IP_DST (0x0B4): wrote 0x0A000001, read 0x0A000101");
  }
  SECTION("something that is not a PANAMA engine") {
    PlainRegisters plain;
    cfg.entries = {entry(0, 1, 0, 16)};
    CHECK(apply_error(plain, cfg) ==
          "not a PANAMA engine: ID register reads 0x00000000, expected 0x504E4D41 ('PNMA')");
  }
}

TEST_CASE("counters are read as 64-bit values, low word first") {
  PlainRegisters plain;
  const uint32_t a = regmap::global_counter_addr(regmap::kGcEmitted);
  plain.regs[a] = 2;
  plain.regs[a + 4] = 1;
  CHECK(read_counter64(plain, a) == 0x100000002ull);
}

TEST_CASE("read_counters matches the engine's own counters and formats them") {
  auto eng = std::make_unique<DefaultEngine>();
  EngineRegisters<DefaultEngine> regs(*eng);
  NodeConfig cfg;
  cfg.node = "n";
  cfg.entries = {entry(3, 1, 0, 8), entry(1, 2, 8, 8)};
  apply_node_config(regs, cfg);
  test::CollectSink sink;
  const auto send = [&](uint16_t job, uint16_t child, uint32_t seq, uint8_t ecn) {
    const auto f = test::make_frame(test::contribution(job, 0, child, seq, 2, ecn), {1, 2});
    eng->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
  };
  send(1, 0, 0, wire::kEcnCe);
  send(1, 1, 0, wire::kEcnEct0);  // emits
  send(1, 1, 0, wire::kEcnEct0);  // duplicate
  send(2, 0, 5, wire::kEcnEct0);
  send(2, 7, 5, wire::kEcnEct0);  // child not allowed
  send(3, 0, 0, wire::kEcnEct0);  // unknown entry
  const uint8_t junk[60] = {};
  eng->process_frame(junk, sizeof junk, sink);  // passthrough

  const CounterSnapshot snap = read_counters(regs, cfg.entries);
  // Expected from the traffic above, and equal to the engine's direct accessors.
  CHECK(snap.global[regmap::kGcFramesIn] == 7);
  CHECK(snap.global[regmap::kGcAggregated] == 3);
  CHECK(snap.global[regmap::kGcEmitted] == 1);
  CHECK(snap.global[regmap::kGcDuplicates] == 1);
  CHECK(snap.global[regmap::kGcDropUnknownEntry] == 1);
  CHECK(snap.global[regmap::kGcPassthrough] == 1);
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) CHECK(snap.global[c] == eng->global_counter(c));
  REQUIRE(snap.entries.size() == 2);
  CHECK(snap.entries[0].index == 3);
  CHECK(snap.entries[0].values[regmap::kEcAggregated] == 2);
  CHECK(snap.entries[0].values[regmap::kEcEcnMarked] == 1);
  CHECK(snap.entries[0].values[regmap::kEcDuplicates] == 1);
  CHECK(snap.entries[1].values[regmap::kEcAggregated] == 1);
  CHECK(snap.entries[1].values[regmap::kEcDropChildNotAllowed] == 1);

  const json j = counters_to_json(snap);
  CHECK(j["global"]["frames_in"] == 7);
  CHECK(j["global"].size() == regmap::kNumGlobalCounters);
  CHECK(j["entries"][1]["job"] == 2);
  CHECK(j["entries"][1]["counters"]["drop_child_not_allowed"] == 1);

  const std::string table = format_counters_table(snap);
  INFO(table);
  CHECK(table.find("  frames_in               7\n") != std::string::npos);
  CHECK(table.find("  drop_unknown_entry      1\n") != std::string::npos);
  CHECK(table.find("entry job/tree          e3 j1/t0  e1 j2/t0\n") != std::string::npos);
  CHECK(table.find("  aggregated                     2         1\n") != std::string::npos);
}
