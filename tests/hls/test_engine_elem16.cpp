// bf16 and fp16 contributions through the engine (host engine and, in
// test_engine_kernel, the kernel's stages): sums accumulated in fp32 in
// arrival order and rounded once at emission, against the reference's
// double-arithmetic rounding; slot capacity in elements whatever the type;
// the type mismatch rule and its counter; retransmissions answered in the
// slot's type; a two-level tree; overflow and NaN at emission; the length
// rules with 2-byte elements; ELEM_TYPES. Randomized parts print their seed.
#include <catch2/catch.hpp>
#include <memory>

#include "hls/engine_harness.hpp"

using namespace panama;
using namespace panama::test;

namespace {

using SmallEngine = EngineUnderTest<8, 64, 4>;  // 64 elements per slot
constexpr uint32_t kCap = 64;
constexpr uint8_t kTypes[] = {ref::kBf16, ref::kFp16};

const char* type_name(uint8_t t) {
  return t == ref::kBf16 ? "bf16" : "fp16";
}

wire::Header header16(const EntrySpec& s, uint16_t child, uint32_t seq, uint8_t t, uint16_t count,
                      uint8_t type = 1) {
  wire::Header h{};
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0xFE};
  const uint8_t src[6] = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(child)};
  std::copy(dst, dst + 6, h.eth_dst);
  std::copy(src, src + 6, h.eth_src);
  h.ecn = 2;
  h.ttl = 64;
  h.ip_src = 0x0A000000u + child;
  h.ip_dst = 0x0A0000FEu;
  h.udp_src = 12345;
  h.udp_dst = 9600;
  h.version = 1;
  h.type = type;
  h.job_id = s.job;
  h.tree_id = s.tree;
  h.elem_type = t;
  h.child_id = child;
  h.seq = seq;
  h.cwnd_cap = 0xFFFF;
  h.elem_count = count;
  return h;
}

std::vector<uint8_t> contribution16(const EntrySpec& s, uint16_t child, uint32_t seq, uint8_t t,
                                    const std::vector<uint16_t>& payload, uint8_t type = 1) {
  return ref::encode16(header16(s, child, seq, t, static_cast<uint16_t>(payload.size()), type), payload);
}

// The contract's result: widened, summed in fp32 in arrival order (the
// first stored as it is), rounded once.
std::vector<uint16_t> expected_sum(uint8_t t, const std::vector<std::vector<uint16_t>>& arrivals) {
  std::vector<uint32_t> acc(arrivals[0].size());
  for (size_t i = 0; i < acc.size(); ++i) acc[i] = ref::widen16(t, arrivals[0][i]);
  for (size_t k = 1; k < arrivals.size(); ++k) {
    for (size_t i = 0; i < acc.size(); ++i) acc[i] = ref::host_add(acc[i], ref::widen16(t, arrivals[k][i]));
  }
  std::vector<uint16_t> r(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) r[i] = ref::round16(t, acc[i]);
  return r;
}

// The emitted frame for entry `s` with the aggregate `sum` of type t.
std::vector<uint8_t> expected_frame(const EntrySpec& s, uint32_t seq, uint8_t t,
                                    const std::vector<uint16_t>& sum, bool answer_retrans = false,
                                    uint8_t ecn = 2) {
  wire::Header h{};
  std::copy(s.eth_dst.begin(), s.eth_dst.end(), h.eth_dst);
  std::copy(s.eth_src.begin(), s.eth_src.end(), h.eth_src);
  h.dscp = s.dscp;
  h.ecn = ecn;
  h.ttl = s.ttl;
  h.ip_src = s.ip_src;
  h.ip_dst = s.ip_dst;
  h.udp_src = s.udp_src;
  h.udp_dst = s.udp_dst;
  h.version = 1;
  h.type = s.root ? 2 : (answer_retrans ? 3 : 1);
  h.job_id = s.job;
  h.tree_id = s.tree;
  h.elem_type = t;
  h.child_id = s.out_child_id;
  h.seq = seq;
  h.cwnd_cap = static_cast<uint16_t>(std::min<uint32_t>(s.slot_count, 0xFFFF));
  h.elem_count = static_cast<uint16_t>(sum.size());
  return ref::encode16(h, sum);
}

std::vector<uint16_t> random16(Rng& rng, uint8_t t, uint32_t n) {
  std::vector<uint16_t> p(n);
  for (auto& v : p) v = ref::random_element16(rng, t);
  return p;
}

EntrySpec entry(uint32_t fan_in, bool root = true) {
  EntrySpec s;
  s.fan_in = fan_in;
  s.child_mask = (uint64_t{1} << fan_in) - 1;
  s.root = root;
  s.slot_base = 0;
  s.slot_count = 4;
  return s;
}

}  // namespace

TEST_CASE("16-bit engine: ELEM_TYPES reports fp32, bf16 and fp16", "[engine][elem16]") {
  auto eng = std::make_unique<SmallEngine>();
  CHECK(eng->reg_read(regmap::kElemTypes) == 0xEu);
}

TEST_CASE("16-bit engine: sums in fp32 in arrival order, rounded once at emission", "[engine][elem16]") {
  Rng rng(test_seed("engine 16-bit sums"));
  for (uint8_t t : kTypes) {
    INFO(type_name(t));
    auto eng = std::make_unique<SmallEngine>();
    const EntrySpec s = entry(3);
    REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
    for (uint32_t seq = 0; seq < 24; ++seq) {
      const uint32_t n = seq == 0 ? kCap : uniform(rng, 1, kCap);
      std::vector<std::vector<uint16_t>> arrivals;
      std::vector<uint16_t> order = {0, 1, 2};
      std::shuffle(order.begin(), order.end(), rng);
      Sink sink;
      for (uint16_t c : order) {
        arrivals.push_back(random16(rng, t, n));
        const auto f = contribution16(s, c, seq, t, arrivals.back());
        REQUIRE(f.size() == 64 + 2 * n);
        send(*eng, f, sink);
      }
      REQUIRE(sink.frames.size() == 1);
      CHECK(sink.frames[0] == expected_frame(s, seq, t, expected_sum(t, arrivals)));
    }
    CHECK(eng->global_counter(regmap::kGcEmitted) == 24);
    CHECK(eng->global_counter(regmap::kGcAggregated) == 72);
  }
}

TEST_CASE("16-bit engine: special values, overflow and NaN at emission, -0 kept", "[engine][elem16]") {
  for (uint8_t t : kTypes) {
    INFO(type_name(t));
    auto eng = std::make_unique<SmallEngine>();
    const EntrySpec s = entry(2);
    REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
    const bool bf = t == ref::kBf16;
    const uint16_t big = bf ? 0x7F7Fu : 0x7BFFu;  // largest finite
    const uint16_t inf = bf ? 0x7F80u : 0x7C00u;
    const uint16_t snan = bf ? 0x7F81u : 0x7C01u;  // signalling NaN
    const uint16_t sub = 0x0001u;                  // smallest subnormal
    const uint16_t one = bf ? 0x3F80u : 0x3C00u;
    // element: a, b, expected (pattern) for a + b in fp32 rounded to the type
    const std::vector<std::array<uint16_t, 3>> cases = {
        {big, big, inf},  // overflow at emission
        {static_cast<uint16_t>(big | 0x8000u), static_cast<uint16_t>(big | 0x8000u),
         static_cast<uint16_t>(inf | 0x8000u)},
        {inf, static_cast<uint16_t>(inf | 0x8000u), bf ? kBf16CanonicalNan : kFp16CanonicalNan},
        {snan, one, bf ? kBf16CanonicalNan : kFp16CanonicalNan},
        {0x8000u, 0x8000u, 0x8000u},                           // -0 + -0 = -0
        {one, static_cast<uint16_t>(one | 0x8000u), 0x0000u},  // x + -x = +0
        {sub, sub, 0x0002u},                                   // subnormals kept
        {static_cast<uint16_t>(sub | 0x8000u), 0x0000u, static_cast<uint16_t>(sub | 0x8000u)},
        {inf, big, inf},
    };
    std::vector<uint16_t> a, b, expect;
    for (const auto& c : cases) {
      a.push_back(c[0]);
      b.push_back(c[1]);
      expect.push_back(c[2]);
    }
    Sink sink;
    send(*eng, contribution16(s, 0, 0, t, a), sink);
    send(*eng, contribution16(s, 1, 0, t, b), sink);
    REQUIRE(sink.frames.size() == 1);
    CHECK(sink.frames[0] == expected_frame(s, 0, t, expect));
    // And the reference agrees with the table.
    CHECK(expected_sum(t, {a, b}) == expect);
  }
}

TEST_CASE("16-bit engine: a slot holds as many 16-bit elements as fp32 ones", "[engine][elem16]") {
  Rng rng(test_seed("engine 16-bit capacity"));
  for (uint8_t t : kTypes) {
    INFO(type_name(t));
    auto eng = std::make_unique<SmallEngine>();
    const EntrySpec s = entry(1);
    REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
    CHECK(eng->reg_read(regmap::kSlotElems) == kCap);
    Sink sink;
    const auto full = random16(rng, t, kCap);
    send(*eng, contribution16(s, 0, 0, t, full), sink);
    REQUIRE(sink.frames.size() == 1);
    CHECK(sink.frames[0] == expected_frame(s, 0, t, expected_sum(t, {full})));
    const auto before = snapshot(*eng);
    send(*eng, contribution16(s, 0, 1, t, random16(rng, t, kCap + 1)), sink);
    CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_bad_elem_count+1");
    CHECK(sink.frames.size() == 1);
  }
}

TEST_CASE("16-bit engine: a contribution of another type than the slot's is dropped and counted",
          "[engine][elem16]") {
  Rng rng(test_seed("engine 16-bit type mismatch"));
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(2);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  Sink sink;
  const auto p0 = random16(rng, ref::kBf16, 10);
  send(*eng, contribution16(s, 0, 0, ref::kBf16, p0), sink);
  auto before = snapshot(*eng);
  send(*eng, contribution16(s, 1, 0, ref::kFp16, random16(rng, ref::kFp16, 10)), sink);
  CHECK(counter_delta(before, snapshot(*eng)) ==
        "frames_in+1 panama_in+1 drop_type_mismatch+1 e0.drop_type_mismatch+1");
  std::vector<uint32_t> fp32(10, 0x3F800000u);
  before = snapshot(*eng);
  send(*eng, contribution(s, 1, 0, fp32), sink);
  CHECK(counter_delta(before, snapshot(*eng)) ==
        "frames_in+1 panama_in+1 drop_type_mismatch+1 e0.drop_type_mismatch+1");
  CHECK(sink.frames.empty());
  // The slot is untouched: the right type completes it with the right sum.
  const auto p1 = random16(rng, ref::kBf16, 10);
  send(*eng, contribution16(s, 1, 0, ref::kBf16, p1), sink);
  REQUIRE(sink.frames.size() == 1);
  CHECK(sink.frames[0] == expected_frame(s, 0, ref::kBf16, expected_sum(ref::kBf16, {p0, p1})));
  // A retransmission for the done slot in another type is dropped too; in
  // its own type it is answered with the stored aggregate.
  before = snapshot(*eng);
  send(*eng, contribution16(s, 1, 0, ref::kFp16, p1, 3), sink);
  CHECK(counter_delta(before, snapshot(*eng)) ==
        "frames_in+1 panama_in+1 retrans_in+1 drop_type_mismatch+1 e0.retrans_in+1 e0.drop_type_mismatch+1");
  send(*eng, contribution16(s, 1, 0, ref::kBf16, p1, 3), sink);
  REQUIRE(sink.frames.size() == 2);
  CHECK(sink.frames[1] == sink.frames[0]);
  // A later sequence of the same entry may use another type.
  const auto q0 = random16(rng, ref::kFp16, 33), q1 = random16(rng, ref::kFp16, 33);
  send(*eng, contribution16(s, 0, 1, ref::kFp16, q0), sink);
  send(*eng, contribution16(s, 1, 1, ref::kFp16, q1), sink);
  REQUIRE(sink.frames.size() == 3);
  CHECK(sink.frames[2] == expected_frame(s, 1, ref::kFp16, expected_sum(ref::kFp16, {q0, q1})));
}

TEST_CASE("16-bit engine: a non-root engine sends its partial rounded, and answers a retransmission with it",
          "[engine][elem16]") {
  Rng rng(test_seed("engine 16-bit two levels"));
  for (uint8_t t : kTypes) {
    INFO(type_name(t));
    auto leaf = std::make_unique<SmallEngine>();
    auto root = std::make_unique<SmallEngine>();
    EntrySpec ls = entry(2, false);
    ls.out_child_id = 1;
    EntrySpec rs = entry(2, true);
    REQUIRE(commit_entry(*leaf, 0, ls) == regmap::kStatusOk);
    REQUIRE(commit_entry(*root, 0, rs) == regmap::kStatusOk);
    const uint32_t n = 50;
    const auto a = random16(rng, t, n), b = random16(rng, t, n), c = random16(rng, t, n);
    Sink up, down;
    send(*leaf, contribution16(ls, 0, 5, t, a), up);
    send(*leaf, contribution16(ls, 1, 5, t, b), up);
    REQUIRE(up.frames.size() == 1);
    const auto partial = expected_sum(t, {a, b});  // rounded once at the leaf
    CHECK(up.frames[0] == expected_frame(ls, 5, t, partial));
    send(*root, contribution16(rs, 0, 5, t, c), down);
    send(*root, up.frames[0], down);
    REQUIRE(down.frames.size() == 1);
    CHECK(down.frames[0] == expected_frame(rs, 5, t, expected_sum(t, {c, partial})));
    send(*leaf, contribution16(ls, 0, 5, t, a, 3), up);
    REQUIRE(up.frames.size() == 2);
    CHECK(up.frames[1] == expected_frame(ls, 5, t, partial, true));
  }
}

TEST_CASE("16-bit engine: lengths are counted in 2-byte elements", "[engine][elem16]") {
  Rng rng(test_seed("engine 16-bit lengths"));
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(2);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  Sink sink;
  const auto good = contribution16(s, 0, 0, ref::kFp16, random16(rng, ref::kFp16, 7));
  // IPv4 and UDP lengths of 4-byte elements: bad length.
  auto f = good;
  ref::put16(f, ref::kIpTotalLen, 20 + 8 + 22 + 4 * 7);
  ref::fix_ip_checksum(f);
  auto before = snapshot(*eng);
  send(*eng, f, sink);
  CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_bad_length+1");
  // One byte short, two bytes long.
  before = snapshot(*eng);
  send(*eng, std::vector<uint8_t>(good.begin(), good.end() - 1), sink);
  CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_truncated+1");
  f = good;
  f.push_back(0);
  f.push_back(0);
  before = snapshot(*eng);
  send(*eng, f, sink);
  CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_bad_length+1");
  // Element types 0 and 4..255 are no types.
  for (uint8_t bad : {0, 4, 255}) {
    f = good;
    f[ref::kElemType] = bad;
    before = snapshot(*eng);
    send(*eng, f, sink);
    CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_bad_elem_type+1");
  }
  CHECK(sink.frames.empty());
}

#if !defined(PANAMA_TEST_KERNEL_CSIM)
TEST_CASE("16-bit engine: an fp32-only engine drops 16-bit contributions as bad element type",
          "[engine][elem16]") {
  Rng rng(test_seed("engine fp32 only"));
  auto eng = std::make_unique<Engine<8, 64, 4, wire::kElemTypeMaskFloat32>>();
  CHECK(eng->reg_read(regmap::kElemTypes) == 0x2u);
  const EntrySpec s = entry(1);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  Sink sink;
  for (uint8_t t : kTypes) {
    const auto before = snapshot(*eng);
    send(*eng, contribution16(s, 0, 0, t, random16(rng, t, 5)), sink);
    CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_bad_elem_type+1");
  }
  CHECK(sink.frames.empty());
}
#endif
