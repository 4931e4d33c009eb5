// The host fast path of the engine's element loops (fp32_add_run,
// fp32_load_run and fp32_store_run in hw/hls/include/panama/fp32_add.hpp) against the integer
// adder fp32_add, the numeric contract that HLS synthesizes.
//
// fp32_add_run must equal fp32_add element by element for every input and
// every position in a run (vector bodies and scalar tails), and it must fall
// back to the integer adder whenever MXCSR is not in its IEEE default state
// (FTZ, DAZ, directed rounding, unmasked exceptions). Randomized parts print
// their seed; PANAMA_TEST_SEED=<n> replays them, PANAMA_FP32_RUN_PAIRS=<n> sets the
// number of random pairs (default 10^7).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "panama/fp32_add.hpp"
#include "wire/fp32_operands.hpp"
#include "wire/seeded_rng.hpp"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

using namespace panama;
using namespace panama::test;

namespace {

void store_le(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

// Runs fp32_add_run on (acc, b) with the accumulator `acc_shift` elements and
// the payload `byte_shift` bytes past an aligned base, and counts the elements
// that differ from fp32_add; the guard words around both must stay untouched.
uint64_t run_mismatches(const std::vector<uint32_t>& acc, const std::vector<uint32_t>& b, uint32_t acc_shift,
                        uint32_t byte_shift) {
  const uint32_t n = static_cast<uint32_t>(acc.size());
  constexpr uint32_t kGuard = 0xDEADBEEFu;
  alignas(64) uint32_t acc_buf[64 + 8];
  alignas(64) uint8_t pay_buf[4 * 64 + 16];
  for (auto& w : acc_buf) w = kGuard;
  std::memset(pay_buf, 0xA5, sizeof pay_buf);
  for (uint32_t i = 0; i < n; ++i) {
    acc_buf[acc_shift + i] = acc[i];
    store_le(pay_buf + byte_shift + 4 * i, b[i]);
  }
  fp32_add_run(acc_buf + acc_shift, pay_buf + byte_shift, n);
  uint64_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t expect = fp32_add(acc[i], b[i]);
    if (acc_buf[acc_shift + i] != expect) {
      if (++bad <= 5) {
        std::printf("mismatch: n=%u lane=%u a=0x%08x b=0x%08x expect=0x%08x got=0x%08x\n", n, i, acc[i], b[i],
                    expect, acc_buf[acc_shift + i]);
      }
    }
  }
  for (uint32_t i = 0; i < acc_shift; ++i) bad += acc_buf[i] != kGuard;
  for (uint32_t i = acc_shift + n; i < 64 + 8; ++i) bad += acc_buf[i] != kGuard;
  return bad;
}

}  // namespace

TEST_CASE("fp32_add_run takes the hardware path where it exists", "[numeric][fp32_host]") {
#if PANAMA_FP32_SSE_PATH
  // The default floating-point environment of a thread is the IEEE one.
  REQUIRE(fp32_add_run_uses_hardware());
#else
  REQUIRE_FALSE(fp32_add_run_uses_hardware());
  WARN("this build has no hardware path: only the integer loop is checked");
#endif
}

TEST_CASE("fp32_add_run equals fp32_add for every special-value pair at every lane and run length",
          "[numeric][fp32_host]") {
  Rng rng(test_seed("fp32 run special pairs"));
  const auto v = fp32_special_values(rng);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  for (uint32_t a : v) {
    for (uint32_t b : v) pairs.emplace_back(a, b);
  }
  uint64_t bad = 0, checked = 0;
  for (uint32_t n = 1; n <= 40; ++n) {
    // Rotation r puts pair k at lane (k + r) % n of its run: every pair
    // visits every lane; alignments vary with n and r.
    for (uint32_t r = 0; r < n; ++r) {
      std::vector<uint32_t> acc(n), b(n);
      const size_t total = pairs.size() + r;
      for (size_t start = 0; start < total; start += n) {
        for (uint32_t lane = 0; lane < n; ++lane) {
          const size_t k = start + lane;
          const auto& p = (k >= r && k - r < pairs.size()) ? pairs[k - r] : pairs[(k * 7) % pairs.size()];
          acc[lane] = p.first;
          b[lane] = p.second;
        }
        bad += run_mismatches(acc, b, (n + r) % 4, (start / n + r) % 4);
        checked += n;
      }
    }
  }
  INFO(checked << " elements checked");
  REQUIRE(checked > 40 * pairs.size());
  REQUIRE(bad == 0);
}

TEST_CASE("fp32_add_run of length 0 touches nothing", "[numeric][fp32_host]") {
  uint32_t acc[2] = {0x3F800000u, 0x7F800001u};
  const uint8_t payload[8] = {0, 0, 0x80, 0x3F, 1, 0, 0x80, 0x7F};
  fp32_add_run(acc, payload, 0);
  CHECK(acc[0] == 0x3F800000u);
  CHECK(acc[1] == 0x7F800001u);
  fp32_add_run(acc, payload, 1);
  CHECK(acc[0] == 0x40000000u);  // 1 + 1 = 2
  CHECK(acc[1] == 0x7F800001u);
}

TEST_CASE("fp32_add_run equals fp32_add on random pairs from several distributions", "[numeric][fp32_host]") {
  const uint64_t seed = test_seed("fp32 run random pairs");
  const uint64_t pairs = env_count("PANAMA_FP32_RUN_PAIRS", 10'000'000);
  Rng rng(seed);
  std::vector<uint32_t> acc, expect;
  std::vector<uint8_t> payload;
  uint64_t done = 0, bad = 0;
  while (done < pairs) {
    // Run lengths up to a jumbo payload's worth, mostly short.
    uint32_t n = uniform(rng, 0, 7) == 0 ? uniform(rng, 1, 2288) : uniform(rng, 1, 64);
    if (n > pairs - done) n = static_cast<uint32_t>(pairs - done);
    const uint32_t dist = uniform(rng, 0, 6);  // 6: every lane from its own distribution
    acc.resize(n);
    expect.resize(n);
    payload.resize(4 * static_cast<size_t>(n) + 3);
    const uint32_t byte_shift = uniform(rng, 0, 3);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t a, b;
      fp32_draw_pair(rng, dist == 6 ? uniform(rng, 0, 5) : dist, a, b);
      acc[i] = a;
      store_le(payload.data() + byte_shift + 4 * i, b);
      expect[i] = fp32_add(a, b);
    }
    fp32_add_run(acc.data(), payload.data() + byte_shift, n);
    for (uint32_t i = 0; i < n; ++i) {
      if (acc[i] != expect[i] && ++bad <= 10) {
        std::printf("mismatch: n=%u lane=%u expect=0x%08x got=0x%08x\n", n, i, expect[i], acc[i]);
      }
    }
    done += n;
  }
  INFO("seed " << seed << ", " << pairs << " pairs");
  CHECK(bad == 0);
}

TEST_CASE("fp32_load_run stores payload elements bit for bit", "[numeric][fp32_host]") {
  Rng rng(test_seed("fp32 load run"));
  for (uint32_t n : {0u, 1u, 3u, 4u, 17u, 64u, 2288u}) {
    std::vector<uint8_t> payload(4 * static_cast<size_t>(n) + 1);
    for (auto& byte : payload) byte = static_cast<uint8_t>(uniform(rng, 0, 255));
    std::vector<uint32_t> dst(n + 1, 0x12345678u);
    fp32_load_run(dst.data(), payload.data() + 1, n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint8_t* p = payload.data() + 1 + 4 * i;
      const uint32_t expect =
          uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
      REQUIRE(dst[i] == expect);  // NaN payloads included: not canonicalised
    }
    REQUIRE(dst[n] == 0x12345678u);
  }
}

TEST_CASE("fp32_store_run writes elements little-endian, bit for bit", "[numeric][fp32_host]") {
  Rng rng(test_seed("fp32 store run"));
  for (uint32_t n : {0u, 1u, 3u, 4u, 17u, 64u, 2288u}) {
    std::vector<uint32_t> src(n);
    for (auto& v : src) v = static_cast<uint32_t>(rng());
    std::vector<uint8_t> out(4 * static_cast<size_t>(n) + 2, 0xA5);
    fp32_store_run(out.data() + 1, src.data(), n);
    REQUIRE(out[0] == 0xA5);
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t b = 0; b < 4; ++b) REQUIRE(out[1 + 4 * i + b] == static_cast<uint8_t>(src[i] >> (8 * b)));
    }
    REQUIRE(out.back() == 0xA5);
  }
}

#if defined(__x86_64__)
namespace {

constexpr uint32_t kFtz = 1u << 15, kDaz = 1u << 6, kRoundTowardZero = 3u << 13, kInvalidMask = 1u << 7;
constexpr uint32_t kAllExceptionMasks = 0x3Fu << 7, kExceptionFlags = 0x3Fu;

// Subnormal sums and ones whose round-to-nearest result differs from the
// other rounding modes and from flush-to-zero.
const std::vector<uint32_t> kFallbackA = {0x00000001u, 0x007FFFFFu, 0x80400001u, 0x00000003u, 0x3F800000u,
                                          0x3F800000u, 0xBF800001u, 0x00800000u, 0x00000001u};
const std::vector<uint32_t> kFallbackB = {0x00000001u, 0x00000001u, 0x00000002u, 0x807FFFFFu, 0x33C00000u,
                                          0x33800001u, 0xB3C00000u, 0x80000001u, 0x00800000u};

// One SSE addition in the current MXCSR state (used only to show that the
// hardware really differs from the contract in that state).
uint32_t sse_add(uint32_t a, uint32_t b) {
  const __m128 s = _mm_add_ss(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(a))),
                              _mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(b))));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_castps_si128(s)));
}

// Runs fp32_add_run over the fallback inputs, vector body and tail both, with
// MXCSR = `csr`; returns the results and whether the hardware path would run
// and how many lanes the hardware itself gets wrong there. MXCSR is restored
// before returning.
struct FallbackResult {
  std::vector<uint32_t> got;
  bool hardware = true;
  uint32_t hardware_differs = 0;
  uint32_t csr_after = 0;
};

FallbackResult run_with_csr(uint32_t csr) {
  const size_t n = 2 * kFallbackA.size() + 1;  // a body of 8 lanes and a tail
  FallbackResult r;
  r.got.resize(n);
  std::vector<uint8_t> payload(4 * n);
  for (size_t i = 0; i < n; ++i) {
    r.got[i] = kFallbackA[i % kFallbackA.size()];
    store_le(payload.data() + 4 * i, kFallbackB[i % kFallbackB.size()]);
  }
  const uint32_t saved = _mm_getcsr();
  _mm_setcsr(csr);
  r.hardware = fp32_add_run_uses_hardware();
  fp32_add_run(r.got.data(), payload.data(), static_cast<uint32_t>(n));
  r.csr_after = _mm_getcsr();
  if ((csr & kAllExceptionMasks) == kAllExceptionMasks) {
    for (size_t i = 0; i < kFallbackA.size(); ++i) {
      r.hardware_differs += sse_add(kFallbackA[i], kFallbackB[i]) != fp32_add(kFallbackA[i], kFallbackB[i]);
    }
  }
  _mm_setcsr(saved);
  return r;
}

void check_matches_reference(const FallbackResult& r) {
  for (size_t i = 0; i < r.got.size(); ++i) {
    const uint32_t a = kFallbackA[i % kFallbackA.size()], b = kFallbackB[i % kFallbackB.size()];
    INFO(std::hex << "lane " << i << " a=0x" << a << " b=0x" << b);
    CHECK(r.got[i] == fp32_add(a, b));
  }
}

}  // namespace

TEST_CASE("fp32_add_run falls back to the integer adder when MXCSR is not IEEE default",
          "[numeric][fp32_host]") {
  // The IEEE default state (all exceptions masked, round to nearest, no
  // FTZ/DAZ) rather than the process's own: a -ffast-math program starts
  // with FTZ/DAZ set.
  const uint32_t base = kAllExceptionMasks;
  const uint32_t process_control = _mm_getcsr() & ~kExceptionFlags;

  SECTION("flush-to-zero and denormals-are-zero") {
    const FallbackResult r = run_with_csr(base | kFtz | kDaz);
    CHECK_FALSE(r.hardware);
    CHECK(r.hardware_differs > 0);  // the state would corrupt subnormal sums
    check_matches_reference(r);
  }
  SECTION("flush-to-zero only") {
    const FallbackResult r = run_with_csr(base | kFtz);
    CHECK_FALSE(r.hardware);
    CHECK(r.hardware_differs > 0);
    check_matches_reference(r);
  }
  SECTION("denormals-are-zero only") {
    const FallbackResult r = run_with_csr(base | kDaz);
    CHECK_FALSE(r.hardware);
    CHECK(r.hardware_differs > 0);
    check_matches_reference(r);
  }
  SECTION("rounding toward zero") {
    const FallbackResult r = run_with_csr((base & ~kRoundTowardZero) | kRoundTowardZero);
    CHECK_FALSE(r.hardware);
    CHECK(r.hardware_differs > 0);
    check_matches_reference(r);
  }
  SECTION("rounding up and down") {
    for (uint32_t rc : {1u << 13, 2u << 13}) {
      const FallbackResult r = run_with_csr((base & ~kRoundTowardZero) | rc);
      CHECK_FALSE(r.hardware);
      CHECK(r.hardware_differs > 0);
      check_matches_reference(r);
    }
  }
  SECTION("unmasked invalid-operation exception: no trap on signalling NaN") {
    // The integer adder never traps; SSE would raise SIGFPE on sNaN here.
    uint32_t acc[5] = {0x7F800001u, 0x7F800000u, 0x3F800000u, 0xFF800001u, 0x00000001u};
    uint8_t payload[20];
    const uint32_t b[5] = {0x3F800000u, 0xFF800000u, 0x7FA00000u, 0x00000000u, 0x00000001u};
    for (int i = 0; i < 5; ++i) store_le(payload + 4 * i, b[i]);
    const uint32_t saved = _mm_getcsr();
    _mm_setcsr(base & ~kInvalidMask);
    const bool hardware = fp32_add_run_uses_hardware();
    fp32_add_run(acc, payload, 5);
    _mm_setcsr(saved);
    CHECK_FALSE(hardware);
    CHECK(acc[0] == kCanonicalNan);
    CHECK(acc[1] == kCanonicalNan);
    CHECK(acc[2] == kCanonicalNan);
    CHECK(acc[3] == kCanonicalNan);
    CHECK(acc[4] == 0x00000002u);
  }
  SECTION("IEEE default: hardware path, and the caller's exception flags are left as they were") {
    const FallbackResult r = run_with_csr(base);
#if PANAMA_FP32_SSE_PATH
    CHECK(r.hardware);
#endif
    CHECK(r.hardware_differs == 0);
    CHECK(r.csr_after == base);  // inexact/underflow/denormal flags raised inside are not left behind
    check_matches_reference(r);
  }
  CHECK((_mm_getcsr() & ~kExceptionFlags) == process_control);  // every section restored MXCSR
}
#endif
