// The one table-entry packing (panama/table_entry.hpp) against the staged
// register layout that docs/register-map.md states, written out here by
// hand, and the register map's own field table (no two fields overlap,
// every staged register is covered).
#include <catch2/catch.hpp>

#include "panama/table_entry.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::test;

namespace {

TableEntry sample() {
  TableEntry e;
  e.job = 0x1234;
  e.tree = 0x56;
  e.enable = true;
  e.root = true;
  e.fan_in = 17;
  e.child_mask = 0x8000000100000003ull;
  e.slot_base = 100;
  e.slot_count = 28;
  e.out_child_id = 0xBEEF;
  e.eth_dst = {{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}};
  e.eth_src = {{0x06, 0x66, 0x77, 0x88, 0x99, 0xAA}};
  e.ip_src = 0x0A000001;
  e.ip_dst = 0xE0000102;
  e.udp_src = 40000;
  e.udp_dst = 9600;
  e.ttl = 63;
  e.dscp = 0x2E;
  return e;
}

}  // namespace

TEST_CASE("pack_entry puts every field where the register map documents it", "[wire][regmap]") {
  const StagedRegisters r = pack_entry(sample());
  auto word = [&r](uint32_t reg) { return r[staged_index(reg)]; };
  using namespace regmap;
  CHECK(word(kEKey) == (0x1234u | (0x56u << 16)));  // job_id [15:0], tree_id [23:16]
  CHECK(word(kEFlags) == 3u);                       // ENABLE bit 0, ROOT bit 1
  CHECK(word(kEFanIn) == 17u);
  CHECK(word(kEChildMaskLo) == 0x00000003u);
  CHECK(word(kEChildMaskHi) == 0x80000001u);
  CHECK(word(kESlotBase) == 100u);
  CHECK(word(kESlotCount) == 28u);
  CHECK(word(kEOutChildId) == 0xBEEFu);
  CHECK(word(kEEthDstHi) == 0x0211u);      // bytes 0..1, byte 0 in [15:8]
  CHECK(word(kEEthDstLo) == 0x22334455u);  // bytes 2..5, byte 2 in [31:24]
  CHECK(word(kEEthSrcHi) == 0x0666u);
  CHECK(word(kEEthSrcLo) == 0x778899AAu);
  CHECK(word(kEIpSrc) == 0x0A000001u);
  CHECK(word(kEIpDst) == 0xE0000102u);
  CHECK(word(kEUdpPorts) == (40000u | (9600u << 16)));  // source [15:0], destination [31:16]
  CHECK(word(kEIpTtlDscp) == (63u | (0x2Eu << 8)));     // TTL [7:0], DSCP [13:8]
}

TEST_CASE("unpack_entry inverts pack_entry for random entries", "[wire][regmap]") {
  Rng rng(test_seed("table entry round trip"));
  for (int i = 0; i < 1000; ++i) {
    TableEntry e;
    e.job = static_cast<uint16_t>(rng());
    e.tree = static_cast<uint8_t>(rng());
    e.enable = rng() & 1;
    e.root = rng() & 1;
    e.fan_in = static_cast<uint32_t>(rng());
    e.child_mask = rng();
    e.slot_base = static_cast<uint32_t>(rng());
    e.slot_count = static_cast<uint32_t>(rng());
    e.out_child_id = static_cast<uint16_t>(rng());
    for (auto& b : e.eth_dst) b = static_cast<uint8_t>(rng());
    for (auto& b : e.eth_src) b = static_cast<uint8_t>(rng());
    e.ip_src = static_cast<uint32_t>(rng());
    e.ip_dst = static_cast<uint32_t>(rng());
    e.udp_src = static_cast<uint16_t>(rng());
    e.udp_dst = static_cast<uint16_t>(rng());
    e.ttl = static_cast<uint8_t>(rng());
    e.dscp = static_cast<uint8_t>(rng() & 0x3F);
    CHECK(unpack_entry(pack_entry(e)) == e);
  }
}

TEST_CASE("a DSCP over 6 bits does not spill into other fields", "[wire][regmap]") {
  TableEntry e = sample();
  e.dscp = 0xFF;
  const StagedRegisters r = pack_entry(e);
  CHECK(r[staged_index(regmap::kEIpTtlDscp)] == (63u | (0x3Fu << 8)));
}

TEST_CASE("the staged registers are consecutive and entry_commit_writes ends with the commit",
          "[wire][regmap]") {
  std::vector<std::pair<uint32_t, uint32_t>> writes;
  entry_commit_writes(5, sample(), [&](uint32_t a, uint32_t v) { writes.emplace_back(a, v); });
  REQUIRE(writes.size() == regmap::kNumStagedRegisters + 2);
  CHECK(writes.front().first == regmap::kEKey);
  CHECK(writes[regmap::kNumStagedRegisters - 1].first == regmap::kEIpTtlDscp);
  CHECK(writes[regmap::kNumStagedRegisters] == std::make_pair(regmap::kEntryIndex, 5u));
  CHECK(writes.back() == std::make_pair(regmap::kEntryCmd, regmap::kCmdCommit));
}
