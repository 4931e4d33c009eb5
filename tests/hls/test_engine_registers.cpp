// The engine's register interface (docs/register-map.md): identity and
// parameter registers, staging/COMMIT/LOAD of table entries, every
// ENTRY_STATUS error (each leaves the table as it was), DISABLE, CONTROL
// strobes, UDP_PORT, and the 64-bit counter read protocol. Addresses are
// written as literals from the documentation.
#include <catch2/catch.hpp>
#include <memory>
#include <type_traits>
#include <utility>

#include "hls/engine_harness.hpp"

using namespace panama;
using namespace panama::test;

namespace {

using SmallEngine = EngineUnderTest<8, 64, 144>;

// Register offsets from docs/register-map.md.
constexpr uint32_t kId = 0x000, kVersion = 0x004, kNumEntries = 0x008, kNumSlots = 0x00C, kSlotElems = 0x010,
                   kControl = 0x014, kUdpPort = 0x018, kEntryIndex = 0x040, kEntryCmd = 0x044,
                   kEntryStatus = 0x048;
constexpr uint32_t kStagedFirst = 0x080, kStagedLast = 0x0BC;
constexpr uint32_t kCommit = 1, kLoad = 2, kDisable = 3;
enum Status : uint32_t {
  kOk = 0,
  kBadIndex,
  kBadFanIn,
  kBadSlotRange,
  kSlotOverlap,
  kDuplicateKey,
  kBadCommand
};

uint32_t global_addr(uint32_t c) {
  return 0x200 + 8 * c;
}
uint32_t entry_addr(uint32_t e, uint32_t c) {
  return 0x1000 + 0x80 * e + 8 * c;
}

template <class E>
uint64_t read64(E& eng, uint32_t addr) {
  const uint32_t lo = eng.reg_read(addr);
  const uint32_t hi = eng.reg_read(addr + 4);
  return (uint64_t{hi} << 32) | lo;
}

template <class E>
std::vector<uint32_t> load_entry(E& eng, uint32_t index) {
  eng.reg_write(kEntryIndex, index);
  eng.reg_write(kEntryCmd, kLoad);
  REQUIRE(eng.reg_read(kEntryStatus) == kOk);
  std::vector<uint32_t> v;
  for (uint32_t a = kStagedFirst; a <= kStagedLast; a += 4) v.push_back(eng.reg_read(a));
  return v;
}

template <class E>
uint32_t command(E& eng, uint32_t index, uint32_t cmd) {
  eng.reg_write(kEntryIndex, index);
  eng.reg_write(kEntryCmd, cmd);
  return eng.reg_read(kEntryStatus);
}

EntrySpec base_entry(uint16_t job, uint8_t tree, uint32_t base, uint32_t count) {
  EntrySpec s;
  s.job = job;
  s.tree = tree;
  s.root = true;
  s.fan_in = 2;
  s.child_mask = 0x3;
  s.slot_base = base;
  s.slot_count = count;
  return s;
}

// Sends child 0's contribution for `seq`, then child 1's, and checks that the
// emitted sum is exactly a + b (the slot held nothing else).
template <class E>
void check_fresh_slot(E& eng, const EntrySpec& s, uint32_t seq) {
  const std::vector<uint32_t> a = {ref::bits(1.25f)}, b = {ref::bits(2.5f)};
  Sink sink;
  CHECK(send(eng, contribution(s, 0, seq, a), sink).action == EngineAction::kAggregated);
  CHECK(send(eng, contribution(s, 1, seq, b), sink).action == EngineAction::kEmitted);
  REQUIRE(sink.frames.size() == 1);
  RefSlot r;
  r.seq = seq;
  r.add(0, a, 2, 0xFFFF);
  r.add(1, b, 2, 0xFFFF);
  CHECK(sink.frames[0] == expected_emission(s, r, false));
}

}  // namespace

TEST_CASE("identity, version and parameter registers", "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  CHECK(eng->reg_read(kId) == 0x504E4D41u);
  CHECK(eng->reg_read(kVersion) == ((1u << 16) | 3u));  // register map 1.3 (docs/register-map.md)
  CHECK(eng->reg_read(kNumEntries) == 8);
  CHECK(eng->reg_read(kNumSlots) == 64);
  CHECK(eng->reg_read(kSlotElems) == 144 * 16);
  CHECK(eng->reg_read(kControl) == 1);  // reset value: ENABLE
  CHECK(eng->reg_read(kUdpPort) == 9600);
  CHECK(eng->reg_read(kEntryStatus) == kOk);
  // Read-only registers ignore writes.
  eng->reg_write(kId, 0);
  eng->reg_write(kNumSlots, 1);
  CHECK(eng->reg_read(kId) == 0x504E4D41u);
  CHECK(eng->reg_read(kNumSlots) == 64);
  auto other = std::make_unique<EngineUnderTest<3, 17, 2>>();
  CHECK(other->reg_read(kNumEntries) == 3);
  CHECK(other->reg_read(kNumSlots) == 17);
  CHECK(other->reg_read(kSlotElems) == 32);
}

TEST_CASE("COMMIT then LOAD returns every staged field", "[engine][registers]") {
  Rng rng(test_seed("engine commit/load"));
  auto eng = std::make_unique<SmallEngine>();
  for (int iter = 0; iter < 200; ++iter) {
    const uint32_t index = uniform(rng, 0, 7);
    const uint32_t count = uniform(rng, 1, 64);
    const uint64_t mask = (uint64_t{rng()} | 1) & (uniform(rng, 0, 1) ? ~uint64_t{0} : 0xFFFFFFFFu);
    uint32_t pop = 0;
    for (int i = 0; i < 64; ++i) pop += (mask >> i) & 1;
    const std::vector<uint32_t> v = {
        uniform(rng, 0, 0xFFFF) | (uniform(rng, 0, 255) << 16),  // E_KEY
        uniform(rng, 0, 1) << 1,                                 // E_FLAGS: ROOT, not enabled (no conflicts)
        uniform(rng, 1, pop),                                    // E_FAN_IN
        static_cast<uint32_t>(mask),                             // E_CHILD_MASK_LO
        static_cast<uint32_t>(mask >> 32),                       // E_CHILD_MASK_HI
        uniform(rng, 0, 64 - count),                             // E_SLOT_BASE
        count,                                                   // E_SLOT_COUNT
        uniform(rng, 0, 0xFFFF),                                 // E_OUT_CHILD_ID
        static_cast<uint32_t>(rng()),                            // E_ETH_DST_LO
        uniform(rng, 0, 0xFFFF),                                 // E_ETH_DST_HI
        static_cast<uint32_t>(rng()),                            // E_ETH_SRC_LO
        uniform(rng, 0, 0xFFFF),                                 // E_ETH_SRC_HI
        static_cast<uint32_t>(rng()),                            // E_IP_SRC
        static_cast<uint32_t>(rng()),                            // E_IP_DST
        static_cast<uint32_t>(rng()),                            // E_UDP_PORTS
        uniform(rng, 0, 255) | (uniform(rng, 0, 63) << 8),       // E_IP_TTL_DSCP
    };
    REQUIRE(v.size() == (kStagedLast - kStagedFirst) / 4 + 1);
    eng->reg_write(kEntryIndex, index);
    for (uint32_t i = 0; i < v.size(); ++i) eng->reg_write(kStagedFirst + 4 * i, v[i]);
    for (uint32_t i = 0; i < v.size(); ++i) CHECK(eng->reg_read(kStagedFirst + 4 * i) == v[i]);  // rw
    CHECK(eng->reg_read(kEntryIndex) == index);
    eng->reg_write(kEntryCmd, kCommit);
    REQUIRE(eng->reg_read(kEntryStatus) == kOk);
    for (uint32_t i = 0; i < v.size(); ++i) eng->reg_write(kStagedFirst + 4 * i, 0xA5A5A5A5u);
    INFO("iteration " << iter);
    CHECK(load_entry(*eng, index) == v);
  }
}

TEST_CASE("each ENTRY_STATUS error leaves the table unchanged", "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec a = base_entry(1, 0, 0, 8);
  const EntrySpec b = base_entry(1, 1, 8, 8);
  REQUIRE(commit_entry(*eng, 0, a) == kOk);
  REQUIRE(commit_entry(*eng, 1, b) == kOk);
  const auto a_fields = load_entry(*eng, 0);
  const auto b_fields = load_entry(*eng, 1);
  // An open slot in each entry: child 0 contributed to sequence 3.
  Sink sink;
  const std::vector<uint32_t> first = {ref::bits(0.5f)};
  send(*eng, contribution(a, 0, 3, first), sink);
  send(*eng, contribution(b, 0, 3, first), sink);

  struct Bad {
    const char* name;
    uint32_t index;
    EntrySpec spec;
    uint32_t status;
  };
  std::vector<Bad> bad;
  auto with = [&](auto change) {
    EntrySpec s = a;
    change(s);
    return s;
  };
  bad.push_back({"index = NUM_ENTRIES", 8, base_entry(2, 0, 16, 4), kBadIndex});
  bad.push_back({"index huge", 0xFFFFFFFFu, base_entry(2, 0, 16, 4), kBadIndex});
  bad.push_back({"fan-in 0", 0, with([](EntrySpec& s) { s.fan_in = 0; }), kBadFanIn});
  bad.push_back({"fan-in 65", 0, with([](EntrySpec& s) {
                   s.fan_in = 65;
                   s.child_mask = ~uint64_t{0};
                 }),
                 kBadFanIn});
  bad.push_back({"fan-in 256 (wraps in 8 bits)", 0, with([](EntrySpec& s) {
                   s.fan_in = 256;
                   s.child_mask = ~uint64_t{0};
                 }),
                 kBadFanIn});
  bad.push_back({"fan-in > popcount(mask)", 0, with([](EntrySpec& s) {
                   s.fan_in = 4;
                   s.child_mask = 0x8000000100000001ull;
                 }),
                 kBadFanIn});
  bad.push_back({"empty child mask", 0, with([](EntrySpec& s) {
                   s.fan_in = 1;
                   s.child_mask = 0;
                 }),
                 kBadFanIn});
  bad.push_back({"slot count 0", 0, with([](EntrySpec& s) { s.slot_count = 0; }), kBadSlotRange});
  bad.push_back({"slot range past NUM_SLOTS", 0, with([](EntrySpec& s) {
                   s.slot_base = 60;
                   s.slot_count = 5;
                 }),
                 kBadSlotRange});
  bad.push_back({"slot base = NUM_SLOTS", 0, with([](EntrySpec& s) {
                   s.slot_base = 64;
                   s.slot_count = 1;
                 }),
                 kBadSlotRange});
  bad.push_back({"slot count wraps base + count", 0, with([](EntrySpec& s) {
                   s.slot_base = 4;
                   s.slot_count = 0xFFFFFFFEu;
                 }),
                 kBadSlotRange});
  bad.push_back({"overlap with entry 1 (first slot)", 0, with([](EntrySpec& s) {
                   s.slot_base = 15;
                   s.slot_count = 2;
                 }),
                 kSlotOverlap});
  bad.push_back({"overlap with entry 1 (containing)", 2, base_entry(3, 0, 6, 20), kSlotOverlap});
  bad.push_back(
      {"duplicate (job, tree) of entry 1", 0, with([](EntrySpec& s) { s.tree = 1; }), kDuplicateKey});
  bad.push_back({"duplicate (job, tree) on a free index", 5, base_entry(1, 1, 30, 2), kDuplicateKey});

  for (const Bad& c : bad) {
    INFO("case: " << c.name);
    CHECK(commit_entry(*eng, c.index, c.spec) == c.status);
  }
  for (uint32_t cmd : {0u, 4u, 0xFFFFFFFFu}) {
    INFO("command " << cmd);
    CHECK(command(*eng, 0, cmd) == kBadCommand);
  }
  CHECK(command(*eng, 8, kLoad) == kBadIndex);
  CHECK(command(*eng, 8, kDisable) == kBadIndex);

  // Nothing changed: the entries read back as before, entries 2..7 are still
  // free (a LOAD shows no ENABLE), and the open slots complete with their sums.
  CHECK(load_entry(*eng, 0) == a_fields);
  CHECK(load_entry(*eng, 1) == b_fields);
  for (uint32_t i = 2; i < 8; ++i) CHECK((load_entry(*eng, i)[1] & 1) == 0);
  for (const EntrySpec* s : {&a, &b}) {
    const std::vector<uint32_t> second = {ref::bits(0.25f)};
    Sink out;
    CHECK(send(*eng, contribution(*s, 1, 3, second), out).action == EngineAction::kEmitted);
    RefSlot r;
    r.seq = 3;
    r.add(0, first, 2, 0xFFFF);
    r.add(1, second, 2, 0xFFFF);
    REQUIRE(out.frames.size() == 1);
    CHECK(out.frames[0] == expected_emission(*s, r, false));
  }

  // Limits that are allowed: fan-in 64 with a full mask, a range ending at the last slot,
  // overlap with and duplicate key of a disabled entry.
  CHECK(commit_entry(*eng, 2, with([](EntrySpec& s) {
          s.job = 50;
          s.fan_in = 64;
          s.child_mask = ~uint64_t{0};
          s.slot_base = 63;
          s.slot_count = 1;
        })) == kOk);
  CHECK(command(*eng, 1, kDisable) == kOk);
  CHECK(commit_entry(*eng, 3, base_entry(1, 1, 10, 4)) == kOk);
}

TEST_CASE("DISABLE removes an entry from the datapath", "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec a = base_entry(4, 4, 0, 4);
  REQUIRE(commit_entry(*eng, 6, a) == kOk);
  CHECK((load_entry(*eng, 6)[1] & 1) == 1);
  CHECK(command(*eng, 6, kDisable) == kOk);
  CHECK((load_entry(*eng, 6)[1] & 1) == 0);
  Sink sink;
  const auto out = send(*eng, contribution(a, 0, 0, {ref::bits(1.0f)}), sink);
  CHECK(out.action == EngineAction::kDropped);
  CHECK(out.drop_counter == regmap::kGcDropUnknownEntry);
  // Its slots and key are free for another entry.
  const EntrySpec b = base_entry(4, 4, 0, 4);
  CHECK(commit_entry(*eng, 0, b) == kOk);
  check_fresh_slot(*eng, b, 0);
}

// A commit empties the committed entry's slot range whatever its ENABLE bit,
// so a disabled entry is validated like an enabled one: otherwise a raw
// register write could empty a running job's slots and stall it.
TEST_CASE("a disabled entry's COMMIT is validated and never touches another entry's slots",
          "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec a = base_entry(1, 0, 0, 4);  // job A, Q = 4
  REQUIRE(commit_entry(*eng, 0, a) == kOk);
  Sink sink;
  // Sequences 0..3 complete (one generation of every slot), then child 0 opens sequence 4.
  for (uint32_t seq = 0; seq < 4; ++seq) {
    send(*eng, contribution(a, 0, seq, {ref::bits(1.0f)}), sink);
    send(*eng, contribution(a, 1, seq, {ref::bits(1.0f)}), sink);
  }
  REQUIRE(sink.frames.size() == 4);
  send(*eng, contribution(a, 0, 4, {ref::bits(0.5f)}), sink);
  const auto a_fields = load_entry(*eng, 0);
  const auto free_fields = load_entry(*eng, 1);

  auto disabled = [](EntrySpec s) {
    s.enable = false;
    return s;
  };
  struct Bad {
    const char* name;
    EntrySpec spec;
    uint32_t status;
  };
  const std::vector<Bad> bad = {
      {"overlaps job A's slots", disabled(base_entry(2, 0, 2, 4)), kSlotOverlap},
      {"contains job A's slots", disabled(base_entry(2, 0, 0, 16)), kSlotOverlap},
      {"same (job, tree) as job A", disabled(base_entry(1, 0, 8, 4)), kDuplicateKey},
      {"slot range past NUM_SLOTS", disabled(base_entry(2, 0, 62, 4)), kBadSlotRange},
      {"slot count 0", disabled(base_entry(2, 0, 8, 0)), kBadSlotRange},
      {"fan-in above the child mask", disabled([] {
         EntrySpec s = base_entry(2, 0, 8, 4);
         s.fan_in = 3;
         return s;
       }()),
       kBadFanIn},
  };
  for (const Bad& c : bad) {
    INFO("case: " << c.name);
    CHECK(commit_entry(*eng, 1, c.spec) == c.status);
    CHECK(load_entry(*eng, 1) == free_fields);  // a rejected commit changes nothing
  }
  CHECK(load_entry(*eng, 0) == a_fields);

  // An accepted disabled commit next to A: written, and A is untouched.
  const EntrySpec c = disabled(base_entry(2, 0, 4, 4));
  CHECK(commit_entry(*eng, 1, c) == kOk);
  CHECK((load_entry(*eng, 1)[1] & 1) == 0);

  // Job A's open slot still holds 0.5 and its next generation is accepted:
  // sequence 4 completes with 0.5 + 0.25, and nothing was dropped as out of window.
  Sink out;
  CHECK(send(*eng, contribution(a, 1, 4, {ref::bits(0.25f)}), out).action == EngineAction::kEmitted);
  REQUIRE(out.frames.size() == 1);
  CHECK(ref::get_le32(out.frames[0].data(), 64) == ref::bits(0.75f));
  CHECK(eng->global_counter(regmap::kGcDropSeqWindow) == 0);
  CHECK(eng->entry_counter(0, regmap::kEcAggregated) == 10);
}

TEST_CASE("COMMIT empties the entry's slots and zeroes its counters, and only its own",
          "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  EntrySpec a = base_entry(7, 0, 0, 4);
  const EntrySpec b = base_entry(7, 1, 4, 4);
  REQUIRE(commit_entry(*eng, 0, a) == kOk);
  REQUIRE(commit_entry(*eng, 1, b) == kOk);
  Sink sink;
  // Entry a: sequence 0 done, sequence 1 open with child 0. Entry b: sequence 2 open.
  send(*eng, contribution(a, 0, 0, {ref::bits(9.0f)}), sink);
  send(*eng, contribution(a, 1, 0, {ref::bits(9.0f)}), sink);
  send(*eng, contribution(a, 0, 1, {ref::bits(100.0f)}), sink);
  send(*eng, contribution(b, 0, 2, {ref::bits(3.0f)}), sink);
  REQUIRE(sink.frames.size() == 1);
  CHECK(eng->entry_counter(0, regmap::kEcAggregated) == 3);
  const uint64_t global_aggregated = eng->global_counter(regmap::kGcAggregated);

  a.root = false;  // recommit with a change
  REQUIRE(commit_entry(*eng, 0, a) == kOk);
  for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) CHECK(read64(*eng, entry_addr(0, c)) == 0);
  CHECK(eng->entry_counter(1, regmap::kEcAggregated) == 1);
  CHECK(eng->global_counter(regmap::kGcAggregated) == global_aggregated);  // global counters keep counting

  check_fresh_slot(*eng, a, 1);  // the 100.0 from before the commit is gone
  // The shadow of sequence 0 is gone too: a retransmission is a first contribution.
  Sink re;
  CHECK(send(*eng, contribution(a, 1, 0, {ref::bits(1.0f)}, 2, 0xFFFF, 3), re).action ==
        EngineAction::kAggregated);
  CHECK(re.frames.empty());
  // Entry b's open slot is untouched.
  Sink out;
  CHECK(send(*eng, contribution(b, 1, 2, {ref::bits(4.0f)}), out).action == EngineAction::kEmitted);
  REQUIRE(out.frames.size() == 1);
  CHECK(ref::get_le32(out.frames[0].data(), 64) == ref::bits(7.0f));
}

TEST_CASE("CONTROL: clear-counters and reset strobes", "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec a = base_entry(2, 2, 0, 4);
  REQUIRE(commit_entry(*eng, 0, a) == kOk);
  Sink sink;
  send(*eng, contribution(a, 0, 1, {ref::bits(1.0f)}), sink);
  send(*eng, std::vector<uint8_t>(60, 0), sink);
  CHECK(eng->global_counter(regmap::kGcFramesIn) == 2);

  SECTION("CLEAR_COUNTERS zeroes every counter and keeps table and slots") {
    eng->reg_write(kControl, 1 | 2);
    CHECK(eng->reg_read(kControl) == 1);  // self-clearing
    for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) CHECK(read64(*eng, global_addr(c)) == 0);
    for (uint32_t e = 0; e < 8; ++e) {
      for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) CHECK(read64(*eng, entry_addr(e, c)) == 0);
    }
    Sink out;
    CHECK(send(*eng, contribution(a, 1, 1, {ref::bits(2.0f)}), out).action == EngineAction::kEmitted);
    REQUIRE(out.frames.size() == 1);
    CHECK(ref::get_le32(out.frames[0].data(), 64) == ref::bits(3.0f));
    CHECK(eng->global_counter(regmap::kGcFramesIn) == 1);
  }
  SECTION("RESET disables every entry, empties every slot and zeroes every counter") {
    eng->reg_write(kUdpPort, 7777);
    eng->reg_write(kControl, 1 | 4);
    CHECK(eng->reg_read(kControl) == 1);
    for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) CHECK(read64(*eng, global_addr(c)) == 0);
    for (uint32_t i = 0; i < 8; ++i) CHECK((load_entry(*eng, i)[1] & 1) == 0);
    Sink out;
    CHECK(send(*eng, contribution(a, 1, 1, {ref::bits(2.0f)}), out).drop_counter ==
          regmap::kGcDropUnknownEntry);
    REQUIRE(commit_entry(*eng, 5, a) == kOk);
    check_fresh_slot(*eng, a, 1);
  }
  SECTION("RESET with ENABLE clear leaves the engine disabled") {
    eng->reg_write(kControl, 4);
    CHECK(eng->reg_read(kControl) == 0);
    Sink out;
    const auto f = contribution(a, 1, 1, {ref::bits(2.0f)});
    CHECK(send(*eng, f, out).action == EngineAction::kPassed);
    REQUIRE(out.frames.size() == 1);
    CHECK(out.frames[0] == f);
  }
}

TEST_CASE("UDP_PORT selects which frames are PANAMA", "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec a = base_entry(2, 2, 0, 4);
  REQUIRE(commit_entry(*eng, 0, a) == kOk);
  eng->reg_write(kUdpPort, 5000);
  CHECK(eng->reg_read(kUdpPort) == 5000);
  Sink sink;
  const auto on_default = contribution(a, 0, 0, {ref::bits(1.0f)});
  CHECK(send(*eng, on_default, sink).action == EngineAction::kPassed);
  CHECK(sink.frames.at(0) == on_default);
  const auto on_5000 = contribution(a, 0, 0, {ref::bits(1.0f)}, 2, 0xFFFF, 1, 5000);
  CHECK(send(*eng, on_5000, sink).action == EngineAction::kAggregated);
}

TEST_CASE("counter registers: every counter at its documented address", "[engine][registers]") {
  Rng rng(test_seed("engine counter registers"));
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec a = base_entry(2, 2, 0, 4);
  const EntrySpec b = base_entry(3, 0, 4, 4);
  REQUIRE(commit_entry(*eng, 3, a) == kOk);
  REQUIRE(commit_entry(*eng, 7, b) == kOk);
  // A mix of traffic that moves many different counters.
  for (int i = 0; i < 400; ++i) {
    const EntrySpec& s = uniform(rng, 0, 1) ? a : b;
    auto f = contribution(s, static_cast<uint16_t>(uniform(rng, 0, 2)), uniform(rng, 0, 9), {ref::bits(1.0f)},
                          uniform(rng, 0, 3) == 0 ? 3 : 2, 0xFFFF, static_cast<uint8_t>(uniform(rng, 1, 3)));
    if (uniform(rng, 0, 9) == 0) f[ref::kVersion] = 3;
    if (uniform(rng, 0, 9) == 0) f.resize(40);
    Sink sink;
    send(*eng, f, sink);
  }
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) {
    INFO("global counter " << regmap::kGlobalCounterNames[c]);
    CHECK(read64(*eng, global_addr(c)) == eng->global_counter(c));
  }
  uint64_t moved = 0;
  for (uint32_t e = 0; e < 8; ++e) {
    for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
      INFO("entry " << e << " counter " << regmap::kEntryCounterNames[c]);
      CHECK(read64(*eng, entry_addr(e, c)) == eng->entry_counter(e, c));
      moved += eng->entry_counter(e, c);
    }
  }
  CHECK(moved > 0);
  CHECK(eng->global_counter(regmap::kGcFramesIn) == 400);
}

// Counters beyond 2^32: the latch (CounterLatch, the one every engine's
// register block uses) is driven with such values directly, and the engine's
// counters are 64-bit wide by type; counting 4.3e9 frames is not needed.
TEST_CASE("64-bit counters: reading the low word latches the high word", "[engine][registers]") {
  static_assert(std::is_same<decltype(std::declval<SmallEngine>().global_counter(0)), uint64_t>::value,
                "engine counters are 64-bit");
  CounterLatch latch;
  const uint32_t a = global_addr(regmap::kGcFramesIn);
  const uint64_t before = (uint64_t{1} << 32) - 2;  // 0x0000_0000_FFFF_FFFE
  const uint64_t after = (uint64_t{1} << 32) + 1;   // three frames later
  CHECK(latch.read(before, a) == 0xFFFFFFFEu);      // latches high word 0
  CHECK(latch.read(after, a + 4) == 0u);            // the latched value, consistent with the low word
  CHECK(latch.read(after, a) == 1u);
  CHECK(latch.read(after, a + 4) == 1u);
  // A high word read without the low word first gives the current high word.
  const uint32_t other = global_addr(regmap::kGcPassthrough);
  CHECK(latch.read(7, other) == 7u);
  CHECK(latch.read(after, a + 4) == 1u);
  CHECK(latch.read(uint64_t{5} << 32, other + 4) == 0u);  // latched from `other`'s low read: 7 >> 32
  latch.reset();
  CHECK(latch.read(uint64_t{5} << 32, other + 4) == 5u);
}

TEST_CASE("64-bit counters: the latch protocol with reachable values", "[engine][registers]") {
  auto eng = std::make_unique<SmallEngine>();
  Sink sink;
  std::vector<uint8_t> arp(60, 0);
  ref::put16(arp, ref::kEthType, 0x0806);
  for (int i = 0; i < 5; ++i) send(*eng, arp, sink);
  const uint32_t frames_in = global_addr(regmap::kGcFramesIn);
  CHECK(eng->reg_read(frames_in) == 5);
  send(*eng, arp, sink);
  CHECK(eng->reg_read(frames_in + 4) == 0);
  CHECK(eng->reg_read(frames_in) == 6);  // the low word is always live
  CHECK(read64(*eng, global_addr(regmap::kGcPassthrough)) == 6);
}
