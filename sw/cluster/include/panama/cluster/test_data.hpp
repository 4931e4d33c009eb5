// Tensors whose allreduce has one exact answer, whatever the order of the
// additions: every element is m * 2^e with |m| <= 2048 and e in [-3, 3], so
// any partial sum of up to 128 workers is a multiple of 2^-3 below 2^21 in
// magnitude and fits a binary32 significand exactly. The engine adds in
// arrival order and the reference in rank order; both are exact, hence equal
// bit for bit. Workers regenerate every rank's data from (seed, iteration,
// rank), so no data is exchanged outside the allreduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace panama::cluster {

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
