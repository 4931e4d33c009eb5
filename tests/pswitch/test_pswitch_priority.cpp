// Strict priority in the software PSwitch's queues (output_queue.hpp): bands
// by DSCP, the shared buffer, per-band ECN and counters, the "priority_dscp"
// setting, and the controller writing its priority levels into every
// PSwitch. Expected values are worked out by hand or by a model written
// here from the rules in docs/pswitch.md; the randomized test takes its
// seed from PANAMA_TEST_SEED and prints it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <random>
#include <vector>

#include "panama/controller/controller.hpp"
#include "panama/pswitch/output_queue.hpp"
#include "panama/pswitch/settings.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::pswitch;
using namespace panama::test;
using nlohmann::json;

namespace {

// An IPv4 (PANAMA) frame of `len` bytes (64 + a positive multiple of 4) with this DSCP and ECN.
std::vector<uint8_t> frame(uint8_t dscp, uint32_t len, uint8_t ecn = wire::kEcnEct0) {
  wire::Header h = contribution(1, 0, 0, 0, static_cast<uint16_t>((len - wire::kPayloadOffset) / 4), ecn);
  h.dscp = dscp;
  std::vector<uint8_t> f = make_frame(h, std::vector<uint32_t>(h.elem_count, 0));
  REQUIRE(f.size() == len);
  return f;
}

// The same bytes with another EtherType: the byte where IPv4 keeps its DSCP
// still says `dscp`, but the frame is not IPv4.
std::vector<uint8_t> not_ipv4(uint16_t ethertype, uint8_t dscp, uint32_t len) {
  std::vector<uint8_t> f = frame(dscp, len);
  wire::store_be16(f.data() + wire::kEthType, ethertype);
  return f;
}

uint8_t ecn_of(const std::vector<uint8_t>& f) {
  return f[wire::kIpTos] & 3;
}

QueueConfig levels(std::vector<uint8_t> dscp, double rate = 0.0, uint64_t cap = 1u << 20, uint64_t k = 0) {
  QueueConfig c;
  c.rate_gbps = rate;
  c.capacity_bytes = cap;
  c.ecn_k_bytes = k;
  c.priority_dscp = std::move(dscp);
  return c;
}

}  // namespace

TEST_CASE("priority bands: a frame's band comes from its DSCP; unknown DSCPs and non-IPv4 go to band 0",
          "[priority]") {
  OutputQueue<int> q(levels({46, 10, 0}));
  REQUIRE(q.bands() == 4);
  auto band = [&](const std::vector<uint8_t>& f) {
    return q.band_of(f.data(), static_cast<uint32_t>(f.size()));
  };
  CHECK(band(frame(46, 200)) == 1);
  CHECK(band(frame(10, 200)) == 2);
  CHECK(band(frame(0, 200)) == 3);  // DSCP 0 is a level here
  CHECK(band(frame(12, 200)) == 0);
  CHECK(band(frame(63, 200)) == 0);
  CHECK(band(frame(46, 200, wire::kEcnCe)) == 1);  // the ECN bits are not part of the class
  CHECK(band(not_ipv4(0x0806, 46, 200)) == 0);     // ARP
  CHECK(band(not_ipv4(0x86DD, 46, 200)) == 0);     // IPv6
  CHECK(band(not_ipv4(0x8100, 46, 200)) == 0);     // VLAN-tagged: the IPv4 header is elsewhere
  std::vector<uint8_t> v6 = frame(46, 200);
  v6[wire::kIpVerIhl] = 0x65;  // IPv4 EtherType, version 6
  CHECK(band(v6) == 0);
  const std::vector<uint8_t> whole = frame(46, 200);
  CHECK(q.band_of(whole.data(), wire::kIpOffset + wire::kIpHeaderBytes) == 1);
  CHECK(q.band_of(whole.data(), wire::kIpOffset + wire::kIpHeaderBytes - 1) == 0);  // truncated
  CHECK(frame_dscp(whole.data(), static_cast<uint32_t>(whole.size())) == 46);
  CHECK(frame_dscp(v6.data(), static_cast<uint32_t>(v6.size())) == -1);

  // Without levels every frame is band 0.
  OutputQueue<int> plain(QueueConfig{});
  CHECK(plain.bands() == 1);
  const std::vector<uint8_t> f46 = frame(46, 200);
  CHECK(plain.band_of(f46.data(), 200) == 0);
  // A DSCP listed twice belongs to its first (higher) level.
  OutputQueue<int> twice(levels({46, 10, 46}));
  CHECK(twice.band_of(f46.data(), 200) == 1);
  CHECK_THROWS_WITH(OutputQueue<int>(levels({1, 2, 3, 4, 5, 6, 7, 8, 9})),
                    Catch::Contains("at most 8 priority levels (got 9)"));
  CHECK_THROWS_WITH(OutputQueue<int>(levels({46, 64})), Catch::Contains("DSCP 64 is not in 0..63"));
}

TEST_CASE("priority bands: a mixed backlog drains the highest band first, FIFO within a band", "[priority]") {
  const std::vector<uint8_t> dscp_list = {46, 10};
  // Arrival order; -1 is an ARP frame, 12 a DSCP no level has.
  const std::vector<int> arrivals = {0, 10, 46, 10, -1, 46, 0, 12, 46, 10, 10, 0, 46, -1};
  std::vector<std::vector<uint8_t>> frames;
  for (int d : arrivals) {
    frames.push_back(d < 0 ? not_ipv4(0x0806, 46, 100) : frame(static_cast<uint8_t>(d), 100));
  }
  // Expected departures: the DSCP 46 frames in arrival order, then the
  // DSCP 10 ones, then everything else in arrival order.
  std::vector<int> expected;
  for (size_t i = 0; i < arrivals.size(); ++i)
    if (arrivals[i] == 46) expected.push_back(static_cast<int>(i));
  for (size_t i = 0; i < arrivals.size(); ++i)
    if (arrivals[i] == 10) expected.push_back(static_cast<int>(i));
  for (size_t i = 0; i < arrivals.size(); ++i)
    if (arrivals[i] != 46 && arrivals[i] != 10) expected.push_back(static_cast<int>(i));
  REQUIRE(expected == std::vector<int>{2, 5, 8, 12, 1, 3, 9, 10, 0, 4, 6, 7, 11, 13});

  OutputQueue<int> q(levels(dscp_list));
  for (size_t i = 0; i < frames.size(); ++i) {
    REQUIRE(q.enqueue(static_cast<int>(i), frames[i].data(), 100, 0) == EnqueueResult::kQueued);
  }
  CHECK(q.depth_frames(1) == 4);
  CHECK(q.depth_frames(2) == 4);
  CHECK(q.depth_frames(0) == 6);
  CHECK(q.depth_bytes(1) == 400);
  std::vector<int> sent;
  // A few at a time: the order does not depend on how the drain is cut.
  while (q.dequeue(0, 3, [&](int h) { sent.push_back(h); }) > 0) {
  }
  CHECK(sent == expected);
  CHECK(q.depth_frames() == 0);
  CHECK(q.depth_bytes() == 0);

  // A frame of a higher band arriving while a lower one drains goes next.
  OutputQueue<int> q2(levels(dscp_list));
  for (int i = 0; i < 4; ++i) q2.enqueue(i, frames[0].data(), 100, 0);  // DSCP 0: band 0
  sent.clear();
  q2.dequeue(0, 2, [&](int h) { sent.push_back(h); });
  q2.enqueue(10, frames[1].data(), 100, 0);  // DSCP 10
  q2.enqueue(11, frames[2].data(), 100, 0);  // DSCP 46
  q2.dequeue(0, 10, [&](int h) { sent.push_back(h); });
  CHECK(sent == std::vector<int>{0, 1, 11, 10, 2, 3});

  // Without levels the same backlog leaves in arrival order.
  OutputQueue<int> plain(QueueConfig{0.0, 1u << 20, 0});
  for (size_t i = 0; i < frames.size(); ++i) plain.enqueue(static_cast<int>(i), frames[i].data(), 100, 0);
  sent.clear();
  plain.dequeue(0, 100, [&](int h) { sent.push_back(h); });
  for (size_t i = 0; i < sent.size(); ++i) CHECK(sent[i] == static_cast<int>(i));
}

TEST_CASE("priority bands: the link's byte pacing is the same, whichever band a frame is in", "[priority]") {
  // 10 Gbit/s = 1.25 bytes/ns; an idle link starts with 2 x (9216 + 24) =
  // 18480 bytes of credit. Ten 1000-byte frames of band 0, then two
  // 9000-byte frames of the top band: the big ones go first (2 x 9024 =
  // 18048, 432 left), and a 1000-byte frame (1024 on the wire) then waits
  // for 592 more bytes: 473.6 ns.
  OutputQueue<int> q(levels({46}, 10.0));
  std::vector<uint8_t> low = frame(0, 1000);
  std::vector<uint8_t> high = frame(46, 9000);
  for (int i = 0; i < 10; ++i) REQUIRE(q.enqueue(i, low.data(), 1000, 0) == EnqueueResult::kQueued);
  for (int i = 10; i < 12; ++i) REQUIRE(q.enqueue(i, high.data(), 9000, 0) == EnqueueResult::kQueued);
  std::vector<int> sent;
  auto send = [&](int h) { sent.push_back(h); };
  CHECK(q.dequeue(0, 100, send) == 2);
  CHECK(sent == std::vector<int>{10, 11});
  CHECK(q.dequeue(473, 100, send) == 0);  // 432 + 591.25 < 1024
  CHECK(q.dequeue(474, 100, send) == 1);  // 432 + 592.5 >= 1024
  // 8192 ns later: 0.5 + 10240 bytes of credit -> 10 frames of 1024, but only 9 wait.
  CHECK(q.dequeue(474 + 8192, 100, send) == 9);
  CHECK(sent == std::vector<int>{10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(q.counters().bytes_out == 28000);
  CHECK(q.band_counters(1).bytes_out == 18000);
  CHECK(q.band_counters(0).bytes_out == 10000);

  // Frames of one size: how many leave per call does not depend on the bands.
  OutputQueue<int> banded(levels({46, 10}, 10.0));
  OutputQueue<int> plain(QueueConfig{10.0, 1u << 20, 0});
  std::vector<std::vector<uint8_t>> mix = {frame(0, 1000), frame(10, 1000), frame(46, 1000),
                                           not_ipv4(0x0806, 46, 1000)};
  std::vector<uint32_t> n_banded, n_plain;
  for (uint64_t t = 0, i = 0; t < 200'000; t += 777) {
    for (int k = 0; k < 3; ++k, ++i) {
      banded.enqueue(0, mix[i % 4].data(), 1000, t);
      plain.enqueue(0, mix[i % 4].data(), 1000, t);
    }
    n_banded.push_back(banded.dequeue(t, 1000, [](int) {}));
    n_plain.push_back(plain.dequeue(t, 1000, [](int) {}));
  }
  CHECK(n_banded == n_plain);
  CHECK(banded.counters().dequeued > 100);
  CHECK(banded.depth_frames() > 0);  // 3 frames per 777 ns is more than the link sends: it stayed busy
}

TEST_CASE("priority bands share the buffer; each marks CE on its own depth; counters per band",
          "[priority]") {
  // Buffer 10000 bytes, K 3000, 1000-byte ECT frames, nothing dequeued.
  OutputQueue<int> q(levels({46}, 1.0, 10000, 3000));
  std::vector<std::vector<uint8_t>> low(6, frame(0, 1000));
  std::vector<std::vector<uint8_t>> high(6, frame(46, 1000));
  // Band 0 at depth 0, 1000, 2000, 3000, 4000: only the fifth is over K.
  for (int i = 0; i < 5; ++i) {
    CHECK(q.enqueue(i, low[i].data(), 1000, 0) ==
          (i == 4 ? EnqueueResult::kQueuedMarked : EnqueueResult::kQueued));
  }
  // Band 1 holds 0 .. 4000 bytes of its own while the port holds 5000 ..
  // 9000: again only its fifth frame is over K.
  for (int i = 0; i < 5; ++i) {
    CHECK(q.enqueue(10 + i, high[i].data(), 1000, 0) ==
          (i == 4 ? EnqueueResult::kQueuedMarked : EnqueueResult::kQueued));
  }
  for (int i = 0; i < 5; ++i) {
    CHECK(ecn_of(low[i]) == (i == 4 ? wire::kEcnCe : wire::kEcnEct0));
    CHECK(ecn_of(high[i]) == (i == 4 ? wire::kEcnCe : wire::kEcnEct0));
    CHECK(wire::ipv4_header_checksum(high[i].data() + wire::kIpOffset) == 0);
  }
  // The buffer (10000) is full: a frame of either band is dropped.
  CHECK(q.enqueue(15, high[5].data(), 1000, 0) == EnqueueResult::kDropped);
  CHECK(q.enqueue(5, low[5].data(), 1000, 0) == EnqueueResult::kDropped);
  CHECK(q.enqueue(16, high[5].data(), 1000, 0) == EnqueueResult::kDropped);
  CHECK(ecn_of(high[5]) == wire::kEcnEct0);  // a dropped frame is not marked
  // marks_now answers per band.
  const std::vector<uint8_t> probe_high = frame(46, 100), probe_other = frame(7, 100);
  CHECK(q.marks_now(probe_high.data(), 100));
  CHECK(q.marks_now(probe_other.data(), 100));

  const BandCounters& b0 = q.band_counters(0);
  const BandCounters& b1 = q.band_counters(1);
  CHECK(b0.enqueued == 5);
  CHECK(b1.enqueued == 5);
  CHECK(b0.bytes_in == 5000);
  CHECK(b0.ecn_marked == 1);
  CHECK(b1.ecn_marked == 1);
  CHECK(b0.tail_drops == 1);
  CHECK(b1.tail_drops == 2);
  CHECK(b0.max_depth_bytes == 5000);
  CHECK(b1.max_depth_bytes == 5000);
  CHECK(q.counters().tail_drops == 3);
  CHECK(q.counters().ecn_marked == 2);
  CHECK(q.counters().max_depth_bytes == 10000);

  // Draining band 1 brings it under K; band 0 is still over.
  std::vector<int> sent;
  q.dequeue(1'000'000'000, 5, [&](int h) { sent.push_back(h); });
  CHECK(sent == std::vector<int>{10, 11, 12, 13, 14});
  CHECK(b1.dequeued == 5);
  CHECK(b1.bytes_out == 5000);
  CHECK(b0.dequeued == 0);
  CHECK_FALSE(q.marks_now(probe_high.data(), 100));
  CHECK(q.marks_now(probe_other.data(), 100));
  int released = 0;
  q.drain([&](int) { ++released; });
  CHECK(released == 5);
  CHECK(q.depth_bytes() == 0);
  CHECK(q.depth_bytes(0) == 0);
  // Reusable after a drain.
  std::vector<uint8_t> again = frame(46, 1000);
  CHECK(q.enqueue(20, again.data(), 1000, 0) == EnqueueResult::kQueued);
  CHECK(q.depth_frames(1) == 1);

  // One band: K is on the whole queue, as before levels existed.
  OutputQueue<int> plain(QueueConfig{1.0, 10000, 3000});
  std::vector<std::vector<uint8_t>> mixed = {frame(0, 1000), frame(46, 1000), frame(0, 1000), frame(46, 1000),
                                             frame(46, 1000)};
  for (int i = 0; i < 5; ++i) plain.enqueue(i, mixed[i].data(), 1000, 0);
  CHECK(ecn_of(mixed[3]) == wire::kEcnEct0);
  CHECK(ecn_of(mixed[4]) == wire::kEcnCe);
  CHECK(plain.band_counters(0).ecn_marked == 1);
  CHECK(plain.band_counters(0).enqueued == 5);
}

TEST_CASE("priority bands against a model: random arrivals, DSCPs, sizes and drains", "[priority]") {
  uint64_t seed = 20240607;
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) seed = std::strtoull(s, nullptr, 0);
  INFO("seed " << seed << " (override with PANAMA_TEST_SEED)");
  std::mt19937_64 rng(seed);
  const std::vector<uint8_t> dscp_list = {40, 32, 24, 8};
  const uint64_t cap = 60000, k = 5000;
  OutputQueue<uint32_t> q(levels(dscp_list, 0.0, cap, k));

  // The model: one deque per class, the classes in service order.
  struct Frame {
    uint32_t id;
    uint32_t len;
  };
  const size_t classes = dscp_list.size() + 1;  // the levels, then everything else
  std::vector<std::deque<Frame>> model(classes);
  std::vector<uint64_t> model_bytes(classes, 0);
  std::vector<uint64_t> m_enq(classes, 0), m_deq(classes, 0), m_drop(classes, 0), m_mark(classes, 0);
  uint64_t total = 0;
  auto class_of = [&](int dscp) {
    const auto it = std::find(dscp_list.begin(), dscp_list.end(), dscp);
    return it == dscp_list.end() ? classes - 1 : static_cast<size_t>(it - dscp_list.begin());
  };

  const std::vector<int> dscps = {40, 32, 24, 8, 0, 46, 63, -1};  // -1: not IPv4
  const std::vector<uint8_t> ecns = {wire::kEcnNotEct, wire::kEcnEct0, wire::kEcnEct1, wire::kEcnCe};
  uint32_t next_id = 0;
  uint64_t frames_out = 0;
  // Phases of 400 steps: arrivals only (the buffer fills, bands go over K,
  // frames are dropped), arrivals and drains mixed, drains only (it empties).
  for (int step = 0; step < 19200; ++step) {
    const int phase = step / 400 % 3;
    if (phase == 0 || (phase == 1 && rng() % 5 < 3)) {
      const int dscp = dscps[rng() % dscps.size()];
      const uint8_t ecn = ecns[rng() % ecns.size()];
      const uint32_t len = 68 + 4 * static_cast<uint32_t>(rng() % 300);
      std::vector<uint8_t> f =
          dscp < 0 ? not_ipv4(0x0806, 40, len) : frame(static_cast<uint8_t>(dscp), len, ecn);
      const size_t c = dscp < 0 ? classes - 1 : class_of(dscp);
      EnqueueResult want = EnqueueResult::kQueued;
      if (total + len > cap) {
        want = EnqueueResult::kDropped;
        ++m_drop[c];
      } else {
        if (model_bytes[c] > k && dscp >= 0 && (ecn == wire::kEcnEct0 || ecn == wire::kEcnEct1)) {
          want = EnqueueResult::kQueuedMarked;
          ++m_mark[c];
        }
        model[c].push_back(Frame{next_id, len});
        model_bytes[c] += len;
        total += len;
        ++m_enq[c];
      }
      const EnqueueResult got = q.enqueue(next_id, f.data(), len, 0);
      INFO("step " << step << " dscp " << dscp << " len " << len);
      REQUIRE(got == want);
      if (want == EnqueueResult::kQueuedMarked) REQUIRE(ecn_of(f) == wire::kEcnCe);
      ++next_id;
    } else {
      const uint32_t max = static_cast<uint32_t>(rng() % 8);
      std::vector<uint32_t> want;
      for (size_t c = 0; c < classes && want.size() < max; ++c) {
        while (!model[c].empty() && want.size() < max) {
          want.push_back(model[c].front().id);
          model_bytes[c] -= model[c].front().len;
          total -= model[c].front().len;
          model[c].pop_front();
          ++m_deq[c];
        }
      }
      std::vector<uint32_t> got;
      q.dequeue(0, max, [&](uint32_t h) { got.push_back(h); });
      INFO("step " << step);
      REQUIRE(got == want);
      frames_out += got.size();
    }
    REQUIRE(q.depth_bytes() == total);
  }
  // Class c of the model is band 1 + c, the last class band 0.
  for (size_t c = 0; c < classes; ++c) {
    const uint32_t b = c + 1 < classes ? static_cast<uint32_t>(c + 1) : 0;
    INFO("band " << b);
    CHECK(q.band_counters(b).enqueued == m_enq[c]);
    CHECK(q.band_counters(b).dequeued == m_deq[c]);
    CHECK(q.band_counters(b).tail_drops == m_drop[c]);
    CHECK(q.band_counters(b).ecn_marked == m_mark[c]);
    CHECK(q.depth_bytes(b) == model_bytes[c]);
    // The run exercised every band: frames in, out, dropped and marked.
    CHECK(m_enq[c] > 0);
    CHECK(m_deq[c] > 0);
    CHECK(m_drop[c] > 0);
    CHECK(m_mark[c] > 0);
  }
  CHECK(frames_out > 1000);
}

TEST_CASE("pswitch section: priority_dscp lists the levels' DSCP, highest first", "[priority]") {
  const json base = {{"ports", {{{"name", "a"}}, {{"name", "b"}}}}};
  const PswitchSettings none = settings_from_json(base);
  CHECK(none.priority_dscp.empty());
  CHECK_FALSE(settings_to_json(none).contains("priority_dscp"));  // a section without levels reads as before
  json j = base;
  j["priority_dscp"] = {46, 10, 0};
  const PswitchSettings s = settings_from_json(j);
  CHECK(s.priority_dscp == std::vector<uint8_t>{46, 10, 0});
  CHECK(settings_to_json(s)["priority_dscp"] == json({46, 10, 0}));
  CHECK(settings_from_json(settings_to_json(s)).priority_dscp == s.priority_dscp);
  j["priority_dscp"] = json::array();
  CHECK(settings_from_json(j).priority_dscp.empty());

  auto error = [&](const json& v) {
    json bad = base;
    bad["priority_dscp"] = v;
    try {
      settings_from_json(bad, "leaf0.json");
    } catch (const SettingsError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  CHECK(error({46, 64}) == "leaf0.json: pswitch.priority_dscp[1]: out of range: 64 is not in 0..63");
  CHECK(error({46, 10, 46}) ==
        "leaf0.json: pswitch.priority_dscp[2]: DSCP 46 is listed twice (two levels would share one queue)");
  CHECK(error({1, 2, 3, 4, 5, 6, 7, 8, 9}) ==
        "leaf0.json: pswitch.priority_dscp: at most 8 priority levels (got 9)");
  CHECK_THAT(error(46), Catch::StartsWith("leaf0.json: pswitch.priority_dscp: wrong type"));
  CHECK_THAT(error({"ef"}), Catch::StartsWith("leaf0.json: pswitch.priority_dscp[0]: wrong type"));
}

TEST_CASE("controller: with priorities every PSwitch's queues get the levels' DSCP", "[priority]") {
  // Job 2 is more GPU-intensive (100 ms per 1e8 bytes) than job 1 (100 ms
  // per 1e9 bytes): two levels, job 2 at level 0 (DSCP 46), job 1 at level
  // 1 (DSCP 10).
  json jobs = {
      {"priorities", {{"levels", 2}, {"dscp", {46, 10}}}},
      {"jobs",
       json::array(
           {{{"id", 1}, {"workers", {"w0", "w1", "w2"}}, {"compute_ms", 100}, {"gradient_bytes", 1e9}},
            {{"id", 2}, {"workers", {"w3", "w4", "w5"}}, {"compute_ms", 100}, {"gradient_bytes", 1e8}}})}};
  const controller::ClusterDesc cluster =
      controller::parse_cluster(controller::two_tier_cluster(6, 2, 2, 10.0));
  const controller::Deployment d = controller::plan_deployment(cluster, controller::parse_jobs(jobs));
  REQUIRE(d.switches.size() == 4);
  size_t entries = 0;
  for (const controller::SwitchOutput& s : d.switches) {
    INFO(s.node.node);
    CHECK(s.settings.priority_dscp == std::vector<uint8_t>{46, 10});
    // What is written to <switch>.json, and what the PSwitch reads from it.
    CHECK(s.node.pswitch["priority_dscp"] == json({46, 10}));
    const PswitchSettings back = settings_from_json(s.node.pswitch);
    CHECK(back.priority_dscp == std::vector<uint8_t>{46, 10});
    // The frames the engine emits for each job land in its level's band.
    OutputQueue<int> q(QueueConfig{10.0, 1u << 20, 0, back.priority_dscp});
    for (const config::EntryConfig& e : s.node.entries) {
      INFO("job " << e.job);
      const std::vector<uint8_t> f = frame(e.dscp, 200);
      CHECK(q.band_of(f.data(), 200) == (e.job == 2 ? 1u : 2u));
      ++entries;
    }
  }
  CHECK(entries > 0);
  for (const controller::WorkerOutput& w : d.workers) {
    INFO(w.host);
    CHECK(w.plan.dscp == (w.plan.job_id == 2 ? 46 : 10));
  }

  // A jobs file may not give two levels one DSCP; a description built in
  // code may: the two levels are one class on the wire, listed once, and
  // the PSwitch accepts the section.
  json same_file = jobs;
  same_file["priorities"]["dscp"] = {46, 46};
  CHECK_THROWS_WITH(controller::parse_jobs(same_file), Catch::Contains("DSCP 46 is given to two levels"));
  controller::JobsDesc same = controller::parse_jobs(jobs);
  same.priority_dscp = {46, 46};
  const controller::Deployment one = controller::plan_deployment(cluster, same);
  for (const controller::SwitchOutput& s : one.switches) {
    INFO(s.node.node);
    CHECK(s.settings.priority_dscp == std::vector<uint8_t>{46});
    CHECK(settings_from_json(s.node.pswitch).priority_dscp == std::vector<uint8_t>{46});
  }

  // Without priorities the section has no levels (and no key).
  json plain = jobs;
  plain.erase("priorities");
  const controller::Deployment p = controller::plan_deployment(cluster, controller::parse_jobs(plain));
  for (const controller::SwitchOutput& s : p.switches) {
    INFO(s.node.node);
    CHECK(s.settings.priority_dscp.empty());
    CHECK_FALSE(s.node.pswitch.contains("priority_dscp"));
  }
}
