// Seeded random numbers for randomized tests: every test prints the seed it
// used, and PANAMA_TEST_SEED=<n> in the environment replays a run exactly
// (PANAMA_SEED, its older name, too).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace panama::test {

// The seed for one randomized test: PANAMA_TEST_SEED (or PANAMA_SEED) when
// set, else a fresh one. Printed on stdout so that a failing CI log always
// says how to reproduce.
inline uint64_t test_seed(const char* test_name) {
  uint64_t seed;
  const char* name = "PANAMA_TEST_SEED";
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') env = std::getenv(name = "PANAMA_SEED");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    seed = std::strtoull(env, &end, 0);
    if (end == nullptr || *end != '\0') {
      std::fprintf(stderr, "%s='%s' is not a number\n", name, env);
      std::exit(2);
    }
  } else {
    std::random_device rd;
    seed = (uint64_t{rd()} << 32) | rd();
  }
  std::printf("%s: seed %llu (replay with PANAMA_TEST_SEED=%llu)\n", test_name,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

// A positive count from the environment variable `name`, else `fallback`.
inline uint64_t env_count(const char* name, uint64_t fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  char* end = nullptr;
  const double v = std::strtod(env, &end);  // accepts 1e9
  if (end == nullptr || *end != '\0' || !(v >= 1)) {
    std::fprintf(stderr, "%s='%s' is not a positive count\n", name, env);
    std::exit(2);
  }
  return static_cast<uint64_t>(v);
}

using Rng = std::mt19937_64;

inline uint32_t uniform(Rng& rng, uint32_t lo, uint32_t hi) {  // inclusive
  return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
}

}  // namespace panama::test
