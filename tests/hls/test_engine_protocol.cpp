// Engine protocol behaviour (docs/protocol.md §5-§6): duplicates never count
// twice, retransmissions re-emit the stored aggregate bit for bit, the two
// generations of a slot, and byte-for-byte pass-through of everything that
// is not an aggregation contribution.
#include <catch2/catch.hpp>
#include <memory>

#include "hls/engine_harness.hpp"

using namespace panama;
using namespace panama::test;

namespace {

using SmallEngine = EngineUnderTest<8, 64, 144>;

EntrySpec entry(bool root, uint32_t fan_in, uint32_t q, uint32_t base = 0) {
  EntrySpec s;
  s.job = 300;
  s.tree = 2;
  s.root = root;
  s.fan_in = fan_in;
  s.child_mask = (uint64_t{1} << fan_in) - 1;
  s.slot_base = base;
  s.slot_count = q;
  s.out_child_id = 17;
  return s;
}

std::vector<uint32_t> vals(std::initializer_list<float> v) {
  std::vector<uint32_t> out;
  for (float f : v) out.push_back(ref::bits(f));
  return out;
}

}  // namespace

TEST_CASE("a duplicate contribution never counts twice", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(true, 3, 4);
  REQUIRE(commit_entry(*eng, 1, s) == regmap::kStatusOk);
  RefSlot r;
  r.seq = 6;
  Sink sink;
  const auto a = vals({1.5f, -2.0f});
  const auto b = vals({0.25f, 8.0f});
  const auto c = vals({3.0f, 1e-3f});
  CHECK(send(*eng, contribution(s, 0, 6, a), sink).action == EngineAction::kAggregated);
  r.add(0, a, 2, 0xFFFF);

  auto before = snapshot(*eng);
  // Same child, same sequence, different payload: dropped as a duplicate.
  auto out = send(*eng, contribution(s, 0, 6, b), sink);
  CHECK(out.action == EngineAction::kDropped);
  CHECK(out.drop_counter == regmap::kGcDuplicates);
  CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 panama_in+1 duplicates+1 e1.duplicates+1");
  // Also as a retransmission, and with a different element count (duplicate is checked first).
  before = snapshot(*eng);
  CHECK(send(*eng, contribution(s, 0, 6, b, 2, 0xFFFF, 3), sink).action == EngineAction::kDropped);
  CHECK(send(*eng, contribution(s, 0, 6, vals({1.0f})), sink).action == EngineAction::kDropped);
  CHECK(counter_delta(before, snapshot(*eng)) ==
        "frames_in+2 panama_in+2 duplicates+2 retrans_in+1 e1.duplicates+2 e1.retrans_in+1");
  CHECK(sink.frames.empty());

  CHECK(send(*eng, contribution(s, 2, 6, b), sink).action == EngineAction::kAggregated);
  r.add(2, b, 2, 0xFFFF);
  CHECK(send(*eng, contribution(s, 2, 6, b), sink).action == EngineAction::kDropped);
  CHECK(send(*eng, contribution(s, 1, 6, c), sink).action == EngineAction::kEmitted);
  r.add(1, c, 2, 0xFFFF);
  REQUIRE(sink.frames.size() == 1);
  CHECK(sink.frames[0] == expected_emission(s, r, false));

  // After emission an aggregate-up for the sequence is a duplicate, from any child, and nothing is re-sent.
  before = snapshot(*eng);
  CHECK(send(*eng, contribution(s, 1, 6, c), sink).action == EngineAction::kDropped);
  CHECK(send(*eng, contribution(s, 0, 6, a), sink).action == EngineAction::kDropped);
  CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+2 panama_in+2 duplicates+2 e1.duplicates+2");
  CHECK(sink.frames.size() == 1);
}

TEST_CASE("a retransmission for an emitted slot re-emits the stored aggregate", "[engine]") {
  for (bool root : {true, false}) {
    INFO("root " << root);
    auto eng = std::make_unique<SmallEngine>();
    EntrySpec s = entry(root, 2, 4);
    s.dscp = 0x12;
    REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
    RefSlot r;
    r.seq = 2;
    Sink sink;
    const auto a = vals({1.0f, 2.0f, -0.0f});
    const auto b = vals({1e30f, -2.0f, -0.0f});
    send(*eng, contribution(s, 1, 2, a, wire::kEcnCe, 3), sink);
    r.add(1, a, wire::kEcnCe, 3);
    send(*eng, contribution(s, 0, 2, b, wire::kEcnEct0, 0xFFFF), sink);
    r.add(0, b, wire::kEcnEct0, 0xFFFF);
    REQUIRE(sink.frames.size() == 1);
    const auto first = sink.frames[0];
    CHECK(first == expected_emission(s, r, false));
    CHECK(first[ref::kType] == (root ? 2 : 1));

    // Either child may retransmit, any number of times; its payload is ignored.
    for (uint16_t child : {0, 1, 1}) {
      const auto before = snapshot(*eng);
      Sink again;
      const auto out = send(*eng, contribution(s, child, 2, vals({5.0f, 5.0f, 5.0f}), 2, 0xFFFF, 3), again);
      CHECK(out.action == EngineAction::kReemitted);
      REQUIRE(again.frames.size() == 1);
      CHECK(again.frames[0] == expected_emission(s, r, true));
      CHECK(again.frames[0][ref::kType] == (root ? 2 : 3));
      // Apart from the type at a non-root engine, bit for bit the first emission.
      auto same = again.frames[0];
      same[ref::kType] = first[ref::kType];
      CHECK(same == first);
      CHECK(counter_delta(before, snapshot(*eng)) ==
            "frames_in+1 panama_in+1 retrans_in+1 retrans_served+1 e0.retrans_in+1 e0.retrans_served+1");
    }
  }
}

TEST_CASE("a retransmission for an open slot counts as a contribution from a new child", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(false, 3, 4);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  RefSlot r;
  r.seq = 0;
  Sink sink;
  const auto a = vals({1.0f}), b = vals({2.0f}), c = vals({4.0f});
  CHECK(send(*eng, contribution(s, 0, 0, a, 2, 0xFFFF, 3), sink).action == EngineAction::kAggregated);
  r.add(0, a, 2, 0xFFFF);
  CHECK(send(*eng, contribution(s, 0, 0, a, 2, 0xFFFF, 3), sink).action ==
        EngineAction::kDropped);  // counted
  CHECK(send(*eng, contribution(s, 1, 0, b, 2, 0xFFFF, 3), sink).action == EngineAction::kAggregated);
  r.add(1, b, 2, 0xFFFF);
  CHECK(send(*eng, contribution(s, 2, 0, c, 2, 0xFFFF, 3), sink).action == EngineAction::kEmitted);
  r.add(2, c, 2, 0xFFFF);
  REQUIRE(sink.frames.size() == 1);
  // Completed by a retransmission: the emission is an ordinary aggregate-up.
  CHECK(sink.frames[0] == expected_emission(s, r, false));
  CHECK(eng->global_counter(regmap::kGcRetransIn) == 4);
  CHECK(eng->global_counter(regmap::kGcAggregated) == 3);
  CHECK(eng->global_counter(regmap::kGcDuplicates) == 1);
  CHECK(eng->global_counter(regmap::kGcRetransServed) == 0);
}

TEST_CASE("two generations share a slot", "[engine]") {
  // Q = 4: sequences 1, 5, 9, 13 all use slot offset 1 (generations 0..3).
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(false, 2, 4, 10);
  REQUIRE(commit_entry(*eng, 3, s) == regmap::kStatusOk);
  const uint32_t kS = 1, kQ = 4;
  RefSlot g0, g1, g2;
  g0.seq = kS;
  g1.seq = kS + kQ;
  g2.seq = kS + 2 * kQ;
  Sink sink;
  auto contribute = [&](RefSlot& r, uint16_t child, float v) {
    const auto p = vals({v, -v});
    r.add(child, p, 2, 0xFFFF);
    return send(*eng, contribution(s, child, r.seq, p), sink);
  };
  auto window_drop = [&](uint32_t seq, uint8_t type, uint16_t child) {
    const auto before = snapshot(*eng);
    Sink none;
    const auto out = send(*eng, contribution(s, child, seq, vals({99.0f, 99.0f}), 3, 1, type), none);
    CHECK(out.action == EngineAction::kDropped);
    CHECK(out.drop_counter == regmap::kGcDropSeqWindow);
    CHECK(none.frames.empty());
    CHECK(counter_delta(before, snapshot(*eng)) ==
          std::string("frames_in+1 panama_in+1 ") + (type == 3 ? "retrans_in+1 " : "") + "drop_seq_window+1" +
              (type == 3 ? " e3.retrans_in+1" : "") + " e3.drop_seq_window+1");
  };

  // Generation 0 completes.
  CHECK(contribute(g0, 0, 1.0f).action == EngineAction::kAggregated);
  CHECK(contribute(g0, 1, 2.0f).action == EngineAction::kEmitted);
  REQUIRE(sink.frames.size() == 1);
  CHECK(sink.frames[0] == expected_emission(s, g0, false));
  // Generation 2 is not reachable before generation 1 exists.
  window_drop(kS + 2 * kQ, 1, 0);

  // s + Q is admitted now that s is emitted; s can still be re-emitted while s + Q accumulates.
  CHECK(contribute(g1, 1, 10.0f).action == EngineAction::kAggregated);
  Sink re;
  CHECK(send(*eng, contribution(s, 0, kS, vals({0, 0}), 2, 0xFFFF, 3), re).action ==
        EngineAction::kReemitted);
  REQUIRE(re.frames.size() == 1);
  CHECK(re.frames[0] == expected_emission(s, g0, true));
  // A late aggregate-up for s is a duplicate, not a contribution to s + Q.
  auto before = snapshot(*eng);
  CHECK(send(*eng, contribution(s, 0, kS, vals({7, 7})), re).action == EngineAction::kDropped);
  CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 panama_in+1 duplicates+1 e3.duplicates+1");

  // s + 2Q reuses the bank of s, which is emitted, not open: admitted (docs/protocol.md §5)
  // and from now on s is older than the two live generations.
  CHECK(contribute(g2, 0, 100.0f).action == EngineAction::kAggregated);
  window_drop(kS, 3, 0);
  window_drop(kS, 1, 1);
  window_drop(kS + 3 * kQ, 1, 1);      // s + 3Q would reuse the bank of the open s + Q
  window_drop(kS + 5 * kQ, 1, 0);      // far ahead
  window_drop(kS - 1 + 4 * kQ, 3, 0);  // another slot's generation 3 while its top is 0

  // Both live generations complete with the expected sums: the drops changed nothing.
  CHECK(contribute(g1, 0, 20.0f).action == EngineAction::kEmitted);
  CHECK(contribute(g2, 1, 200.0f).action == EngineAction::kEmitted);
  REQUIRE(sink.frames.size() == 3);
  CHECK(sink.frames[1] == expected_emission(s, g1, false));
  CHECK(sink.frames[2] == expected_emission(s, g2, false));
  for (const RefSlot* g : {&g1, &g2}) {
    Sink again;
    CHECK(send(*eng, contribution(s, 1, g->seq, vals({0, 0}), 2, 0xFFFF, 3), again).action ==
          EngineAction::kReemitted);
    REQUIRE(again.frames.size() == 1);
    CHECK(again.frames[0] == expected_emission(s, *g, true));
  }
  // s + 3Q now replaces s + Q.
  RefSlot g3;
  g3.seq = kS + 3 * kQ;
  CHECK(contribute(g3, 1, 1000.0f).action == EngineAction::kAggregated);
  window_drop(kS + kQ, 3, 0);
  CHECK(contribute(g3, 0, 2000.0f).action == EngineAction::kEmitted);
  CHECK(sink.frames.back() == expected_emission(s, g3, false));
  CHECK(eng->entry_counter(3, regmap::kEcEmitted) == 4);
}

TEST_CASE("s + Q may open while s is open, but s + 2Q waits for s", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(true, 2, 4, 0);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  Sink sink;
  RefSlot a, b, c;
  a.seq = 2;
  b.seq = 6;
  c.seq = 10;
  auto contribute = [&](RefSlot& r, uint16_t child, float v) {
    const auto p = vals({v});
    r.add(child, p, 2, 0xFFFF);
    return send(*eng, contribution(s, child, r.seq, p), sink).action;
  };
  CHECK(contribute(a, 0, 1.0f) == EngineAction::kAggregated);
  CHECK(contribute(b, 0, 2.0f) == EngineAction::kAggregated);  // bank 1 was never used
  const auto before = snapshot(*eng);
  CHECK(send(*eng, contribution(s, 1, 10, vals({5.0f})), sink).action == EngineAction::kDropped);
  CHECK(counter_delta(before, snapshot(*eng)) ==
        "frames_in+1 panama_in+1 drop_seq_window+1 e0.drop_seq_window+1");
  CHECK(contribute(a, 1, 3.0f) == EngineAction::kEmitted);
  CHECK(contribute(c, 1, 4.0f) == EngineAction::kAggregated);  // s's bank is emitted now
  CHECK(contribute(b, 1, 5.0f) == EngineAction::kEmitted);
  CHECK(contribute(c, 0, 6.0f) == EngineAction::kEmitted);
  REQUIRE(sink.frames.size() == 3);
  CHECK(sink.frames[0] == expected_emission(s, a, false));
  CHECK(sink.frames[1] == expected_emission(s, b, false));
  CHECK(sink.frames[2] == expected_emission(s, c, false));
}

TEST_CASE("frames that are not contributions pass through byte for byte", "[engine]") {
  Rng rng(test_seed("engine pass-through"));
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(true, 2, 4);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);

  uint64_t passthrough = 0, results = 0;
  for (int iter = 0; iter < 2000; ++iter) {
    const uint32_t n = uniform(rng, 1, 300);
    auto f = contribution(s, static_cast<uint16_t>(uniform(rng, 0, 1)), uniform(rng, 0, 100),
                          random_payload(rng, n));
    const uint32_t kind = uniform(rng, 0, 9);
    bool result_down = false;
    switch (kind) {
      case 0:  // result-down PANAMA frame (even for a known entry)
        f[ref::kType] = 2;
        result_down = true;
        break;
      case 1:  // ARP
        f.resize(uniform(rng, 42, 64));
        for (auto& b : f) b = static_cast<uint8_t>(rng());
        ref::put16(f, ref::kEthType, 0x0806);
        break;
      case 2:  // IPv6 carrying the same bytes
        ref::put16(f, ref::kEthType, 0x86DD);
        break;
      case 3:  // IPv4 TCP
        f[ref::kIpProto] = 6;
        ref::fix_ip_checksum(f);
        break;
      case 4: {  // another UDP port
        uint16_t port;
        do port = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
        while (port == 9600);
        ref::put16(f, ref::kUdpDst, port);
        break;
      }
      case 5:  // IPv4 with options
        f[ref::kIpVerIhl] = static_cast<uint8_t>(0x40 | uniform(rng, 6, 15));
        ref::fix_ip_checksum(f);
        break;
      case 6:  // non-first fragment
        ref::put16(f, ref::kIpFlagsFrag, uniform(rng, 1, 0x1FFF) | (uniform(rng, 0, 1) << 13));
        ref::fix_ip_checksum(f);
        break;
      case 7:  // VLAN-tagged
        ref::put16(f, ref::kEthType, 0x8100);
        break;
      case 8:  // random bytes of random length, up to the largest frame
        f.resize(uniform(rng, 0, 9216));
        for (auto& b : f) b = static_cast<uint8_t>(rng());
        if (f.size() >= 14 && f[12] == 0x08 && f[13] == 0x00) f[13] = 0x01;
        break;
      default:  // tiny frames
        f.resize(uniform(rng, 0, 37));
        break;
    }
    const auto before = snapshot(*eng);
    Sink sink;
    const auto out = send(*eng, f, sink);
    INFO("iteration " << iter << " kind " << kind << " len " << f.size());
    REQUIRE(out.action == EngineAction::kPassed);
    REQUIRE(sink.frames.size() == 1);
    REQUIRE(sink.frames[0] == f);
    CHECK(counter_delta(before, snapshot(*eng)) ==
          (result_down ? "frames_in+1 results_passed+1" : "frames_in+1 passthrough+1"));
    (result_down ? results : passthrough) += 1;
  }
  CHECK(eng->global_counter(regmap::kGcPassthrough) == passthrough);
  CHECK(eng->global_counter(regmap::kGcResultsPassed) == results);
  CHECK(eng->entry_counter(0, regmap::kEcAggregated) == 0);
}

TEST_CASE("with CONTROL.ENABLE = 0 every frame passes through untouched", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = entry(true, 1, 4);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  eng->reg_write(regmap::kControl, 0);
  CHECK(eng->reg_read(regmap::kControl) == 0);
  std::vector<std::vector<uint8_t>> frames;
  frames.push_back(contribution(s, 0, 0, vals({1.0f, 2.0f})));     // would complete the slot
  frames.push_back(contribution(s, 0, 0, vals({1.0f}), 2, 9, 3));  // retransmission
  frames.push_back(contribution(s, 5, 0, vals({1.0f})));           // child not allowed
  auto bad = contribution(s, 0, 0, vals({1.0f}));
  bad[ref::kIpChecksum] ^= 1;
  frames.push_back(bad);                          // malformed
  frames.push_back(std::vector<uint8_t>(20, 0));  // tiny
  for (const auto& f : frames) {
    Sink sink;
    CHECK(send(*eng, f, sink).action == EngineAction::kPassed);
    REQUIRE(sink.frames.size() == 1);
    CHECK(sink.frames[0] == f);
  }
  CHECK(eng->global_counter(regmap::kGcPassthrough) == frames.size());
  CHECK(eng->global_counter(regmap::kGcFramesIn) == frames.size());
  CHECK(eng->global_counter(regmap::kGcAggregated) == 0);
  // Enabled again, the first contribution aggregates (nothing was stored while disabled).
  eng->reg_write(regmap::kControl, regmap::kControlEnable);
  Sink sink;
  CHECK(send(*eng, frames[0], sink).action == EngineAction::kEmitted);
  RefSlot r;
  r.seq = 0;
  r.add(0, vals({1.0f, 2.0f}), 2, 0xFFFF);
  REQUIRE(sink.frames.size() == 1);
  CHECK(sink.frames[0] == expected_emission(s, r, false));
}

TEST_CASE("frames longer than 9216 bytes are dropped and counted", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  for (uint32_t enable : {regmap::kControlEnable, 0u}) {
    eng->reg_write(regmap::kControl, enable | regmap::kControlClearCounters);
    for (uint32_t len : {9217u, 9280u, 20000u}) {
      std::vector<uint8_t> f(len, 0);
      ref::put16(f, ref::kEthType, 0x0806);
      Sink sink;
      const auto out = send(*eng, f, sink);
      CHECK(out.action == EngineAction::kDropped);
      CHECK(out.drop_counter == regmap::kGcDropOversize);
      CHECK(sink.frames.empty());
    }
    CHECK(eng->global_counter(regmap::kGcDropOversize) == 3);
    CHECK(eng->global_counter(regmap::kGcFramesIn) == 3);
    // 9216 bytes is the largest frame and still passes.
    std::vector<uint8_t> f(9216, 0);
    ref::put16(f, ref::kEthType, 0x0806);
    Sink sink;
    CHECK(send(*eng, f, sink).action == EngineAction::kPassed);
    CHECK(sink.frames.size() == 1);
  }
}
