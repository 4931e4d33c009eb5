// The 16-bit element types (bf16, fp16) against the fp32 accumulator.
//
// The numeric contract of docs/protocol.md §7: a 16-bit element is widened
// to binary32 exactly (every bf16 and fp16 value, subnormals included, is a
// binary32 value), slots accumulate in binary32 with fp32_add, and an
// aggregate is rounded once when it is emitted, to the frame's type: round to
// nearest, ties to even; a finite value too large for the type becomes an
// infinity of its sign; subnormal results are kept; every NaN becomes the
// type's canonical quiet NaN (bf16 0x7FC0, fp16 0x7E00, sign bit clear).
//
// The scalar functions are the reference and what HLS synthesizes: integer
// operations only, bounded loops. The run functions below work on whole
// payloads; on x86-64 hosts with AVX2 and F16C they use vector conversions
// and binary32 additions, which give the same bits as the integer functions
// (checked on every special class by tests/hls/test_elem16.cpp) as long as
// MXCSR holds the IEEE defaults, as for fp32_add_run. Otherwise, and under
// HLS, the integer loops run. The result never depends on the path.
#pragma once

#include <stdint.h>

#include "panama/fp32_add.hpp"
#include "panama/hls_compat.hpp"
#include "panama/wire.hpp"

#if PANAMA_FP32_SSE_PATH && (defined(__GNUC__) || defined(__clang__))
#define PANAMA_ELEM16_AVX2_PATH 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define PANAMA_ELEM16_AVX2_PATH 0
#endif

namespace panama {

constexpr uint16_t kBf16CanonicalNan = 0x7FC0u;
constexpr uint16_t kFp16CanonicalNan = 0x7E00u;

// ------------------------------------------------------------ scalar reference

inline uint32_t bf16_to_fp32(uint16_t h) {
  PANAMA_HLS(INLINE)
  return static_cast<uint32_t>(h) << 16;
}

// Leading zeros of a 10-bit value (10 when v == 0).
inline uint32_t fp16_clz10(uint32_t v) {
  uint32_t n = 0;
  bool found = false;
  for (int bit = 9; bit >= 0; --bit) {
    PANAMA_HLS(UNROLL)
    if (!found && ((v >> bit) & 1u)) found = true;
    if (!found) ++n;
  }
  return n;
}

// Exact. A NaN keeps its payload and is made quiet (bit 22 set), as the
// vector conversion does; the accumulator never shows a NaN's payload (a sum
// with a NaN is the canonical NaN, and an emitted NaN is canonical).
inline uint32_t fp16_to_fp32(uint16_t h) {
  PANAMA_HLS(INLINE)
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu) return sign | 0x7F800000u | (mant != 0 ? 0x400000u | (mant << 13) : 0u);
  if (exp != 0) return sign | ((exp + 112u) << 23) | (mant << 13);
  if (mant == 0) return sign;
  // Subnormal: mant * 2^-24, normal in binary32. With the leading one at bit
  // p = 9 - lz, the value is 2^(p - 24) * 1.f: biased exponent p + 103.
  const uint32_t lz = fp16_clz10(mant);
  const uint32_t p = 9u - lz;
  return sign | ((p + 103u) << 23) | ((mant << (23u - p)) & 0x7FFFFFu);
}

inline uint16_t fp32_to_bf16(uint32_t x) {
  PANAMA_HLS(INLINE)
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return kBf16CanonicalNan;
  // Round to nearest even on the low 16 bits; a carry moves into the
  // exponent, and the largest finite values round to infinity by themselves.
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

inline uint16_t fp32_to_fp16(uint32_t x) {
  PANAMA_HLS(INLINE)
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return kFp16CanonicalNan;
  const uint32_t e = a >> 23;                      // biased binary32 exponent
  if (e >= 143u) return sign | 0x7C00u;            // |x| >= 2^16 (and infinities): infinity
  if (e == 0) return sign;                         // binary32 subnormals are far below 2^-25
  const uint32_t m = 0x800000u | (a & 0x7FFFFFu);  // value = m * 2^(e - 150)
  uint32_t r;
  if (e >= 113u) {
    // Normal range of fp16 (|x| >= 2^-14): keep 11 significant bits. The
    // rounded significand r includes the hidden bit, which adds the one the
    // biased exponent (e - 112) needs over (e - 113); a rounding carry to
    // 0x800 moves into the exponent, and past 0x7BFF gives 0x7C00 (infinity).
    const uint32_t q = m >> 13;
    const uint32_t rem = m & 0x1FFFu;
    r = q + ((rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ? 1u : 0u);
    const uint32_t h = ((e - 113u) << 10) + r;
    return sign | static_cast<uint16_t>(h >= 0x7C00u ? 0x7C00u : h);
  }
  // Subnormal range: count units of 2^-24, m * 2^(e - 126) = m >> (126 - e).
  const uint32_t shift = 126u - e;  // 14..125
  if (shift >= 25u) return sign;    // below half the smallest subnormal: +-0
  const uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
  return sign | static_cast<uint16_t>(r);  // r = 0x400 is the smallest normal
}

inline uint16_t load_le16(const uint8_t* p) {
  PANAMA_HLS(INLINE)
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// Element i of a payload of type `t`, widened to binary32.
inline uint32_t elem_widen(uint8_t t, const uint8_t* payload_le, uint32_t i) {
  PANAMA_HLS(INLINE)
  if (t == static_cast<uint8_t>(wire::ElemType::kBfloat16))
    return bf16_to_fp32(load_le16(payload_le + 2 * i));
  if (t == static_cast<uint8_t>(wire::ElemType::kFloat16)) return fp16_to_fp32(load_le16(payload_le + 2 * i));
  return fp32_load_le(payload_le + 4 * i);
}

// An accumulator value rounded to a 16-bit type.
inline uint16_t elem_round16(uint8_t t, uint32_t acc) {
  PANAMA_HLS(INLINE)
  return t == static_cast<uint8_t>(wire::ElemType::kFloat16) ? fp32_to_fp16(acc) : fp32_to_bf16(acc);
}

// ------------------------------------------------------------ integer runs

inline void elem16_load_run_integer(uint8_t t, uint32_t* dst, const uint8_t* payload_le, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) dst[i] = elem_widen(t, payload_le, i);
}
inline void elem16_add_run_integer(uint8_t t, uint32_t* acc, const uint8_t* payload_le, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) acc[i] = fp32_add(acc[i], elem_widen(t, payload_le, i));
}
inline void elem16_store_run_integer(uint8_t t, uint8_t* payload_le, const uint32_t* src, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    const uint16_t h = elem_round16(t, src[i]);
    payload_le[2 * i] = static_cast<uint8_t>(h);
    payload_le[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

// ------------------------------------------------------------ vector runs

#if PANAMA_ELEM16_AVX2_PATH
namespace elem16_detail {

// AVX2 (with the OS saving its registers, which __builtin_cpu_supports
// checks) and F16C (CPUID leaf 1, ECX bit 29) on this CPU, checked once.
inline bool cpu_has_vector_path() {
  static const bool ok = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0;
  }();
  return ok;
}

#define PANAMA_ELEM16_TARGET __attribute__((target("avx2,f16c")))

template <bool Bf16>
PANAMA_ELEM16_TARGET inline __m256 widen8(const uint8_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (Bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  return _mm256_cvtph_ps(h);
}

// Eight accumulators rounded to the type: bf16 as eight 32-bit lanes holding
// the 16-bit results (NaN canonical), fp16 as eight 16-bit lanes.
PANAMA_ELEM16_TARGET inline __m256i round8_bf16(const uint32_t* src) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i nan32 = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7F800000));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i r =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  return _mm256_blendv_epi8(r, _mm256_set1_epi32(kBf16CanonicalNan), nan32);
}

PANAMA_ELEM16_TARGET inline __m128i round8_fp16(const uint32_t* src) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  const __m128i h = _mm256_cvtps_ph(_mm256_castsi256_ps(x), _MM_FROUND_TO_NEAREST_INT);
  // NaN lanes: the canonical NaN (the conversion keeps sign and payload).
  const __m128i mag = _mm_and_si128(h, _mm_set1_epi16(0x7FFF));
  const __m128i nan16 = _mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7C00));
  return _mm_blendv_epi8(h, _mm_set1_epi16(static_cast<short>(kFp16CanonicalNan)), nan16);
}

template <bool Bf16>
PANAMA_ELEM16_TARGET void load_run(uint32_t* dst, const uint8_t* p, uint32_t n, uint32_t& i) {
  for (; i + 16 <= n; i += 16) {
    const __m256 a = widen8<Bf16>(p + 2 * i);
    const __m256 b = widen8<Bf16>(p + 2 * i + 16);
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + i), a);
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + i + 8), b);
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(reinterpret_cast<float*>(dst + i), widen8<Bf16>(p + 2 * i));
}

PANAMA_ELEM16_TARGET inline __m256 add_canonical8(__m256 a, __m256 b) {
  const __m256 sum = _mm256_add_ps(a, b);
  const __m256 nan = _mm256_cmp_ps(sum, sum, _CMP_UNORD_Q);
  return _mm256_blendv_ps(sum, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kCanonicalNan))), nan);
}

template <bool Bf16>
PANAMA_ELEM16_TARGET void add_run(uint32_t* acc, const uint8_t* p, uint32_t n, uint32_t& i) {
  for (; i + 16 <= n; i += 16) {
    float* a = reinterpret_cast<float*>(acc + i);
    const __m256 s0 = add_canonical8(_mm256_loadu_ps(a), widen8<Bf16>(p + 2 * i));
    const __m256 s1 = add_canonical8(_mm256_loadu_ps(a + 8), widen8<Bf16>(p + 2 * i + 16));
    _mm256_storeu_ps(a, s0);
    _mm256_storeu_ps(a + 8, s1);
  }
  for (; i + 8 <= n; i += 8) {
    float* a = reinterpret_cast<float*>(acc + i);
    _mm256_storeu_ps(a, add_canonical8(_mm256_loadu_ps(a), widen8<Bf16>(p + 2 * i)));
  }
}

template <bool Bf16>
PANAMA_ELEM16_TARGET void store_run(uint8_t* p, const uint32_t* src, uint32_t n, uint32_t& i) {
  for (; i + 16 <= n; i += 16) {
    if (Bf16) {
      // packus works per 128-bit half: [a0..3 b0..3 | a4..7 b4..7]; reorder the 64-bit quarters.
      const __m256i packed = _mm256_packus_epi32(round8_bf16(src + i), round8_bf16(src + i + 8));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 2 * i), _mm256_permute4x64_epi64(packed, 0xD8));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2 * i), round8_fp16(src + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2 * i + 16), round8_fp16(src + i + 8));
    }
  }
  for (; i + 8 <= n; i += 8) {
    if (Bf16) {
      const __m256i packed = _mm256_packus_epi32(round8_bf16(src + i), _mm256_setzero_si256());
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2 * i),
                       _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0xD8)));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2 * i), round8_fp16(src + i));
    }
  }
}

#undef PANAMA_ELEM16_TARGET

}  // namespace elem16_detail
#endif

// True when the 16-bit runs take the vector path in the current
// floating-point environment of the calling thread.
inline bool elem16_runs_use_hardware() {
#if PANAMA_ELEM16_AVX2_PATH
  return elem16_detail::cpu_has_vector_path() && fp32_add_run_uses_hardware();
#else
  return false;
#endif
}

// dst[i] = element i of a 16-bit payload of type t, widened (the first
// contribution of a slot).
inline void elem16_load_run(uint8_t t, uint32_t* dst, const uint8_t* payload_le, uint32_t n) {
  uint32_t i = 0;
#if PANAMA_ELEM16_AVX2_PATH
  const uint32_t csr = _mm_getcsr();
  if (elem16_detail::cpu_has_vector_path() && (csr & kMxcsrControlMask) == kMxcsrIeeeDefault) {
    if (t == static_cast<uint8_t>(wire::ElemType::kBfloat16)) {
      elem16_detail::load_run<true>(dst, payload_le, n, i);
    } else {
      elem16_detail::load_run<false>(dst, payload_le, n, i);
    }
    _mm_setcsr(csr);
  }
#endif
  elem16_load_run_integer(t, dst + i, payload_le + 2 * i, n - i);
}

// acc[i] = fp32_add(acc[i], element i widened) for a 16-bit payload of type t.
inline void elem16_add_run(uint8_t t, uint32_t* acc, const uint8_t* payload_le, uint32_t n) {
  uint32_t i = 0;
#if PANAMA_ELEM16_AVX2_PATH
  const uint32_t csr = _mm_getcsr();
  if (elem16_detail::cpu_has_vector_path() && (csr & kMxcsrControlMask) == kMxcsrIeeeDefault) {
    if (t == static_cast<uint8_t>(wire::ElemType::kBfloat16)) {
      elem16_detail::add_run<true>(acc, payload_le, n, i);
    } else {
      elem16_detail::add_run<false>(acc, payload_le, n, i);
    }
    _mm_setcsr(csr);  // the additions raised sticky flags; leave the caller's as they were
  }
#endif
  elem16_add_run_integer(t, acc + i, payload_le + 2 * i, n - i);
}

// Element i of a 16-bit payload of type t := src[i] rounded to the type.
inline void elem16_store_run(uint8_t t, uint8_t* payload_le, const uint32_t* src, uint32_t n) {
  uint32_t i = 0;
#if PANAMA_ELEM16_AVX2_PATH
  const uint32_t csr = _mm_getcsr();
  if (elem16_detail::cpu_has_vector_path() && (csr & kMxcsrControlMask) == kMxcsrIeeeDefault) {
    if (t == static_cast<uint8_t>(wire::ElemType::kBfloat16)) {
      elem16_detail::store_run<true>(payload_le, src, n, i);
    } else {
      elem16_detail::store_run<false>(payload_le, src, n, i);
    }
    _mm_setcsr(csr);
  }
#endif
  elem16_store_run_integer(t, payload_le + 2 * i, src + i, n - i);
}

// ------------------------------------------------------------ any type

// The first contribution, added contributions and the emitted payload for a
// frame of element type t (an ElemType value the engine accepted).
inline void elem_load_run(uint8_t t, uint32_t* dst, const uint8_t* payload_le, uint32_t n) {
  if (t == static_cast<uint8_t>(wire::ElemType::kFloat32)) {
    fp32_load_run(dst, payload_le, n);
  } else {
    elem16_load_run(t, dst, payload_le, n);
  }
}
inline void elem_add_run(uint8_t t, uint32_t* acc, const uint8_t* payload_le, uint32_t n) {
  if (t == static_cast<uint8_t>(wire::ElemType::kFloat32)) {
    fp32_add_run(acc, payload_le, n);
  } else {
    elem16_add_run(t, acc, payload_le, n);
  }
}
inline void elem_store_run(uint8_t t, uint8_t* payload_le, const uint32_t* src, uint32_t n) {
  if (t == static_cast<uint8_t>(wire::ElemType::kFloat32)) {
    fp32_store_run(payload_le, src, n);
  } else {
    elem16_store_run(t, payload_le, src, n);
  }
}

}  // namespace panama
