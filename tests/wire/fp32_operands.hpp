// Operands for testing binary32 addition: special values of every class and
// random pairs from distributions aimed at the adder's corner cases
// (cancellation, subnormals, overflow, alignment shifts, gradient-like data).
#pragma once

#include <cstdint>
#include <vector>

#include "wire/seeded_rng.hpp"

namespace panama::test {

constexpr uint32_t kFp32Distributions = 6;

// Every special-value class: signed zeros, subnormals, extreme normals,
// values near overflow, rounding patterns, infinities, quiet/signalling/negative
// NaNs, plus random subnormals and normals drawn from `rng`.
inline std::vector<uint32_t> fp32_special_values(Rng& rng) {
  std::vector<uint32_t> v = {
      0x00000000u, 0x80000000u,                            // +0, -0
      0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu,  // smallest / largest subnormal
      0x00000003u, 0x00400000u, 0x80400001u,               // subnormal halfway patterns
      0x00800000u, 0x80800000u, 0x00800001u,               // smallest normals
      0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F7FFFFEu,               // largest normal
      0x7F000000u, 0x7F7FFFF0u, 0xFF000000u, 0x7EFFFFFFu,  // near overflow
      0x3F800000u, 0xBF800000u, 0x3F800001u, 0x33800000u,  // 1, -1, 1 + ulp, half ulp of 1
      0x33C00000u, 0xCB7FFFFFu,                            // 0.75 ulp of 1, -(2^24 - 1)
      0x7F800000u, 0xFF800000u,                            // +inf, -inf
      0x7FC00000u, 0x7FFFFFFFu,                            // quiet NaN
      0x7F800001u, 0x7FA00000u,                            // signalling NaN
      0xFFC00000u, 0xFF800001u, 0xFFFFFFFFu,               // negative NaN (quiet, signalling)
      0x00000002u, 0x00400001u, 0x34000000u, 0x4B800000u,  // more rounding and subnormal patterns
  };
  for (int i = 0; i < 6; ++i) {
    const uint32_t s = uniform(rng, 0, 1) << 31;
    v.push_back(s | uniform(rng, 1, 0x7FFFFF));                                  // random subnormal
    v.push_back(s | (uniform(rng, 1, 0xFE) << 23) | uniform(rng, 0, 0x7FFFFF));  // random normal
  }
  return v;
}

// One random operand pair from distribution `d` (0 .. kFp32Distributions-1).
inline void fp32_draw_pair(Rng& rng, uint32_t d, uint32_t& a, uint32_t& b) {
  const uint64_t r = rng();
  const uint64_t r2 = rng();
  const uint32_t lo = static_cast<uint32_t>(r), hi = static_cast<uint32_t>(r >> 32);
  switch (d) {
    case 0:  // uniform bit patterns: NaN, inf and subnormals in proportion
      a = lo;
      b = hi;
      break;
    case 1: {  // close exponents, often cancelling: renormalisation
      const uint32_t e = static_cast<uint32_t>(r2 % 254) + 1;
      const uint32_t eb =
          e + static_cast<uint32_t>((r2 >> 8) % 3) > 254 ? 254 : e + static_cast<uint32_t>((r2 >> 8) % 3);
      a = (lo & 0x807FFFFFu) | (e << 23);
      b = (hi & 0x807FFFFFu) | (eb << 23);
      if ((r2 >> 20) % 3 == 0) b = (a ^ 0x80000000u) ^ static_cast<uint32_t>((r2 >> 24) & 0x7);
      break;
    }
    case 2: {  // subnormals and the smallest normals
      a = (lo & 0x807FFFFFu) | (static_cast<uint32_t>(r2 % 3 == 0) << 23);
      b = (hi & 0x807FFFFFu) | (static_cast<uint32_t>((r2 >> 4) % 3 == 0) << 23);
      break;
    }
    case 3: {  // near overflow
      a = (lo & 0x807FFFFFu) | ((254 - static_cast<uint32_t>(r2 % 2)) << 23);
      b = (hi & 0x807FFFFFu) | ((254 - static_cast<uint32_t>((r2 >> 4) % 3)) << 23);
      break;
    }
    case 4: {  // wide exponent gaps: sticky bits
      a = (lo & 0x807FFFFFu) | (static_cast<uint32_t>(r2 % 255) << 23);
      b = (hi & 0x807FFFFFu) | (static_cast<uint32_t>((r2 >> 8) % 255) << 23);
      break;
    }
    default: {  // gradient-like values with occasional infinities and NaNs
      a = (lo & 0x807FFFFFu) | ((100 + static_cast<uint32_t>(r2 % 40)) << 23);
      b = (hi & 0x807FFFFFu) | ((100 + static_cast<uint32_t>((r2 >> 8) % 40)) << 23);
      const uint32_t pick = static_cast<uint32_t>((r2 >> 16) % 64);
      if (pick == 0) b = (b & 0x80000000u) | 0x7F800000u;
      if (pick == 1) b = 0x7F800000u | (hi & 0x807FFFFFu) | 1u;
      break;
    }
  }
}

}  // namespace panama::test
