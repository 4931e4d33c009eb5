// The RTL fp32 adder (hw/rtl/panama_fp32_add16.sv, Verilated) against the
// host FPU: every pair of special-value classes, then random pairs (eight
// classes: any bit patterns, nearby exponents, subnormal and tiny operands,
// opposite signs of one magnitude, rounding ties, a subnormal against small
// exponents, exponent gaps around the alignment limit, cancellation at
// exponent difference 1; both operand orders).
// PANAMA_FP32_PAIRS sets the number of random pairs (default 10^6; the long
// mode runs 10^9), PANAMA_TEST_SEED the seed (printed).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "Vpanama_fp32_add16.h"
#include "verilated.h"

namespace {

constexpr uint32_t kLanes = 16;
constexpr uint32_t kLatency = 2;  // clocks from operands to sum (panama_fp32_add)

// The numeric contract: host binary32 addition, every NaN canonical.
uint32_t host_add(uint32_t a, uint32_t b) {
  float fa, fb;
  std::memcpy(&fa, &a, 4);
  std::memcpy(&fb, &b, 4);
  volatile float s = fa + fb;
  const float r = s;
  if (std::isnan(r)) return 0x7FC00000u;
  uint32_t u;
  std::memcpy(&u, &r, 4);
  return u;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 0) : fallback;
}

// Streams pairs through the 16 lanes, one beat per clock, and checks each
// sum as it leaves the pipeline.
class AdderHarness {
 public:
  AdderHarness() : top_(new Vpanama_fp32_add16) {
    top_->clk = 0;
    top_->eval();
  }
  ~AdderHarness() {
    top_->final();
    delete top_;
  }

  // Returns the number of mismatches; reports the first few.
  uint64_t check(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    uint64_t bad = 0;
    const size_t beats = (a.size() + kLanes - 1) / kLanes;
    for (size_t t = 0; t < beats + kLatency; ++t) {
      if (t < beats) {
        for (uint32_t l = 0; l < kLanes; ++l) {
          const size_t i = t * kLanes + l;
          top_->a[l] = i < a.size() ? a[i] : 0;
          top_->b[l] = i < a.size() ? b[i] : 0;
        }
      }
      top_->clk = 1;
      top_->eval();
      top_->clk = 0;
      top_->eval();
      // After the rising edge of clock t the sum of beat t + 1 - kLatency is out.
      if (t + 1 >= kLatency) {
        const size_t beat = t + 1 - kLatency;
        for (uint32_t l = 0; l < kLanes; ++l) {
          const size_t i = beat * kLanes + l;
          if (i >= a.size()) break;
          const uint32_t got = top_->sum[l];
          const uint32_t want = host_add(a[i], b[i]);
          if (got != want) {
            if (bad < 10) {
              std::printf("fp32 mismatch: %08x + %08x: rtl %08x host %08x\n", a[i], b[i], got, want);
            }
            ++bad;
          }
        }
      }
    }
    return bad;
  }

 private:
  Vpanama_fp32_add16* top_;
};

std::vector<uint32_t> special_values() {
  std::vector<uint32_t> v;
  const uint32_t mags[] = {
      0x00000000u,  // zero
      0x00000001u,  // smallest subnormal
      0x00000002u, 0x00012345u,
      0x007FFFFFu,  // largest subnormal
      0x00800000u,  // smallest normal
      0x00800001u, 0x00FFFFFFu,
      0x3F800000u,  // 1
      0x3F800001u, 0x3FFFFFFFu, 0x4B800000u, 0x33800000u, 0x34000000u, 0x7F000000u, 0x7F7FFFFEu,
      0x7F7FFFFFu,  // largest finite
      0x7F800000u,  // infinity
      0x7FC00000u,  // quiet NaN
      0x7FC12345u,  // quiet NaN with payload
      0x7F800001u,  // signalling NaN
      0x7FBFFFFFu,
  };
  for (uint32_t m : mags) {
    v.push_back(m);
    v.push_back(m | 0x80000000u);
  }
  return v;
}

}  // namespace

TEST_CASE("RTL fp32 adder: every pair of special-value classes", "[rtl][fp32]") {
  const std::vector<uint32_t> s = special_values();
  std::vector<uint32_t> a, b;
  for (uint32_t x : s) {
    for (uint32_t y : s) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  AdderHarness h;
  CHECK(h.check(a, b) == 0);
  // The contract's named cases, checked against literal values too.
  std::vector<uint32_t> ca = {0x80000000u, 0x00000000u, 0x7F800000u, 0x3F800000u, 0x7F7FFFFFu, 0x00000001u};
  std::vector<uint32_t> cb = {0x80000000u, 0x80000000u, 0xFF800000u, 0xBF800000u, 0x7F7FFFFFu, 0x00000001u};
  const std::vector<uint32_t> want = {0x80000000u, 0x00000000u, 0x7FC00000u,
                                      0x00000000u, 0x7F800000u, 0x00000002u};
  for (size_t i = 0; i < ca.size(); ++i) CHECK(host_add(ca[i], cb[i]) == want[i]);
  CHECK(h.check(ca, cb) == 0);
}

TEST_CASE("RTL fp32 adder: random pairs against the host FPU", "[rtl][fp32]") {
  const uint64_t seed = env_u64("PANAMA_TEST_SEED", std::random_device{}());
  const uint64_t pairs = env_u64("PANAMA_FP32_PAIRS", 1000000);
  std::printf("fp32 adder: seed %llu (PANAMA_TEST_SEED), %llu pairs (PANAMA_FP32_PAIRS)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(pairs));
  UNSCOPED_INFO("seed " << seed << " (set PANAMA_TEST_SEED to repeat)");
  std::mt19937_64 rng(seed);
  AdderHarness h;
  constexpr size_t kChunk = 1 << 16;
  std::vector<uint32_t> a(kChunk), b(kChunk);
  uint64_t done = 0, bad = 0, next_report = 100000000;
  while (done < pairs) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, pairs - done));
    a.resize(n);
    b.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t r = rng();
      const uint64_t q = rng();  // more bits for the biased classes
      uint32_t x = static_cast<uint32_t>(r);
      uint32_t y = static_cast<uint32_t>(r >> 32);
      const uint32_t qa = static_cast<uint32_t>(q);
      const uint32_t qb = static_cast<uint32_t>(q >> 32);
      switch ((done + i) % 8) {
        case 0:
          break;  // any bit patterns
        case 1:   // nearby exponents: cancellation and rounding carries
          y = (y & 0x807FFFFFu) | (((x >> 23) & 0xFFu) + (y >> 29) - 4u) % 256u << 23;
          break;
        case 2:  // subnormal and tiny operands
          x &= 0x80FFFFFFu;
          y &= 0x80FFFFFFu;
          break;
        case 3:  // opposite signs, same magnitude region
          y = ((x ^ 0x80000000u) & 0xFFFFFF00u) | (y & 0xFFu);
          break;
        case 4: {  // rounding ties: a sparse fraction shifted by 0 to 31 positions
          const uint32_t ex = 32u + qa % 200u;
          const uint32_t ey = ex - (qa >> 8) % 32u;
          x = (x & 0x807FFFFFu) | ex << 23;
          y = (y & 0x80000000u) | ey << 23 | (y & (y >> 7) & (y >> 13) & qb & 0x7FFFFFu);
          break;
        }
        case 5: {  // a subnormal operand against small exponents
          x &= 0x807FFFFFu;
          y = (y & 0x807FFFFFu) | (qa % 48u) << 23;
          break;
        }
        case 6: {  // exponent gaps around the alignment limit
          const uint32_t ex = 40u + qa % 200u;
          const uint32_t ey = ex - 20u - (qa >> 8) % 21u;
          x = (x & 0x807FFFFFu) | ex << 23;
          y = (y & 0x807FFFFFu) | ey << 23;
          break;
        }
        default: {  // massive cancellation at exponent difference 1: 1.0...x - 1.11...y / 2
          const uint32_t ex = 1u + qa % 254u;
          const uint32_t mask = (1u << ((qa >> 8) % 24u)) - 1u;
          x = (x & 0x80000000u) | ex << 23 | (y & mask);
          y = (x ^ 0x80000000u) & 0x80000000u;
          y |= (ex - 1u) << 23 | (0x7FFFFFu ^ (qb & mask));
          break;
        }
      }
      if ((done + i) % 8 != 0 && (q >> 63) != 0) std::swap(x, y);  // both operand orders
      a[i] = x;
      b[i] = y;
    }
    bad += h.check(a, b);
    done += n;
    if (done >= next_report) {
      std::printf("fp32 adder: %llu pairs checked\n", static_cast<unsigned long long>(done));
      std::fflush(stdout);
      next_report += 100000000;
    }
  }
  CHECK(bad == 0);
}
