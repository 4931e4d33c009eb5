// The RTL's bf16/fp16 units (Verilated) against the bit-exact reference,
// hw/hls/include/panama/elem16.hpp:
//   panama_elem16_widen  every fp16 and bf16 pattern widened to fp32
//                        (fp16_to_fp32, bf16_to_fp32; a NaN only needs to
//                        stay a NaN of its sign), and fp32 beats doubled;
//   panama_elem16_round  fp32 values of every exponent (random fractions,
//                        ties, values next to every rounding boundary,
//                        specials) rounded to bf16 and fp16 (fp32_to_bf16,
//                        fp32_to_fp16), and fp32 half rows passed through.
// PANAMA_TEST_SEED sets the seed (printed).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "Vpanama_elem16_round.h"
#include "Vpanama_elem16_widen.h"
#include "panama/elem16.hpp"
#include "verilated.h"

namespace {

constexpr uint32_t kLanes = 32;  // fp32 lanes of a row, 16-bit elements of a beat

uint64_t seed() {
  const char* v = std::getenv("PANAMA_TEST_SEED");
  const uint64_t s = v ? std::strtoull(v, nullptr, 0) : 20261126u;
  std::printf("seed %llu (PANAMA_TEST_SEED)\n", static_cast<unsigned long long>(s));
  return s;
}

template <class W>
uint32_t word(const W& w, uint32_t i) {
  return w[i];
}
template <class W>
void set_word(W& w, uint32_t i, uint32_t v) {
  w[i] = v;
}

bool is_nan32(uint32_t x) {
  return (x & 0x7FFFFFFFu) > 0x7F800000u;
}

}  // namespace

TEST_CASE("RTL widening of bf16 and fp16 elements matches elem16.hpp", "[rtl][elem16]") {
  Vpanama_elem16_widen w;
  uint64_t bad = 0;
  for (const bool fp16 : {false, true}) {
    for (uint32_t base = 0; base < 65536; base += kLanes) {
      for (uint32_t i = 0; i < kLanes / 2; ++i)
        set_word(w.beat, i, (base + 2 * i) | ((base + 2 * i + 1) << 16));
      w.wide = 1;
      w.fp16 = fp16;
      w.eval();
      for (uint32_t i = 0; i < kLanes; ++i) {
        const uint16_t h = static_cast<uint16_t>(base + i);
        const uint32_t want = fp16 ? panama::fp16_to_fp32(h) : panama::bf16_to_fp32(h);
        const uint32_t got = word(w.out, i);
        // A NaN needs only to stay a NaN of its sign (which one is never observable).
        const bool ok = is_nan32(want) ? (is_nan32(got) && (got >> 31) == (want >> 31)) : got == want;
        if (!ok && ++bad <= 5) {
          std::printf("%s 0x%04x: got 0x%08x, want 0x%08x\n", fp16 ? "fp16" : "bf16", h, got, want);
        }
      }
    }
  }
  CHECK(bad == 0);
  // fp32 beats (and headers, passed beats): the beat twice.
  std::mt19937_64 rng(seed());
  for (int n = 0; n < 100; ++n) {
    std::vector<uint32_t> beat(16);
    for (uint32_t i = 0; i < 16; ++i) {
      beat[i] = static_cast<uint32_t>(rng());
      set_word(w.beat, i, beat[i]);
    }
    w.wide = 0;
    w.fp16 = rng() & 1;
    w.eval();
    for (uint32_t i = 0; i < kLanes; ++i) CHECK(word(w.out, i) == beat[i % 16]);
  }
  w.final();
}

TEST_CASE("RTL rounding to bf16 and fp16 matches elem16.hpp", "[rtl][elem16]") {
  Vpanama_elem16_round r;
  std::mt19937_64 rng(seed());
  r.clk = 0;
  r.eval();
  // Values: every exponent with random fractions, fractions next to the
  // rounding boundaries of both types (the bits below the kept ones at
  // half, half +- 1, all ones, zero), and the specials.
  std::vector<uint32_t> values;
  for (uint32_t e = 0; e < 256; ++e) {
    for (uint32_t n = 0; n < 600; ++n) {
      uint32_t f = static_cast<uint32_t>(rng()) & 0x7FFFFFu;
      switch (n % 6) {
        case 1: {  // a tie or next to it at a random cut (13..24 low bits)
          const uint32_t cut = 13 + static_cast<uint32_t>(rng() % 12);
          const uint32_t half = 1u << (cut - 1);
          f = (f & ~((1u << cut) - 1u)) | half;
          f = (f + static_cast<uint32_t>(rng() % 3) - 1u) & 0x7FFFFFu;
          break;
        }
        case 2:
          f |= (1u << (rng() % 24)) - 1u;  // a run of ones at the bottom
          f &= 0x7FFFFFu;
          break;
        case 3:
          f &= ~((1u << (rng() % 24)) - 1u);  // zeros at the bottom
          break;
        default:
          break;
      }
      values.push_back(((static_cast<uint32_t>(rng()) & 1u) << 31) | (e << 23) | f);
    }
  }
  for (uint32_t x :
       {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u,
        0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0xC77FF000u, 0x47800000u, 0x7F7FFFFFu, 0x7F7F8000u,
        0x7F7F7FFFu, 0x33000000u, 0x33000001u, 0x32FFFFFFu, 0x387FC000u, 0x387FE000u, 0x38800000u}) {
    values.push_back(x);
  }
  while (values.size() % kLanes != 0) values.push_back(static_cast<uint32_t>(rng()));

  struct Issued {
    size_t first;
    int mode;  // 0 bf16, 1 fp16, 2 fp32 lower half, 3 fp32 upper half
  };
  std::vector<Issued> pipe;
  uint64_t bad = 0, checked = 0;
  auto clock = [&] {
    r.clk = 1;
    r.eval();
    r.clk = 0;
    r.eval();
  };
  auto check_out = [&](const Issued& is) {
    for (uint32_t i = 0; i < kLanes; ++i) {
      const uint32_t got = (word(r.out, i / 2) >> (16 * (i % 2))) & 0xFFFFu;
      uint32_t want;
      if (is.mode < 2) {
        const uint32_t x = values[is.first + i];
        want = is.mode == 1 ? panama::fp32_to_fp16(x) : panama::fp32_to_bf16(x);
      } else {
        // lane i of the output is the low or high 16 bits of fp32 lane (i / 2) of the half
        const uint32_t x = values[is.first + (is.mode == 3 ? 16 : 0) + i / 2];
        want = (x >> (16 * (i % 2))) & 0xFFFFu;
      }
      ++checked;
      if (got != want && ++bad <= 5) {
        std::printf("mode %d value 0x%08x: got 0x%04x, want 0x%04x\n", is.mode,
                    is.mode < 2 ? values[is.first + i] : 0u, got, want);
      }
    }
  };
  for (size_t first = 0; first < values.size(); first += kLanes) {
    for (int mode = 0; mode < 4; ++mode) {
      for (uint32_t i = 0; i < kLanes; ++i) set_word(r.in_x, i, values[first + i]);
      r.in_round = mode < 2;
      r.in_fp16 = mode == 1;
      r.in_hi = mode == 3;
      r.eval();
      clock();
      pipe.push_back(Issued{first, mode});
      if (pipe.size() >= 2) {  // LATENCY = 2: the output of the values presented two clocks ago
        r.eval();
        check_out(pipe[pipe.size() - 2]);
      }
    }
  }
  clock();
  r.eval();
  check_out(pipe.back());
  std::printf("%llu lanes checked\n", static_cast<unsigned long long>(checked));
  CHECK(bad == 0);
  r.final();
}
