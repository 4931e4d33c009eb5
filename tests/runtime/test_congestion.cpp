// Per-tree congestion control: slow start, additive increase, the DCTCP
// alpha update and CE reduction against values computed by hand, the cap;
// the retransmission timer's use of the current RTO estimate.
#include <catch2/catch.hpp>
#include <vector>

#include "panama/runtime/allreduce_core.hpp"
#include "panama/runtime/congestion.hpp"
#include "panama/wire.hpp"

using namespace panama::runtime;

namespace {
CongestionParams params(double initial_cwnd, double ssthresh, double alpha0, double g) {
  CongestionParams p;
  p.initial_cwnd = initial_cwnd;
  p.ssthresh = ssthresh;
  p.initial_alpha = alpha0;
  p.g = g;
  return p;
}
}  // namespace

TEST_CASE("cc: slow start adds 1 per result below ssthresh, 1/cwnd above") {
  TreeCongestion cc(params(1, 4, 1, 0), 100);
  CHECK(cc.cwnd() == 1);
  CHECK(cc.window() == 1);
  cc.on_result(false, 100);
  CHECK(cc.cwnd() == 2);
  cc.on_result(false, 100);
  cc.on_result(false, 100);
  CHECK(cc.cwnd() == 4);
  cc.on_result(false, 100);
  CHECK(cc.cwnd() == Approx(4.25));
  cc.on_result(false, 100);
  CHECK(cc.cwnd() == Approx(4.25 + 1 / 4.25));
  CHECK(cc.window() == 4);
}

TEST_CASE("cc: CE multiplies cwnd by (1 - alpha/2) at most once per window") {
  // g = 0 keeps alpha at its initial 0.5, so every reduction is by 25%.
  TreeCongestion cc(params(10, 10, 0.5, 0), 100);
  cc.on_result(true, 100);
  CHECK(cc.cwnd() == Approx(7.5));
  CHECK(cc.ssthresh() == Approx(7.5));
  CHECK(cc.reductions() == 1);
  // The next floor(10) - 1 = 9 results cannot reduce again, and CE never grows cwnd.
  for (int i = 0; i < 9; ++i) cc.on_result(true, 100);
  CHECK(cc.cwnd() == Approx(7.5));
  CHECK(cc.reductions() == 1);
  cc.on_result(true, 100);
  CHECK(cc.cwnd() == Approx(7.5 * 0.75));
  CHECK(cc.reductions() == 2);
}

TEST_CASE("cc: alpha <- (1-g) alpha + g F once per window of floor(cwnd) results") {
  // cwnd 4 (additive: ssthresh 1), alpha 0, g 1/2. Window 1 = 4 results, one CE.
  TreeCongestion cc(params(4, 1, 0, 0.5), 100);
  cc.on_result(true, 100);  // alpha 0: the reduction leaves cwnd at 4
  CHECK(cc.cwnd() == Approx(4));
  cc.on_result(false, 100);
  cc.on_result(false, 100);
  CHECK(cc.alpha() == 0);
  CHECK(cc.alpha_updates() == 0);
  cc.on_result(false, 100);
  CHECK(cc.alpha_updates() == 1);
  CHECK(cc.alpha() == Approx(0.5 * 0 + 0.5 * 0.25));
  const double after3 = 4 + 1 / 4.0;
  const double after4 = after3 + 1 / after3;
  const double after5 = after4 + 1 / after4;
  CHECK(cc.cwnd() == Approx(after5));
  // Window 2 = floor(cwnd) = 4 results, all CE: F = 1. The first CE
  // (hold expired: 3 results since the reduction from 4) reduces by alpha/2.
  cc.on_result(true, 100);
  CHECK(cc.cwnd() == Approx(after5 * (1 - 0.125 / 2)));
  cc.on_result(true, 100);
  cc.on_result(true, 100);
  cc.on_result(true, 100);
  CHECK(cc.alpha_updates() == 2);
  CHECK(cc.alpha() == Approx(0.5 * 0.125 + 0.5 * 1.0));
}

TEST_CASE("cc: cwnd stays within [1, cap of the latest result]") {
  TreeCongestion cc(params(1, 1000, 1, 1.0 / 16), 3);
  CHECK(cc.cap() == 3);
  for (int i = 0; i < 10; ++i) cc.on_result(false, 3);
  CHECK(cc.cwnd() == 3);
  CHECK(cc.window() == 3);
  cc.on_result(false, 2);
  CHECK(cc.cwnd() == 2);
  cc.on_result(false, 0);  // a zero cap is treated as 1, never as "stop forever"
  CHECK(cc.cwnd() == 1);
  CHECK(cc.window() == 1);
  for (int i = 0; i < 20; ++i) cc.on_result(true, 50);
  CHECK(cc.cwnd() >= 1);
  cc.on_result(false, 50);
  CHECK(cc.cwnd() <= 50);
}

TEST_CASE("cc: initial cwnd above the initial cap is clamped") {
  TreeCongestion cc(params(32, 64, 1, 1.0 / 16), 8);
  CHECK(cc.cwnd() == 8);
  CHECK(cc.window() == 8);
}

namespace {

// The result-down frame a one-child tree's root sends for `up`: the same
// frame with the type changed (a one-child sum is the contribution).
std::vector<uint8_t> result_of(const std::vector<uint8_t>& up, uint16_t cap) {
  std::vector<uint8_t> f = up;
  panama::wire::Header h{};
  REQUIRE(panama::wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()),
                                       panama::wire::kDefaultUdpPort, h) == panama::wire::FrameClass::kOk);
  h.type = static_cast<uint8_t>(panama::wire::PacketType::kResultDown);
  h.cwnd_cap = cap;
  panama::wire::write_headers(f.data(), h);
  return f;
}

}  // namespace

TEST_CASE("rto: a chunk sent before the RTT grew waits the current RTO, not the one it was sent with") {
  Plan p;
  p.job_id = 3;
  p.world_size = 1;
  p.elems_per_packet = 16;
  p.udp_port = panama::wire::kDefaultUdpPort;
  p.local_mac = {0x02, 0, 0, 0, 1, 0};
  TreePlan t;
  t.dst_mac = {0x02, 0, 0, 0, 0, 0xFE};
  t.initial_cwnd_cap = 8;
  p.trees.push_back(t);
  p.congestion.initial_cwnd = 2;
  p.congestion.rto_initial_us = 1000;
  p.congestion.rto_min_us = 1000;
  AllreduceCore core(p);
  std::vector<float> v(16 * 3, 1.0f);  // three chunks
  VectorFrameOut out;
  constexpr uint64_t us = 1000;
  core.start(v.data(), v.size(), 0);
  REQUIRE(core.poll(0, out) == 2);  // chunks 0 and 1, armed with the initial 1 ms
  // Chunk 0's result after 900 us: srtt 900, rttvar 450, so the RTO is 2.7 ms.
  REQUIRE(core.on_frame(result_of(out.frames[0], 8).data(), static_cast<uint32_t>(out.frames[0].size()),
                        900 * us));
  REQUIRE(core.poll(900 * us, out) == 1);  // chunk 2, armed with 2.7 ms
  // 1.5 ms after chunk 1 was sent: past the RTO it was sent with, within the current one.
  core.poll(1500 * us, out);
  CHECK(core.stats().timeouts == 0);
  CHECK(core.stats().retransmissions == 0);
  REQUIRE(core.on_frame(result_of(out.frames[1], 8).data(), static_cast<uint32_t>(out.frames[1].size()),
                        2000 * us));
  // Chunk 1's sample (2 ms) makes the RTO 1037.5 + 4 x 612.5 = 3487.5 us; chunk 2,
  // sent at 900 us, is late once that has passed: a timeout.
  core.poll((900 + 3487) * us, out);
  CHECK(core.stats().timeouts == 0);
  core.poll((900 + 3488) * us, out);
  CHECK(core.stats().timeouts == 1);
  CHECK(core.stats().retransmissions == 1);
}
