// divide_by_share (hw/hls/include/panama/engine_rules.hpp): the engine's
// slot = seq % Q and generation = seq / Q without a divider, against the
// compiler's 32-bit division, for every share the register map allows.
#include <catch2/catch.hpp>

#include "panama/engine_rules.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::test;

namespace {

bool agrees(uint32_t n, uint32_t q, uint64_t recip) {
  uint32_t quot = 0, rem = 0;
  divide_by_share(n, q, recip, quot, rem);
  return quot == n / q && rem == n % q;
}

}  // namespace

TEST_CASE("divide_by_share equals / and % for every share and chosen dividends", "[engine][rules]") {
  Rng rng(test_seed("share division"));
  uint64_t bad = 0, checked = 0;
  for (uint32_t q = 1; q <= 0xFFFF; ++q) {
    const uint64_t recip = share_reciprocal(q);
    // Around multiples of q at both ends of the range, and random values.
    const uint32_t top = 0xFFFFFFFFu - 0xFFFFFFFFu % q;  // largest multiple of q
    const uint32_t edges[] = {0u, 1u, q - 1, q, q + 1, 2 * q - 1, top - 1, top, 0xFFFFFFFFu, 0xFFFFFFFEu};
    for (uint32_t n : edges) {
      bad += !agrees(n, q, recip);
      ++checked;
    }
    for (int i = 0; i < 16; ++i) {
      const uint32_t n = static_cast<uint32_t>(rng());
      bad += !agrees(n, q, recip);
      const uint32_t k = n / q;  // a multiple and its neighbours
      bad += !agrees(k * q, q, recip) + !agrees(k * q - 1, q, recip) + !agrees(k * q + (q - 1), q, recip);
      checked += 4;
    }
  }
  INFO(checked << " divisions");
  CHECK(bad == 0);
}
