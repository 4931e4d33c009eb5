// The numeric contract: fp32_add (hw/hls/include/panama/fp32_add.hpp) equals
// the host FPU's binary32 addition bit for bit (x86-64 SSE, no FTZ/DAZ), with
// every NaN result canonical (0x7FC00000).
//
// The default run checks every pair of special-value classes and 10^7 random
// pairs from several distributions. A long run of 10^9 pairs:
//   PANAMA_FP32_PAIRS=1e9 ./build/tests/engine/test_fp32_add
// (PANAMA_SEED=<n> replays a run; the seed is printed.)
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

#include "panama/fp32_add.hpp"
#include "wire/reference.hpp"

using namespace panama;
using namespace panama::test;

namespace {

std::vector<uint32_t> special_values(Rng& rng) {
  std::vector<uint32_t> v = {
      0x00000000u, 0x80000000u,                            // +0, -0
      0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu,  // smallest / largest subnormal
      0x00000002u, 0x00400000u, 0x00400001u,               // subnormal halfway patterns
      0x00800000u, 0x80800000u, 0x00800001u,               // smallest normals
      0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7FFFFEu,               // largest normal
      0x7F000000u, 0x7F7FFFF0u, 0xFF000000u, 0x7EFFFFFFu,  // near overflow
      0x3F800000u, 0xBF800000u, 0x3F800001u, 0x33800000u,  // 1.0, -1.0, 1+ulp, 2^-24 (half ulp of 1)
      0x34000000u, 0x4B800000u, 0xCB7FFFFFu,               // ulp of 1, 2^24, -(2^24 - 1)
      0x7F800000u, 0xFF800000u,                            // +inf, -inf
      0x7FC00000u, 0x7FFFFFFFu,                            // quiet NaN
      0x7F800001u, 0x7FA00000u,                            // signalling NaN
      0xFFC00000u, 0xFF800001u,                            // negative NaN (quiet, signalling)
  };
  for (int i = 0; i < 6; ++i) {
    const uint32_t s = uniform(rng, 0, 1) << 31;
    v.push_back(s | uniform(rng, 1, 0x7FFFFF));                                  // random subnormal
    v.push_back(s | (uniform(rng, 1, 0xFE) << 23) | uniform(rng, 0, 0x7FFFFF));  // random normal
  }
  return v;
}

// One random operand pair from distribution `d`.
void draw_pair(Rng& rng, uint32_t d, uint32_t& a, uint32_t& b) {
  const uint64_t r = rng();
  const uint64_t r2 = rng();
  const uint32_t lo = static_cast<uint32_t>(r), hi = static_cast<uint32_t>(r >> 32);
  switch (d) {
    case 0:  // uniform bit patterns (covers NaN/inf/subnormal in proportion)
      a = lo;
      b = hi;
      break;
    case 1: {  // close exponents, often opposite signs: cancellation and renormalisation
      const uint32_t e = static_cast<uint32_t>(r2 % 254) + 1;
      const uint32_t de = static_cast<uint32_t>((r2 >> 8) % 5);
      const uint32_t eb = (r2 >> 16) & 1 ? (e + de > 254 ? 254 : e + de) : (e > de ? e - de : 1);
      a = (lo & 0x807FFFFFu) | (e << 23);
      b = (hi & 0x807FFFFFu) | (eb << 23);
      if ((r2 >> 20) % 4 == 0) b = (a ^ 0x80000000u) ^ static_cast<uint32_t>((r2 >> 24) & 0xF);
      break;
    }
    case 2: {  // subnormal-heavy: subnormals and the smallest normals
      const uint32_t ea = static_cast<uint32_t>(r2 % 4), eb = static_cast<uint32_t>((r2 >> 4) % 4);
      a = (lo & 0x807FFFFFu) | ((ea == 3 ? 0 : ea) << 23);
      b = (hi & 0x807FFFFFu) | ((eb == 3 ? 0 : eb) << 23);
      break;
    }
    case 3: {  // near overflow: the largest exponents, same sign mostly
      const uint32_t ea = 254 - static_cast<uint32_t>(r2 % 3),
                     eb = 254 - static_cast<uint32_t>((r2 >> 4) % 3);
      a = (lo & 0x807FFFFFu) | (ea << 23);
      b = (hi & 0x007FFFFFu) | (eb << 23) | ((r2 >> 8) % 4 == 0 ? (~a & 0x80000000u) : (a & 0x80000000u));
      break;
    }
    default: {  // wide exponent gaps: alignment shifts and sticky bits
      const uint32_t ea = static_cast<uint32_t>(r2 % 255), eb = static_cast<uint32_t>((r2 >> 8) % 255);
      a = (lo & 0x807FFFFFu) | (ea << 23);
      b = (hi & 0x807FFFFFu) | (eb << 23);
      break;
    }
  }
}

}  // namespace

TEST_CASE("host FPU keeps subnormals (the reference for the numeric contract)", "[numeric]") {
  REQUIRE(ref::host_keeps_subnormals());
}

TEST_CASE("fp32_add matches the host FPU on every pair of special-value classes", "[numeric]") {
  Rng rng(test_seed("fp32 special pairs"));
  const auto v = special_values(rng);
  for (uint32_t a : v) {
    for (uint32_t b : v) {
      INFO(std::hex << "a=0x" << a << " b=0x" << b);
      REQUIRE(fp32_add(a, b) == ref::host_add(a, b));
    }
  }
}

TEST_CASE("fp32_add: documented identities", "[numeric]") {
  CHECK(fp32_add(0x80000000u, 0x80000000u) == 0x80000000u);  // -0 + -0 = -0
  CHECK(fp32_add(0x00000000u, 0x80000000u) == 0x00000000u);  // +0 + -0 = +0
  CHECK(fp32_add(0x80000000u, 0x00000000u) == 0x00000000u);
  CHECK(fp32_add(0x3F800000u, 0xBF800000u) == 0x00000000u);    // x + -x = +0
  CHECK(fp32_add(0x7F800000u, 0xFF800000u) == kCanonicalNan);  // inf + -inf
  CHECK(fp32_add(0xFF800001u, 0x3F800000u) == kCanonicalNan);  // any NaN is canonical
  CHECK(fp32_add(0x7F7FFFFFu, 0x7F7FFFFFu) == 0x7F800000u);    // overflow to +inf
  CHECK(fp32_add(0x00000001u, 0x00000001u) == 0x00000002u);    // no flush to zero
  CHECK(fp32_add(0x3F800000u, 0x33800000u) == 0x3F800000u);    // 1 + half ulp: tie to even (down)
  CHECK(fp32_add(0x3F800001u, 0x33800000u) == 0x3F800002u);    // tie to even (up)
}

TEST_CASE("fp32_add matches the host FPU on random pairs from several distributions", "[numeric]") {
  const uint64_t seed = test_seed("fp32 random pairs");
  const uint64_t pairs = env_count("PANAMA_FP32_PAIRS", 10'000'000);
  const bool long_run = pairs > 100'000'000;
  std::printf("fp32 random pairs: %llu pairs (PANAMA_FP32_PAIRS)\n", static_cast<unsigned long long>(pairs));
  Rng rng(seed);
  const auto start = std::chrono::steady_clock::now();
  uint64_t mismatches = 0;
  for (uint64_t i = 0; i < pairs; ++i) {
    uint32_t a, b;
    draw_pair(rng, static_cast<uint32_t>(i % 5), a, b);
    const uint32_t got = fp32_add(a, b);
    const uint32_t expect = ref::host_add(a, b);
    if (got != expect) {
      if (++mismatches <= 10) {
        std::printf("mismatch: a=0x%08x b=0x%08x expect=0x%08x got=0x%08x\n", a, b, expect, got);
      }
    }
    if (long_run && (i + 1) % 100'000'000 == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("  %llu pairs checked, %llu mismatches, %.0f s\n", static_cast<unsigned long long>(i + 1),
                  static_cast<unsigned long long>(mismatches), s);
      std::fflush(stdout);
    }
  }
  INFO("seed " << seed << ", " << pairs << " pairs");
  CHECK(mismatches == 0);
}
