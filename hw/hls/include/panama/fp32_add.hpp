// IEEE-754 binary32 addition written with integer operations only.
//
// This is the numeric contract of PANAMA (docs/protocol.md): round to nearest,
// ties to even; subnormal inputs and results kept (no flush-to-zero); every
// NaN result is the canonical quiet NaN 0x7FC00000 (inf + -inf too);
// -0 + -0 = -0 and x + -x = +0. It equals x86 SSE `float` addition (without
// FTZ/DAZ) bit for bit, except that NaN results are canonical. Synthesizable:
// fixed-width integers, a bounded loop, no floating-point types.
#pragma once

#include <stdint.h>

#include "panama/hls_compat.hpp"

namespace panama {

constexpr uint32_t kCanonicalNan = 0x7FC00000u;

// Leading zeros of a 27-bit value (27 when v == 0).
inline uint32_t fp32_clz27(uint32_t v) {
  uint32_t n = 0;
  bool found = false;
  for (int bit = 26; bit >= 0; --bit) {
    PANAMA_HLS(UNROLL)
    if (!found && ((v >> bit) & 1u)) found = true;
    if (!found) ++n;
  }
  return n;
}

inline uint32_t fp32_add(uint32_t a, uint32_t b) {
  PANAMA_HLS(INLINE)
  const uint32_t abs_a = a & 0x7FFFFFFFu;
  const uint32_t abs_b = b & 0x7FFFFFFFu;

  // Specials: NaN, infinities.
  if (abs_a > 0x7F800000u || abs_b > 0x7F800000u) return kCanonicalNan;
  if (abs_a == 0x7F800000u || abs_b == 0x7F800000u) {
    if (abs_a == 0x7F800000u && abs_b == 0x7F800000u && a != b) return kCanonicalNan;
    return abs_a == 0x7F800000u ? a : b;
  }

  // Order by magnitude so that |x| >= |y|.
  const uint32_t x = abs_a >= abs_b ? a : b;
  const uint32_t y = abs_a >= abs_b ? b : a;
  const uint32_t sign = x & 0x80000000u;
  const bool subtract = ((x ^ y) & 0x80000000u) != 0;

  const uint32_t ex_field = (x >> 23) & 0xFFu;
  const uint32_t ey_field = (y >> 23) & 0xFFu;
  // Subnormals use exponent 1 without the hidden bit.
  const uint32_t ex = ex_field == 0 ? 1 : ex_field;
  const uint32_t ey = ey_field == 0 ? 1 : ey_field;
  // Significands with the hidden bit at bit 26 and three guard/round/sticky bits.
  const uint32_t mx = ((ex_field == 0 ? 0u : 0x800000u) | (x & 0x7FFFFFu)) << 3;
  uint32_t my = ((ey_field == 0 ? 0u : 0x800000u) | (y & 0x7FFFFFu)) << 3;

  const uint32_t shift = ex - ey;
  if (shift >= 27) {
    my = my != 0 ? 1u : 0u;
  } else if (shift != 0) {
    const uint32_t lost = my & ((1u << shift) - 1u);
    my = (my >> shift) | (lost != 0 ? 1u : 0u);
  }

  uint32_t e = ex;
  uint32_t m;
  if (!subtract) {
    m = mx + my;
    if (m & (1u << 27)) {  // carry out: renormalise right, keep the sticky bit
      m = (m >> 1) | (m & 1u);
      e += 1;
    }
  } else {
    m = mx - my;
    if (m == 0) return 0u;  // exact cancellation gives +0
    // Renormalise left, but not below the subnormal exponent.
    uint32_t lz = fp32_clz27(m);
    const uint32_t room = e - 1;
    if (lz > room) lz = room;
    m <<= lz;
    e -= lz;
  }

  // Round to nearest, ties to even, on the three low bits.
  const uint32_t grs = m & 7u;
  uint32_t sig = m >> 3;  // 24 bits incl. hidden bit (or a subnormal significand)
  if (grs > 4u || (grs == 4u && (sig & 1u))) sig += 1;

  // A normal result has the hidden bit set; adding (e-1)<<23 to a significand
  // that includes the hidden bit yields the biased exponent, and a rounding
  // carry moves into the exponent by itself. A subnormal result (no hidden
  // bit, e == 1) is the significand alone; rounding up into bit 23 makes it
  // the smallest normal.
  const bool normal = (m & (1u << 26)) != 0;
  uint32_t mag = (normal ? ((e - 1) << 23) : 0u) + sig;
  if (mag >= 0x7F800000u) mag = 0x7F800000u;  // overflow to infinity
  return sign | mag;
}

}  // namespace panama
