// The RTL engine's receive frame FIFO (hw/rtl/panama_rx_frame_fifo.sv),
// driven through RtlEngine as a MAC drives it: every beat is taken
// (s_axis_tready never drops), a frame that does not fit is dropped whole and
// counted in FRAMES_IN and DROP_RX_OVERFLOW, and the frames kept reach the
// engine whole and in order (with the engine disabled every frame it gets
// passes through, so the output shows exactly what the FIFO let through).
// The output's back-pressure is random; PANAMA_TEST_SEED sets its seed
// (printed).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "panama/cosim/rtl_engine.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::cosim;

namespace {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    const char* env = std::getenv("PANAMA_TEST_SEED");
    const uint64_t s = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    std::printf("PANAMA_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

uint64_t counter(RtlEngine& rtl, uint32_t c) {
  const uint32_t lo = rtl.reg_read(regmap::global_counter_addr(c));
  const uint32_t hi = rtl.reg_read(regmap::global_counter_addr(c) + 4);
  return (uint64_t{hi} << 32) | lo;
}

// A non-PANAMA frame (IPv6) of `len` bytes that no other frame equals.
std::vector<uint8_t> tagged_frame(uint32_t id, size_t len) {
  std::vector<uint8_t> f(len);
  for (size_t i = 0; i < len; ++i) f[i] = static_cast<uint8_t>(id * 131 + i * 7);
  f[12] = 0x86;
  f[13] = 0xDD;
  for (int k = 0; k < 4; ++k) f[14 + k] = static_cast<uint8_t>(id >> (8 * k));
  return f;
}

}  // namespace

TEST_CASE("RTL receive FIFO: frames that do not fit are dropped whole, the rest leave whole and in order",
          "[rtl][rxfifo]") {
  const uint64_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed);
  RtlEngine rtl;
  rtl.reg_write(regmap::kControl, 0);  // disabled: every frame that reaches the engine passes through
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> frames;
  for (uint32_t i = 0; i < 160; ++i) {
    frames.push_back(tagged_frame(i, std::uniform_int_distribution<size_t>(60, 3000)(rng)));
  }
  StreamShaping mac{0.0, 0.95, seed};  // the output takes a beat in 5% of the clocks
  mac.mac_source = true;
  rtl.set_shaping(mac);
  rtl.reset_stats();
  test::CollectSink sink;
  const std::vector<EngineOutcome> oc = rtl.run(frames, sink);
  REQUIRE(oc.size() == frames.size());

  std::vector<std::vector<uint8_t>> kept;
  uint64_t dropped = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (oc[i].action == EngineAction::kPassed) {
      kept.push_back(frames[i]);
    } else {
      INFO("frame " << i);
      CHECK(oc[i].action == EngineAction::kDropped);
      CHECK(oc[i].drop_counter == regmap::kGcDropRxOverflow);
      CHECK(oc[i].entry == -1);
      ++dropped;
    }
  }
  std::printf("receive FIFO: %llu of %zu frames dropped for room, %zu passed\n",
              static_cast<unsigned long long>(dropped), frames.size(), kept.size());
  CHECK(dropped > 0);
  CHECK(kept.size() > 0);
  // Exactly the kept frames came out, whole, in order: nothing partial left.
  CHECK(sink.frames == kept);
  CHECK(rtl.stats().in_stall_cycles == 0);  // every beat was taken at once
  CHECK(rtl.stats().rx_drop_overflow == dropped);
  CHECK(counter(rtl, regmap::kGcFramesIn) == frames.size());
  CHECK(counter(rtl, regmap::kGcPassthrough) == kept.size());
  CHECK(counter(rtl, regmap::kGcDropRxOverflow) == dropped);
  CHECK(counter(rtl, regmap::kGcDropMacError) == 0);

  // Once drained, the FIFO takes frames again: a burst that fits loses none.
  rtl.set_shaping(StreamShaping{0.0, 0.0, seed, true});
  test::CollectSink sink2;
  const std::vector<std::vector<uint8_t>> again(frames.begin(), frames.begin() + 8);
  const std::vector<EngineOutcome> oc2 = rtl.run(again, sink2);
  for (const EngineOutcome& o : oc2) CHECK(o.action == EngineAction::kPassed);
  CHECK(sink2.frames == again);
}

TEST_CASE("RTL receive FIFO: a MAC-error frame is dropped whatever the room, the flag on any beat",
          "[rtl][rxfifo]") {
  RtlEngine rtl;
  rtl.reg_write(regmap::kControl, 0);
  const uint64_t seed = test_seed();
  INFO("PANAMA_TEST_SEED=" << seed);
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint8_t> bad;
  for (uint32_t i = 0; i < 24; ++i) {
    frames.push_back(tagged_frame(i, 64 * (1 + i % 6) - (i % 3)));  // 1 to 6 beats
    bad.push_back(i % 3 == 1);
  }
  rtl.set_shaping(StreamShaping{0.3, 0.3, seed, true});
  test::CollectSink sink;
  const std::vector<EngineOutcome> oc = rtl.run(frames, sink, bad);
  std::vector<std::vector<uint8_t>> good;
  for (size_t i = 0; i < frames.size(); ++i) {
    INFO("frame " << i);
    if (bad[i]) {
      CHECK(oc[i].action == EngineAction::kDropped);
      CHECK(oc[i].drop_counter == regmap::kGcDropMacError);
    } else {
      CHECK(oc[i].action == EngineAction::kPassed);
      good.push_back(frames[i]);
    }
  }
  CHECK(sink.frames == good);
  CHECK(rtl.stats().rx_drop_bad == 8);
  CHECK(counter(rtl, regmap::kGcDropMacError) == 8);
  CHECK(counter(rtl, regmap::kGcFramesIn) == frames.size());
  CHECK(counter(rtl, regmap::kGcPassthrough) == good.size());
}

TEST_CASE("RTL receive FIFO: a frame longer than the FIFO is dropped for room, the next one passes",
          "[rtl][rxfifo]") {
  RtlEngine rtl;
  rtl.reg_write(regmap::kControl, 0);
  test::CollectSink sink;
  // 1025 beats: one more than the FIFO holds (RX_FIFO_DEPTH 1024).
  const std::vector<uint8_t> giant = tagged_frame(1, 1025 * 64);
  const EngineOutcome o = rtl.process_frame(giant.data(), static_cast<uint32_t>(giant.size()), sink);
  CHECK(o.action == EngineAction::kDropped);
  CHECK(o.drop_counter == regmap::kGcDropRxOverflow);
  CHECK(sink.frames.empty());
  // The FIFO gave the giant's beats back: the next frame passes.
  const std::vector<uint8_t> small = tagged_frame(2, 100);
  CHECK(rtl.process_frame(small.data(), static_cast<uint32_t>(small.size()), sink).action ==
        EngineAction::kPassed);
  REQUIRE(sink.frames.size() == 1);
  CHECK(sink.frames[0] == small);
  CHECK(counter(rtl, regmap::kGcDropRxOverflow) == 1);
  CHECK(counter(rtl, regmap::kGcFramesIn) == 2);
}
