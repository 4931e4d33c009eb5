// The claim pool's rules (sw/pswitch claim_pool.hpp, docs/hybrid-allreduce.md)
// against hand-computed expectations: first-fit placement, all or nothing,
// caps, the most groups holding slots, idempotent claims, claims gathered from every child, denied below,
// denied passing down, releases by the minimum over the children, stale
// drops, leases, and isolation between entries.
#include <catch2/catch.hpp>
#include <vector>

#include "panama/pswitch/claim_pool.hpp"

using namespace panama;
using namespace panama::pswitch;
using claim::Answer;
using claim::Reason;

namespace {

PooledEntry pooled(uint16_t job, uint32_t g, uint32_t cap, uint32_t children, bool root) {
  PooledEntry e;
  e.job = job;
  e.tree = 0;
  e.group_size = g;
  e.claim_cap = cap;
  e.children = children;
  e.root = root;
  return e;
}

PoolConfig pool(uint32_t base, uint32_t size, uint64_t lease = 1000) {
  PoolConfig c;
  c.base = base;
  c.size = size;
  c.lease_ns = lease;
  return c;
}

// The pool's free slots as a string, one character per slot: '.' free, '#' used.
std::string map_of(const ClaimPool& p) {
  std::string s;
  for (uint32_t i = 0; i < p.config().size; ++i) s += p.slot_free(p.config().base + i) ? '.' : '#';
  return s;
}

void require_granted(const ClaimStep& s) {
  REQUIRE(s.action == ClaimAction::kAnswer);
  REQUIRE(s.answer == Answer::kGranted);
  REQUIRE(s.reason == Reason::kNone);
}

void require_denied(const ClaimStep& s, Reason r) {
  REQUIRE(s.action == ClaimAction::kAnswer);
  REQUIRE(s.answer == Answer::kDenied);
  REQUIRE(s.reason == r);
}

}  // namespace

TEST_CASE("pool: configuration limits", "[pool]") {
  CHECK_NOTHROW(ClaimPool(pool(0, 512), {pooled(1, 512, 512, 64, true)}));
  CHECK_THROWS_AS(ClaimPool(pool(0, 513), {}), std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(0, 8, 0), {}), std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(0, 8), {pooled(1, 0, 8, 1, true)}), std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(0, 8), {pooled(1, 513, 8, 1, true)}), std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(0, 8), {pooled(1, 2, 8, 0, true)}), std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(0, 8), {pooled(1, 2, 8, 65, true)}), std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(0, 8), {pooled(1, 2, 8, 1, true), pooled(1, 4, 8, 1, true)}),
                  std::invalid_argument);
  CHECK_THROWS_AS(ClaimPool(pool(UINT32_MAX - 3, 8), {}), std::invalid_argument);
  ClaimPool p(pool(0, 8), {pooled(1, 2, 8, 1, true), pooled(2, 2, 8, 1, true)});
  CHECK(p.find_entry(1, 0) == 0);
  CHECK(p.find_entry(2, 0) == 1);
  CHECK(p.find_entry(1, 1) == -1);
  CHECK(p.free_slots() == 8);
  CHECK_THROWS_AS(p.slot_free(8), std::out_of_range);
}

TEST_CASE("pool: claims take G consecutive slots, first fit, all or nothing", "[pool]") {
  // A: G = 3, B: G = 2, both root with one child, caps out of the way.
  ClaimPool p(pool(100, 10), {pooled(1, 3, 100, 1, true), pooled(2, 2, 100, 1, true)});
  require_granted(p.on_claim(0, 0, 0, false, 0));  // A0: 100..102
  require_granted(p.on_claim(1, 0, 0, false, 0));  // B0: 103..104
  require_granted(p.on_claim(0, 0, 1, false, 0));  // A1: 105..107
  require_granted(p.on_claim(1, 0, 1, false, 0));  // B1: 108..109
  CHECK(p.group(0, 0)->slot == 100);
  CHECK(p.group(1, 0)->slot == 103);
  CHECK(p.group(0, 1)->slot == 105);
  CHECK(p.group(1, 1)->slot == 108);
  CHECK(map_of(p) == "##########");
  CHECK(p.counters().slots_held == 10);

  require_denied(p.on_claim(1, 0, 2, false, 0), Reason::kPoolFull);  // nothing free
  CHECK(!p.group(1, 2)->holds);

  REQUIRE(p.on_release(0, 0, 1).grew);  // A0 done: 100..102 free
  CHECK(map_of(p) == "...#######");
  require_granted(p.on_claim(1, 0, 3, false, 0));  // B3: first fit at 100
  CHECK(p.group(1, 3)->slot == 100);
  CHECK(map_of(p) == "##.#######");
  // A2 needs 3: one free slot (102) is not enough, and none is taken.
  require_denied(p.on_claim(0, 0, 2, false, 0), Reason::kPoolFull);
  CHECK(map_of(p) == "##.#######");
  CHECK(p.free_slots() == 1);

  // B releases 0 and 1 (its groups 2 and 3 stay: 2 holds nothing, 3 holds 100..101).
  REQUIRE(p.on_release(1, 0, 2).grew);
  CHECK(map_of(p) == "##...###..");
  require_granted(p.on_claim(0, 0, 3, false, 0));  // A3: the first run of three is 102..104
  CHECK(p.group(0, 3)->slot == 102);
  CHECK(map_of(p) == "########..");
  CHECK(p.counters().slots_high_water == 10);
  CHECK(p.counters().denied[static_cast<int>(Reason::kPoolFull)] == 2);
  CHECK(p.counters().granted == 6);
  CHECK(p.counters().reservations == 6);
  CHECK(p.entry_counters(0).slots_held == 6);
  CHECK(p.entry_counters(1).slots_held == 2);
}

TEST_CASE("pool: the claim cap bounds what an entry holds", "[pool]") {
  ClaimPool p(pool(0, 16), {pooled(1, 2, 5, 1, true), pooled(2, 4, 4, 1, true)});
  require_granted(p.on_claim(0, 0, 0, false, 0));
  require_granted(p.on_claim(0, 0, 1, false, 0));                   // holds 4 of 5
  require_denied(p.on_claim(0, 0, 2, false, 0), Reason::kOverCap);  // 6 > 5, though 12 slots are free
  CHECK(p.entry_counters(0).slots_held == 4);
  CHECK(p.free_slots() == 12);
  require_granted(p.on_claim(1, 0, 0, false, 0));  // exactly at its cap of 4
  require_denied(p.on_claim(1, 0, 1, false, 0), Reason::kOverCap);
  REQUIRE(p.on_release(0, 0, 1).grew);  // A0 freed: A holds 2
  require_granted(p.on_claim(0, 0, 3, false, 0));
  CHECK(p.entry_counters(0).slots_held == 4);
  CHECK(p.entry_counters(0).slots_high_water == 4);
  CHECK(p.entry_counters(0).denied[static_cast<int>(Reason::kOverCap)] == 1);
  CHECK(p.entry_counters(1).denied[static_cast<int>(Reason::kOverCap)] == 1);

  // Over the cap is checked before the pool: a full pool and a full cap read as over the cap.
  ClaimPool q(pool(0, 2), {pooled(1, 2, 2, 1, true)});
  require_granted(q.on_claim(0, 0, 0, false, 0));
  require_denied(q.on_claim(0, 0, 1, false, 0), Reason::kOverCap);
  // A cap below G: every claim is over it.
  ClaimPool r(pool(0, 8), {pooled(1, 4, 3, 1, true)});
  require_denied(r.on_claim(0, 0, 0, false, 0), Reason::kOverCap);
  CHECK(r.free_slots() == 8);
}

TEST_CASE("pool: max_groups bounds the groups holding slots at once", "[pool]") {
  PoolConfig c = pool(0, 16);
  c.max_groups = 2;  // an engine with two table entries for claims
  ClaimPool p(c, {pooled(1, 2, 16, 1, true), pooled(2, 2, 16, 1, true)});
  require_granted(p.on_claim(0, 0, 0, false, 0));
  require_granted(p.on_claim(1, 0, 0, false, 0));
  CHECK(p.holding_groups() == 2);
  require_denied(p.on_claim(0, 0, 1, false, 0), Reason::kPoolFull);  // 12 slots free, no entry
  CHECK(p.free_slots() == 12);
  REQUIRE(p.on_release(1, 0, 1).grew);  // job 2's group frees its entry
  CHECK(p.holding_groups() == 1);
  require_granted(p.on_claim(0, 0, 2, false, 0));
  CHECK(map_of(p) == "####............");  // job 2's freed slots, first fit
  p.advance(1000);                         // both of job 1's leases end
  CHECK(p.holding_groups() == 0);
}

TEST_CASE("pool: a duplicate claim changes nothing and gets the same answer", "[pool]") {
  ClaimPool p(pool(0, 4), {pooled(1, 2, 4, 1, true), pooled(2, 2, 4, 1, true)});
  require_granted(p.on_claim(0, 0, 0, false, 0));
  const ClaimStep again = p.on_claim(0, 0, 0, false, 5);
  require_granted(again);
  CHECK(again.duplicate);
  CHECK(p.group(0, 0)->slot == 0);
  CHECK(p.group(0, 0)->deadline == 1000);  // a claim is no contribution: the lease is not renewed
  CHECK(p.counters().reservations == 1);
  CHECK(p.counters().slots_held == 2);

  require_granted(p.on_claim(1, 0, 0, false, 0));  // the pool is now full
  require_denied(p.on_claim(0, 0, 1, false, 0), Reason::kPoolFull);
  REQUIRE(p.on_release(1, 0, 1).grew);  // two slots free again
  // The denied group stays denied: one decision per group.
  const ClaimStep d = p.on_claim(0, 0, 1, false, 0);
  require_denied(d, Reason::kPoolFull);
  CHECK(d.duplicate);
  CHECK(p.free_slots() == 2);
  CHECK(p.counters().claim_duplicates == 2);
  CHECK(p.counters().claims_in == 5);
  CHECK(p.counters().granted == 2);
  CHECK(p.counters().denied[static_cast<int>(Reason::kPoolFull)] == 1);  // verdicts, not answers
}

TEST_CASE("pool: the root decides once every child has claimed", "[pool]") {
  ClaimPool p(pool(0, 8), {pooled(1, 2, 8, 3, true)});
  ClaimStep s = p.on_claim(0, 1, 0, false, 0);
  CHECK(s.action == ClaimAction::kWait);
  CHECK(p.group(0, 0)->holds);  // reserved at the first claim
  CHECK(p.group(0, 0)->claimed == 0b010);
  s = p.on_claim(0, 1, 0, false, 0);
  CHECK(s.action == ClaimAction::kWait);
  CHECK(s.duplicate);
  CHECK(p.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  require_granted(p.on_claim(0, 2, 0, false, 0));
  require_granted(p.on_claim(0, 1, 0, false, 0));  // answered again to anyone
  CHECK(p.counters().granted == 1);
  CHECK(p.counters().reservations == 1);
}

TEST_CASE("pool: a denial from below makes the root deny and frees its slots", "[pool]") {
  ClaimPool p(pool(0, 8), {pooled(1, 2, 8, 2, true)});
  CHECK(p.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  CHECK(p.free_slots() == 6);
  require_denied(p.on_claim(0, 1, 0, true, 0), Reason::kDeniedBelow);
  CHECK(p.free_slots() == 8);
  CHECK(!p.group(0, 0)->holds);
  require_denied(p.on_claim(0, 0, 0, false, 0), Reason::kDeniedBelow);

  // A first claim that is denied below reserves nothing at all.
  CHECK(p.on_claim(0, 1, 1, true, 0).action == ClaimAction::kWait);
  CHECK(!p.group(0, 1)->holds);
  CHECK(p.free_slots() == 8);
  require_denied(p.on_claim(0, 0, 1, false, 0), Reason::kDeniedBelow);
  CHECK(p.counters().reservations == 1);
  CHECK(p.counters().denied[static_cast<int>(Reason::kDeniedBelow)] == 2);

  // The root's own refusal is the reason even when a child was denied too.
  ClaimPool q(pool(0, 2), {pooled(1, 4, 8, 2, true)});
  CHECK(q.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  require_denied(q.on_claim(0, 1, 0, true, 0), Reason::kPoolFull);
}

TEST_CASE("pool: a non-root engine passes the claim up with its verdict", "[pool]") {
  ClaimPool p(pool(0, 6), {pooled(1, 2, 100, 2, false)});
  CHECK(p.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  ClaimStep s = p.on_claim(0, 1, 0, false, 0);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(!s.denied_below);
  CHECK(p.group(0, 0)->holds);
  s = p.on_claim(0, 0, 0, false, 0);  // a retry: passed up again, unchanged
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(!s.denied_below);
  CHECK(s.duplicate);

  // Denied below from one child: passed up denied, nothing held.
  CHECK(p.on_claim(0, 0, 1, false, 0).action == ClaimAction::kWait);
  CHECK(p.group(0, 1)->holds);
  s = p.on_claim(0, 1, 1, true, 0);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(s.denied_below);
  CHECK(s.reason == Reason::kDeniedBelow);
  CHECK(!p.group(0, 1)->holds);

  // This engine cannot reserve: passed up denied (pool full) though no child was denied.
  REQUIRE(p.on_claim(0, 0, 2, false, 0).action == ClaimAction::kWait);
  REQUIRE(p.on_claim(0, 0, 3, false, 0).action == ClaimAction::kWait);
  CHECK(p.free_slots() == 0);
  CHECK(p.on_claim(0, 0, 4, false, 0).action == ClaimAction::kWait);
  s = p.on_claim(0, 1, 4, false, 0);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(s.denied_below);
  CHECK(s.reason == Reason::kPoolFull);
  // After the verdict a child's denial changes nothing: the claim is passed up as before.
  s = p.on_claim(0, 1, 0, true, 0);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(!s.denied_below);
  CHECK(p.group(0, 0)->holds);
  CHECK(p.counters().granted == 1);
  CHECK(p.counters().denied[static_cast<int>(Reason::kDeniedBelow)] == 1);
  CHECK(p.counters().denied[static_cast<int>(Reason::kPoolFull)] == 1);
}

TEST_CASE("pool: a denied claim-result passing down frees the slots, granted keeps them", "[pool]") {
  ClaimPool p(pool(0, 8), {pooled(1, 4, 8, 1, false)});
  REQUIRE(p.on_claim(0, 0, 0, false, 0).action == ClaimAction::kPassUp);
  REQUIRE(p.on_claim(0, 0, 1, false, 0).action == ClaimAction::kPassUp);
  CHECK(p.free_slots() == 0);
  CHECK(!p.on_claim_result(0, 0, Answer::kGranted));
  CHECK(p.group(0, 0)->holds);
  CHECK(p.group(0, 0)->has_answer);
  CHECK(p.on_claim_result(0, 1, Answer::kDenied));
  CHECK(!p.group(0, 1)->holds);
  CHECK(map_of(p) == "####....");
  CHECK(!p.on_claim_result(0, 1, Answer::kDenied));  // a duplicate frees nothing more
  CHECK(!p.on_claim_result(0, 7, Answer::kDenied));  // a group never claimed here
  CHECK(p.free_slots() == 4);
  CHECK(p.lookup(0, 5).drop == PoolDrop::kNoClaim);  // group 1 maps no more
  CHECK(p.counters().claim_results_in == 4);

  // At the root, claim-results are its own: one coming back is ignored.
  ClaimPool r(pool(0, 8), {pooled(1, 4, 8, 1, true)});
  require_granted(r.on_claim(0, 0, 0, false, 0));
  CHECK(!r.on_claim_result(0, 0, Answer::kDenied));
  CHECK(r.group(0, 0)->holds);
  CHECK(r.group(0, 0)->answer == Answer::kGranted);
}

TEST_CASE("pool: once the root's answer passed down, claims go straight up", "[pool]") {
  // Two children; child 0 claims, then the root's answer passes down before
  // child 1 claims (the root expired the group while it waited). Child 1 may
  // never claim: it can hear the answer without. A claim of either is passed
  // up at once, so that one that missed the answer hears it from the root.
  ClaimPool p(pool(0, 8), {pooled(1, 2, 8, 2, false)});
  CHECK(p.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  CHECK(p.on_claim_result(0, 0, Answer::kDenied));
  ClaimStep s = p.on_claim(0, 0, 0, false, 0);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(s.denied_below);  // it holds nothing now
  CHECK(s.reason == Reason::kDeniedBelow);
  CHECK(p.counters().granted + p.counters().denied[static_cast<int>(Reason::kDeniedBelow)] ==
        0);  // no verdict

  // An answer for a group no child claimed here yet is kept too.
  CHECK(!p.on_claim_result(0, 1, Answer::kGranted));
  REQUIRE(p.group(0, 1));
  CHECK(p.group(0, 1)->has_answer);
  CHECK(!p.group(0, 1)->holds);
  s = p.on_claim(0, 1, 1, false, 0);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(s.denied_below);
  CHECK(p.free_slots() == 8);  // no reservation for a group the root has decided

  // ... but not for a released one.
  p.on_release(0, 0, 3);
  p.on_release(0, 1, 3);
  CHECK(!p.on_claim_result(0, 2, Answer::kGranted));
  CHECK(!p.group(0, 2));
}

TEST_CASE("pool: sequences map to the group's slots; others are dropped, answered at the root", "[pool]") {
  // Entry 0: root, G = 4, cap 8. Entry 1: not the root, G = 4.
  ClaimPool p(pool(40, 12), {pooled(1, 4, 8, 1, true), pooled(2, 4, 12, 1, false)});
  require_granted(p.on_claim(0, 0, 0, false, 0));                   // 40..43
  require_granted(p.on_claim(0, 0, 2, false, 0));                   // 44..47
  require_denied(p.on_claim(0, 0, 5, false, 0), Reason::kOverCap);  // 8 + 4 > 8
  for (uint32_t seq : {0u, 1u, 3u}) {
    const SlotLookup l = p.lookup(0, seq);
    REQUIRE(l.drop == PoolDrop::kNone);
    CHECK(l.group == 0);
    CHECK(l.slot == 40 + seq);
  }
  SlotLookup l = p.lookup(0, 8);
  CHECK(l.drop == PoolDrop::kNone);
  CHECK(l.group == 2);
  CHECK(l.slot == 44);
  CHECK(p.lookup(0, 11).slot == 47);
  // Group 1 was never claimed: dropped, and the root has no answer for it.
  l = p.lookup(0, 4);
  CHECK(l.drop == PoolDrop::kNoClaim);
  CHECK(l.group == 1);
  CHECK(!l.has_answer);
  // Group 5 was denied: dropped and answered with the root's answer.
  l = p.lookup(0, 21);
  CHECK(l.drop == PoolDrop::kNoClaim);
  CHECK(l.group == 5);
  REQUIRE(l.has_answer);
  CHECK(l.answer == Answer::kDenied);
  CHECK(l.reason == Reason::kOverCap);

  // Below the root an engine maps what it holds and never answers.
  REQUIRE(p.on_claim(1, 0, 0, false, 0).action == ClaimAction::kPassUp);  // 48..51
  CHECK(p.lookup(1, 2).slot == 50);
  REQUIRE(p.on_claim_result(1, 0, Answer::kDenied));
  l = p.lookup(1, 2);
  CHECK(l.drop == PoolDrop::kNoClaim);
  CHECK(!l.has_answer);
  CHECK(p.entry_counters(0).drop_no_claim == 2);
  CHECK(p.entry_counters(1).drop_no_claim == 1);
  CHECK(p.counters().drop_no_claim == 3);
}

TEST_CASE("pool: groups are released by the minimum over the children", "[pool]") {
  ClaimPool p(pool(0, 32), {pooled(1, 2, 32, 3, false)});
  for (uint32_t g = 0; g < 4; ++g) {
    for (uint16_t c = 0; c < 3; ++c) p.on_claim(0, c, g, false, 0);
  }
  CHECK(p.counters().slots_held == 8);
  ReleaseStep r = p.on_release(0, 0, 2);
  CHECK(!r.grew);
  CHECK(r.released == 0);
  r = p.on_release(0, 1, 3);
  CHECK(!r.grew);
  CHECK(p.counters().slots_held == 8);
  r = p.on_release(0, 2, 1);  // minimum 1: group 0 goes
  CHECK(r.grew);
  CHECK(r.released == 1);
  CHECK(!p.group(0, 0));
  CHECK(p.group(0, 1)->holds);
  CHECK(p.counters().slots_held == 6);
  CHECK(map_of(p).substr(0, 8) == "..######");
  r = p.on_release(0, 0, 1);  // older than child 0's 2: changes nothing
  CHECK(!r.grew);
  CHECK(r.released == 1);
  CHECK(p.child_released(0, 0) == 2);
  r = p.on_release(0, 2, 5);  // minimum 2 (child 0)
  CHECK(r.grew);
  CHECK(r.released == 2);
  CHECK(p.counters().slots_held == 4);
  CHECK(p.released(0) == 2);
  CHECK(p.counters().released_groups == 2);
  CHECK(p.counters().releases_in == 5);
  r = p.on_release(0, 3, 9);  // no child 3
  CHECK(r.drop == PoolDrop::kBadChild);
  CHECK(p.counters().drop_bad_child == 1);

  // Claims and contributions of released groups are stale.
  const ClaimStep s = p.on_claim(0, 0, 1, false, 0);
  CHECK(s.action == ClaimAction::kDrop);
  CHECK(s.drop == PoolDrop::kStaleGroup);
  CHECK(!p.group(0, 1));  // not revived
  CHECK(p.lookup(0, 3).drop == PoolDrop::kStaleGroup);
  CHECK(p.lookup(0, 4).drop == PoolDrop::kNone);  // group 2 still holds
  CHECK(p.counters().drop_stale_group == 2);

  // Everything released: every slot free, nothing remembered.
  for (uint16_t c = 0; c < 3; ++c) p.on_release(0, c, 4);
  CHECK(p.free_slots() == 32);
  CHECK(p.groups(0).empty());
  CHECK(p.counters().slots_high_water == 8);
}

TEST_CASE("pool: the root forgets a released group's answer", "[pool]") {
  ClaimPool p(pool(0, 4), {pooled(1, 2, 100, 1, true)});
  require_granted(p.on_claim(0, 0, 0, false, 0));
  require_granted(p.on_claim(0, 0, 1, false, 0));
  require_denied(p.on_claim(0, 0, 2, false, 0), Reason::kPoolFull);
  REQUIRE(p.on_release(0, 0, 3).grew);
  CHECK(p.groups(0).empty());
  CHECK(p.lookup(0, 5).drop == PoolDrop::kStaleGroup);
  CHECK(!p.lookup(0, 5).has_answer);
  CHECK(p.free_slots() == 4);
}

TEST_CASE("pool: leases expire groups that emitted nothing", "[pool]") {
  ClaimPool p(pool(0, 8, 1000), {pooled(1, 2, 8, 1, true)});
  require_granted(p.on_claim(0, 0, 0, false, 100));  // lease until 1100
  require_granted(p.on_claim(0, 0, 1, false, 100));
  CHECK(p.group(0, 0)->deadline == 1100);
  CHECK(p.advance(1099).empty());
  CHECK(p.on_contribution(0, 1, 600).slot == 1);  // group 0 renewed: 1600
  CHECK(p.group(0, 0)->deadline == 1600);
  p.lookup(0, 2);  // a lookup alone does not renew group 1
  CHECK(p.group(0, 1)->deadline == 1100);
  p.on_emitted(0, 3);  // group 1 emitted: it never expires
  CHECK(p.advance(1599).empty());
  const auto gone = p.advance(1600);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].entry == 0);
  CHECK(gone[0].group == 0);
  CHECK(!p.group(0, 0)->holds);
  CHECK(p.group(0, 0)->expired);
  CHECK(map_of(p) == "..##....");
  CHECK(p.counters().expired == 1);
  CHECK(p.advance(1000000).empty());
  CHECK(p.group(0, 1)->holds);

  // The root's answer for the expired group is now denied (expired), to claims and contributions.
  require_denied(p.on_claim(0, 0, 0, false, 2000), Reason::kExpired);
  const SlotLookup l = p.on_contribution(0, 0, 2000);
  CHECK(l.drop == PoolDrop::kNoClaim);
  REQUIRE(l.has_answer);
  CHECK(l.answer == Answer::kDenied);
  CHECK(l.reason == Reason::kExpired);
  CHECK(!p.group(0, 0)->holds);  // not revived either
  // The verdict counted was the grant; the expiry is counted apart.
  CHECK(p.counters().granted == 2);
  CHECK(p.counters().denied[static_cast<int>(Reason::kExpired)] == 0);

  // renew() renews only what holds slots.
  p.renew(0, 0, 5000);
  CHECK(p.group(0, 0)->deadline == 1600);
  p.renew(0, 2, 5000);
  CHECK(p.group(0, 1)->deadline == 6000);
}

TEST_CASE("pool: a lease can end before the verdict", "[pool]") {
  // At the root: decided denied (expired) at once; the late claim hears it.
  ClaimPool r(pool(0, 8, 1000), {pooled(1, 2, 8, 2, true)});
  CHECK(r.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  REQUIRE(r.advance(1000).size() == 1);
  CHECK(r.free_slots() == 8);
  CHECK(r.lookup(0, 0).has_answer);
  require_denied(r.on_claim(0, 1, 0, false, 1500), Reason::kExpired);
  CHECK(r.counters().denied[static_cast<int>(Reason::kExpired)] == 1);
  CHECK(r.counters().expired == 1);

  // Below the root: passed up denied once every child has claimed.
  ClaimPool n(pool(0, 8, 1000), {pooled(1, 2, 8, 2, false)});
  CHECK(n.on_claim(0, 0, 0, false, 0).action == ClaimAction::kWait);
  REQUIRE(n.advance(1000).size() == 1);
  const ClaimStep s = n.on_claim(0, 1, 0, false, 1500);
  REQUIRE(s.action == ClaimAction::kPassUp);
  CHECK(s.denied_below);
  CHECK(s.reason == Reason::kExpired);
  CHECK(n.free_slots() == 8);
}

TEST_CASE("pool: entries never touch each other's slots", "[pool]") {
  // Two jobs on one pool of 8, caps 4 each.
  ClaimPool p(pool(0, 8, 1000), {pooled(1, 2, 4, 2, true), pooled(2, 2, 4, 2, true)});
  for (uint16_t c = 0; c < 2; ++c) {
    p.on_claim(0, c, 0, false, 0);  // A0: 0..1
    p.on_claim(1, c, 0, false, 0);  // B0: 2..3
    p.on_claim(0, c, 1, false, 0);  // A1: 4..5
    p.on_claim(1, c, 1, false, 0);  // B1: 6..7
  }
  CHECK(p.free_slots() == 0);
  // B's release, claims and expiry leave A's groups where they are.
  p.on_release(1, 0, 2);
  p.on_release(1, 1, 2);
  CHECK(map_of(p) == "##..##..");
  CHECK(p.group(0, 0)->holds);
  CHECK(p.group(0, 1)->holds);
  CHECK(p.released(0) == 0);
  CHECK(p.on_claim(1, 0, 2, false, 0).action == ClaimAction::kWait);  // B2: 2..3
  require_granted(p.on_claim(1, 1, 2, false, 0));
  CHECK(p.group(1, 2)->slot == 2);
  p.on_emitted(0, 0);  // A0 emitted
  const auto gone = p.advance(1000);
  REQUIRE(gone.size() == 2);  // A1 and B2; A0 emitted
  CHECK(p.group(0, 0)->holds);
  CHECK(map_of(p) == "##......");
  // A's stale group numbers do not reach B: B's group 0 was released, A's was not.
  CHECK(p.lookup(0, 0).drop == PoolDrop::kNone);
  CHECK(p.lookup(1, 0).drop == PoolDrop::kStaleGroup);
  // A at its cap cannot take B's room.
  p.on_claim(0, 0, 2, false, 2000);
  p.on_claim(0, 1, 2, false, 2000);  // A2: holds 4 with A0
  CHECK(p.entry_counters(0).slots_held == 4);
  p.on_claim(0, 0, 3, false, 2000);
  require_denied(p.on_claim(0, 1, 3, false, 2000), Reason::kOverCap);
  CHECK(p.entry_counters(0).slots_held == 4);
  CHECK(p.entry_counters(1).slots_held == 0);
  CHECK(p.free_slots() == 4);
  CHECK(p.entry_counters(0).expired == 1);
  CHECK(p.entry_counters(1).expired == 1);
  CHECK(p.entry_counters(1).released_groups == 2);
  CHECK(p.entry_counters(0).released_groups == 0);

  // A bad child id is refused and changes nothing.
  const ClaimStep bad = p.on_claim(0, 2, 9, false, 0);
  CHECK(bad.action == ClaimAction::kDrop);
  CHECK(bad.drop == PoolDrop::kBadChild);
  CHECK(!p.group(0, 9));
}
