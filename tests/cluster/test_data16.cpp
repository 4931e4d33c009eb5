// The virtual cluster's 16-bit test data and reference (test_data.hpp): its
// rounding, written independently of the engine's conversions, agrees with
// the engine's reference (hw/hls elem16.hpp) on every 16-bit pattern and on
// random and boundary fp32 values; the generated elements are exact in their
// type and their sums over 128 workers exact in fp32, and most sums of a few
// workers need rounding (ties included), so the cluster's check is not
// trivial; with several leaves the reference rounds each leaf's sum first.
//
// Seed: PANAMA_TEST_SEED replays the random values (tests/wire/seeded_rng.hpp).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "panama/cluster/test_data.hpp"
#include "panama/elem16.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::cluster;

namespace {

constexpr wire::ElemType kTypes[] = {wire::ElemType::kBfloat16, wire::ElemType::kFloat16};

float f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t widen(uint16_t h, wire::ElemType t) {
  return t == wire::ElemType::kBfloat16 ? bf16_to_fp32(h) : fp16_to_fp32(h);
}

uint16_t narrow(uint32_t x, wire::ElemType t) {
  return t == wire::ElemType::kBfloat16 ? fp32_to_bf16(x) : fp32_to_fp16(x);
}

}  // namespace

TEST_CASE("cluster data16: value16 and round16 agree with the engine's conversions on every pattern") {
  for (wire::ElemType t : kTypes) {
    INFO(dtype_name(t));
    size_t wrong = 0;
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const double v = value16(static_cast<uint16_t>(h), t);
      const float w = f32(widen(static_cast<uint16_t>(h), t));
      if (std::isnan(w)) {
        wrong += !std::isnan(v);
        wrong += round16(v, t) != (t == wire::ElemType::kBfloat16 ? 0x7FC0 : 0x7E00);
        continue;
      }
      wrong += v != static_cast<double>(w) || std::signbit(v) != std::signbit(w);
      wrong += round16(v, t) != h;  // exact values come back unchanged
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE(
    "cluster data16: round16 rounds fp32 values as the engine does (nearest even, overflow, subnormals)") {
  const uint64_t seed = test::test_seed("cluster data16 round16");
  test::Rng rng(seed);
  for (wire::ElemType t : kTypes) {
    INFO(dtype_name(t));
    std::vector<uint32_t> xs;
    for (int i = 0; i < 200000; ++i) xs.push_back(static_cast<uint32_t>(rng()));
    // Around every boundary of the type: ties, half a step below and above,
    // the overflow threshold, the subnormal range.
    for (uint32_t h = 0; h < 0x10000; h += 7) {
      const uint32_t w = widen(static_cast<uint16_t>(h), t);
      for (int32_t d = -3; d <= 3; ++d) xs.push_back(w + static_cast<uint32_t>(d));
      xs.push_back(w + (t == wire::ElemType::kBfloat16 ? 0x8000u : 0x1000u));  // halfway (normal fp16)
    }
    for (uint32_t x : {0x477FF000u, 0x477FEFFFu, 0x477FE000u, 0x7F7F8000u, 0x7F7F7FFFu, 0x33000000u,
                       0x33000001u, 0x00000001u, 0x80000000u}) {
      xs.push_back(x);
      xs.push_back(x | 0x80000000u);
    }
    size_t wrong = 0;
    for (uint32_t x : xs) {
      const float f = f32(x);
      const uint16_t want = narrow(x, t);
      const uint16_t got = round16(static_cast<double>(f), t);
      if (got != want && wrong++ < 5)
        UNSCOPED_INFO(std::hex << "0x" << x << ": got 0x" << got << ", want 0x" << want);
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("cluster data16: elements are exact in their type, sums exact in fp32, most of them rounded") {
  for (wire::ElemType t : kTypes) {
    INFO(dtype_name(t));
    const uint32_t world = kMaxExactWorkers;
    size_t inexact = 0, not_fp32 = 0, rounded = 0, ties = 0, bits_differ = 0;
    const size_t n = 4000;
    for (size_t k = 0; k < n; ++k) {
      double sum = 0, sum4 = 0;
      for (uint32_t r = 0; r < world; ++r) {
        const double x = exact_value16(stream_base(7, 0, r), k, t);
        inexact += value16(round16(x, t), t) != x;
        bits_differ += exact_bits16(x, t) != round16(x, t);  // fill_tensor16's fast conversion
        sum += x;
        if (r < 4) sum4 += x;
        not_fp32 += static_cast<double>(static_cast<float>(sum)) != sum;  // every partial sum
      }
      Rounding how = Rounding::kExact;
      round16(sum4, t, &how);
      rounded += how != Rounding::kExact;
      ties += how == Rounding::kTie;
      CHECK(round16(sum, t) != (t == wire::ElemType::kBfloat16 ? 0x7F80 : 0x7C00));  // no overflow
    }
    CHECK(inexact == 0);
    CHECK(bits_differ == 0);
    CHECK(not_fp32 == 0);
    // Four workers: most sums need rounding, a fair share of them are ties.
    CHECK(rounded > n / 2);
    CHECK(ties > n / 20);
  }
}

TEST_CASE("cluster data16: the check finds wrong bits; with several leaves it rounds each leaf's sum first") {
  const wire::ElemType t = wire::ElemType::kBfloat16;
  const size_t n = 2000;
  const uint32_t world = 4;
  // What one PSwitch returns: round(exact sum).
  std::vector<uint16_t> one(n), two(n);
  for (size_t k = 0; k < n; ++k) {
    double s = 0, leaf0 = 0, leaf1 = 0;
    for (uint32_t r = 0; r < world; ++r) {
      const double x = exact_value16(stream_base(3, 1, r), k, t);
      s += x;
      (r % 2 == 0 ? leaf0 : leaf1) += x;
    }
    one[k] = round16(s, t);
    two[k] = round16(value16(round16(leaf0, t), t) + value16(round16(leaf1, t), t), t);
  }
  Check16 c = check_tensor16(one.data(), n, t, 3, 1, world, {});
  CHECK(c.mismatches == 0);
  CHECK(c.rounded > 0);
  c = check_tensor16(two.data(), n, t, 3, 1, world, {0, 1, 0, 1});
  CHECK(c.mismatches == 0);
  // The two references differ somewhere: a leaf's rounding is visible.
  CHECK(check_tensor16(two.data(), n, t, 3, 1, world, {}).mismatches > 0);
  std::vector<uint16_t> bad = one;
  bad[17] ^= 1;
  c = check_tensor16(bad.data(), n, t, 3, 1, world, {});
  CHECK(c.mismatches == 1);
  CHECK(c.first == 17);
  // fill_tensor16 holds the same elements as patterns.
  std::vector<uint16_t> data(n);
  fill_tensor16(data.data(), n, t, 3, 1, 2);
  for (size_t k = 0; k < n; ++k) REQUIRE(value16(data[k], t) == exact_value16(stream_base(3, 1, 2), k, t));
}

TEST_CASE("cluster data16: over chain trees each leaf rounds in turn, in its tree's chain order") {
  const wire::ElemType t = wire::ElemType::kBfloat16;
  const size_t n = 3000, epp = 100;
  const uint32_t world = 6;
  const std::vector<uint32_t> leaf_of_rank = {0, 1, 2, 0, 1, 2};
  // Two trees: leaves 0, 1, 2 and 1, 2, 0; two allreduces (elements 0-1049
  // and 1050-2999), each cut into chunks from its start, chunk c on tree c mod 2.
  const std::vector<std::vector<uint32_t>> chains = {{0, 1, 2}, {1, 2, 0}};
  const std::vector<std::pair<size_t, size_t>> segments = {{0, 1050}, {1050, 1950}};
  std::vector<uint16_t> want(n), got(n);
  const Check16 c =
      reference_tensor16_chain(want.data(), n, t, 5, 2, world, leaf_of_rank, chains, segments, epp);
  size_t differs_from_spine = 0;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = k < 1050 ? k : k - 1050;
    const std::vector<uint32_t>& chain = chains[(i / epp) % 2];
    double leaf_sum[3] = {0, 0, 0};
    for (uint32_t r = 0; r < world; ++r)
      leaf_sum[leaf_of_rank[r]] += exact_value16(stream_base(5, 2, r), k, t);
    // Computed here as the chain runs: a partial in bf16 from leaf to leaf.
    uint16_t p = round16(leaf_sum[chain[0]], t);
    p = round16(value16(p, t) + leaf_sum[chain[1]], t);
    p = round16(value16(p, t) + leaf_sum[chain[2]], t);
    got[k] = p;
    const uint16_t spine = round16(value16(round16(leaf_sum[0], t), t) + value16(round16(leaf_sum[1], t), t) +
                                       value16(round16(leaf_sum[2], t), t),
                                   t);
    differs_from_spine += spine != p;
  }
  CHECK(got == want);
  CHECK(c.rounded > n / 4);
  // The order and the roundings are visible: a spine tree's reference differs.
  CHECK(differs_from_spine > 0);
  std::vector<uint16_t> spine(n);
  reference_tensor16(spine.data(), n, t, 5, 2, world, leaf_of_rank);
  CHECK(spine != want);
  // Swapping the trees' chains changes the reference too.
  std::vector<uint16_t> swapped(n);
  reference_tensor16_chain(swapped.data(), n, t, 5, 2, world, leaf_of_rank, {{1, 2, 0}, {0, 1, 2}}, segments,
                           epp);
  CHECK(swapped != want);
}
