// Malformed and unacceptable contributions (docs/protocol.md §4): each is
// dropped under exactly the right global and per-entry counter, nothing is
// emitted, and no slot of any job changes, which the test proves by
// completing every open slot afterwards and comparing the emitted frames
// with host-FPU sums of the accepted contributions only.
#include <catch2/catch.hpp>
#include <functional>
#include <memory>

#include "hls/engine_harness.hpp"

using namespace panama;
using namespace panama::test;

namespace {

// Small slots (4 words = 64 elements) so that elem_count > SLOT_ELEMS fits in a frame.
using TinySlotEngine = EngineUnderTest<8, 64, 4>;

// Three entries of two jobs with open slots; the malformed frames aim at
// entry A's open sequence 1 from child 1, which has not contributed yet.
struct Fixture {
  std::unique_ptr<TinySlotEngine> eng = std::make_unique<TinySlotEngine>();
  EntrySpec a, b, c, off;
  std::map<std::pair<int, uint32_t>, RefSlot> open;  // (entry index, seq)
  Rng rng;

  explicit Fixture(uint64_t seed) : rng(seed) {
    a = random_addresses(EntrySpec{}, rng);
    a.job = 5, a.tree = 0, a.root = true, a.fan_in = 3, a.child_mask = 0b1011, a.slot_base = 0,
    a.slot_count = 4;
    b = random_addresses(EntrySpec{}, rng);
    b.job = 5, b.tree = 1, b.root = false, b.fan_in = 2,
    b.child_mask = (uint64_t{1} << 2) | (uint64_t{1} << 40);
    b.slot_base = 4, b.slot_count = 2;
    c = random_addresses(EntrySpec{}, rng);
    c.job = 9, c.tree = 0, c.root = true, c.fan_in = 2, c.child_mask = 0b11, c.slot_base = 6,
    c.slot_count = 8;
    off = random_addresses(EntrySpec{}, rng);  // committed but not enabled
    off.job = 6, off.tree = 0, off.enable = false, off.slot_base = 20, off.slot_count = 4;
    REQUIRE(commit_entry(*eng, 0, a) == regmap::kStatusOk);
    REQUIRE(commit_entry(*eng, 1, b) == regmap::kStatusOk);
    REQUIRE(commit_entry(*eng, 2, c) == regmap::kStatusOk);
    REQUIRE(commit_entry(*eng, 3, off) == regmap::kStatusOk);

    contribute(0, a, 0, 1, 10);
    contribute(0, a, 0, 2, 10);
    contribute(0, a, 1, 2, 10);
    contribute(1, b, 2, 3, 7);
    contribute(2, c, 1, 0, 64);
  }

  void contribute(int e, const EntrySpec& s, uint16_t child, uint32_t seq, uint32_t n) {
    const auto p = random_payload(rng, n);
    const uint8_t ecn = uniform(rng, 0, 1) ? wire::kEcnCe : wire::kEcnEct0;
    const uint16_t cap = static_cast<uint16_t>(uniform(rng, 1, 0xFFFF));
    RefSlot& r = open[{e, seq}];
    r.seq = seq;
    r.add(child, p, ecn, cap);
    Sink sink;
    const auto out = send(*eng, contribution(s, child, seq, p, ecn, cap), sink);
    REQUIRE(out.action == (r.count == s.fan_in ? EngineAction::kEmitted : EngineAction::kAggregated));
    if (r.count == s.fan_in) {
      REQUIRE(sink.frames.size() == 1);
      CHECK(sink.frames[0] == expected_emission(s, r, false));
      open.erase({e, seq});
    }
  }

  // A contribution to A's open sequence 1 from child 1 (not yet counted), 10 elements.
  std::vector<uint8_t> victim(uint16_t n = 10) {
    return contribution(a, 1, 1, random_payload(rng, n), wire::kEcnCe, 1);
  }

  // Completes every open slot with its missing children.
  void complete_all() {
    contribute(0, a, 1, 1, 10);
    contribute(0, a, 3, 1, 10);
    contribute(0, a, 3, 2, 10);
    contribute(1, b, 40, 3, 7);
    contribute(2, c, 0, 0, 64);
    CHECK(open.empty());
  }
};

struct Case {
  const char* name;
  std::function<std::vector<uint8_t>(Fixture&)> frame;
  std::string delta;  // counters that must move, and by how much
};

std::vector<Case> cases() {
  using F = Fixture;
  return {
      {"truncated inside the payload",
       [](F& f) {
         auto v = f.victim();
         v.pop_back();
         return v;
       },
       "frames_in+1 drop_truncated+1"},
      {"truncated inside the headers",
       [](F& f) {
         auto v = f.victim();
         v.resize(50);
         return v;
       },
       "frames_in+1 drop_truncated+1"},
      {"bad IPv4 header checksum",
       [](F& f) {
         auto v = f.victim();
         v[ref::kIpChecksum + 1] ^= 0x40;
         return v;
       },
       "frames_in+1 drop_bad_ip_header+1"},
      {"fragment (MF set)",
       [](F& f) {
         auto v = f.victim();
         ref::put16(v, ref::kIpFlagsFrag, 0x2000);
         ref::fix_ip_checksum(v);
         return v;
       },
       "frames_in+1 drop_bad_ip_header+1"},
      {"bad version",
       [](F& f) {
         auto v = f.victim();
         v[ref::kVersion] = 2;
         return v;
       },
       "frames_in+1 drop_bad_version+1"},
      {"bad packet type",
       [](F& f) {
         auto v = f.victim();
         v[ref::kType] = 4;
         return v;
       },
       "frames_in+1 drop_bad_type+1"},
      {"bad element type",
       [](F& f) {
         auto v = f.victim();
         v[ref::kElemType] = 4;  // 1..3 are types (fp32, bf16, fp16)
         return v;
       },
       "frames_in+1 drop_bad_elem_type+1"},
      {"zero elements",
       [](F& f) {
         auto v = f.victim();
         ref::put16(v, ref::kElemCount, 0);
         ref::put16(v, ref::kIpTotalLen, 50);
         ref::put16(v, ref::kUdpLen, 30);
         ref::fix_ip_checksum(v);
         v.resize(64);
         return v;
       },
       "frames_in+1 drop_bad_elem_count+1"},
      {"more elements than a slot holds", [](F& f) { return f.victim(65); },
       // PANAMA_IN is not asserted: the frame is well-formed on the wire but
       // not acceptable to this engine.
       "frames_in+1 drop_bad_elem_count+1"},
      {"IPv4 total length disagrees with elem_count",
       [](F& f) {
         auto v = f.victim();
         ref::put16(v, ref::kIpTotalLen, ref::get16(v.data(), ref::kIpTotalLen) - 4);
         ref::fix_ip_checksum(v);
         return v;
       },
       "frames_in+1 drop_bad_length+1"},
      {"UDP length disagrees with elem_count",
       [](F& f) {
         auto v = f.victim();
         ref::put16(v, ref::kUdpLen, ref::get16(v.data(), ref::kUdpLen) + 4);
         return v;
       },
       "frames_in+1 drop_bad_length+1"},
      {"unknown job",
       [](F& f) {
         EntrySpec unknown = f.a;
         unknown.job = 77;
         return contribution(unknown, 1, 1, random_payload(f.rng, 10));
       },
       "frames_in+1 panama_in+1 drop_unknown_entry+1"},
      {"unknown tree of a known job",
       [](F& f) {
         auto v = f.victim();
         v[ref::kTree] = 2;
         return v;
       },
       "frames_in+1 panama_in+1 drop_unknown_entry+1"},
      {"entry committed without ENABLE",
       [](F& f) { return contribution(f.off, 0, 0, random_payload(f.rng, 10)); },
       "frames_in+1 panama_in+1 drop_unknown_entry+1"},
      {"unknown entry, retransmission",
       [](F& f) {
         auto v = f.victim();
         ref::put16(v, ref::kJob, 6000);
         v[ref::kType] = 3;
         return v;
       },
       "frames_in+1 panama_in+1 retrans_in+1 drop_unknown_entry+1"},
      {"child not in the mask", [](F& f) { return contribution(f.a, 2, 1, random_payload(f.rng, 10)); },
       "frames_in+1 panama_in+1 drop_child_not_allowed+1 e0.drop_child_not_allowed+1"},
      {"child id 64", [](F& f) { return contribution(f.a, 64, 1, random_payload(f.rng, 10)); },
       "frames_in+1 panama_in+1 drop_child_not_allowed+1 e0.drop_child_not_allowed+1"},
      {"child id 0xFFFF of entry B",
       [](F& f) { return contribution(f.b, 0xFFFF, 3, random_payload(f.rng, 7)); },
       "frames_in+1 panama_in+1 drop_child_not_allowed+1 e1.drop_child_not_allowed+1"},
      {"sequence two generations ahead",
       [](F& f) { return contribution(f.a, 1, 1 + 2 * 4, random_payload(f.rng, 10)); },
       "frames_in+1 panama_in+1 drop_seq_window+1 e0.drop_seq_window+1"},
      {"sequence far ahead, retransmission",
       [](F& f) { return contribution(f.c, 1, 0xFFFFFFF0u, random_payload(f.rng, 64), 2, 0xFFFF, 3); },
       "frames_in+1 panama_in+1 retrans_in+1 drop_seq_window+1 e2.retrans_in+1 e2.drop_seq_window+1"},
      {"element count differs from the first contribution", [](F& f) { return f.victim(9); },
       "frames_in+1 panama_in+1 drop_count_mismatch+1 e0.drop_count_mismatch+1"},
      {"oversize frame",
       [](F& f) {
         auto v = f.victim();
         v.resize(9217, 0);
         return v;
       },
       "frames_in+1 drop_oversize+1"},
  };
}

}  // namespace

TEST_CASE("each malformed contribution is dropped, counted once and changes no slot", "[engine]") {
  const uint64_t seed = test_seed("engine malformed");
  for (const Case& c : cases()) {
    INFO("case: " << c.name << " (seed " << seed << ")");
    Fixture fx(seed);
    const auto frame = c.frame(fx);
    const auto before = snapshot(*fx.eng);
    Sink sink;
    const auto out = send(*fx.eng, frame, sink);
    CHECK(out.action == EngineAction::kDropped);
    CHECK(sink.frames.empty());
    const std::string delta = counter_delta(before, snapshot(*fx.eng));
    if (std::string(c.name) == "more elements than a slot holds") {
      CHECK((delta == c.delta || delta == "frames_in+1 panama_in+1 drop_bad_elem_count+1"));
    } else {
      CHECK(delta == c.delta);
    }
    fx.complete_all();
  }
}

TEST_CASE("all malformed contributions in a row leave every slot of every job intact", "[engine]") {
  const uint64_t seed = test_seed("engine malformed burst");
  Fixture fx(seed);
  const auto before = snapshot(*fx.eng);
  uint64_t n = 0;
  for (const Case& c : cases()) {
    INFO("case: " << c.name);
    Sink sink;
    CHECK(send(*fx.eng, c.frame(fx), sink).action == EngineAction::kDropped);
    CHECK(sink.frames.empty());
    ++n;
  }
  const auto after = snapshot(*fx.eng);
  CHECK(after.global[regmap::kGcFramesIn] - before.global[regmap::kGcFramesIn] == n);
  CHECK(after.global[regmap::kGcAggregated] == before.global[regmap::kGcAggregated]);
  CHECK(after.global[regmap::kGcEmitted] == before.global[regmap::kGcEmitted]);
  fx.complete_all();
}

TEST_CASE("an open slot rejects a duplicate before an element-count mismatch", "[engine]") {
  Fixture fx(test_seed("engine duplicate order"));
  const auto before = snapshot(*fx.eng);
  Sink sink;
  // Child 0 already contributed 10 elements to A's sequence 1; now it sends 9.
  const auto out = send(*fx.eng, contribution(fx.a, 0, 1, random_payload(fx.rng, 9)), sink);
  CHECK(out.action == EngineAction::kDropped);
  CHECK(out.drop_counter == regmap::kGcDuplicates);
  CHECK(counter_delta(before, snapshot(*fx.eng)) == "frames_in+1 panama_in+1 duplicates+1 e0.duplicates+1");
  fx.complete_all();
}

TEST_CASE("a frame the MAC marks bad is dropped whole and counted, even if well-formed or with ENABLE off",
          "[engine]") {
  Fixture fx(test_seed("engine mac error"));
  // A well-formed contribution that would complete nothing yet, a non-PANAMA
  // frame, and a malformed one: the MAC's verdict wins over every check.
  std::vector<std::vector<uint8_t>> frames = {fx.victim(), std::vector<uint8_t>(60, 0x5A), fx.victim()};
  frames[2].resize(40);
  for (int enabled = 1; enabled >= 0; --enabled) {
    fx.eng->reg_write(regmap::kControl, enabled ? regmap::kControlEnable : 0u);
    for (const auto& frame : frames) {
      const auto before = snapshot(*fx.eng);
      Sink sink;
      const auto out = fx.eng->process_frame(frame.data(), static_cast<uint32_t>(frame.size()), sink, true);
      CHECK(out.action == EngineAction::kDropped);
      CHECK(out.drop_counter == regmap::kGcDropMacError);
      CHECK(sink.frames.empty());
      CHECK(counter_delta(before, snapshot(*fx.eng)) == "frames_in+1 drop_mac_error+1");
    }
  }
  fx.eng->reg_write(regmap::kControl, regmap::kControlEnable);
  // The victim's slot was never touched: completing every slot gives the sums
  // of the accepted contributions only.
  fx.complete_all();
}
