// Tensors whose allreduce has one exact answer, whatever the order of the
// additions: every element is m * 2^e with |m| <= 2048 and e in [-3, 3], so
// any partial sum of up to 128 workers is a multiple of 2^-3 below 2^21 in
// magnitude and fits a binary32 significand exactly. The engine adds in
// arrival order and the reference in rank order; both are exact, hence equal
// bit for bit. Workers regenerate every rank's data from (seed, iteration,
// rank), so no data is exchanged outside the allreduce.
//
// bf16 and fp16 (docs/protocol.md §7): every element is m * 2^e exact in the
// type (bf16: |m| <= 256, e in [-3, 3]; fp16: |m| <= 2048, e in [-6, -3]),
// so every partial sum of up to 128 workers is again exact in binary32
// (bf16: multiples of 2^-3 of magnitude at most 2^18; fp16: of 2^-6 at
// most 2^15, so no infinity either; rounded leaf sums too) and the engines'
// fp32 accumulation is exact in any order. The
// sums, though, need up to 8 + 6 + 7 significant bits (bf16 has 8) or
// 11 + 3 + 7 (fp16 has 11), so most results are rounded, ties included. An
// engine rounds each partial sum it emits once (the root: the result; a
// leaf under a spine: its workers' partial sum), so the reference is
// round(sum over leaves of round(sum of the leaf's workers)), each rounding
// to nearest even computed here in double precision, independently of the
// engine's conversion code; with one PSwitch (one leaf) that is
// round(exact sum).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "panama/wire.hpp"

namespace panama::cluster {

// "fp32", "bf16", "fp16" (the --dtype values); "?" for anything else.
inline const char* dtype_name(wire::ElemType t) {
  const char* name = wire::elem_type_name(static_cast<uint8_t>(t));
  return name ? name : "?";
}

// The type named `name` (dtype_name's names); false for anything else.
inline bool parse_dtype(const std::string& name, wire::ElemType& out) {
  for (wire::ElemType t : {wire::ElemType::kFloat32, wire::ElemType::kBfloat16, wire::ElemType::kFloat16}) {
    if (name == dtype_name(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

constexpr uint32_t kMaxExactWorkers = 128;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline uint64_t stream_base(uint64_t seed, uint32_t iteration, uint32_t rank) {
  return mix64(mix64(mix64(seed) ^ (0x9E3779B97F4A7C15ull * (iteration + 1))) ^
               (0xD1B54A32D192ED03ull * (rank + 1)));
}

inline float exact_value(uint64_t base, size_t k) {
  static constexpr float kScale[8] = {0.125f, 0.25f, 0.5f, 1.0f, 2.0f, 4.0f, 8.0f, 1.0f};
  const uint64_t h = mix64(base + 0x9E3779B97F4A7C15ull * k);
  const int32_t m = static_cast<int32_t>(h & 0xFFF) - 2048;  // -2048..2047
  return static_cast<float>(m) * kScale[(h >> 12) & 7];
}

// Fills `out` with rank `rank`'s tensor for `iteration`.
inline void fill_tensor(float* out, size_t n, uint64_t seed, uint32_t iteration, uint32_t rank) {
  const uint64_t base = stream_base(seed, iteration, rank);
  for (size_t k = 0; k < n; ++k) out[k] = exact_value(base, k);
}

// The allreduce result: the sum over ranks 0..world-1, added in rank order.
inline void reference_sum(float* out, size_t n, uint64_t seed, uint32_t iteration, uint32_t world) {
  for (uint32_t r = 0; r < world; ++r) {
    const uint64_t base = stream_base(seed, iteration, r);
    for (size_t k = 0; k < n; ++k) {
      const float v = exact_value(base, k);
      out[k] = r == 0 ? v : out[k] + v;
    }
  }
}

// ----------------------------------------------------------- bf16, fp16

// The format of a 16-bit type: significand bits (with the implicit one),
// the smallest normal exponent, the largest exponent, the exponent bias.
struct Format16 {
  int precision, emin, emax, bias;
};

inline Format16 format16(wire::ElemType t) {
  return t == wire::ElemType::kBfloat16 ? Format16{8, -126, 127, 127} : Format16{11, -14, 15, 15};
}

// How round16 got its result.
enum class Rounding { kExact, kRounded, kTie };

// The 16-bit pattern of `v` rounded to nearest, ties to even: subnormals
// kept, a value at or beyond the largest finite value plus half a step
// becomes an infinity, a NaN becomes the canonical quiet NaN (docs/protocol.md
// §7). `v` is the exact value (a double holds every sum made here exactly).
inline uint16_t round16(double v, wire::ElemType t, Rounding* how = nullptr) {
  const Format16 f = format16(t);
  const int frac_bits = f.precision - 1;
  const uint16_t inf = static_cast<uint16_t>(((1u << (15 - frac_bits)) - 1) << frac_bits);
  if (how) *how = Rounding::kExact;
  if (std::isnan(v)) return t == wire::ElemType::kBfloat16 ? 0x7FC0 : 0x7E00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | inf;
  if (a == 0) return sign;
  int e = std::ilogb(a);  // a = 1.x * 2^e
  if (e < f.emin) e = f.emin;
  // The significand as an integer of `precision` bits (fewer for subnormals).
  const double scaled = std::ldexp(a, frac_bits - e);
  double q = std::nearbyint(scaled);  // the default rounding mode: to nearest, ties to even
  if (how && q != scaled)
    *how = std::fabs(scaled - std::floor(scaled) - 0.5) == 0 ? Rounding::kTie : Rounding::kRounded;
  if (q >= std::ldexp(1.0, f.precision)) {  // rounded up to the next binade
    q /= 2;
    ++e;
  }
  if (e > f.emax) return sign | inf;
  const uint32_t m = static_cast<uint32_t>(q);
  if (m < (1u << frac_bits)) return static_cast<uint16_t>(sign | m);  // subnormal (e == emin)
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(e + f.bias) << frac_bits) |
                               (m - (1u << frac_bits)));
}

// The value of a 16-bit pattern (exact in double).
inline double value16(uint16_t bits, wire::ElemType t) {
  const Format16 f = format16(t);
  const int frac_bits = f.precision - 1;
  const uint32_t frac = bits & ((1u << frac_bits) - 1);
  const uint32_t be = (bits & 0x7FFFu) >> frac_bits;
  const double s = (bits & 0x8000) ? -1.0 : 1.0;
  if (be == (1u << (15 - frac_bits)) - 1) return frac ? std::nan("") : s * INFINITY;
  if (be == 0) return s * std::ldexp(static_cast<double>(frac), f.emin - frac_bits);
  return s *
         std::ldexp(static_cast<double>(frac | (1u << frac_bits)), static_cast<int>(be) - f.bias - frac_bits);
}

// Element k of a 16-bit tensor (the stream `base` of stream_base), as a value.
inline double exact_value16(uint64_t base, size_t k, wire::ElemType t) {
  static constexpr double kScaleBf16[8] = {0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 1.0};
  static constexpr double kScaleFp16[8] = {1.0 / 64, 1.0 / 32, 1.0 / 16, 1.0 / 8,
                                           1.0 / 8,  1.0 / 16, 1.0 / 32, 1.0 / 64};
  const uint64_t h = mix64(base + 0x9E3779B97F4A7C15ull * k);
  if (t == wire::ElemType::kBfloat16) {
    const int32_t m = static_cast<int32_t>(h & 0x1FF) - 256;  // -256..255: 8 significant bits
    return m * kScaleBf16[(h >> 12) & 7];
  }
  const int32_t m = static_cast<int32_t>(h & 0xFFF) - 2048;  // -2048..2047: 11 significant bits
  return m * kScaleFp16[(h >> 12) & 7];
}

// The 16-bit pattern of an element of exact_value16 (exact in the type):
// bf16, the upper half of its binary32 pattern; fp16, its binary32 fields
// moved (every such value is zero or normal in fp16). Equal to round16 on
// these values (a cluster test checks it), without its double arithmetic.
inline uint16_t exact_bits16(double v, wire::ElemType t) {
  const float f = static_cast<float>(v);  // exact
  uint32_t b;
  std::memcpy(&b, &f, 4);
  if (t == wire::ElemType::kBfloat16) return static_cast<uint16_t>(b >> 16);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  if ((b & 0x7FFFFFFF) == 0) return sign;
  const uint32_t e = ((b >> 23) & 0xFF) - 127 + 15;
  return static_cast<uint16_t>(sign | (e << 10) | ((b >> 13) & 0x3FF));
}

// Fills `out` (n 16-bit patterns) with rank `rank`'s tensor for `iteration`.
inline void fill_tensor16(uint16_t* out, size_t n, wire::ElemType t, uint64_t seed, uint32_t iteration,
                          uint32_t rank) {
  const uint64_t base = stream_base(seed, iteration, rank);
  for (size_t k = 0; k < n; ++k) out[k] = exact_bits16(exact_value16(base, k, t), t);
}

// What the check of a 16-bit result found.
struct Check16 {
  size_t mismatches = 0, first = 0;
  uint16_t first_got = 0, first_want = 0;
  size_t rounded = 0;  // elements whose exact sum is not a value of the type
  size_t ties = 0;     // ... of which exactly halfway between two (ties to even)
};

// The reference result of a 16-bit allreduce, n patterns into `want`: with
// leaf_of_rank[r] the leaf PSwitch of rank r (empty: one PSwitch for all),
// round(sum over leaves of round(the leaf's workers' exact sum)). Returns
// the statistics of a check that found no mismatch (rounded, ties).
inline Check16 reference_tensor16(uint16_t* want, size_t n, wire::ElemType t, uint64_t seed,
                                  uint32_t iteration, uint32_t world,
                                  const std::vector<uint32_t>& leaf_of_rank) {
  std::vector<uint64_t> bases(world);
  std::vector<uint32_t> leaf(world, 0);
  uint32_t leaves = 1;
  for (uint32_t r = 0; r < world; ++r) {
    bases[r] = stream_base(seed, iteration, r);
    if (r < leaf_of_rank.size()) leaf[r] = leaf_of_rank[r];
    leaves = std::max(leaves, leaf[r] + 1);
  }
  std::vector<double> partial(leaves);
  Check16 c;
  for (size_t k = 0; k < n; ++k) {
    std::fill(partial.begin(), partial.end(), 0.0);
    double exact = 0;
    for (uint32_t r = 0; r < world; ++r) {
      const double x = exact_value16(bases[r], k, t);
      partial[leaf[r]] += x;  // exact (see the top of this file)
      exact += x;
    }
    double sum = 0;
    for (uint32_t l = 0; l < leaves; ++l)
      sum += leaves == 1 ? partial[l] : value16(round16(partial[l], t), t);
    // With several leaves, a result may differ from the exact sum through a
    // leaf's rounding alone.
    Rounding how = Rounding::kExact;
    want[k] = round16(sum, t, &how);
    if (how == Rounding::kExact && value16(want[k], t) != exact) how = Rounding::kRounded;
    c.rounded += how != Rounding::kExact;
    c.ties += how == Rounding::kTie;
  }
  return c;
}

// The reference of a 16-bit allreduce over chain trees (docs/controller.md,
// "Chain trees"), where every leaf rounds what it emits in turn. The tensor
// is reduced as allreduces over `segments` ({first element, elements}, as
// DDP buckets): chunk c of a segment (elements_per_packet elements from the
// segment's start) goes to primary tree c mod T, whose chain visits leaves
// chains[t][0], chains[t][1], ... (leaf_of_rank's numbering). A leaf adds
// its workers' exact sum S_i to the previous leaf's rounded partial and
// rounds what it emits: p_1 = round(S_1), p_i = round(p_(i-1) + S_i), the
// result p_L (exact in fp32 in any order, as above). Elements outside every
// segment are left as they are.
inline Check16 reference_tensor16_chain(uint16_t* want, size_t n, wire::ElemType t, uint64_t seed,
                                        uint32_t iteration, uint32_t world,
                                        const std::vector<uint32_t>& leaf_of_rank,
                                        const std::vector<std::vector<uint32_t>>& chains,
                                        const std::vector<std::pair<size_t, size_t>>& segments,
                                        size_t elems_per_packet) {
  std::vector<uint64_t> bases(world);
  std::vector<uint32_t> leaf(world, 0);
  uint32_t leaves = 1;
  for (uint32_t r = 0; r < world; ++r) {
    bases[r] = stream_base(seed, iteration, r);
    if (r < leaf_of_rank.size()) leaf[r] = leaf_of_rank[r];
    leaves = std::max(leaves, leaf[r] + 1);
  }
  for (const auto& chain : chains)
    for (uint32_t l : chain) leaves = std::max(leaves, l + 1);
  std::vector<double> partial(leaves);
  Check16 c;
  for (const auto& [begin, count] : segments) {
    for (size_t i = 0; i < count && begin + i < n; ++i) {
      const size_t k = begin + i;
      const std::vector<uint32_t>& chain = chains[(i / elems_per_packet) % chains.size()];
      std::fill(partial.begin(), partial.end(), 0.0);
      double exact = 0;
      for (uint32_t r = 0; r < world; ++r) {
        const double x = exact_value16(bases[r], k, t);
        partial[leaf[r]] += x;
        exact += x;
      }
      double p = 0;
      Rounding how = Rounding::kExact;
      for (uint32_t l : chain) {
        want[k] = round16(p + partial[l], t, &how);
        p = value16(want[k], t);
      }
      if (how == Rounding::kExact && p != exact) how = Rounding::kRounded;
      c.rounded += how != Rounding::kExact;
      c.ties += how == Rounding::kTie;
    }
  }
  return c;
}

// Compares `got` with a reference (reference_tensor16's `want`), counting
// into `c` (whose rounded and ties the reference gave).
inline void compare16(const uint16_t* got, const uint16_t* want, size_t n, Check16& c) {
  for (size_t k = 0; k < n; ++k) {
    if (got[k] != want[k]) {
      if (c.mismatches == 0) {
        c.first = k;
        c.first_got = got[k];
        c.first_want = want[k];
      }
      ++c.mismatches;
    }
  }
}

// Checks `got` (the allreduce's n results) against reference_tensor16.
inline Check16 check_tensor16(const uint16_t* got, size_t n, wire::ElemType t, uint64_t seed,
                              uint32_t iteration, uint32_t world, const std::vector<uint32_t>& leaf_of_rank) {
  std::vector<uint16_t> want(n);
  Check16 c = reference_tensor16(want.data(), n, t, seed, iteration, world, leaf_of_rank);
  compare16(got, want.data(), n, c);
  return c;
}

// Number of elements whose bits differ; the first differing index in `first`.
inline size_t count_mismatches(const float* a, const float* b, size_t n, size_t* first) {
  size_t bad = 0;
  for (size_t k = 0; k < n; ++k) {
    if (std::memcmp(a + k, b + k, 4) != 0) {
      if (bad == 0 && first) *first = k;
      ++bad;
    }
  }
  return bad;
}

}  // namespace panama::cluster
