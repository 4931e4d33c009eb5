// IEEE-754 binary32 addition written with integer operations only.
//
// This is the numeric contract of PANAMA (docs/protocol.md): round to nearest,
// ties to even; subnormal inputs and results kept (no flush-to-zero); every
// NaN result is the canonical quiet NaN 0x7FC00000 (inf + -inf too);
// -0 + -0 = -0 and x + -x = +0. It equals x86 SSE `float` addition (without
// FTZ/DAZ) bit for bit, except that NaN results are canonical. Synthesizable:
// fixed-width integers, a bounded loop, no floating-point types.
//
// fp32_add_run / fp32_load_run work on a whole payload. Under HLS they are the
// integer loops (pipelined, II=1). On x86-64 hosts fp32_add_run uses SSE
// binary32 addition, which is the same function once NaNs are made canonical,
// but only while MXCSR holds the IEEE defaults (round to nearest, no FTZ/DAZ,
// exceptions masked); otherwise, and on other hosts or under -ffast-math, it
// runs the integer adder. The result never depends on the path taken.
#pragma once

#include <stdint.h>

#include "panama/hls_compat.hpp"

// -ffast-math (or -ffinite-math-only) could fold the NaN test away: integer path.
#if defined(__SYNTHESIS__) || defined(PANAMA_VITIS_HLS) || !defined(__x86_64__) || !defined(__SSE2__) || \
    defined(__FAST_MATH__) || (defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#define PANAMA_FP32_SSE_PATH 0
#else
#define PANAMA_FP32_SSE_PATH 1
#include <emmintrin.h>
#include <string.h>
#endif

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

// Little-endian 32-bit load from bytes (the payload byte order).
inline uint32_t fp32_load_le(const uint8_t* p) {
  PANAMA_HLS(INLINE)
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// acc[i] = fp32_add(acc[i], element i of payload_le), i < n, with the
// integer adder. The reference for fp32_add_run and its path under HLS.
inline void fp32_add_run_integer(uint32_t* acc, const uint8_t* payload_le, uint32_t n) {
  PANAMA_HLS(INLINE)
  for (uint32_t i = 0; i < n; ++i) {
    PANAMA_HLS(PIPELINE II = 1)
    acc[i] = fp32_add(acc[i], fp32_load_le(payload_le + 4 * i));
  }
}

#if PANAMA_FP32_SSE_PATH
// MXCSR fields that must hold their IEEE defaults for SSE addition to equal
// fp32_add: DAZ (bit 6), the six exception masks (bits 7-12, all set, so an
// sNaN cannot trap), rounding control (bits 13-14, 00 = nearest) and FTZ
// (bit 15). Bits 0-5 are the sticky exception flags.
constexpr uint32_t kMxcsrControlMask = 0xFFC0u;
constexpr uint32_t kMxcsrIeeeDefault = 0x1F80u;

// Adds four lanes and replaces NaN lanes by the canonical NaN.
inline __m128 fp32_sse_add_canonical(__m128 a, __m128 b) {
  const __m128 sum = _mm_add_ps(a, b);
  const __m128 nan = _mm_cmpunord_ps(sum, sum);
  const __m128 canon = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(kCanonicalNan)));
  return _mm_or_ps(_mm_andnot_ps(nan, sum), _mm_and_ps(nan, canon));
}
#endif

// True when fp32_add_run takes the hardware path in the current
// floating-point environment of the calling thread.
inline bool fp32_add_run_uses_hardware() {
#if PANAMA_FP32_SSE_PATH
  return (_mm_getcsr() & kMxcsrControlMask) == kMxcsrIeeeDefault;
#else
  return false;
#endif
}

// acc[i] = fp32_add(acc[i], element i of payload_le) for i < n; payload_le
// holds n little-endian binary32 values. acc and the payload must not overlap.
inline void fp32_add_run(uint32_t* acc, const uint8_t* payload_le, uint32_t n) {
  PANAMA_HLS(INLINE)
#if PANAMA_FP32_SSE_PATH
  const uint32_t csr = _mm_getcsr();
  if ((csr & kMxcsrControlMask) != kMxcsrIeeeDefault) {
    fp32_add_run_integer(acc, payload_le, n);
    return;
  }
  // x86-64 is little-endian: payload bytes load as they are.
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float* a = reinterpret_cast<float*>(acc + i);
    const float* b = reinterpret_cast<const float*>(payload_le + 4 * i);
    _mm_storeu_ps(a, fp32_sse_add_canonical(_mm_loadu_ps(a), _mm_loadu_ps(b)));
    _mm_storeu_ps(a + 4, fp32_sse_add_canonical(_mm_loadu_ps(a + 4), _mm_loadu_ps(b + 4)));
  }
  if (i + 4 <= n) {
    float* a = reinterpret_cast<float*>(acc + i);
    const float* b = reinterpret_cast<const float*>(payload_le + 4 * i);
    _mm_storeu_ps(a, fp32_sse_add_canonical(_mm_loadu_ps(a), _mm_loadu_ps(b)));
    i += 4;
  }
  for (; i < n; ++i) {
    uint32_t x = acc[i], y;
    memcpy(&y, payload_le + 4 * i, 4);
    const __m128 s = fp32_sse_add_canonical(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(x))),
                                            _mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(y))));
    acc[i] = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_castps_si128(s)));
  }
  // The additions raised sticky exception flags (inexact, denormal, invalid);
  // restore them so the caller's floating-point environment is unchanged, as
  // with the integer adder.
  _mm_setcsr(csr);
#else
  fp32_add_run_integer(acc, payload_le, n);
#endif
}

// dst[i] = element i of payload_le for i < n: the first contribution of a
// slot, stored bit for bit as it arrives.
inline void fp32_load_run(uint32_t* dst, const uint8_t* payload_le, uint32_t n) {
  PANAMA_HLS(INLINE)
#if PANAMA_FP32_SSE_PATH
  if (n != 0) memcpy(dst, payload_le, static_cast<size_t>(n) * 4);  // little-endian host; no null to memcpy
#else
  for (uint32_t i = 0; i < n; ++i) {
    PANAMA_HLS(PIPELINE II = 1)
    dst[i] = fp32_load_le(payload_le + 4 * i);
  }
#endif
}

// Element i of payload_le := src[i] for i < n: an aggregate written into a
// frame, little-endian.
inline void fp32_store_run(uint8_t* payload_le, const uint32_t* src, uint32_t n) {
  PANAMA_HLS(INLINE)
#if PANAMA_FP32_SSE_PATH
  if (n != 0) memcpy(payload_le, src, static_cast<size_t>(n) * 4);  // little-endian host; no null to memcpy
#else
  for (uint32_t i = 0; i < n; ++i) {
    PANAMA_HLS(PIPELINE II = 1)
    payload_le[4 * i] = static_cast<uint8_t>(src[i]);
    payload_le[4 * i + 1] = static_cast<uint8_t>(src[i] >> 8);
    payload_le[4 * i + 2] = static_cast<uint8_t>(src[i] >> 16);
    payload_le[4 * i + 3] = static_cast<uint8_t>(src[i] >> 24);
  }
#endif
}

}  // namespace panama
