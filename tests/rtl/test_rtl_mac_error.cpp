// The RTL engine's MAC error input (s_axis_tuser[0]), driven through
// RtlEngine: a frame the MAC marks bad is dropped whole and counted in
// FRAMES_IN and DROP_MAC_ERROR before any other check (also with the engine
// disabled and for oversize frames), whichever beat carries the flag, and it
// changes no slot: the contributions around it aggregate as if it had never
// arrived. Expected sums are the host's float additions.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "panama/cosim/rtl_engine.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::cosim;

namespace {

uint64_t counter(RtlEngine& rtl, uint32_t c) {
  const uint32_t lo = rtl.reg_read(regmap::global_counter_addr(c));
  const uint32_t hi = rtl.reg_read(regmap::global_counter_addr(c) + 4);
  return (uint64_t{hi} << 32) | lo;
}

void configure(RtlEngine& rtl) {
  rtl.reg_write(regmap::kControl, regmap::kControlReset | regmap::kControlEnable);
  rtl.reg_write(regmap::kEKey, 3 | (1u << 16));
  rtl.reg_write(regmap::kEFlags, regmap::kEntryFlagEnable);
  rtl.reg_write(regmap::kEFanIn, 2);
  rtl.reg_write(regmap::kEChildMaskLo, 0x3);
  rtl.reg_write(regmap::kESlotBase, 0);
  rtl.reg_write(regmap::kESlotCount, 2);
  rtl.reg_write(regmap::kEntryIndex, 0);
  rtl.reg_write(regmap::kEntryCmd, regmap::kCmdCommit);
  REQUIRE(rtl.reg_read(regmap::kEntryStatus) == regmap::kStatusOk);
}

std::vector<uint32_t> payload(uint16_t n, float base) {
  std::vector<uint32_t> p;
  for (uint16_t i = 0; i < n; ++i) p.push_back(test::f2u(base + 0.25f * static_cast<float>(i)));
  return p;
}

}  // namespace

TEST_CASE("RTL: a MAC-error frame is dropped whole, counted, and leaves the slot untouched", "[rtl][mac]") {
  RtlEngine rtl;
  configure(rtl);
  // 40 elements: a 4-beat frame, so the flag lands on some beat of several.
  const uint16_t n = 40;
  const auto pa = payload(n, 1.0f), pb = payload(n, 100.0f), bad = payload(n, -7.5f);
  const auto fa = test::make_frame(test::contribution(3, 1, 0, 0, n, wire::kEcnEct0, 16), pa);
  const auto fbad = test::make_frame(test::contribution(3, 1, 1, 0, n, wire::kEcnCe, 1), bad);
  const auto fb = test::make_frame(test::contribution(3, 1, 1, 0, n, wire::kEcnEct0, 16), pb);

  test::CollectSink sink;
  CHECK(rtl.process_frame(fa.data(), static_cast<uint32_t>(fa.size()), sink).action ==
        EngineAction::kAggregated);
  // Child 1's frame marked bad by the MAC: dropped, no entry, no output.
  const EngineOutcome o = rtl.process_frame(fbad.data(), static_cast<uint32_t>(fbad.size()), sink, true);
  CHECK(o.action == EngineAction::kDropped);
  CHECK(o.drop_counter == static_cast<int>(regmap::kGcDropMacError));
  CHECK(o.entry == -1);
  CHECK(sink.frames.empty());
  // Child 1's good frame then completes the slot with exactly a + b.
  CHECK(rtl.process_frame(fb.data(), static_cast<uint32_t>(fb.size()), sink).action ==
        EngineAction::kEmitted);
  REQUIRE(sink.frames.size() == 1);
  const auto sum = test::payload_of(sink.frames[0]);
  REQUIRE(sum.size() == n);
  for (uint16_t i = 0; i < n; ++i) {
    volatile float s = test::u2f(pa[i]) + test::u2f(pb[i]);
    CHECK(sum[i] == test::f2u(s));
  }
  // Neither the bad frame's CE mark nor its cwnd_cap of 2 reached the result.
  CHECK((sink.frames[0][wire::kIpTos] & 3) == wire::kEcnEct0);
  CHECK(wire::load_be16(sink.frames[0].data() + wire::kPanamaCwndCap) == 2);  // share of 2 slots
  CHECK(counter(rtl, regmap::kGcFramesIn) == 3);
  CHECK(counter(rtl, regmap::kGcDropMacError) == 1);
  CHECK(counter(rtl, regmap::kGcPanamaIn) == 2);
  CHECK(counter(rtl, regmap::kGcAggregated) == 2);
  CHECK(counter(rtl, regmap::kGcDuplicates) == 0);
}

TEST_CASE("RTL: the MAC error check comes first (engine disabled, oversize, foreign frames)", "[rtl][mac]") {
  RtlEngine rtl;
  configure(rtl);
  test::CollectSink sink;
  // A foreign frame would pass through; marked bad, it is dropped.
  std::vector<uint8_t> foreign(200, 0x11);
  CHECK(rtl.process_frame(foreign.data(), 200, sink, true).action == EngineAction::kDropped);
  // An oversize frame marked bad counts as a MAC error, not as oversize.
  std::vector<uint8_t> huge(wire::kMaxFrameBytes + 64, 0x22);
  CHECK(rtl.process_frame(huge.data(), static_cast<uint32_t>(huge.size()), sink, true).drop_counter ==
        static_cast<int>(regmap::kGcDropMacError));
  // With the engine disabled everything passes through, except bad frames.
  rtl.reg_write(regmap::kControl, 0);
  CHECK(rtl.process_frame(foreign.data(), 200, sink, true).action == EngineAction::kDropped);
  CHECK(rtl.process_frame(foreign.data(), 200, sink).action == EngineAction::kPassed);
  REQUIRE(sink.frames.size() == 1);
  CHECK(sink.frames[0] == foreign);
  CHECK(counter(rtl, regmap::kGcFramesIn) == 4);
  CHECK(counter(rtl, regmap::kGcDropMacError) == 3);
  CHECK(counter(rtl, regmap::kGcDropOversize) == 0);
  CHECK(counter(rtl, regmap::kGcPassthrough) == 1);
}

TEST_CASE("RTL: a MAC error flag does not leak into the next frame", "[rtl][mac]") {
  RtlEngine rtl;
  configure(rtl);
  const uint16_t n = 16;
  const auto pa = payload(n, 2.0f), pb = payload(n, 3.0f);
  const auto fa = test::make_frame(test::contribution(3, 1, 0, 1, n, wire::kEcnEct0, 16), pa);
  const auto fb = test::make_frame(test::contribution(3, 1, 1, 1, n, wire::kEcnEct0, 16), pb);
  // Back to back in one stream: bad, good, good.
  test::CollectSink sink;
  const auto oc = rtl.run({fa, fa, fb}, sink, {1, 0, 0});
  REQUIRE(oc.size() == 3);
  CHECK(oc[0].action == EngineAction::kDropped);
  CHECK(oc[1].action == EngineAction::kAggregated);
  CHECK(oc[2].action == EngineAction::kEmitted);
  REQUIRE(sink.frames.size() == 1);
  const auto sum = test::payload_of(sink.frames[0]);
  for (uint16_t i = 0; i < n; ++i) {
    volatile float s = test::u2f(pa[i]) + test::u2f(pb[i]);
    CHECK(sum[i] == test::f2u(s));
  }
}
