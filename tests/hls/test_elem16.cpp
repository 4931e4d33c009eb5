// The 16-bit element types against the fp32 accumulator (elem16.hpp):
// widening and rounding against tests/wire/reference.hpp (double arithmetic
// and a search over the type's ordered values, written from
// docs/protocol.md §7), on every special class; then the payload runs'
// vector path against the integer path that HLS synthesizes, for every run
// length and alignment and with MXCSR out of its IEEE defaults. Randomized
// parts print their seed; PANAMA_TEST_SEED=<n> replays them.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "panama/elem16.hpp"
#include "wire/reference.hpp"
#include "wire/seeded_rng.hpp"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

using namespace panama;
using namespace panama::test;

namespace {

constexpr uint8_t kTypes[] = {ref::kBf16, ref::kFp16};

const char* type_name(uint8_t t) {
  return t == ref::kBf16 ? "bf16" : "fp16";
}

bool is_nan16(uint8_t t, uint16_t h) {
  return t == ref::kBf16 ? (h & 0x7FFFu) > 0x7F80u : (h & 0x7FFFu) > 0x7C00u;
}

uint16_t round_under_test(uint8_t t, uint32_t x) {
  return t == ref::kBf16 ? fp32_to_bf16(x) : fp32_to_fp16(x);
}

uint32_t widen_under_test(uint8_t t, uint16_t h) {
  return t == ref::kBf16 ? bf16_to_fp32(h) : fp16_to_fp32(h);
}

// Rounds x both ways; returns false (and prints) on a difference.
bool check_round(uint8_t t, uint32_t x, uint64_t& failures) {
  const uint16_t expect = ref::round16(t, x);
  const uint16_t got = round_under_test(t, x);
  if (got == expect) return true;
  if (++failures <= 8) {
    std::printf("%s round of 0x%08x: expected 0x%04x, got 0x%04x\n", type_name(t), x, expect, got);
  }
  return false;
}

}  // namespace

TEST_CASE("widening every 16-bit pattern to fp32 is exact", "[elem16]") {
  REQUIRE(ref::host_keeps_subnormals());
  for (uint8_t t : kTypes) {
    uint64_t bad = 0;
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
      const uint32_t got = widen_under_test(t, static_cast<uint16_t>(h));
      const double v = ref::value16(t, static_cast<uint16_t>(h));
      const bool ok = std::isnan(v) ? std::isnan(ref::value(got)) : got == ref::bits(static_cast<float>(v));
      if (!ok && ++bad <= 8) std::printf("%s widen 0x%04x: got 0x%08x\n", type_name(t), h, got);
    }
    INFO(type_name(t));
    CHECK(bad == 0);
  }
}

TEST_CASE("every 16-bit value survives widening and rounding back; NaNs become canonical", "[elem16]") {
  for (uint8_t t : kTypes) {
    uint64_t bad = 0;
    for (uint32_t h = 0; h <= 0xFFFF; ++h) {
      const uint16_t back = round_under_test(t, widen_under_test(t, static_cast<uint16_t>(h)));
      const uint16_t expect = is_nan16(t, static_cast<uint16_t>(h))
                                  ? (t == ref::kBf16 ? kBf16CanonicalNan : kFp16CanonicalNan)
                                  : static_cast<uint16_t>(h);
      if (back != expect && ++bad <= 8) std::printf("%s 0x%04x came back as 0x%04x\n", type_name(t), h, back);
    }
    INFO(type_name(t));
    CHECK(bad == 0);
  }
}

TEST_CASE("rounding fp32 to 16 bits: special classes", "[elem16]") {
  uint64_t failures = 0;
  for (uint8_t t : kTypes) {
    INFO(type_name(t));
    // Zeros, fp32 subnormals, infinities, NaNs of both signs and payloads.
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t x : {0u, 1u, 0x7FFFFFu, 0x400000u, 0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu,
                         0x3F800000u, 0x7F7FFFFFu, 0x00800000u}) {
        check_round(t, sign | x, failures);
      }
    }
    CHECK(round_under_test(t, 0xFFC00000u) == (t == ref::kBf16 ? 0x7FC0u : 0x7E00u));  // sign dropped
    CHECK(round_under_test(t, 0x80000000u) == 0x8000u);                                // -0 stays -0
  }
  // fp16 by name: largest finite, its rounding boundary, overflow, the
  // smallest subnormal and half of it (a tie to even, zero), ties in the
  // normal range.
  CHECK(fp32_to_fp16(ref::bits(65504.0f)) == 0x7BFFu);
  CHECK(fp32_to_fp16(ref::bits(65519.996f)) == 0x7BFFu);
  CHECK(fp32_to_fp16(ref::bits(65520.0f)) == 0x7C00u);  // the tie rounds to the even step: infinity
  CHECK(fp32_to_fp16(ref::bits(-1e9f)) == 0xFC00u);
  CHECK(fp32_to_fp16(ref::bits(std::ldexp(1.0f, -24))) == 0x0001u);
  CHECK(fp32_to_fp16(ref::bits(std::ldexp(1.0f, -25))) == 0x0000u);
  CHECK(fp32_to_fp16(ref::bits(std::ldexp(1.5f, -25))) == 0x0001u);
  CHECK(fp32_to_fp16(ref::bits(std::ldexp(3.0f, -25))) == 0x0002u);         // 1.5 units: tie to even 2
  CHECK(fp32_to_fp16(ref::bits(1.0f + std::ldexp(1.0f, -11))) == 0x3C00u);  // tie, even is 1.0
  CHECK(fp32_to_fp16(ref::bits(1.0f + 3 * std::ldexp(1.0f, -11))) == 0x3C02u);
  // bf16 by name.
  CHECK(fp32_to_bf16(0x3F808000u) == 0x3F80u);  // tie, even
  CHECK(fp32_to_bf16(0x3F818000u) == 0x3F82u);  // tie, odd below: up
  CHECK(fp32_to_bf16(0x7F7FFFFFu) == 0x7F80u);  // largest fp32 overflows bf16
  CHECK(fp32_to_bf16(0x7F7F7FFFu) == 0x7F7Fu);
  CHECK(fp32_to_bf16(0x00008000u) == 0x0000u);  // subnormal tie to even zero
  CHECK(fp32_to_bf16(0x00018000u) == 0x0002u);
  CHECK(failures == 0);
}

TEST_CASE("rounding fp32 to bf16: every high half with each low-half class", "[elem16]") {
  uint64_t failures = 0;
  for (uint32_t hi = 0; hi <= 0xFFFF; ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x4000u}) {
      check_round(ref::kBf16, (hi << 16) | lo, failures);
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("rounding fp32 to fp16: every exponent near the type's range with boundary mantissas", "[elem16]") {
  uint64_t failures = 0;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t e = 95; e <= 150; ++e) {  // below half the smallest subnormal .. past the largest finite
      for (uint32_t m_hi = 0; m_hi < 1024; ++m_hi) {
        // The discarded bits at each possible rounding position: exactly half,
        // just below, just above, all ones, zero.
        for (uint32_t shift = 13; shift <= 24; ++shift) {
          const uint32_t half = 1u << (shift - 1);
          for (uint32_t low : {0u, half - 1, half, half + 1, (1u << shift) - 1}) {
            const uint32_t m =
                ((m_hi << 13) & ~((1u << shift) - 1)) | (low & 0x7FFFFFu & ((1u << shift) - 1));
            check_round(ref::kFp16, sign | (e << 23) | (m & 0x7FFFFFu), failures);
          }
        }
      }
    }
  }
  CHECK(failures == 0);
}

TEST_CASE("rounding fp32 to 16 bits: random values", "[elem16]") {
  Rng rng(test_seed("test_elem16 random rounding"));
  uint64_t failures = 0;
  for (uint32_t i = 0; i < 400000; ++i) {
    const uint32_t x = static_cast<uint32_t>(rng());
    for (uint8_t t : kTypes) check_round(t, x, failures);
    const uint32_t y = ref::random_element(rng);
    for (uint8_t t : kTypes) check_round(t, y, failures);
  }
  CHECK(failures == 0);
}

// ------------------------------------------------------------ runs

namespace {

// The runs (vector path where the CPU and MXCSR allow it) against the integer
// runs, with the accumulator and the payload at every offset and length up
// to 70 (vector bodies of 16 and 8 and scalar tails). Guard words around
// both must stay untouched.
uint64_t run_mismatches(uint8_t t, Rng& rng, uint32_t n, uint32_t acc_shift, uint32_t byte_shift) {
  constexpr uint32_t kGuard = 0xDEADBEEFu;
  std::vector<uint32_t> acc(n + 16, kGuard), acc_ref(n + 16, kGuard), widened(n + 16, kGuard),
      widened_ref(n + 16, kGuard);
  std::vector<uint8_t> pay(2 * n + 32, 0xA5), out(2 * n + 32, 0x5A), out_ref(2 * n + 32, 0x5A);
  for (uint32_t i = 0; i < n; ++i) {
    const uint16_t h = ref::random_element16(rng, t);
    pay[byte_shift + 2 * i] = static_cast<uint8_t>(h);
    pay[byte_shift + 2 * i + 1] = static_cast<uint8_t>(h >> 8);
    acc[acc_shift + i] = acc_ref[acc_shift + i] = ref::random_element(rng);
  }
  elem16_add_run(t, acc.data() + acc_shift, pay.data() + byte_shift, n);
  elem16_add_run_integer(t, acc_ref.data() + acc_shift, pay.data() + byte_shift, n);
  elem16_load_run(t, widened.data() + acc_shift, pay.data() + byte_shift, n);
  elem16_load_run_integer(t, widened_ref.data() + acc_shift, pay.data() + byte_shift, n);
  elem16_store_run(t, out.data() + byte_shift, acc.data() + acc_shift, n);
  elem16_store_run_integer(t, out_ref.data() + byte_shift, acc.data() + acc_shift, n);
  uint64_t bad = 0;
  for (size_t i = 0; i < acc.size(); ++i) {
    const bool nan_pair = std::isnan(ref::value(widened[i])) && std::isnan(ref::value(widened_ref[i]));
    if (acc[i] != acc_ref[i] || (widened[i] != widened_ref[i] && !nan_pair)) ++bad;
  }
  if (out != out_ref) ++bad;
  // And the integer add run is fp32_add of the widened element, by definition.
  return bad;
}

}  // namespace

TEST_CASE("16-bit runs: vector path equals the integer path for every length and alignment", "[elem16]") {
  Rng rng(test_seed("test_elem16 runs"));
  std::printf("elem16 runs use the vector path here: %s\n", elem16_runs_use_hardware() ? "yes" : "no");
  for (uint8_t t : kTypes) {
    uint64_t bad = 0;
    for (uint32_t n = 0; n <= 70; ++n) {
      for (uint32_t acc_shift = 0; acc_shift < 4; ++acc_shift) {
        for (uint32_t byte_shift = 0; byte_shift < 4; ++byte_shift) {
          bad += run_mismatches(t, rng, n, acc_shift, byte_shift);
        }
      }
    }
    INFO(type_name(t));
    CHECK(bad == 0);
  }
}

TEST_CASE("16-bit runs: the integer add run is fp32_add of the widened element", "[elem16]") {
  Rng rng(test_seed("test_elem16 add run"));
  for (uint8_t t : kTypes) {
    std::vector<uint32_t> acc(64), expect(64);
    std::vector<uint8_t> pay(128);
    for (uint32_t i = 0; i < 64; ++i) {
      const uint16_t h = ref::random_element16(rng, t);
      pay[2 * i] = static_cast<uint8_t>(h);
      pay[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      acc[i] = ref::random_element(rng);
      expect[i] = ref::host_add(acc[i], ref::widen16(t, h));
    }
    elem16_add_run(t, acc.data(), pay.data(), 64);
    INFO(type_name(t));
    CHECK(acc == expect);
  }
}

#if defined(__x86_64__)
TEST_CASE("16-bit runs: MXCSR out of its defaults takes the integer path, and is left as it was",
          "[elem16]") {
  Rng rng(test_seed("test_elem16 mxcsr"));
  const uint32_t saved = _mm_getcsr();
  // FTZ + DAZ would flush subnormals in a vector addition or conversion.
  for (uint32_t csr : {saved | 0x8040u, (saved & ~0x6000u) | 0x2000u /* round down */}) {
    for (uint8_t t : kTypes) {
      std::vector<uint32_t> acc(40), acc_ref(40);
      std::vector<uint8_t> pay(80), out(80), out_ref(80);
      for (uint32_t i = 0; i < 40; ++i) {
        const uint16_t h =
            static_cast<uint16_t>(i % 2 ? 0x0001u : ref::random_element16(rng, t));  // subnormals
        pay[2 * i] = static_cast<uint8_t>(h);
        pay[2 * i + 1] = static_cast<uint8_t>(h >> 8);
        acc[i] = acc_ref[i] = i % 3 ? 0x00000001u : ref::random_element(rng);
      }
      elem16_add_run_integer(t, acc_ref.data(), pay.data(), 40);
      elem16_store_run_integer(t, out_ref.data(), acc_ref.data(), 40);
      _mm_setcsr(csr);
      CHECK_FALSE(elem16_runs_use_hardware());
      elem16_add_run(t, acc.data(), pay.data(), 40);
      elem16_store_run(t, out.data(), acc.data(), 40);
      const uint32_t after = _mm_getcsr();
      _mm_setcsr(saved);
      CHECK(after == csr);
      CHECK(acc == acc_ref);
      CHECK(out == out_ref);
    }
  }
}
#endif
