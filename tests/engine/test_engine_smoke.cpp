// Smoke test of the engine: four children complete one slot at the root.
#include <catch2/catch.hpp>
#include <memory>

#include "panama/engine.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::test;

TEST_CASE("four children complete a slot and the root emits the float sum") {
  auto eng = std::make_unique<Engine<4, 16, 4>>();
  eng->reg_write(regmap::kEntryIndex, 0);
  eng->reg_write(regmap::kEKey, 7 | (1u << 16));
  eng->reg_write(regmap::kEFlags, regmap::kEntryFlagEnable | regmap::kEntryFlagRoot);
  eng->reg_write(regmap::kEFanIn, 4);
  eng->reg_write(regmap::kEChildMaskLo, 0xF);
  eng->reg_write(regmap::kESlotBase, 0);
  eng->reg_write(regmap::kESlotCount, 8);
  eng->reg_write(regmap::kEUdpPorts, wire::kDefaultUdpPort | (uint32_t{wire::kDefaultUdpPort} << 16));
  eng->reg_write(regmap::kEntryCmd, regmap::kCmdCommit);
  REQUIRE(eng->reg_read(regmap::kEntryStatus) == regmap::kStatusOk);

  CollectSink sink;
  float expect[3] = {0, 0, 0};
  for (uint16_t c = 0; c < 4; ++c) {
    std::vector<uint32_t> p = {f2u(0.1f * c), f2u(-1.5f), f2u(1e-40f)};
    for (int i = 0; i < 3; ++i) expect[i] = c == 0 ? u2f(p[i]) : expect[i] + u2f(p[i]);
    auto f = make_frame(contribution(7, 1, c, 3, 3, c == 2 ? wire::kEcnCe : wire::kEcnEct0, 100 - c), p);
    eng->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
  }
  REQUIRE(sink.frames.size() == 1);
  auto& out = sink.frames[0];
  REQUIRE(out[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown));
  REQUIRE((out[wire::kIpTos] & 3) == wire::kEcnCe);
  REQUIRE(wire::load_be16(out.data() + wire::kPanamaCwndCap) == 8);  // share 8 < caps 97..100
  REQUIRE(wire::ipv4_header_checksum(out.data() + wire::kIpOffset) == 0);
  auto p = payload_of(out);
  for (int i = 0; i < 3; ++i) CHECK(p[i] == f2u(expect[i]));
  CHECK(eng->global_counter(regmap::kGcAggregated) == 4);
  CHECK(eng->global_counter(regmap::kGcEmitted) == 1);
  CHECK(eng->global_counter(regmap::kGcEcnMarked) == 1);
}
