// libFuzzer target: the engine model's frame input (Engine::process_frame).
//
// Input: byte 0 chooses the table (fan-ins, shares, the UDP port, the
// engine enable), then records of one frame each:
//   ctl (u8: bit 0 MAC error, bit 1 repair lengths and IPv4 checksum),
//   len (u16, taken modulo 9300), len frame bytes.
// Around every frame the whole engine object is snapshot and compared byte
// by byte. Invariants:
//  - a dropped frame sends nothing and changes no slot, bank, table or
//    control byte (only counters);
//  - a passed frame is sent once, unchanged, and changes only counters;
//  - an accepted frame (aggregated, emitted) changes only the metadata of
//    slot base + seq % share of its entry and the data of bank
//    (seq / share) % 2 of that slot; a re-emission changes no slot;
//  - an emitted frame is a well-formed PANAMA frame of the entry's type.
// The engine is small (8 entries, 16 slots of 32 elements) so that
// generations wrap and slots collide within short inputs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "fuzz_input.hpp"
#include "panama/engine.hpp"
#include "panama/regmap.hpp"
#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

using namespace panama;
using panama::fuzz::ByteReader;

namespace {

using FuzzEngine = Engine<8, 16, 2>;
using FuzzRules = FuzzEngine::Rules;

// Where the engine keeps its state, without changing the engine for it: an
// explicit instantiation may name private members (C++17 [temp.spec]/6), and
// the friend function it defines hands out the member pointer.
template <class Tag, auto Member>
struct MemberAccess {
  friend constexpr auto member(Tag) { return Member; }
};
#define PANAMA_FUZZ_MEMBER(tag, cls, name) \
  struct tag {                             \
    friend constexpr auto member(tag);     \
  };                                       \
  template struct MemberAccess<tag, &cls::name>

PANAMA_FUZZ_MEMBER(RulesTag, FuzzEngine, rules_);
PANAMA_FUZZ_MEMBER(DataTag, FuzzEngine, data_);
PANAMA_FUZZ_MEMBER(OutTag, FuzzEngine, out_);
PANAMA_FUZZ_MEMBER(SlotTableTag, FuzzRules, slots_);
PANAMA_FUZZ_MEMBER(SlotsTag, FuzzRules::Slots, slots_);
PANAMA_FUZZ_MEMBER(CountersTag, FuzzRules, counters_);

struct Range {
  size_t begin, end;
};

template <class T>
Range range_of(const FuzzEngine& e, const T& part) {
  const size_t b =
      static_cast<size_t>(reinterpret_cast<const uint8_t*>(&part) - reinterpret_cast<const uint8_t*>(&e));
  return Range{b, b + sizeof(T)};
}

struct TableSpec {
  TableEntry entry;
  uint32_t index;
};

// The table byte 0 selects: three entries on disjoint slots, one of them
// not a root (it sends aggregate-up), child 63 allowed on one of them.
std::vector<TableSpec> table_for(uint8_t b0) {
  std::vector<TableSpec> t;
  TableEntry e;
  e.udp_src = e.udp_dst = wire::kDefaultUdpPort;
  e.eth_dst = {{0x01, 0x00, 0x5E, 0, 0, 1}};
  e.eth_src = {{0x02, 0, 0, 0, 0, 0xFE}};
  e.ip_src = 0x0A0000FEu;
  e.ip_dst = 0xEF000001u;

  e.job = 1;
  e.tree = 0;
  e.root = true;
  e.child_mask = 0xF | ((b0 & 0x40) ? uint64_t{1} << 63 : 0);
  e.fan_in = 1 + (b0 & 3);
  e.slot_base = 0;
  e.slot_count = 1 + ((b0 >> 2) & 3);
  t.push_back({e, 0});

  e.tree = 1;
  e.root = false;
  e.out_child_id = 5;
  e.child_mask = 0x3;
  e.fan_in = 2;
  e.slot_base = 8;
  e.slot_count = (b0 & 0x10) ? 5 : 2;
  t.push_back({e, 3});

  e.job = 2;
  e.tree = 0;
  e.root = true;
  e.child_mask = 0x1;
  e.fan_in = 1;
  e.slot_base = 4;
  e.slot_count = 2;
  t.push_back({e, 7});
  return t;
}

struct Emitted {
  std::vector<uint8_t> bytes;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Zeroed storage, so the packet memory the constructor leaves alone is
  // deterministic from one input to the next.
  static FuzzEngine* const eng = static_cast<FuzzEngine*>(std::calloc(1, sizeof(FuzzEngine)));
  static std::vector<uint8_t> before(sizeof(FuzzEngine));
  std::memset(static_cast<void*>(eng), 0, sizeof(FuzzEngine));
  new (eng) FuzzEngine;

  ByteReader in(data, size);
  const uint8_t b0 = in.u8();
  const std::vector<TableSpec> table = table_for(b0);
  for (const TableSpec& s : table) {
    PANAMA_FUZZ_CHECK(commit_entry(*eng, s.index, s.entry) == regmap::kStatusOk);
  }
  const uint16_t port = (b0 & 0x20) ? 4791 : wire::kDefaultUdpPort;
  eng->reg_write(regmap::kUdpPort, port);
  if (b0 & 0x80) eng->reg_write(regmap::kControl, 0);  // disabled: everything passes

  auto& rules = (*eng).*member(RulesTag{});
  auto& slots = (rules.*member(SlotTableTag{})).*member(SlotsTag{});
  auto& slot_data = (*eng).*member(DataTag{});
  // The counters (and their read latch, which no frame touches).
  const Range counters[1] = {range_of(*eng, rules.*member(CountersTag{}))};
  const Range out_buf = range_of(*eng, (*eng).*member(OutTag{}));

  static uint8_t frame[wire::kMaxFrameBytes + 100];
  std::vector<Emitted> sent;
  EmitFn sink([&](const uint8_t* d, uint32_t n) { sent.push_back(Emitted{std::vector<uint8_t>(d, d + n)}); });

  while (!in.done()) {
    const uint8_t ctl = in.u8();
    const uint32_t want = in.u16() % sizeof(frame);
    const uint32_t len = static_cast<uint32_t>(in.bytes(frame, want));
    if (ctl & 2) panama::fuzz::repair_lengths(frame, len);
    const bool mac_error = (ctl & 1) != 0;
    const std::vector<uint8_t> input(frame, frame + len);

    std::memcpy(before.data(), static_cast<const void*>(eng), sizeof(FuzzEngine));
    sent.clear();
    const EngineOutcome o = eng->process_frame(frame, len, sink, mac_error);
    PANAMA_FUZZ_CHECK(std::equal(input.begin(), input.end(), frame));  // the input is never written

    // The byte ranges this outcome may change besides the counters.
    std::vector<Range> allowed(counters, counters + 1);
    switch (o.action) {
      case EngineAction::kDropped:
        PANAMA_FUZZ_CHECK(sent.empty());
        break;
      case EngineAction::kPassed:
        PANAMA_FUZZ_CHECK(sent.size() == 1 && sent[0].bytes == input);
        break;
      case EngineAction::kAggregated:
      case EngineAction::kEmitted:
      case EngineAction::kReemitted: {
        PANAMA_FUZZ_CHECK(!mac_error && len >= wire::kPayloadOffset);
        const TableSpec* spec = nullptr;
        for (const TableSpec& s : table) {
          if (static_cast<int32_t>(s.index) == o.entry) spec = &s;
        }
        PANAMA_FUZZ_CHECK(spec != nullptr);
        PANAMA_FUZZ_CHECK(wire::load_be16(frame + wire::kPanamaJobId) == spec->entry.job &&
                          frame[wire::kPanamaTreeId] == spec->entry.tree);
        const uint32_t seq = wire::load_be32(frame + wire::kPanamaSeq);
        const uint32_t slot = spec->entry.slot_base + seq % spec->entry.slot_count;
        const uint32_t bank = (seq / spec->entry.slot_count) % 2;
        if (o.action == EngineAction::kAggregated) {
          PANAMA_FUZZ_CHECK(sent.empty());
        } else {
          PANAMA_FUZZ_CHECK(sent.size() == 1);
          wire::Header h;
          const wire::FrameClass cls = wire::classify_frame(
              sent[0].bytes.data(), static_cast<uint32_t>(sent[0].bytes.size()), spec->entry.udp_dst, h);
          PANAMA_FUZZ_CHECK(cls ==
                            (spec->entry.root ? wire::FrameClass::kResultDown : wire::FrameClass::kOk));
          PANAMA_FUZZ_CHECK(h.seq == seq && h.job_id == spec->entry.job && h.tree_id == spec->entry.tree);
          PANAMA_FUZZ_CHECK(sent[0].bytes.size() == wire::frame_length(h.elem_count, h.elem_type));
          // The aggregate is in the type of the contribution that completed it or asked for it.
          PANAMA_FUZZ_CHECK(h.elem_type == frame[wire::kPanamaElemType]);
          allowed.push_back(out_buf);
        }
        if (o.action != EngineAction::kReemitted) {
          allowed.push_back(range_of(*eng, slots[slot]));
          allowed.push_back(range_of(*eng, slot_data[slot][bank]));
        }
        break;
      }
    }
    // Every byte outside the allowed ranges is unchanged.
    std::sort(allowed.begin(), allowed.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    const uint8_t* now = reinterpret_cast<const uint8_t*>(eng);
    size_t from = 0;
    allowed.push_back(Range{sizeof(FuzzEngine), sizeof(FuzzEngine)});
    for (const Range& r : allowed) {
      if (r.begin > from && std::memcmp(now + from, before.data() + from, r.begin - from) != 0) {
        std::fprintf(stderr, "engine bytes %zu..%zu changed (action %d, entry %d)\n", from, r.begin,
                     static_cast<int>(o.action), o.entry);
        PANAMA_FUZZ_CHECK(!"a frame changed engine state outside its own slot and the counters");
      }
      if (r.end > from) from = r.end;
    }
  }
  return 0;
}
