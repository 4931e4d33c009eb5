// The numeric contract: fp32_add (hw/hls/include/panama/fp32_add.hpp) equals
// the host FPU's binary32 addition bit for bit (x86-64 SSE, no FTZ/DAZ), with
// every NaN result canonical (0x7FC00000).
//
// The default run checks every pair of special-value classes and 10^7 random
// pairs from several distributions. A long run of 10^9 pairs:
//   PANAMA_FP32_PAIRS=1e9 ./build/tests/hls/test_fp32_add
// (PANAMA_TEST_SEED=<n> replays a run; the seed is printed.)
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <vector>

#include "panama/fp32_add.hpp"
#include "wire/fp32_operands.hpp"
#include "wire/reference.hpp"

using namespace panama;
using namespace panama::test;

TEST_CASE("host FPU keeps subnormals (the reference for the numeric contract)", "[numeric]") {
  REQUIRE(ref::host_keeps_subnormals());
}

TEST_CASE("fp32_add matches the host FPU on every pair of special-value classes", "[numeric]") {
  Rng rng(test_seed("fp32 special pairs"));
  const auto v = fp32_special_values(rng);
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
    fp32_draw_pair(rng, static_cast<uint32_t>(i % kFp32Distributions), a, b);
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
