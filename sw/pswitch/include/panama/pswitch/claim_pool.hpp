// The pool of one engine: slots that pooled (job, tree) entries claim a
// group at a time instead of owning a fixed share (docs/hybrid-allreduce.md,
// "Proposed rules"). Pure logic: no frames, no I/O, no clock; the caller
// passes the time in (now_ns) and turns what each call returns into frames
// (include/panama/claim.hpp).
//
// What an engine keeps:
//  - a free-slot bitmap over the pool (base, size <= 512 slots);
//  - per pooled entry: its group size G, claim cap (the most pool slots it
//    may hold at once), number of children (child ids 0 .. children-1),
//    whether this engine is the tree's root, the latest cumulative release
//    count of each child and their minimum (the entry's released count);
//  - per live group of an entry (released count <= group): the children
//    that claimed it, its G slots when it holds them (first slot, lease
//    deadline, whether the engine emitted for it), this engine's verdict
//    and, at the root, the answer.
//
// The rules:
//  - A claim for (entry, group) from a child: a group below the released
//    count is stale (dropped, DROP_STALE_GROUP). The group's first claim
//    reserves G consecutive free slots, first fit, or none (all or nothing):
//    none when the entry would go over its claim cap (checked first) or the
//    pool has no run of G free slots, or when the claim already says denied
//    below. A later claim saying denied below frees a reservation made for a
//    verdict not yet given. The verdict is given once every child has
//    claimed the group: claims are gathered like contributions, so that a
//    granted group holds slots on every engine of the tree. A non-root
//    engine then passes the claim up, marked denied below when it holds no
//    slots or a child's claim was so marked; the root answers: granted when
//    it holds slots and nothing below was denied, denied otherwise, and
//    remembers the answer until the group is released. Claims are
//    idempotent: a claim from a child that has claimed already changes
//    nothing; once the verdict is given it is repeated (passed up again, or
//    answered again) for every claim.
//  - A claim-result passing down a non-root engine: denied frees the
//    group's slots here; granted keeps them. Either way the engine passes
//    every later claim of the group straight up, gathered or not: children
//    that heard the answer claim no more, and a child that missed it hears
//    it again from the root.
//  - A contribution for sequence s maps to group s / G; when the group holds
//    slots here, to pool slot first + (s - group * G). Otherwise it is
//    dropped: DROP_STALE_GROUP below the released count, else DROP_NO_CLAIM,
//    answered at the root with the group's claim-result when the root has
//    decided it. A contribution the engine counts renews the group's lease.
//  - Releases: the latest cumulative count per child; when the minimum over
//    the children grows, the groups below it are freed and forgotten and the
//    new minimum is this engine's release to pass up (non-root).
//  - Confirmations: the root confirms a released count that grew to every
//    child, and answers a release that asks with its count to that child
//    only. A non-root engine remembers which children asked (it passes the
//    ask up); a confirmation from its parent goes to every child when its
//    count is higher than any passed down before, else to the children that
//    asked.
//  - Leases: a group that holds slots and has emitted nothing frees them
//    when its lease (L after its reservation or its last counted
//    contribution) ends (CLAIM_EXPIRED); at the root its answer becomes
//    denied (expired), also when the root had not decided yet. A group that
//    emitted never expires: its slots are freed by the release.
//  - Entries are isolated: a claim, release or expiry only ever touches the
//    slots of its own entry's groups, and no entry holds more than its cap.
//  - With PoolConfig::max_groups, at most that many groups hold slots at
//    once (an engine that gives each a table entry of its own); a claim
//    beyond it reserves nothing (pool full).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "panama/claim.hpp"

namespace panama::pswitch {

struct PoolConfig {
  uint32_t base = 0;      // first slot of the pool in the engine's packet memory
  uint32_t size = 0;      // pool slots, at most ClaimPool::kMaxSlots
  uint64_t lease_ns = 0;  // L, > 0
  // The most groups holding slots at once (0: no limit): an engine that gives
  // each claim a table entry of its own has only so many for them. A claim
  // beyond it reserves nothing, as for a pool without a run of G free slots.
  uint32_t max_groups = 0;
};

struct PooledEntry {
  uint16_t job = 0;
  uint8_t tree = 0;
  uint32_t group_size = 1;  // G: sequences per group, slots per claim
  uint32_t claim_cap = 0;   // the most pool slots the entry holds at once
  uint32_t children = 1;    // child ids 0 .. children-1, at most 64
  bool root = false;
};

// Why the pool refused a frame (kNone: it did not).
enum class PoolDrop : uint8_t {
  kNone = 0,
  kStaleGroup,  // group below the entry's released count (DROP_STALE_GROUP)
  kNoClaim,     // contribution for a group that holds no slots here (DROP_NO_CLAIM)
  kBadChild,    // child id not below the entry's number of children
};

enum class ClaimAction : uint8_t {
  kWait = 0,  // recorded; waiting for the claims of the other children
  kPassUp,    // non-root: send the claim to the parent (denied_below as given)
  kAnswer,    // root: send the claim-result (answer, reason) down the tree
  kDrop,      // refused (drop says why)
};

struct ClaimStep {
  ClaimAction action = ClaimAction::kWait;
  bool denied_below = false;                      // kPassUp: the flag of the claim to pass up
  claim::Answer answer = claim::Answer::kDenied;  // kAnswer
  claim::Reason reason = claim::Reason::kNone;    // kAnswer; kPassUp: why denied (this engine's view)
  PoolDrop drop = PoolDrop::kNone;                // kDrop
  bool duplicate = false;                         // the child had claimed the group already
};

// Whom a release confirmation goes to: nobody, every child of the entry,
// or only the child the release came from (root), or `children` (passed
// down from the parent).
enum class ConfirmTo : uint8_t { kNone, kAll, kSender, kListed };

struct ReleaseStep {
  PoolDrop drop = PoolDrop::kNone;       // kBadChild
  bool grew = false;                     // the entry's released count grew: groups below it were freed
  uint32_t released = 0;                 // the entry's released count, the release a non-root passes up
  ConfirmTo confirm = ConfirmTo::kNone;  // the root's confirmation of `released` (kNone, kAll, kSender)
};

struct ConfirmStep {
  ConfirmTo to = ConfirmTo::kNone;  // kAll, or kListed (kNone when the list is empty)
  std::vector<uint16_t> children;   // kListed: the children that asked
};

struct SlotLookup {
  PoolDrop drop = PoolDrop::kNone;  // kNone: mapped to `slot`
  uint32_t group = 0;
  uint32_t slot = 0;
  // kNoClaim at the root, for a group it has decided: the claim-result to
  // send down instead of counting the contribution.
  bool has_answer = false;
  claim::Answer answer = claim::Answer::kDenied;
  claim::Reason reason = claim::Reason::kNone;
};

struct PoolExpiry {
  uint32_t entry = 0;
  uint32_t group = 0;
};

// One live group of an entry, as the pool keeps it.
struct GroupView {
  uint32_t group = 0;
  uint64_t claimed = 0;   // bit c: child c has claimed the group
  bool holds = false;     // holds G slots here
  uint32_t slot = 0;      // first slot (holds)
  uint64_t deadline = 0;  // lease end (holds)
  bool emitted = false;
  bool expired = false;
  bool verdict_given = false;  // non-root: claim passed up; root: decided
  bool denied = false;         // the verdict (or, before it, what it would be so far)
  claim::Reason why = claim::Reason::kNone;
  bool has_answer = false;  // root: decided; non-root: a claim-result passed down (claims go straight up)
  claim::Answer answer = claim::Answer::kDenied;
  claim::Reason reason = claim::Reason::kNone;
};

// Counters of one entry, or of the whole pool (the sums; there slots_held is
// the pool's slots in use).
struct PoolCounters {
  uint64_t claims_in = 0;
  uint64_t claim_duplicates = 0;  // claims from a child that had claimed the group already
  uint64_t granted = 0;           // verdicts given: root answers granted, non-root claims passed up clean
  std::array<uint64_t, claim::kReasonCount> denied{};  // verdicts given denied, by claim::Reason
  uint64_t reservations = 0;                           // groups that took slots here
  uint64_t expired = 0;                                // CLAIM_EXPIRED
  uint64_t claim_results_in = 0;                       // claim-results seen passing down (non-root)
  uint64_t releases_in = 0;
  uint64_t released_groups = 0;   // growth of the released count
  uint64_t drop_no_claim = 0;     // DROP_NO_CLAIM
  uint64_t drop_stale_group = 0;  // DROP_STALE_GROUP (contributions and claims)
  uint64_t drop_bad_child = 0;
  uint32_t slots_held = 0;
  uint32_t slots_high_water = 0;
};

class ClaimPool {
 public:
  static constexpr uint32_t kMaxSlots = 512;
  static constexpr uint32_t kMaxChildren = 64;

  // Throws std::invalid_argument for a pool over kMaxSlots, a zero lease, an
  // entry with G = 0 or G > kMaxSlots, children not in 1..64, or two entries
  // with the same (job, tree).
  ClaimPool(const PoolConfig& config, std::vector<PooledEntry> entries);

  // The index of the entry (job, tree), -1 when it is not pooled here.
  int find_entry(uint16_t job, uint8_t tree) const;

  // The calls below take an entry index (find_entry), which must be valid.

  ClaimStep on_claim(uint32_t entry, uint16_t child, uint32_t group, bool denied_below, uint64_t now_ns);

  // A claim-result for (entry, group) passing down a non-root engine (the
  // caller replicates it down whatever this returns). Returns whether slots
  // were freed. Ignored at the root and for released groups.
  bool on_claim_result(uint32_t entry, uint32_t group, claim::Answer answer);

  // A release from `child` (`ask`: a repeated one that wants a confirmation).
  ReleaseStep on_release(uint32_t entry, uint16_t child, uint32_t released, bool ask = false);
  // A confirmation of `released` from the parent of a non-root engine: where
  // to pass it down. Forgets the asks.
  ConfirmStep on_confirmation(uint32_t entry, uint32_t released);

  // Maps a contribution's sequence to its pool slot (counting the drops)
  // without renewing the lease.
  SlotLookup lookup(uint32_t entry, uint32_t seq);
  // Renews the lease of seq's group (no-op when it holds no slots). For an
  // engine that renews only on contributions it counts: a retransmission
  // loop then cannot hold a claim for ever.
  void renew(uint32_t entry, uint32_t seq, uint64_t now_ns);
  // lookup, then renew when mapped.
  SlotLookup on_contribution(uint32_t entry, uint32_t seq, uint64_t now_ns);
  // The engine emitted for seq (a partial aggregate, or the result at the
  // root): its group never expires from now on.
  void on_emitted(uint32_t entry, uint32_t seq);

  // Expires every group whose lease ended at or before now_ns with nothing
  // emitted; returns them.
  std::vector<PoolExpiry> advance(uint64_t now_ns);

  // ---- inspection
  uint32_t entry_count() const { return static_cast<uint32_t>(entries_.size()); }
  const PooledEntry& entry(uint32_t i) const { return entries_.at(i).cfg; }
  const PoolConfig& config() const { return cfg_; }
  uint32_t released(uint32_t entry) const { return entries_.at(entry).released; }
  uint32_t child_released(uint32_t entry, uint16_t child) const {
    return entries_.at(entry).child_released.at(child);
  }
  std::optional<GroupView> group(uint32_t entry, uint32_t group) const;
  std::vector<GroupView> groups(uint32_t entry) const;  // live groups, ascending
  bool slot_free(uint32_t slot) const;                  // an absolute slot of the pool
  uint32_t free_slots() const { return cfg_.size - total_.slots_held; }
  uint32_t holding_groups() const { return holding_; }
  const PoolCounters& counters() const { return total_; }
  const PoolCounters& entry_counters(uint32_t entry) const { return entries_.at(entry).ctr; }

 private:
  struct Entry {
    PooledEntry cfg;
    uint32_t released = 0;
    std::vector<uint32_t> child_released;
    std::vector<bool> asked;      // non-root: children whose release asked since the last confirmation
    uint32_t confirmed_down = 0;  // non-root: the highest count passed down to every child
    std::map<uint32_t, GroupView> groups;
    PoolCounters ctr;
  };

  template <class Field>
  void count(Entry& e, Field PoolCounters::*field) {
    ++(e.ctr.*field);
    ++(total_.*field);
  }
  void count_denied(Entry& e, claim::Reason r);
  void count_verdict(Entry& e, const GroupView& g);

  // First fit: the first pool index of a run of n free slots, or -1.
  int find_run(uint32_t n) const;
  // Reserves G slots for `g` (all or nothing); the reason when it cannot.
  claim::Reason reserve(Entry& e, GroupView& g, uint64_t now_ns);
  void free_slots_of(Entry& e, GroupView& g);
  uint32_t group_of(const Entry& e, uint32_t seq) const { return seq / e.cfg.group_size; }

  PoolConfig cfg_;
  std::vector<Entry> entries_;
  std::array<bool, kMaxSlots> used_{};
  uint32_t holding_ = 0;  // groups holding slots
  PoolCounters total_;
};

}  // namespace panama::pswitch
