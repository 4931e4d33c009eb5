// 16-bit allreduces (bf16, fp16) in the protocol core, through the real
// engine: frames carry the op's elem_type and elems_per_packet elements in
// half the bytes; results are bit-exact against round-to-nearest-even of
// the fp32 sum (rounding cases, ties, overflow, subnormals, NaN), computed
// here independently of the engine (panama/cluster/test_data.hpp); payload
// bytes are counted in the type; a result of the wrong type is counted and
// ignored; a lost result is recovered by retransmission; whole allreduces
// of mixed types under random faults and with a dying tree (failover keeps
// 16-bit contributions) are bit-exact.
//
// Seed: PANAMA_TEST_SEED replays a randomized test (tests/wire/seeded_rng.hpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core_rig.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/runtime/allreduce_core.hpp"
#include "support/frames.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::runtime;
using namespace panama::test::core;
using cluster::round16;
using cluster::value16;
using panama::test::f2u;
using panama::test::u2f;

namespace {

constexpr wire::ElemType kBf16 = wire::ElemType::kBfloat16;
constexpr wire::ElemType kFp16 = wire::ElemType::kFloat16;

const char* name_of(wire::ElemType t) {
  return cluster::dtype_name(t);
}

// The engine's result for two contributions a, b: round(fp32(a) + fp32(b)).
// fp32 addition is commutative, so the arrival order does not matter.
uint16_t expected2(uint16_t a, uint16_t b, wire::ElemType t) {
  const float sum = static_cast<float>(value16(a, t)) + static_cast<float>(value16(b, t));
  return round16(static_cast<double>(sum), t);
}

// A frame's payload as 16-bit patterns.
std::vector<uint16_t> payload16(const Frame& f) {
  const uint32_t n = wire::load_be16(f.data() + wire::kPanamaElemCount);
  std::vector<uint16_t> v(n);
  std::memcpy(v.data(), f.data() + wire::kPayloadOffset, 2 * size_t{n});
  return v;
}

// Runs two workers' allreduces of a and b (16-bit patterns) through the rig
// (one engine at the root) until both finish; returns worker 0's and 1's buffers.
std::pair<std::vector<uint16_t>, std::vector<uint16_t>> run_two(uint64_t seed, wire::ElemType t,
                                                                std::vector<uint16_t> a,
                                                                std::vector<uint16_t> b, uint32_t elems,
                                                                Faults faults = Faults{}) {
  Rig c(seed, 2, 2, elems, 8, 4, faults);
  c.worker(0).start(a.data(), a.size(), t, c.now());
  c.worker(1).start(b.data(), b.size(), t, c.now());
  for (int i = 0; i < 1000000 && (c.worker(0).pending_ops() || c.worker(1).pending_ops()); ++i) c.step();
  REQUIRE(c.worker(0).pending_ops() == 0);
  REQUIRE(c.worker(1).pending_ops() == 0);
  CHECK_FALSE(c.worker(0).failed());
  return {a, b};
}

}  // namespace

TEST_CASE("core elem16: frames carry the type and elems_per_packet elements in half the bytes") {
  for (wire::ElemType t : {kBf16, kFp16}) {
    INFO(name_of(t));
    Plan p = make_plan(0, 2, 2, 5, 100);
    p.congestion.initial_cwnd = 4;
    AllreduceCore core(p);
    std::vector<uint16_t> a(12);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(0x3C00 + 17 * i);
    core.start(a.data(), a.size(), t, 0);
    VectorFrameOut out;
    REQUIRE(core.poll(0, out) == 3);  // chunks of 5, 5, 2 elements
    for (size_t k = 0; k < 3; ++k) {
      const Frame& f = out.frames[k];
      wire::Header h;
      REQUIRE(wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), 9600, h) ==
              wire::FrameClass::kOk);
      const size_t n = k < 2 ? 5 : 2;
      CHECK(h.elem_type == static_cast<uint8_t>(t));
      CHECK(h.elem_count == n);
      CHECK(f.size() == wire::kPayloadOffset + 2 * n);
      CHECK(f.size() == wire::frame_length(static_cast<uint32_t>(n), static_cast<uint8_t>(t)));
      CHECK(h.tree_id == 10 + k % 2);
      const std::vector<uint16_t> pl = payload16(f);
      CHECK(pl == std::vector<uint16_t>(a.begin() + static_cast<std::ptrdiff_t>(5 * k),
                                        a.begin() + static_cast<std::ptrdiff_t>(5 * k + n)));
    }
    const CommStats st = core.stats();
    CHECK(st.bytes_issued == 24);  // 12 elements x 2 bytes
    CHECK(st.bytes_sent == 24);
    CHECK(st.trees[0].bytes_issued == 14);  // chunks 0 and 2
    CHECK(st.trees[1].bytes_issued == 10);
  }
  // An fp32 allreduce of the same element count: twice the bytes.
  AllreduceCore core(make_plan(0, 2, 2, 5, 100));
  std::vector<float> f(12, 1.0f);  // fp32, the same element count
  core.start(f.data(), f.size(), 0);
  VectorFrameOut out;
  core.poll(0, out);
  CHECK(out.frames[0].size() == wire::kPayloadOffset + 4 * 5);
  CHECK(out.frames[0][wire::kPanamaElemType] == 1);
  CHECK(core.stats().bytes_issued == 48);
}

TEST_CASE("core elem16: results through the engine are round-to-nearest-even of the fp32 sum, bit for bit") {
  const uint64_t seed = panama::test::test_seed("core elem16 rounding cases");
  for (wire::ElemType t : {kBf16, kFp16}) {
    INFO(name_of(t));
    // Hand-picked pairs: ties to even both ways, rounding up and down, a
    // carry into the next binade, overflow to infinity, subnormal results,
    // -0 + -0, x + -x, NaN and infinities.
    std::vector<std::pair<uint16_t, uint16_t>> cases;
    if (t == kBf16) {
      cases = {
          {0x3F80, 0x3B80},  // 1 + 2^-8: tie, stays 1 (even)          -> 0x3F80
          {0x3F81, 0x3B80},  // (1 + 2^-7) + 2^-8: tie, goes up to even -> 0x3F82
          {0x3F80, 0x3BC0},  // 1 + 1.5 * 2^-8: above the tie, up      -> 0x3F81
          {0x3F80, 0x3B00},  // 1 + 2^-9: below the tie, down          -> 0x3F80
          {0x3FFF, 0x3B80},  // (2 - 2^-7) + 2^-8: tie, carry          -> 0x4000
          {0x7F7F, 0x7B00},  // max + half a step (2^119): overflow    -> 0x7F80
          {0xFF7F, 0xFB00},  // the same, negative                     -> 0xFF80
          {0x0001, 0x0001},  // subnormal + subnormal                  -> 0x0002
          {0x8000, 0x8000},  // -0 + -0                                -> 0x8000
          {0x4040, 0xC040},  // x + -x                                 -> 0x0000
          {0x7FC1, 0x3F80},  // NaN with a payload                     -> 0x7FC0
          {0x7F80, 0xFF80},  // inf + -inf                             -> 0x7FC0
          {0x7F80, 0x3F80},  // inf + 1                                -> 0x7F80
      };
    } else {
      cases = {
          {0x3C00, 0x1000},  // 1 + 2^-11: tie, stays 1                -> 0x3C00
          {0x3C01, 0x1000},  // (1 + 2^-10) + 2^-11: tie, up           -> 0x3C02
          {0x3C00, 0x1200},  // 1 + 1.5 * 2^-11: up                    -> 0x3C01
          {0x7BFF, 0x5000},  // 65504 + 32: 65536, beyond 65520        -> 0x7C00
          {0x7BFF, 0x4C00},  // 65504 + 16 = 65520: overflow           -> 0x7C00
          {0x7BFF, 0x4BFF},  // 65504 + 15.99: stays finite            -> 0x7BFF
          {0x0001, 0x0001},  // subnormals                             -> 0x0002
          {0x03FF, 0x0001},  // largest subnormal + smallest: normal   -> 0x0400
          {0x8000, 0x8000},  // -0 + -0                                -> 0x8000
          {0x7C01, 0x3C00},  // signalling NaN                         -> 0x7E00
          {0x7C00, 0xFC00},  // inf + -inf                             -> 0x7E00
      };
    }
    std::vector<uint16_t> a, b;
    for (auto [x, y] : cases) {
      a.push_back(x);
      b.push_back(y);
    }
    // And random patterns of every class (the sum is commutative, so any arrival order gives the same bits).
    std::mt19937_64 rng(seed ^ static_cast<uint64_t>(t));
    for (int i = 0; i < 3000; ++i) {
      a.push_back(static_cast<uint16_t>(rng()));
      b.push_back(static_cast<uint16_t>(rng() % 4 == 0 ? a.back() ^ 0x8000 : rng()));  // some x + -x
    }
    const auto [ra, rb] = run_two(seed, t, a, b, 64);
    size_t wrong = 0, rounded = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const uint16_t want = expected2(a[i], b[i], t);
      if (ra[i] != want || rb[i] != want) {
        if (wrong++ < 5)
          UNSCOPED_INFO("element " << i << ": " << a[i] << " + " << b[i] << " -> " << ra[i] << ", want "
                                   << want);
      }
      const double exact = value16(a[i], t) + value16(b[i], t);
      rounded += std::isfinite(exact) && value16(want, t) != exact;
    }
    CHECK(wrong == 0);
    CHECK(rounded > 500);  // the rounding was not trivial
    // The hand-picked expectations, spelled out.
    const std::vector<uint16_t> want_bf16 = {0x3F80, 0x3F82, 0x3F81, 0x3F80, 0x4000, 0x7F80, 0xFF80,
                                             0x0002, 0x8000, 0x0000, 0x7FC0, 0x7FC0, 0x7F80};
    const std::vector<uint16_t> want_fp16 = {0x3C00, 0x3C02, 0x3C01, 0x7C00, 0x7C00, 0x7BFF,
                                             0x0002, 0x0400, 0x8000, 0x7E00, 0x7E00};
    const std::vector<uint16_t>& want = t == kBf16 ? want_bf16 : want_fp16;
    REQUIRE(want.size() == cases.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("case " << i);
      CHECK(ra[i] == want[i]);
    }
  }
}

TEST_CASE("core elem16: payload bytes are counted in the type, half those of fp32") {
  std::vector<uint16_t> a(1000, 0x3F80), b(1000, 0x3F80);  // bf16 1.0
  Rig c(1, 2, 2, 64, 8, 4, Faults{});
  c.worker(0).start(a.data(), a.size(), kBf16, 0);
  c.worker(1).start(b.data(), b.size(), kBf16, 0);
  std::vector<float> x(1000, 1.0f), y(1000, 1.0f);
  c.worker(0).start(x.data(), x.size(), 0);
  c.worker(1).start(y.data(), y.size(), 0);
  for (int i = 0; i < 1000000 && (c.worker(0).pending_ops() || c.worker(1).pending_ops()); ++i) c.step();
  REQUIRE(c.worker(0).pending_ops() == 0);
  CHECK(a == std::vector<uint16_t>(1000, 0x4000));  // 2.0
  CHECK(x == std::vector<float>(1000, 2.0f));
  const CommStats st = c.worker(0).stats();
  CHECK(st.bytes_issued == 2000 + 4000);
  CHECK(st.bytes_completed == 2000 + 4000);
  CHECK(st.bytes_sent == 2000 + 4000);  // no loss: nothing sent twice
  CHECK(st.trees[0].bytes_completed + st.trees[1].bytes_completed == 6000);
}

TEST_CASE("core elem16: a result of the wrong type or count is counted and ignored") {
  Plan p = make_plan(0, 1, 1, 4, 8);
  p.congestion.initial_cwnd = 4;
  AllreduceCore core(p);
  std::vector<uint16_t> a = {1, 2, 3, 4, 5, 6};  // chunks of 4 and 2
  const std::vector<uint16_t> orig = a;
  const OpId id = core.start(a.data(), a.size(), kBf16, 0);
  VectorFrameOut out;
  REQUIRE(core.poll(0, out) == 2);
  auto result = [&](uint32_t seq, uint8_t elem_type, std::vector<uint16_t> vals) {
    wire::Header h = panama::test::contribution(kJob, 10, 0, seq, static_cast<uint16_t>(vals.size()));
    h.type = static_cast<uint8_t>(wire::PacketType::kResultDown);
    h.elem_type = elem_type;
    h.cwnd_cap = 8;
    Frame f(wire::kMaxFrameBytes);
    uint32_t len = 0;
    if (wire::elem_bytes(elem_type) == 2) {
      len = wire::build_frame16(f.data(), static_cast<uint32_t>(f.size()), h, vals.data());
    } else {
      std::vector<uint32_t> bits(vals.begin(), vals.end());
      h.elem_type = 1;
      len = wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, bits.data());
      f[wire::kPanamaElemType] = elem_type;  // keep fp32 lengths, any type byte
    }
    f.resize(len);
    return f;
  };
  Frame as_fp16 = result(0, 3, {9, 9, 9, 9});   // a valid type, not the chunk's
  Frame as_fp32 = result(0, 1, {9, 9, 9, 9});   // fp32: lengths of 4-byte elements
  Frame no_type = result(0, 7, {9, 9, 9, 9});   // no type at all: malformed
  Frame wrong_count = result(1, 2, {9, 9, 9});  // the right type, the wrong count
  for (Frame* f : {&as_fp16, &as_fp32, &no_type, &wrong_count}) {
    CHECK(core.on_frame(f->data(), static_cast<uint32_t>(f->size()), 1));
  }
  CHECK(a == orig);
  CHECK(core.status(id) == OpStatus::kPending);
  CommStats st = core.stats();
  CHECK(st.unexpected_results == 3);
  CHECK(st.malformed_results == 1);
  CHECK(st.bytes_completed == 0);
  Frame good0 = result(0, 2, {10, 20, 30, 40});
  Frame good1 = result(1, 2, {50, 60});
  CHECK(core.on_frame(good0.data(), static_cast<uint32_t>(good0.size()), 2));
  CHECK(core.on_frame(good1.data(), static_cast<uint32_t>(good1.size()), 2));
  CHECK(core.status(id) == OpStatus::kDone);
  CHECK(a == std::vector<uint16_t>{10, 20, 30, 40, 50, 60});
  st = core.stats();
  CHECK(st.bytes_completed == 12);
  CHECK(st.unexpected_results == 3);
  // A type that is none fails the allreduce, not the communicator.
  const OpId bad = core.start(a.data(), a.size(), static_cast<wire::ElemType>(9), 3);
  CHECK(core.status(bad) == OpStatus::kFailed);
  CHECK_THAT(core.op_error(bad), Catch::Contains("element type 9"));
  CHECK_FALSE(core.failed());
}

TEST_CASE("core elem16: a lost result is recovered by a retransmission of the same 16-bit chunk") {
  for (wire::ElemType t : {kBf16, kFp16}) {
    INFO(name_of(t));
    Plan p = make_plan(0, 1, 1, 8, 8);
    p.congestion.initial_cwnd = 4;
    p.congestion.rto_initial_us = 100;
    p.congestion.rto_min_us = 100;
    AllreduceCore core(p);
    auto eng = std::make_unique<TestEngine>();
    configure_engine(*eng, 1, 1, 8);
    // Values of every class; a NaN with a payload comes back canonical.
    std::vector<uint16_t> a = {0x3F80, 0x8001, 0x7BFF, 0x7C01, 0x0000, 0x8000, 0x4248, 0xC000, 0x1234};
    const std::vector<uint16_t> orig = a;
    const OpId id = core.start(a.data(), a.size(), t, 0);
    VectorFrameOut first;
    REQUIRE(core.poll(0, first) == 2);  // 8 + 1 elements
    // Both contributions reach the engine; the result of the first is lost.
    std::vector<Frame> results;
    for (const Frame& f : first.frames) {
      panama::test::CollectSink sink;
      eng->process_frame(f.data(), static_cast<uint32_t>(f.size()), sink);
      REQUIRE(sink.frames.size() == 1);
      results.push_back(sink.frames[0]);
    }
    REQUIRE(core.on_frame(results[1].data(), static_cast<uint32_t>(results[1].size()), 10 * 1000));
    CHECK(core.status(id) == OpStatus::kPending);
    VectorFrameOut again;
    REQUIRE(core.poll(200 * 1000, again) == 1);  // the RTO passed
    const Frame& r = again.frames[0];
    CHECK(r[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kRetransmission));
    CHECK(r[wire::kPanamaElemType] == static_cast<uint8_t>(t));
    CHECK(r.size() == wire::kPayloadOffset + 2 * 8);
    CHECK(payload16(r) == payload16(first.frames[0]));  // the same chunk, as first sent
    // The engine answers the retransmission with the slot's result.
    panama::test::CollectSink sink;
    eng->process_frame(r.data(), static_cast<uint32_t>(r.size()), sink);
    REQUIRE(sink.frames.size() == 1);
    REQUIRE(core.on_frame(sink.frames[0].data(), static_cast<uint32_t>(sink.frames[0].size()), 210 * 1000));
    CHECK(core.status(id) == OpStatus::kDone);
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("element " << i);
      CHECK(a[i] == round16(value16(orig[i], t), t));  // one contribution: itself, NaN canonical
    }
    const CommStats st = core.stats();
    CHECK(st.retransmissions == 1);
    CHECK(st.bytes_completed == 18);
    CHECK(st.bytes_sent == 18 + 16);
  }
}

TEST_CASE("core elem16: mixed-type allreduces under random faults, bit-exact, every chunk written once") {
  const uint64_t base_seed = panama::test::test_seed("core elem16 random event orders");
  std::mt19937_64 meta(base_seed);
  uint64_t rounded = 0;
  for (int run = 0; run < 60; ++run) {
    const uint64_t seed = meta();
    std::mt19937_64 g(seed);
    Scenario s;
    s.world = 1 + static_cast<uint32_t>(g() % 4);
    s.trees = 1 + static_cast<uint32_t>(g() % 3);
    s.elems = 1 + static_cast<uint32_t>(g() % 64);
    s.q = 1 + static_cast<uint32_t>(g() % 16);
    s.initial_cap = static_cast<uint16_t>(1 + g() % s.q);
    const size_t nops = 1 + g() % 4;
    for (size_t i = 0; i < nops; ++i) {
      s.sizes.push_back(g() % 6 == 0 ? 1 + g() % s.elems : 1 + g() % (s.elems * 200));
      const wire::ElemType types[] = {wire::ElemType::kFloat32, kBf16, kFp16, kBf16, kFp16};
      s.dtypes.push_back(types[g() % 5]);
    }
    auto p = [&](double max) { return std::uniform_real_distribution<double>(0, max)(g); };
    s.faults.loss_up = p(0.2);
    s.faults.loss_down = p(0.2);
    s.faults.dup = p(0.2);
    s.faults.ce_down = p(0.3);
    s.faults.cap_change = p(0.3);
    s.faults.poison = p(0.5);
    s.faults.reorder_window = 1 + static_cast<uint32_t>(g() % 8);
    s.streaming_copy_bytes = g() % 3 == 0 ? 0 : 2 * (1 + g() % (s.elems * 100));
    s.zero_copy = g() % 2 == 0;
    INFO("run " << run << " (seed " << seed << "): world " << s.world << " trees " << s.trees << " elems "
                << s.elems << " Q " << s.q << ", zero-copy send " << s.zero_copy);
    run_scenario(seed, s, &rounded);
  }
  CHECK(rounded > 0);
}

TEST_CASE("core elem16: tree failover keeps and replays 16-bit contributions, bit-exact") {
  const uint64_t base_seed = panama::test::test_seed("core elem16 failover");
  std::mt19937_64 meta(base_seed ^ 0xFA11);
  uint64_t replayed_kept = 0, rounded = 0;
  for (int run = 0; run < 30; ++run) {
    const uint64_t seed = meta();
    std::mt19937_64 g(seed);
    Scenario s;
    s.world = 2 + static_cast<uint32_t>(g() % 3);
    s.trees = 1 + static_cast<uint32_t>(g() % 3);
    s.elems = 1 + static_cast<uint32_t>(g() % 64);
    s.q = 2 + static_cast<uint32_t>(g() % 15);
    s.initial_cap = static_cast<uint16_t>(1 + g() % s.q);
    const size_t nops = 2 + g() % 4;
    for (size_t i = 0; i < nops; ++i) {
      s.sizes.push_back(s.trees * s.elems + g() % (s.elems * 200));
      s.dtypes.push_back(g() % 4 == 0 ? wire::ElemType::kFloat32 : g() % 2 ? kBf16 : kFp16);
    }
    const bool faulty = run % 2 == 1;
    if (faulty) {
      s.faults.loss_up = 0.05;
      s.faults.loss_down = 0.05;
      s.faults.dup = 0.05;
      s.faults.reorder_window = 1 + static_cast<uint32_t>(g() % 8);
    }
    s.kill_tree = static_cast<int>(g() % s.trees);
    s.kill_step = 1 + g() % 80;
    s.failover_after = faulty ? 14 : 4;
    s.zero_copy = g() % 2 == 0;
    INFO("run " << run << " (seed " << seed << "): world " << s.world << " trees " << s.trees << " elems "
                << s.elems << " kill tree " << s.kill_tree << " at step " << s.kill_step);
    replayed_kept += run_scenario(seed, s, &rounded);
  }
  CHECK(replayed_kept > 0);  // contributions whose result a worker already had were re-sent from kept bytes
  CHECK(rounded > 0);
}
