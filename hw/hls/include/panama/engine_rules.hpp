// The rules of the PANAMA aggregation engine, without its packet memory.
//
// EngineRules is the one definition of what an engine decides for a frame:
// MAC-error and oversize drops, classification outcomes, the (job, tree)
// table lookup, child admission, the slot/generation window, duplicates,
// fan-in completion, the emitted header (ECN OR, cwnd_cap minimum, addresses
// of the entry) and every counter, plus the AXI4-Lite-shaped register
// interface (include/panama/regmap.hpp) that programs the table. It never
// touches payload data: `decide` returns what to do with the slot memory
// (load, add, re-emit, pass, nothing) and the caller does it with its own
// memory layout.
//
// The rules are three pieces of state, each with the part of the rules that
// uses it, so that the Vitis kernel can give each to a process of its own:
//   RuleTable     control registers, staged entry, the (job, tree) table:
//                 everything up to "which slot and bank" (front());
//   SlotTable     the slots' generation and bank state: the rest of the
//                 decision (decide_slot());
//   CounterBank   the global and per-entry counters and the 64-bit read latch.
// Counting goes through a sink (`Counts`): the host engine increments the
// counters at once (CounterBank::Direct), the kernel records the increments
// in a token for its counter process (kernel.hpp). A register write returns
// what it does to the other two (RegEffect: reset, counter clear, an entry's
// slot range and counters cleared by a commit).
//
// EngineRules composes the three in one object, in the order the rules were
// always applied; two datapaths use it or its pieces: the host engine
// (engine.hpp, byte frames and runs of elements, the software PSwitch and
// the tools) and the Vitis kernel (kernel.hpp, 512-bit beats and URAM, the
// pieces in three processes). Both therefore follow the same rules by
// construction.
//
// The reset state is the value of a default-constructed object (member
// initialisers only, no constructor loop), so a static instance in the
// kernel starts in reset without running code; CONTROL.RESET returns to it.
#pragma once

#include <stdint.h>

#include "panama/hls_compat.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"

namespace panama {

// What the engine did with one frame.
enum class EngineAction : uint8_t {
  kPassed,      // non-PANAMA or result-down frame forwarded unchanged
  kAggregated,  // contribution added, slot not complete yet
  kEmitted,     // contribution completed the slot; the aggregate was emitted
  kReemitted,   // retransmission for an emitted slot; stored aggregate re-emitted
  kDropped,     // dropped; `drop_counter` says why
};

struct EngineOutcome {
  EngineAction action;
  uint32_t drop_counter;  // a regmap::GlobalCounter (kGcDrop* or kGcDuplicates) when dropped
  int32_t entry;          // table entry involved, -1 when none
};

// What the datapath does with the frame's payload and the slot memory.
enum class SlotOp : uint8_t {
  kNone,    // frame dropped: payload discarded, no slot touched
  kPass,    // frame forwarded unchanged
  kLoad,    // first contribution: slot (slot, bank) := payload widened to fp32
  kAdd,     // slot (slot, bank) += payload widened to fp32, element-wise fp32_add
  kReemit,  // payload discarded; the stored aggregate of (slot, bank) is sent
};

// The decision for one frame. When `emit` is set, the datapath sends a frame
// with header `out` and the `out.elem_count` elements of (slot, bank) after
// performing `op`, rounded to `out.elem_type`; `out` is written only then.
struct FrameDecision {
  EngineOutcome outcome;
  SlotOp op;
  bool emit;
  uint32_t slot;
  uint32_t bank;
  uint32_t elem_count;  // payload elements to load or add (kLoad, kAdd)
  uint8_t elem_type;    // their type (kLoad, kAdd)
  wire::Header out;
};

// n / q and n % q for a share q >= 1 without a divider: `reciprocal` is
// share_reciprocal(q), computed once when the entry is committed. The
// estimate floor(n * floor(2^32 / q) / 2^32) is q_true or q_true - 1 (the
// reciprocal is at most 1 below 2^32 / q and n < 2^32), so one correction
// step makes it exact; n * reciprocal < 2^64 because reciprocal <= 2^32.
// Frames are decided with a multiply instead of a 32-clock division.
inline uint64_t share_reciprocal(uint32_t q) {
  return (uint64_t{1} << 32) / q;
}
inline void divide_by_share(uint32_t n, uint32_t q, uint64_t reciprocal, uint32_t& quotient,
                            uint32_t& remainder) {
  uint32_t est = static_cast<uint32_t>((uint64_t{n} * reciprocal) >> 32);
  uint32_t rem = n - est * q;  // est * q <= n
  if (rem >= q) {
    est += 1;
    rem -= q;
  }
  quotient = est;
  remainder = rem;
}

// The 64-bit counter read protocol of the register map: reading a counter's
// low word (offset +0) returns it and latches the high word, which the read
// of +4 returns, so a 64-bit value read as two words is consistent; a high
// word read without its low word first gives the current high word. A class
// of its own so that values beyond 2^32 are testable without counting there.
class CounterLatch {
 public:
  uint32_t read(uint64_t value, uint32_t addr) {
    if ((addr & 4u) == 0) {
      hi_ = static_cast<uint32_t>(value >> 32);
      addr_ = addr + 4;
      return static_cast<uint32_t>(value);
    }
    return addr == addr_ ? hi_ : static_cast<uint32_t>(value >> 32);
  }
  void reset() {
    hi_ = 0;
    addr_ = kNone;
  }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;
  uint32_t hi_ = 0;
  uint32_t addr_ = kNone;
};

// ------------------------------------------------------------------ pieces

// A register address as the register blocks decode it: the map's 14 bits,
// word-aligned.
inline uint32_t reg_offset(uint32_t addr) {
  return addr & ((1u << regmap::kAddressBits) - 1) & ~3u;
}

enum BankState : uint8_t { kBankEmpty = 0, kBankAccumulating = 1, kBankDone = 2 };

// One (job, tree) entry of the table as COMMIT decodes it.
struct RuleEntry {
  bool enabled;
  bool root;
  uint16_t job_id;
  uint8_t tree_id;
  uint8_t fan_in;
  uint64_t child_mask;
  uint32_t slot_base;
  uint32_t slot_count;
  uint64_t share_recip;  // share_reciprocal(slot_count), set by COMMIT
  uint16_t out_child_id;
  uint8_t eth_dst[6];
  uint8_t eth_src[6];
  uint32_t ip_src;
  uint32_t ip_dst;
  uint16_t udp_src;
  uint16_t udp_dst;
  uint8_t ttl;
  uint8_t dscp;
};

// One bank (generation) of a slot.
struct RuleBank {
  uint8_t state;  // BankState
  uint8_t count;  // distinct children so far
  uint8_t ecn;    // OR of the contributions' ECN fields
  uint16_t cwnd_cap;
  uint16_t elem_count;
  uint8_t elem_type;
  uint32_t seq;
  uint64_t contributed;  // bitmap of child ids
};

// A slot's state: the newest generation admitted and its two banks.
struct RuleSlot {
  uint32_t top;
  RuleBank bank[2];
};

// What the table stage hands to the slot stage for a frame that reaches a
// slot: the slot, bank and generation, the frame's fields the slot rules
// read, and a copy of its entry (fan-in, the emitted header's fields).
struct SlotRequest {
  int32_t entry;
  uint32_t slot;
  uint32_t bank;
  uint32_t gen;
  bool is_retrans;
  uint32_t seq;
  uint16_t child_id;
  uint8_t ecn;
  uint16_t cwnd_cap;
  uint16_t elem_count;
  uint8_t elem_type;
  RuleEntry ent;
};

// What a register write does beyond the table's own registers.
struct RegEffect {
  bool reset;           // CONTROL.RESET: every slot and counter, the read latch
  bool clear_counters;  // CONTROL.CLEAR_COUNTERS (without RESET)
  bool commit;          // an accepted COMMIT: entry `entry`'s counters and its slot range
  uint32_t entry;
  uint32_t slot_base;
  uint32_t slot_count;
};

// The counters and the 64-bit read latch.
template <uint32_t NumEntries>
class CounterBank {
 public:
  // The host's counting sink: every increment at once.
  struct Direct {
    CounterBank& b;
    void global(uint32_t c) { ++b.global_[c]; }
    void entry(int32_t e, uint32_t c) { ++b.entry_ctr_[e][c]; }
  };
  Direct direct() { return Direct{*this}; }

  // Whether register address `a` (masked, word-aligned) is a counter's.
  static bool owns(uint32_t a) {
    using namespace regmap;
    return (a >= kGlobalCounterBase && a < kGlobalCounterBase + 8 * kNumGlobalCounters) ||
           (a >= kEntryCounterBase && a < kEntryCounterBase + kEntryCounterStride * NumEntries);
  }
  // Reads a counter word (owns(a)): the low word latches the high word.
  uint32_t read(uint32_t a) {
    using namespace regmap;
    if (a >= kGlobalCounterBase && a < kGlobalCounterBase + 8 * kNumGlobalCounters) {
      return latch_.read(global_[(a - kGlobalCounterBase) / 8], a);
    }
    const uint32_t e = (a - kEntryCounterBase) / kEntryCounterStride;
    const uint32_t c = (a - kEntryCounterBase - e * kEntryCounterStride) / 8;
    if (c < kNumEntryCounters) return latch_.read(entry_ctr_[e][c], a);
    return 0;
  }

  uint64_t global_counter(uint32_t c) const { return c < regmap::kNumGlobalCounters ? global_[c] : 0; }
  uint64_t entry_counter(uint32_t e, uint32_t c) const {
    return (e < NumEntries && c < regmap::kNumEntryCounters) ? entry_ctr_[e][c] : 0;
  }

  void clear_globals() {
    for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) {
      PANAMA_HLS(UNROLL)
      global_[c] = 0;
    }
  }
  void clear_entry(uint32_t e) {
    for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
      PANAMA_HLS(UNROLL)
      entry_ctr_[e][c] = 0;
    }
  }
  void clear() {
    clear_globals();
    for (uint32_t e = 0; e < NumEntries; ++e) clear_entry(e);
  }
  void reset_latch() { latch_.reset(); }

  // The state, public for the kernel's counter process (its partitioning
  // pragmas and the read-modify-write of one entry per frame).
  uint64_t global_[regmap::kNumGlobalCounters] = {};
  uint64_t entry_ctr_[NumEntries][regmap::kNumEntryCounters] = {};
  CounterLatch latch_;
};

// Control registers, the staged entry and the (job, tree) table, with the
// rules that need only them: everything a frame goes through before its
// slot. The key and range fields of every entry are kept beside the table
// (key_*, range_*) so that the lookup and the commit checks read them all at
// once while the full entry is read once per frame, by index.
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotCapacity, uint32_t ElemTypes>
class RuleTable {
 public:
  static constexpr uint32_t kMaxFanIn = 64;

  // Registers other than counters (CounterBank::owns), address masked and aligned.
  uint32_t reg_read(uint32_t a) const {
    using namespace regmap;
    switch (a) {
      case kId:
        return kIdValue;
      case kVersion:
        return (kVersionMajor << 16) | kVersionMinor;
      case regmap::kNumEntries:
        return NumEntries;
      case regmap::kNumSlots:
        return NumSlots;
      case regmap::kSlotElems:
        return SlotCapacity;
      case kControl:
        return enabled_ ? kControlEnable : 0;
      case kUdpPort:
        return udp_port_;
      case regmap::kElemTypes:
        return ElemTypes;
      case kEntryIndex:
        return entry_index_;
      case kEntryStatus:
        return entry_status_;
      default:
        break;
    }
    if (a >= kEKey && a <= kEIpTtlDscp) return staged_[(a - kEKey) / 4];
    return 0;
  }

  // A register write (address masked and aligned); returns its effect on
  // the slots and counters.
  RegEffect reg_write(uint32_t a, uint32_t value) {
    using namespace regmap;
    RegEffect fx{false, false, false, 0, 0, 0};
    switch (a) {
      case kControl:
        enabled_ = (value & kControlEnable) != 0;
        if (value & kControlReset) {
          reset();
          fx.reset = true;
          enabled_ = (value & kControlEnable) != 0;
        } else if (value & kControlClearCounters) {
          fx.clear_counters = true;
        }
        return fx;
      case kUdpPort:
        udp_port_ = static_cast<uint16_t>(value);
        return fx;
      case kEntryIndex:
        entry_index_ = value;
        return fx;
      case kEntryCmd:
        entry_command(value, fx);
        return fx;
      default:
        break;
    }
    if (a >= kEKey && a <= kEIpTtlDscp) staged_[(a - kEKey) / 4] = value;
    return fx;
  }

  uint16_t udp_port() const { return udp_port_; }

  // The rules up to the slot: counts through `k`; returns true with `r`
  // filled when the frame goes on to its slot (SlotTable::decide_slot),
  // false with `d` complete when it was passed or dropped here.
  template <class Counts>
  bool front(wire::FrameClass cls, const wire::Header& h, uint32_t len, bool mac_error, FrameDecision& d,
             SlotRequest& r, Counts& k) const {
    using namespace regmap;
    k.global(kGcFramesIn);
    if (mac_error) return drop(kGcDropMacError, -1, d, k);
    if (len > wire::kMaxFrameBytes) return drop(kGcDropOversize, -1, d, k);
    if (!enabled_) return pass(kGcPassthrough, d, k);

    switch (cls) {
      case wire::FrameClass::kNotPanama:
        return pass(kGcPassthrough, d, k);
      case wire::FrameClass::kResultDown:
        return pass(kGcResultsPassed, d, k);
      case wire::FrameClass::kTruncated:
        return drop(kGcDropTruncated, -1, d, k);
      case wire::FrameClass::kBadIpHeader:
        return drop(kGcDropBadIpHeader, -1, d, k);
      case wire::FrameClass::kBadVersion:
        return drop(kGcDropBadVersion, -1, d, k);
      case wire::FrameClass::kBadType:
        return drop(kGcDropBadType, -1, d, k);
      case wire::FrameClass::kBadElemType:
        return drop(kGcDropBadElemType, -1, d, k);
      case wire::FrameClass::kBadElemCount:
        return drop(kGcDropBadElemCount, -1, d, k);
      case wire::FrameClass::kBadLength:
        return drop(kGcDropBadLength, -1, d, k);
      case wire::FrameClass::kOk:
        break;
    }
    if (h.elem_count > SlotCapacity) return drop(kGcDropBadElemCount, -1, d, k);

    const bool is_retrans = h.type == static_cast<uint8_t>(wire::PacketType::kRetransmission);
    k.global(kGcPanamaIn);
    if (is_retrans) k.global(kGcRetransIn);

    const int32_t e = lookup(h.job_id, h.tree_id);
    if (e < 0) return drop(kGcDropUnknownEntry, -1, d, k);
    const RuleEntry& ent = table_[e];
    if (is_retrans) k.entry(e, kEcRetransIn);

    if (h.child_id >= kMaxFanIn || ((ent.child_mask >> h.child_id) & 1u) == 0) {
      k.entry(e, kEcDropChildNotAllowed);
      return drop(kGcDropChildNotAllowed, e, d, k);
    }

    uint32_t gen, slot_in_share;
    divide_by_share(h.seq, ent.slot_count, ent.share_recip, gen, slot_in_share);
    r.entry = e;
    r.slot = ent.slot_base + slot_in_share;
    r.bank = gen & 1u;
    r.gen = gen;
    r.is_retrans = is_retrans;
    r.seq = h.seq;
    r.child_id = h.child_id;
    r.ecn = h.ecn;
    r.cwnd_cap = h.cwnd_cap;
    r.elem_count = h.elem_count;
    r.elem_type = h.elem_type;
    r.ent = ent;
    return true;
  }

  // The first enabled entry with this key (commit keeps keys unique).
  int32_t lookup(uint16_t job, uint8_t tree) const {
    for (uint32_t i = 0; i < NumEntries; ++i) {
      PANAMA_HLS(UNROLL)
      if (key_enabled_[i] && key_job_[i] == job && key_tree_[i] == tree) return static_cast<int32_t>(i);
    }
    return -1;
  }

  // Control state (reset values here and in reset()).
  bool enabled_ = true;
  uint16_t udp_port_ = wire::kDefaultUdpPort;
  uint32_t entry_index_ = 0;
  uint32_t entry_status_ = regmap::kStatusOk;
  uint32_t staged_[(regmap::kEIpTtlDscp - regmap::kEKey) / 4 + 1] = {};
  // The table: full entries (read by index), and each entry's enable bit,
  // key and slot range beside it (read all at once). Every write of table_[i]
  // writes the same fields here (set_entry).
  RuleEntry table_[NumEntries] = {};
  bool key_enabled_[NumEntries] = {};
  uint16_t key_job_[NumEntries] = {};
  uint8_t key_tree_[NumEntries] = {};
  uint32_t range_base_[NumEntries] = {};
  uint32_t range_count_[NumEntries] = {};

 private:
  static constexpr uint32_t kNumStaged = (regmap::kEIpTtlDscp - regmap::kEKey) / 4 + 1;

  // Every field of a decision that touches no slot (`out` is left alone).
  static void none(EngineOutcome o, FrameDecision& d) {
    d.outcome = o;
    d.op = SlotOp::kNone;
    d.emit = false;
    d.slot = 0;
    d.bank = 0;
    d.elem_count = 0;
    d.elem_type = 0;
  }
  template <class Counts>
  static bool pass(uint32_t counter, FrameDecision& d, Counts& k) {
    k.global(counter);
    none(EngineOutcome{EngineAction::kPassed, 0, -1}, d);
    d.op = SlotOp::kPass;
    return false;
  }
  template <class Counts>
  static bool drop(uint32_t counter, int32_t e, FrameDecision& d, Counts& k) {
    k.global(counter);
    none(EngineOutcome{EngineAction::kDropped, counter, e}, d);
    return false;
  }

  void set_entry(uint32_t i, const RuleEntry& n) {
    table_[i] = n;
    key_enabled_[i] = n.enabled;
    key_job_[i] = n.job_id;
    key_tree_[i] = n.tree_id;
    range_base_[i] = n.slot_base;
    range_count_[i] = n.slot_count;
  }

  void entry_command(uint32_t cmd, RegEffect& fx) {
    using namespace regmap;
    if (cmd != kCmdCommit && cmd != kCmdLoad && cmd != kCmdDisable) {
      entry_status_ = kStatusBadCommand;
      return;
    }
    if (entry_index_ >= NumEntries) {
      entry_status_ = kStatusBadIndex;
      return;
    }
    const uint32_t idx = entry_index_;
    if (cmd == kCmdDisable) {
      table_[idx].enabled = false;
      key_enabled_[idx] = false;
      entry_status_ = kStatusOk;
      return;
    }
    if (cmd == kCmdLoad) {
      load_staged(table_[idx]);
      entry_status_ = kStatusOk;
      return;
    }
    RuleEntry n{};
    decode_staged(n);
    entry_status_ = validate(n, idx);
    if (entry_status_ != kStatusOk) return;
    n.share_recip = share_reciprocal(n.slot_count);  // slot_count >= 1: validated
    set_entry(idx, n);
    fx.commit = true;
    fx.entry = idx;
    fx.slot_base = n.slot_base;
    fx.slot_count = n.slot_count;
  }

  uint32_t validate(const RuleEntry& n, uint32_t idx) const {
    using namespace regmap;
    if (n.fan_in == 0 || n.fan_in > kMaxFanIn || n.fan_in > popcount64(n.child_mask)) return kStatusBadFanIn;
    if (n.slot_count == 0 || n.slot_count > 0xFFFF || n.slot_base >= NumSlots ||
        n.slot_count > NumSlots - n.slot_base) {
      return kStatusBadSlotRange;
    }
    // Checked whatever the staged ENABLE bit: a commit empties its own slot
    // range, so a disabled entry's range must not reach into an enabled
    // entry's slots either (that would silently wipe another job's state).
    // Overlap first, then key, entry by entry in index order.
    for (uint32_t i = 0; i < NumEntries; ++i) {
      PANAMA_HLS(UNROLL)
      if (i == idx || !key_enabled_[i]) continue;
      if (n.slot_base < range_base_[i] + range_count_[i] && range_base_[i] < n.slot_base + n.slot_count) {
        return kStatusSlotOverlap;
      }
      if (key_job_[i] == n.job_id && key_tree_[i] == n.tree_id) return kStatusDuplicateKey;
    }
    return kStatusOk;
  }

  static uint32_t popcount64(uint64_t v) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < 64; ++i) {
      PANAMA_HLS(UNROLL)
      n += (v >> i) & 1u;
    }
    return n;
  }

  // Staged register k holds register kEKey + 4k.
  uint32_t& staged(uint32_t reg) { return staged_[(reg - regmap::kEKey) / 4]; }

  void decode_staged(RuleEntry& n) {
    using namespace regmap;
    n.job_id = static_cast<uint16_t>(staged(kEKey));
    n.tree_id = static_cast<uint8_t>(staged(kEKey) >> 16);
    n.enabled = (staged(kEFlags) & kEntryFlagEnable) != 0;
    n.root = (staged(kEFlags) & kEntryFlagRoot) != 0;
    const uint32_t fan_in = staged(kEFanIn);
    n.fan_in = static_cast<uint8_t>(fan_in > 255 ? 255 : fan_in);  // >64 is rejected by validate
    n.child_mask = (uint64_t{staged(kEChildMaskHi)} << 32) | staged(kEChildMaskLo);
    n.slot_base = staged(kESlotBase);
    n.slot_count = staged(kESlotCount);
    n.out_child_id = static_cast<uint16_t>(staged(kEOutChildId));
    unpack_mac(staged(kEEthDstHi), staged(kEEthDstLo), n.eth_dst);
    unpack_mac(staged(kEEthSrcHi), staged(kEEthSrcLo), n.eth_src);
    n.ip_src = staged(kEIpSrc);
    n.ip_dst = staged(kEIpDst);
    n.udp_src = static_cast<uint16_t>(staged(kEUdpPorts));
    n.udp_dst = static_cast<uint16_t>(staged(kEUdpPorts) >> 16);
    n.ttl = static_cast<uint8_t>(staged(kEIpTtlDscp));
    n.dscp = static_cast<uint8_t>((staged(kEIpTtlDscp) >> 8) & 0x3F);
  }

  void load_staged(const RuleEntry& n) {
    using namespace regmap;
    staged(kEKey) = n.job_id | (uint32_t{n.tree_id} << 16);
    staged(kEFlags) = (n.enabled ? kEntryFlagEnable : 0) | (n.root ? kEntryFlagRoot : 0);
    staged(kEFanIn) = n.fan_in;
    staged(kEChildMaskLo) = static_cast<uint32_t>(n.child_mask);
    staged(kEChildMaskHi) = static_cast<uint32_t>(n.child_mask >> 32);
    staged(kESlotBase) = n.slot_base;
    staged(kESlotCount) = n.slot_count;
    staged(kEOutChildId) = n.out_child_id;
    pack_mac(n.eth_dst, staged(kEEthDstHi), staged(kEEthDstLo));
    pack_mac(n.eth_src, staged(kEEthSrcHi), staged(kEEthSrcLo));
    staged(kEIpSrc) = n.ip_src;
    staged(kEIpDst) = n.ip_dst;
    staged(kEUdpPorts) = n.udp_src | (uint32_t{n.udp_dst} << 16);
    staged(kEIpTtlDscp) = n.ttl | (uint32_t{n.dscp} << 8);
  }

  static void unpack_mac(uint32_t hi, uint32_t lo, uint8_t* mac) {
    mac[0] = static_cast<uint8_t>(hi >> 8);
    mac[1] = static_cast<uint8_t>(hi);
    wire::store_be32(mac + 2, lo);
  }
  static void pack_mac(const uint8_t* mac, uint32_t& hi, uint32_t& lo) {
    hi = (uint32_t{mac[0]} << 8) | mac[1];
    lo = wire::load_be32(mac + 2);
  }

  // The table side of CONTROL.RESET: back to a default-constructed object.
  void reset() {
    enabled_ = true;
    udp_port_ = wire::kDefaultUdpPort;
    entry_index_ = 0;
    entry_status_ = regmap::kStatusOk;
    for (uint32_t i = 0; i < kNumStaged; ++i) {
      PANAMA_HLS(UNROLL)
      staged_[i] = 0;
    }
    for (uint32_t e = 0; e < NumEntries; ++e) {
      PANAMA_HLS(UNROLL)
      set_entry(e, RuleEntry{});
    }
  }
};

// The slots' generation and bank state, with the rest of the rules: the
// generation window, duplicates, the element type and count of a bank, the
// fan-in and the emitted header.
template <uint32_t NumSlots>
class SlotTable {
 public:
  // Decides a frame that reached its slot (RuleTable::front returned true).
  template <class Counts>
  void decide_slot(const SlotRequest& r, FrameDecision& d, Counts& k) {
    decide_meta(slots_[r.slot], r, d, k);
  }

  // The same on a copy of the slot's state `sm` (read before, written back
  // after: the kernel's slot process forwards it between frames).
  template <class Counts>
  static void decide_meta(RuleSlot& sm, const SlotRequest& r, FrameDecision& d, Counts& k) {
    using namespace regmap;
    const int32_t e = r.entry;
    const uint32_t gen = r.gen;
    RuleBank& bk = sm.bank[r.bank];

    // Generation window.
    bool advance = false;
    if (gen == sm.top + 1) {
      if (bk.state == kBankAccumulating) return seq_window_drop(e, d, k);  // older generation still open
      advance = true;
    } else if (gen == sm.top) {
      if (bk.state != kBankEmpty && bk.seq != r.seq) return seq_window_drop(e, d, k);
    } else if (sm.top >= 1 && gen == sm.top - 1) {
      if (bk.state == kBankEmpty || bk.seq != r.seq) return seq_window_drop(e, d, k);
    } else {
      return seq_window_drop(e, d, k);
    }

    none(EngineOutcome{EngineAction::kAggregated, 0, e}, d);
    d.slot = r.slot;
    d.bank = r.bank;
    d.elem_count = r.elem_count;
    d.elem_type = r.elem_type;
    const uint64_t child_bit = uint64_t{1} << r.child_id;
    if (advance || bk.state == kBankEmpty) {
      // First contribution of this generation: stored as it arrives.
      if (advance) sm.top = gen;
      bk.state = kBankAccumulating;
      bk.seq = r.seq;
      bk.contributed = child_bit;
      bk.count = 1;
      bk.ecn = r.ecn;
      bk.cwnd_cap = r.cwnd_cap;
      bk.elem_count = r.elem_count;
      bk.elem_type = r.elem_type;
      d.op = SlotOp::kLoad;
    } else if (bk.state == kBankDone) {
      if (r.is_retrans) {
        if (r.elem_type != bk.elem_type) return type_mismatch_drop(e, d, k);
        k.global(kGcRetransServed);
        k.entry(e, kEcRetransServed);
        d.outcome.action = EngineAction::kReemitted;
        d.op = SlotOp::kReemit;
        d.emit = true;
        emission_header(r.ent, bk, true, d.out);
        return;
      }
      k.entry(e, kEcDuplicates);
      return drop(kGcDuplicates, e, d, k);
    } else {  // accumulating
      if (bk.contributed & child_bit) {
        k.entry(e, kEcDuplicates);
        return drop(kGcDuplicates, e, d, k);
      }
      if (r.elem_type != bk.elem_type) return type_mismatch_drop(e, d, k);
      if (r.elem_count != bk.elem_count) {
        k.entry(e, kEcDropCountMismatch);
        return drop(kGcDropCountMismatch, e, d, k);
      }
      bk.contributed |= child_bit;
      bk.count += 1;
      bk.ecn |= r.ecn;
      if (r.cwnd_cap < bk.cwnd_cap) bk.cwnd_cap = r.cwnd_cap;
      d.op = SlotOp::kAdd;
    }

    k.global(kGcAggregated);
    k.entry(e, kEcAggregated);
    if (r.ecn == wire::kEcnCe) {
      k.global(kGcEcnMarked);
      k.entry(e, kEcEcnMarked);
    }
    if (bk.count < r.ent.fan_in) return;

    bk.state = kBankDone;
    k.global(kGcEmitted);
    k.entry(e, kEcEmitted);
    d.outcome.action = EngineAction::kEmitted;
    d.emit = true;
    emission_header(r.ent, bk, false, d.out);
  }

  // Generation 0, both banks empty.
  static RuleSlot cleared() {
    return RuleSlot{0,
                    {RuleBank{kBankEmpty, 0, 0, 0, 0, 0, 0, 0}, RuleBank{kBankEmpty, 0, 0, 0, 0, 0, 0, 0}}};
  }
  void clear_slot(uint32_t s) { slots_[s] = cleared(); }
  void clear_range(uint32_t base, uint32_t count) {
    for (uint32_t s = 0; s < count; ++s) clear_slot(base + s);
  }

  // Per-slot generation state; the slot data lives in the datapath. Public
  // for the kernel's slot process (read, forwarded, written back).
  RuleSlot slots_[NumSlots] = {};

 private:
  static void none(EngineOutcome o, FrameDecision& d) {
    d.outcome = o;
    d.op = SlotOp::kNone;
    d.emit = false;
    d.slot = 0;
    d.bank = 0;
    d.elem_count = 0;
    d.elem_type = 0;
  }
  template <class Counts>
  static void drop(uint32_t counter, int32_t e, FrameDecision& d, Counts& k) {
    k.global(counter);
    none(EngineOutcome{EngineAction::kDropped, counter, e}, d);
  }
  template <class Counts>
  static void type_mismatch_drop(int32_t e, FrameDecision& d, Counts& k) {
    k.entry(e, regmap::kEcDropTypeMismatch);
    drop(regmap::kGcDropTypeMismatch, e, d, k);
  }
  template <class Counts>
  static void seq_window_drop(int32_t e, FrameDecision& d, Counts& k) {
    k.entry(e, regmap::kEcDropSeqWindow);
    drop(regmap::kGcDropSeqWindow, e, d, k);
  }

  // The header of the frame emitted for a completed bank (docs/protocol.md §6).
  static void emission_header(const RuleEntry& ent, const RuleBank& bk, bool retransmission,
                              wire::Header& h) {
    for (uint32_t i = 0; i < 6; ++i) {
      PANAMA_HLS(UNROLL)
      h.eth_dst[i] = ent.eth_dst[i];
      h.eth_src[i] = ent.eth_src[i];
    }
    h.dscp = ent.dscp;
    h.ecn = bk.ecn;
    h.ttl = ent.ttl;
    h.ip_id = 0;
    h.ip_src = ent.ip_src;
    h.ip_dst = ent.ip_dst;
    h.udp_src = ent.udp_src;
    h.udp_dst = ent.udp_dst;
    h.version = wire::kVersion;
    h.type = static_cast<uint8_t>(
        ent.root ? wire::PacketType::kResultDown
                 : (retransmission ? wire::PacketType::kRetransmission : wire::PacketType::kAggregateUp));
    h.job_id = ent.job_id;
    h.tree_id = ent.tree_id;
    h.elem_type = bk.elem_type;
    h.child_id = ent.out_child_id;
    h.seq = bk.seq;
    const uint32_t share = ent.slot_count > 0xFFFF ? 0xFFFF : ent.slot_count;
    h.cwnd_cap = static_cast<uint16_t>(bk.cwnd_cap < share ? bk.cwnd_cap : share);
    h.elem_count = bk.elem_count;
  }
};

// ------------------------------------------------------------------ the rules

// ElemTypes is the mask of element types the datapath sums (bit t for
// wire::ElemType t, as the ELEM_TYPES register reports it); the caller
// classifies frames with it (wire::classify_frame's elem_types).
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotCapacity,
          uint32_t ElemTypes = wire::kElemTypeMaskAll>
class EngineRules {
 public:
  static constexpr uint32_t kMaxFanIn = 64;
  static constexpr uint32_t kElemTypes = ElemTypes;

  static_assert(NumEntries >= 1 && NumEntries <= 256, "1..256 table entries");
  static_assert(NumSlots >= 1, "at least one slot");
  static_assert(SlotCapacity >= 1 && SlotCapacity <= 0xFFFF, "element count is a 16-bit field");
  static_assert((ElemTypes & wire::kElemTypeMaskFloat32) != 0 && (ElemTypes & ~wire::kElemTypeMaskAll) == 0,
                "element types: fp32 and any of bf16, fp16");

  using Table = RuleTable<NumEntries, NumSlots, SlotCapacity, ElemTypes>;
  using Slots = SlotTable<NumSlots>;
  using Counters = CounterBank<NumEntries>;

  // ------------------------------------------------------------ control

  uint32_t reg_read(uint32_t addr) {
    const uint32_t a = reg_offset(addr);
    return Counters::owns(a) ? counters_.read(a) : table_.reg_read(a);
  }

  void reg_write(uint32_t addr, uint32_t value) { apply(table_.reg_write(reg_offset(addr), value)); }

  uint64_t global_counter(uint32_t c) const { return counters_.global_counter(c); }
  uint64_t entry_counter(uint32_t e, uint32_t c) const { return counters_.entry_counter(e, c); }
  uint16_t udp_port() const { return table_.udp_port(); }

  // ------------------------------------------------------------ decisions

  // Decides what happens to one frame of `len` bytes, into `d`. `cls` and `h` are the
  // result of wire::classify_frame on the frame's first bytes with
  // udp_port() (only read when the frame gets that far: with `mac_error`,
  // an oversize length or the engine disabled they are ignored). Updates the
  // table's slot state and the counters as if the datapath then performs
  // the decided operation.
  void decide(wire::FrameClass cls, const wire::Header& h, uint32_t len, bool mac_error, FrameDecision& d) {
    typename Counters::Direct k = counters_.direct();
    SlotRequest r;
    if (table_.front(cls, h, len, mac_error, d, r, k)) slots_.decide_slot(r, d, k);
  }

  // A frame dropped whole before the engine looked at it because the
  // receive frame FIFO in front of it had no room (the RTL engine's
  // panama_rx_frame_fifo; a MAC cannot be held back): counted in FRAMES_IN
  // and DROP_RX_OVERFLOW, nothing else changes. This engine has no such
  // FIFO; a host or a co-simulation that runs one in front of it accounts
  // the frames it drops here.
  EngineOutcome count_rx_overflow() {
    typename Counters::Direct k = counters_.direct();
    k.global(regmap::kGcFramesIn);
    k.global(regmap::kGcDropRxOverflow);
    return EngineOutcome{EngineAction::kDropped, regmap::kGcDropRxOverflow, -1};
  }

 private:
  // A register write's effect on the slots and counters, in the order the
  // single-object rules applied it.
  void apply(const RegEffect& fx) {
    if (fx.reset) {
      counters_.reset_latch();
      for (uint32_t s = 0; s < NumSlots; ++s) slots_.clear_slot(s);
      counters_.clear();
    } else if (fx.clear_counters) {
      counters_.clear();
    }
    if (fx.commit) {
      slots_.clear_range(fx.slot_base, fx.slot_count);
      counters_.clear_entry(fx.entry);
    }
  }

  Table table_;
  Slots slots_;
  Counters counters_;
};

}  // namespace panama
