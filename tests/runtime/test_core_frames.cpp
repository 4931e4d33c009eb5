// What the protocol core sends and takes, driven without I/O: frames
// checked field by field against the chunk mapping, the window before any
// result, bad and unexpected results, zero-length allreduces, payload copies,
// zero-copy send, plan validation.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "core_rig.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "panama/runtime/payload_copy.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::runtime;
using namespace panama::test::core;
using panama::test::f2u;

TEST_CASE("core: frames follow the static chunk mapping, sequences continue across allreduces") {
  Plan p = make_plan(1, 4, 3, 5, 100);
  AllreduceCore core(p);
  std::vector<float> a(47), b(12);  // 10 chunks (last has 2 elements), then 3 chunks
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * static_cast<float>(i) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -1.25f * static_cast<float>(i);
  core.start(a.data(), a.size(), 0);
  core.start(b.data(), b.size(), 0);
  // Open every window: results for everything sent so far raise cwnd.
  std::map<std::pair<uint8_t, uint32_t>, Frame> seen;  // (tree, seq) -> frame
  for (int round = 0; round < 50; ++round) {
    VectorFrameOut out;
    core.poll(1000, out);
    for (Frame& f : out.frames) {
      const uint8_t tree = f[wire::kPanamaTreeId];
      const uint32_t seq = wire::load_be32(f.data() + wire::kPanamaSeq);
      REQUIRE(seen.emplace(std::make_pair(tree, seq), f).second);
      Frame r = f;  // echo as a result
      r[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
      REQUIRE(core.on_frame(r.data(), static_cast<uint32_t>(r.size()), 1000));
    }
  }
  REQUIRE(seen.size() == 13);
  // Expected from the rule: chunk k of op r -> tree k mod 3, sequence base_t(r) + k div 3.
  const size_t base_after_a[3] = {4, 3, 3};  // op a: 10 chunks -> trees get 4, 3, 3
  for (int op = 0; op < 2; ++op) {
    const std::vector<float>& v = op == 0 ? a : b;
    const size_t chunks = (v.size() + 4) / 5;
    for (size_t k = 0; k < chunks; ++k) {
      const uint8_t tree = static_cast<uint8_t>(10 + k % 3);
      const uint32_t seq = static_cast<uint32_t>((op == 0 ? 0 : base_after_a[k % 3]) + k / 3);
      auto it = seen.find({tree, seq});
      REQUIRE(it != seen.end());
      const Frame& f = it->second;
      wire::Header h;
      REQUIRE(wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), 9600, h) ==
              wire::FrameClass::kOk);
      CHECK(h.type == static_cast<uint8_t>(wire::PacketType::kAggregateUp));
      CHECK(h.ecn == wire::kEcnEct0);
      CHECK(h.job_id == kJob);
      CHECK(h.child_id == (1 + k % 3) % 4);
      CHECK(h.cwnd_cap == 0xFFFF);
      CHECK(wire::load_be16(f.data() + wire::kUdpChecksum) == 0);
      CHECK(h.ip_dst == 0x0A0000F0u + k % 3);
      CHECK(h.eth_dst[5] == 0xF0 + k % 3);
      const size_t n = std::min<size_t>(5, v.size() - 5 * k);
      REQUIRE(h.elem_count == n);
      // Results were echoes, so the buffer holds the original values.
      for (size_t i = 0; i < n; ++i) CHECK(wire::load_le32(f.data() + 64 + 4 * i) == f2u(v[5 * k + i]));
    }
  }
  const CommStats st = core.stats();
  CHECK(st.ops_completed == 2);
  CHECK(st.trees[0].next_seq == 5);
  CHECK(st.trees[1].next_seq == 4);
}

TEST_CASE("core: the initial cap bounds the window before any result") {
  Plan p = make_plan(0, 2, 1, 4, 3);
  p.congestion.initial_cwnd = 50;
  AllreduceCore core(p);
  std::vector<float> a(400, 1.0f);
  core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out, 1000);
  CHECK(out.frames.size() == 3);
  core.poll(10, out, 1000);
  CHECK(out.frames.size() == 3);  // nothing new without results (no timeout yet)
}

TEST_CASE("core: bad, duplicate and unexpected results are counted and change nothing") {
  Plan p = make_plan(0, 1, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  AllreduceCore core(p);
  std::vector<float> a = {1, 2, 3, 4, 5, 6};  // chunks of 4 and 2
  const OpId id = core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  REQUIRE(out.frames.size() == 2);
  auto result = [&](uint32_t seq, std::vector<float> vals) {
    std::vector<uint32_t> bits;
    for (float v : vals) bits.push_back(f2u(v));
    wire::Header h = panama::test::contribution(kJob, 10, 0, seq, static_cast<uint16_t>(vals.size()));
    h.type = static_cast<uint8_t>(wire::PacketType::kResultDown);
    h.cwnd_cap = 8;
    return panama::test::make_frame(h, bits);
  };
  Frame wrong_count = result(1, {9, 9, 9});
  CHECK(core.on_frame(wrong_count.data(), static_cast<uint32_t>(wrong_count.size()), 1));
  Frame never_sent = result(7, {9, 9, 9, 9});
  CHECK(core.on_frame(never_sent.data(), static_cast<uint32_t>(never_sent.size()), 1));
  Frame truncated = result(0, {9, 9, 9, 9});
  CHECK(core.on_frame(truncated.data(), static_cast<uint32_t>(truncated.size() - 1), 1));
  Frame other_job = result(0, {9, 9, 9, 9});
  wire::store_be16(other_job.data() + wire::kPanamaJobId, kJob + 1);
  CHECK_FALSE(core.on_frame(other_job.data(), static_cast<uint32_t>(other_job.size()), 1));
  Frame up = out.frames[0];  // an aggregate-up frame is not a result
  CHECK_FALSE(core.on_frame(up.data(), static_cast<uint32_t>(up.size()), 1));
  CHECK(a == std::vector<float>{1, 2, 3, 4, 5, 6});

  Frame good0 = result(0, {10, 20, 30, 40});
  Frame good1 = result(1, {50, 60});
  CHECK(core.on_frame(good1.data(), static_cast<uint32_t>(good1.size()), 2));
  CHECK(core.status(id) == OpStatus::kPending);
  CHECK(core.on_frame(good0.data(), static_cast<uint32_t>(good0.size()), 2));
  CHECK(core.status(id) == OpStatus::kDone);
  Frame late = result(0, {-1, -1, -1, -1});
  CHECK(core.on_frame(late.data(), static_cast<uint32_t>(late.size()), 3));
  CHECK(a == std::vector<float>{10, 20, 30, 40, 50, 60});
  const CommStats st = core.stats();
  CHECK(st.malformed_results == 1);
  CHECK(st.unexpected_results == 2);
  CHECK(st.duplicate_results == 1);
  CHECK(st.trees[0].bytes_completed == 24);
}

TEST_CASE("core: zero-length allreduce completes at once; null buffer fails") {
  AllreduceCore core(make_plan(0, 1, 1, 4, 8));
  CHECK(core.status(core.start(nullptr, 0, 0)) == OpStatus::kDone);
  const OpId bad = core.start(nullptr, 5, 0);
  CHECK(core.status(bad) == OpStatus::kFailed);
  CHECK_THAT(core.op_error(bad), Catch::Contains("null buffer"));
}

TEST_CASE("payload copy: streaming and plain copies equal memcpy at every alignment and length") {
  // Source and destination offsets 0..63 and lengths around the 16-byte
  // head, the 64-byte blocks and the 128-byte streaming minimum; bytes
  // outside the destination range stay untouched.
  std::vector<uint8_t> src(8192 + 128), dst(8192 + 256), want(dst.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 37 + 11);
  const size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 191, 1000, 4096, 4097, 8191};
  size_t wrong = 0, cases = 0;
  for (bool streaming : {false, true}) {
    for (size_t so = 0; so < 64; so += 3) {
      for (size_t d_off = 0; d_off < 64; ++d_off) {
        for (size_t len : lengths) {
          std::fill(dst.begin(), dst.end(), uint8_t{0xEE});
          want = dst;
          std::memcpy(want.data() + 64 + d_off, src.data() + so, len);
          copy_payload(dst.data() + 64 + d_off, src.data() + so, len, streaming);
          wrong += dst != want;
          ++cases;
        }
      }
    }
  }
  CHECK(cases > 40000);
  CHECK(wrong == 0);
}

TEST_CASE("core: zero-copy send: frames carry the buffer's chunks, the allreduce waits for their release") {
  Plan plan = make_plan(0, 1, 1, 4, 8);
  plan.congestion.initial_cwnd = 4;
  AllreduceCore core(plan);
  auto eng = std::make_unique<TestEngine>();
  configure_engine(*eng, 1, 1, 8);
  core.set_zero_copy_send(true);
  std::vector<float> a(10);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i + 1);
  const OpId id = core.start(a.data(), a.size(), 0);
  VectorFrameOut out;
  out.attach = true;
  REQUIRE(core.poll(0, out) == 3);
  REQUIRE(out.attached.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    CHECK(out.attached[k].frame == k);
    CHECK(out.attached[k].payload == reinterpret_cast<const uint8_t*>(a.data() + 4 * k));
    CHECK(out.attached[k].len == 4 * (k < 2 ? 4u : 2u));
    CHECK(out.frames[k].size() == wire::frame_length(k < 2 ? 4 : 2));  // header + the payload as sent
  }
  // World size 1: each frame comes straight back as its result.
  for (const Frame& f : out.frames) {
    panama::test::CollectSink sink;
    eng->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
    REQUIRE(sink.frames.size() == 1);
    REQUIRE(core.on_frame(sink.frames[0].data(), static_cast<uint32_t>(sink.frames[0].size()), 1));
  }
  CHECK(core.stats().bytes_completed == 40);
  // Every result is in, but two frames still reference the buffer.
  out.release_attached(1);
  VectorFrameOut idle;
  core.poll(2, idle);
  CHECK(core.status(id) == OpStatus::kPending);
  CHECK(core.pending_ops() == 1);
  out.release_attached();
  core.poll(3, idle);
  CHECK(core.status(id) == OpStatus::kDone);
  CHECK(core.pending_ops() == 0);
  CHECK(core.stats().ops_completed == 1);
  for (size_t i = 0; i < a.size(); ++i)
    CHECK(a[i] == static_cast<float>(i + 1));  // world 1: the sum is itself

  // abort() (the communicator going away) does not wait for the frames.
  const OpId id2 = core.start(a.data(), a.size(), 4);
  VectorFrameOut out2;
  out2.attach = true;
  REQUIRE(core.poll(4, out2) == 3);
  core.abort("the communicator was destroyed");
  CHECK(core.status(id2) == OpStatus::kFailed);
  CHECK(core.pending_ops() == 0);
  out2.release_attached();

  // A FrameOut that cannot attach gets copies, and nothing waits.
  AllreduceCore plain(make_plan(0, 1, 1, 4, 8));
  plain.set_zero_copy_send(true);
  plain.start(a.data(), 4, 0);
  VectorFrameOut copies;
  REQUIRE(plain.poll(0, copies) == 1);
  CHECK(copies.attached.empty());
  CHECK(std::memcmp(copies.frames[0].data() + wire::kPayloadOffset, a.data(), 16) == 0);
}

TEST_CASE("core: plans with backup trees are validated") {
  Plan p = make_plan(0, 2, 2, 4, 8, true);
  CHECK_NOTHROW(validate_plan(p));
  Plan bad = p;
  bad.trees[2].backup_for = 99;
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("trees[2].backup_for"));
  bad = p;
  bad.trees[3].backup_for = 10;  // tree 10 has two backups
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("already has a backup"));
  bad = p;
  bad.trees[3].backup_for = 12;  // a backup of a backup
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("no primary tree with id 12"));
  bad = p;
  bad.congestion.failover_after = 0;
  CHECK_THROWS_WITH(validate_plan(bad), Catch::Contains("failover_after"));
}
