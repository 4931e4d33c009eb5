// Engine aggregation against independently computed sums: seeded random
// traffic over several jobs and trees in one engine, with shuffled arrival
// orders inside each worker's window, duplicated and retransmitted frames;
// every element count from 1 to 2288; signed zeros; ECN and cwnd_cap.
#include <catch2/catch.hpp>
#include <memory>
#include <set>

#include "hls/engine_harness.hpp"

using namespace panama;
using namespace panama::test;
using regmap::EntryCounter;
using regmap::GlobalCounter;

namespace {

using SmallEngine = EngineUnderTest<8, 64, 144>;

// One (job, tree) table entry and the traffic its workers send.
struct Flow {
  uint32_t index = 0;  // table entry
  EntrySpec spec;
  std::vector<uint16_t> children;       // the fan_in children that contribute
  std::vector<uint16_t> elem_count;     // per sequence
  std::map<uint32_t, RefSlot> slots;    // by sequence
  std::vector<std::vector<bool>> sent;  // [child][seq]
  std::vector<uint32_t> max_admitted;   // per slot offset: newest sequence admitted, or UINT32_MAX
  uint32_t oldest_unfinished = 0;
  // Expected per-entry counters.
  uint64_t aggregated = 0, emitted = 0, duplicates = 0, retrans_in = 0, retrans_served = 0, ecn_marked = 0,
           seq_window = 0;
};

uint16_t random_count(Rng& rng) {
  const uint32_t p = uniform(rng, 0, 99);
  if (p < 70) return static_cast<uint16_t>(uniform(rng, 1, 64));
  if (p < 95) return static_cast<uint16_t>(uniform(rng, 65, 600));
  return static_cast<uint16_t>(uniform(rng, 601, ref::kMaxElems));
}

std::vector<Flow> random_flows(Rng& rng, uint32_t entries, uint32_t num_slots) {
  std::vector<Flow> flows(entries);
  std::vector<uint32_t> idx(entries);
  for (uint32_t i = 0; i < entries; ++i) idx[i] = i;
  std::shuffle(idx.begin(), idx.end(), rng);
  std::set<std::pair<uint16_t, uint8_t>> keys;
  const uint16_t jobs[3] = {static_cast<uint16_t>(uniform(rng, 0, 0xFFFF)), 7, 0xFFFF};
  uint32_t next_slot = 0;
  for (uint32_t i = 0; i < entries; ++i) {
    Flow& f = flows[i];
    f.index = idx[i];
    EntrySpec s = random_addresses(EntrySpec{}, rng);
    do {
      s.job = jobs[uniform(rng, 0, 2)];
      s.tree = static_cast<uint8_t>(uniform(rng, 0, 3) == 0 ? uniform(rng, 0, 255) : uniform(rng, 0, 3));
    } while (!keys.insert({s.job, s.tree}).second);
    s.root = uniform(rng, 0, 1) == 1;
    // Fan-in mostly small, one entry wide (up to 64 children).
    s.fan_in = i == 0 ? uniform(rng, 9, 64) : uniform(rng, 1, 8);
    std::vector<uint16_t> ids(64);
    for (uint16_t c = 0; c < 64; ++c) ids[c] = c;
    std::shuffle(ids.begin(), ids.end(), rng);
    f.children.assign(ids.begin(), ids.begin() + s.fan_in);
    s.child_mask = 0;
    for (uint16_t c : f.children) s.child_mask |= uint64_t{1} << c;
    // Some entries also allow children that never send.
    for (uint32_t extra = uniform(rng, 0, 2); extra > 0; --extra)
      s.child_mask |= uint64_t{1} << ids[63 - extra];
    s.slot_count = uniform(rng, 1, 6);
    next_slot += uniform(rng, 0, 1);
    s.slot_base = next_slot;
    next_slot += s.slot_count;
    REQUIRE(next_slot <= num_slots);
    f.spec = s;
    const uint32_t seqs = s.slot_count * uniform(rng, 2, 5) + uniform(rng, 0, 3);
    for (uint32_t q = 0; q < seqs; ++q) f.elem_count.push_back(random_count(rng));
    f.sent.assign(s.fan_in, std::vector<bool>(seqs, false));
    f.max_admitted.assign(s.slot_count, UINT32_MAX);
  }
  return flows;
}

struct Expect {
  EngineAction action;
  std::vector<std::vector<uint8_t>> frames;
};

void check_step(const EngineOutcome& got, const Sink& sink, const Expect& want) {
  REQUIRE(static_cast<int>(got.action) == static_cast<int>(want.action));
  REQUIRE(sink.frames.size() == want.frames.size());
  for (size_t i = 0; i < want.frames.size(); ++i) REQUIRE(sink.frames[i] == want.frames[i]);
}

// Runs one round of random traffic through a fresh engine.
template <class E>
void random_traffic_round(Rng& rng, uint32_t round) {
  auto eng = std::make_unique<E>();
  auto flows = random_flows(rng, E::kTableEntries, E::kPacketSlots);
  for (const Flow& f : flows) REQUIRE(commit_entry(*eng, f.index, f.spec) == regmap::kStatusOk);

  uint64_t frames_in = 0, retrans_total = 0;
  size_t remaining = 0;
  for (const Flow& f : flows) remaining += f.children.size() * f.elem_count.size();

  while (remaining > 0) {
    Flow& f = flows[uniform(rng, 0, static_cast<uint32_t>(flows.size()) - 1)];
    const uint32_t q = f.spec.slot_count;
    const uint32_t ci = uniform(rng, 0, static_cast<uint32_t>(f.children.size()) - 1);
    const uint16_t child = f.children[ci];
    const uint32_t n_seqs = static_cast<uint32_t>(f.elem_count.size());

    // Window rule: a worker's sequences stay within Q of the oldest unfinished one.
    std::vector<uint32_t> sendable;
    std::vector<uint32_t> resendable;
    for (uint32_t s = 0; s < n_seqs; ++s) {
      if (!f.sent[ci][s] && s < f.oldest_unfinished + q) sendable.push_back(s);
      if (f.sent[ci][s]) resendable.push_back(s);
    }
    const bool resend = !resendable.empty() && uniform(rng, 0, 19) == 0;
    if (!resend && sendable.empty()) continue;
    const uint32_t seq = resend ? resendable[uniform(rng, 0, static_cast<uint32_t>(resendable.size()) - 1)]
                                : sendable[uniform(rng, 0, static_cast<uint32_t>(sendable.size()) - 1)];
    const bool retrans = uniform(rng, 0, 3) == 0;
    const uint8_t type = retrans ? 3 : 1;
    const uint8_t ecn = uniform(rng, 0, 9) == 0 ? wire::kEcnCe : wire::kEcnEct0;
    const uint16_t cap = uniform(rng, 0, 1) ? 0xFFFF : static_cast<uint16_t>(uniform(rng, 1, 20));
    const auto payload = random_payload(rng, f.elem_count[seq]);
    const auto frame = contribution(f.spec, child, seq, payload, ecn, cap, type);

    Expect want;
    const uint32_t off = seq % q;
    RefSlot& r = f.slots[seq];
    if (!resend) {
      r.seq = seq;
      r.add(child, payload, ecn, cap);
      f.sent[ci][seq] = true;
      --remaining;
      if (f.max_admitted[off] == UINT32_MAX || seq > f.max_admitted[off]) f.max_admitted[off] = seq;
      ++f.aggregated;
      if (ecn == wire::kEcnCe) ++f.ecn_marked;
      if (r.count == f.spec.fan_in) {
        r.done = true;
        ++f.emitted;
        want.action = EngineAction::kEmitted;
        want.frames.push_back(expected_emission(f.spec, r, false));
        while (f.oldest_unfinished < n_seqs && f.slots.count(f.oldest_unfinished) &&
               f.slots[f.oldest_unfinished].done) {
          ++f.oldest_unfinished;
        }
      } else {
        want.action = EngineAction::kAggregated;
      }
    } else if (f.max_admitted[off] > seq + q) {
      // Two newer generations of the slot have arrived: the sequence is gone.
      want.action = EngineAction::kDropped;
      ++f.seq_window;
    } else if (r.done && retrans) {
      want.action = EngineAction::kReemitted;
      want.frames.push_back(expected_emission(f.spec, r, true));
      ++f.retrans_served;
    } else {
      want.action = EngineAction::kDropped;  // open with this child counted, or done: a duplicate
      ++f.duplicates;
    }
    if (retrans) {
      ++f.retrans_in;
      ++retrans_total;
    }

    Sink sink;
    const EngineOutcome got = send(*eng, frame, sink);
    ++frames_in;
    INFO("round " << round << " job " << f.spec.job << " tree " << int(f.spec.tree) << " child " << child
                  << " seq " << seq << " Q " << q << " fan_in " << f.spec.fan_in << " resend " << resend
                  << " type " << int(type));
    check_step(got, sink, want);
    if (want.action == EngineAction::kEmitted || want.action == EngineAction::kAggregated ||
        want.action == EngineAction::kReemitted) {
      REQUIRE(got.entry == static_cast<int32_t>(f.index));
    }
  }

  uint64_t aggregated = 0, emitted = 0, duplicates = 0, served = 0, ecn = 0, window = 0;
  for (const Flow& f : flows) {
    INFO("entry " << f.index);
    CHECK(f.oldest_unfinished == f.elem_count.size());
    CHECK(eng->entry_counter(f.index, regmap::kEcAggregated) == f.aggregated);
    CHECK(eng->entry_counter(f.index, regmap::kEcEmitted) == f.emitted);
    CHECK(eng->entry_counter(f.index, regmap::kEcDuplicates) == f.duplicates);
    CHECK(eng->entry_counter(f.index, regmap::kEcRetransIn) == f.retrans_in);
    CHECK(eng->entry_counter(f.index, regmap::kEcRetransServed) == f.retrans_served);
    CHECK(eng->entry_counter(f.index, regmap::kEcEcnMarked) == f.ecn_marked);
    CHECK(eng->entry_counter(f.index, regmap::kEcDropSeqWindow) == f.seq_window);
    CHECK(eng->entry_counter(f.index, regmap::kEcDropChildNotAllowed) == 0);
    CHECK(eng->entry_counter(f.index, regmap::kEcDropCountMismatch) == 0);
    aggregated += f.aggregated;
    emitted += f.emitted;
    duplicates += f.duplicates;
    served += f.retrans_served;
    ecn += f.ecn_marked;
    window += f.seq_window;
  }
  CHECK(eng->global_counter(regmap::kGcFramesIn) == frames_in);
  CHECK(eng->global_counter(regmap::kGcPanamaIn) == frames_in);
  CHECK(eng->global_counter(regmap::kGcAggregated) == aggregated);
  CHECK(eng->global_counter(regmap::kGcEmitted) == emitted);
  CHECK(eng->global_counter(regmap::kGcDuplicates) == duplicates);
  CHECK(eng->global_counter(regmap::kGcRetransIn) == retrans_total);
  CHECK(eng->global_counter(regmap::kGcRetransServed) == served);
  CHECK(eng->global_counter(regmap::kGcEcnMarked) == ecn);
  CHECK(eng->global_counter(regmap::kGcDropSeqWindow) == window);
  CHECK(eng->global_counter(regmap::kGcPassthrough) == 0);
}

EntrySpec simple_entry(bool root, uint32_t fan_in, uint32_t q) {
  EntrySpec s;
  s.job = 42;
  s.tree = 3;
  s.root = root;
  s.fan_in = fan_in;
  s.child_mask = (fan_in >= 64) ? ~uint64_t{0} : ((uint64_t{1} << fan_in) - 1);
  s.slot_base = 2;
  s.slot_count = q;
  s.out_child_id = 5;
  return s;
}

}  // namespace

TEST_CASE("random interleaved traffic of several jobs and trees sums like the host FPU", "[engine]") {
  // PANAMA_ENGINE_ROUNDS=<n> runs a longer soak (each round is a fresh random configuration).
  Rng rng(test_seed("engine random traffic"));
  const uint64_t rounds = env_count("PANAMA_ENGINE_ROUNDS", 24);
  for (uint32_t round = 0; round < rounds; ++round) random_traffic_round<SmallEngine>(rng, round);
}

TEST_CASE("every element count from 1 to 2288 aggregates correctly (default sizes)", "[engine]") {
  Rng rng(test_seed("engine element counts"));
  auto eng = std::make_unique<DefaultEngineUnderTest>();
  REQUIRE(eng->reg_read(regmap::kSlotElems) == 2304);
  EntrySpec s = random_addresses(simple_entry(true, 3, 8), rng);
  s.slot_base = 500;
  s.slot_count = 12;
  s.child_mask = (uint64_t{1} << 9) | (uint64_t{1} << 33) | (uint64_t{1} << 63);
  const uint16_t kids[3] = {9, 33, 63};
  REQUIRE(commit_entry(*eng, 63, s) == regmap::kStatusOk);

  // Sequence k carries k+1 elements; the window of 12 slides as sequences finish,
  // and each sequence's contributions arrive in a random child order.
  const uint32_t n_seqs = ref::kMaxElems;
  std::map<uint32_t, RefSlot> slots;
  uint32_t next = 0, oldest = 0, emitted = 0;
  std::map<uint32_t, std::vector<uint32_t>> todo;
  while (oldest < n_seqs) {
    while (next < n_seqs && next < oldest + s.slot_count) {
      todo[next] = {0, 1, 2};
      std::shuffle(todo[next].begin(), todo[next].end(), rng);
      ++next;
    }
    auto it = todo.begin();
    std::advance(it, uniform(rng, 0, static_cast<uint32_t>(todo.size()) - 1));
    const uint32_t seq = it->first;
    const uint16_t child = kids[it->second.back()];
    it->second.pop_back();
    const auto payload = random_payload(rng, seq + 1);
    RefSlot& r = slots[seq];
    r.seq = seq;
    r.add(child, payload, wire::kEcnEct0, 0xFFFF);
    Sink sink;
    const auto out = send(*eng, contribution(s, child, seq, payload), sink);
    INFO("seq " << seq << " child " << child);
    if (it->second.empty()) {
      todo.erase(it);
      REQUIRE(out.action == EngineAction::kEmitted);
      REQUIRE(sink.frames.size() == 1);
      REQUIRE(sink.frames[0] == expected_emission(s, r, false));
      r.done = true;
      ++emitted;
      slots.erase(seq);
      while (oldest < next && !todo.count(oldest)) ++oldest;
    } else {
      REQUIRE(out.action == EngineAction::kAggregated);
      REQUIRE(sink.frames.empty());
    }
  }
  CHECK(emitted == n_seqs);
  CHECK(eng->global_counter(regmap::kGcEmitted) == n_seqs);
  CHECK(eng->entry_counter(63, regmap::kEcAggregated) == 3 * n_seqs);
}

TEST_CASE("the first contribution is stored as it arrives: signed zeros", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const uint32_t kNeg0 = 0x80000000u, kPos0 = 0;
  SECTION("fan-in 1: -0 alone stays -0") {
    const EntrySpec s = simple_entry(true, 1, 4);
    REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
    Sink sink;
    CHECK(send(*eng, contribution(s, 0, 0, {kNeg0, kPos0, 0x80000001u}), sink).action ==
          EngineAction::kEmitted);
    REQUIRE(sink.frames.size() == 1);
    CHECK(ref::get_le32(sink.frames[0].data(), 64) == kNeg0);
    CHECK(ref::get_le32(sink.frames[0].data(), 68) == kPos0);
    CHECK(ref::get_le32(sink.frames[0].data(), 72) == 0x80000001u);
  }
  SECTION("fan-in 2: -0 + -0 = -0, +0 + -0 = +0, -0 + +0 = +0") {
    const EntrySpec s = simple_entry(false, 2, 4);
    REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
    Sink sink;
    send(*eng, contribution(s, 1, 0, {kNeg0, kPos0, kNeg0}), sink);
    send(*eng, contribution(s, 0, 0, {kNeg0, kNeg0, kPos0}), sink);
    REQUIRE(sink.frames.size() == 1);
    CHECK(ref::get_le32(sink.frames[0].data(), 64) == kNeg0);
    CHECK(ref::get_le32(sink.frames[0].data(), 68) == kPos0);
    CHECK(ref::get_le32(sink.frames[0].data(), 72) == kPos0);
  }
}

TEST_CASE("a sum depends on arrival order exactly as host float addition does", "[engine]") {
  // 1 + 2^-24 + 2^-24: (1 + h) + h = 1 but h + h + 1 = 1 + 2^-23 (both by the host FPU).
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = simple_entry(true, 3, 4);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  const uint32_t one = 0x3F800000u, h = 0x33800000u;
  Sink sink;
  send(*eng, contribution(s, 0, 0, {one}), sink);
  send(*eng, contribution(s, 1, 0, {h}), sink);
  send(*eng, contribution(s, 2, 0, {h}), sink);
  send(*eng, contribution(s, 1, 1, {h}), sink);
  send(*eng, contribution(s, 2, 1, {h}), sink);
  send(*eng, contribution(s, 0, 1, {one}), sink);
  REQUIRE(sink.frames.size() == 2);
  CHECK(ref::get_le32(sink.frames[0].data(), 64) == ref::host_add(ref::host_add(one, h), h));
  CHECK(ref::get_le32(sink.frames[0].data(), 64) == one);
  CHECK(ref::get_le32(sink.frames[1].data(), 64) == ref::host_add(ref::host_add(h, h), one));
  CHECK(ref::get_le32(sink.frames[1].data(), 64) == 0x3F800001u);
}

TEST_CASE("emitted ECN is the OR of the contributions and ECN_MARKED counts CE", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = simple_entry(true, 3, 4);
  REQUIRE(commit_entry(*eng, 2, s) == regmap::kStatusOk);
  Sink sink;
  for (uint16_t c = 0; c < 3; ++c) send(*eng, contribution(s, c, 0, {0x3F800000u}, wire::kEcnEct0), sink);
  for (uint16_t c = 0; c < 3; ++c) {
    send(*eng, contribution(s, c, 1, {0x3F800000u}, c == 1 ? wire::kEcnCe : wire::kEcnEct0), sink);
  }
  for (uint16_t c = 0; c < 3; ++c) {
    send(*eng, contribution(s, c, 2, {0x3F800000u}, c == 0 ? wire::kEcnCe : wire::kEcnEct0), sink);
  }
  for (uint16_t c = 0; c < 3; ++c) send(*eng, contribution(s, c, 3, {0x3F800000u}, wire::kEcnCe), sink);
  REQUIRE(sink.frames.size() == 4);
  CHECK((sink.frames[0][ref::kIpTos] & 3) == wire::kEcnEct0);
  CHECK((sink.frames[1][ref::kIpTos] & 3) == wire::kEcnCe);
  CHECK((sink.frames[2][ref::kIpTos] & 3) == wire::kEcnCe);
  CHECK((sink.frames[3][ref::kIpTos] & 3) == wire::kEcnCe);
  for (const auto& f : sink.frames) {
    CHECK((f[ref::kIpTos] >> 2) == s.dscp);
    CHECK(ref::get16(f.data(), ref::kIpChecksum) == ref::ip_checksum(f.data()));
  }
  CHECK(eng->global_counter(regmap::kGcEcnMarked) == 5);
  CHECK(eng->entry_counter(2, regmap::kEcEcnMarked) == 5);
  CHECK(eng->global_counter(regmap::kGcAggregated) == 12);
}

TEST_CASE("emitted cwnd_cap is the minimum of the incoming caps and the entry's share", "[engine]") {
  auto eng = std::make_unique<SmallEngine>();
  const EntrySpec s = simple_entry(false, 3, 8);
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  struct Case {
    uint16_t caps[3];
    uint16_t expect;
  };
  const Case cases[] = {{{100, 50, 70}, 8}, {{0xFFFF, 0xFFFF, 0xFFFF}, 8}, {{3, 5, 9}, 3},
                        {{9, 9, 7}, 7},     {{8, 0xFFFF, 8}, 8},           {{0, 4, 4}, 0}};
  uint32_t seq = 0;
  for (const Case& c : cases) {
    Sink sink;
    for (uint16_t k = 0; k < 3; ++k) send(*eng, contribution(s, k, seq, {0x40000000u}, 2, c.caps[k]), sink);
    REQUIRE(sink.frames.size() == 1);
    INFO("caps " << c.caps[0] << "," << c.caps[1] << "," << c.caps[2]);
    CHECK(ref::get16(sink.frames[0].data(), ref::kCwndCap) == c.expect);
    ++seq;
  }
}

#if !defined(PANAMA_TEST_KERNEL_CSIM)
// The host engine's two-piece input (header bytes, payload elsewhere: a
// worker's zero-copy frames) and its emission into a buffer the sink offers
// (a PSwitch's mbuf): the same decisions, counters and bytes as whole frames
// into the engine's own buffer.
TEST_CASE("frames in two pieces and emissions into the sink's buffer match whole frames", "[engine]") {
  Rng rng(test_seed("engine two-piece frames"));
  auto whole = std::make_unique<SmallEngine>();
  auto parts = std::make_unique<SmallEngine>();
  EntrySpec s;
  s.fan_in = 3;
  s.child_mask = 0x7;
  s.slot_count = 4;
  REQUIRE(commit_entry(*whole, 0, s) == regmap::kStatusOk);
  REQUIRE(commit_entry(*parts, 0, s) == regmap::kStatusOk);

  struct BufferSink final : EmitTarget {
    std::vector<uint8_t> buf = std::vector<uint8_t>(wire::kMaxFrameBytes);
    std::vector<std::vector<uint8_t>> frames;
    uint32_t offered = 0, into_buffer = 0;
    uint8_t* buffer(uint32_t len) override {
      ++offered;
      return len <= buf.size() ? buf.data() : nullptr;
    }
    void emit(const uint8_t* d, uint32_t len, Ports) override {
      into_buffer += d == buf.data();
      frames.emplace_back(d, d + len);
      std::fill(buf.begin(), buf.end(), 0xEE);  // a stale buffer would show in the next frame
    }
  };
  Sink a;
  BufferSink b;
  uint32_t emissions_expected = 0;
  for (uint32_t seq = 0; seq < 40; ++seq) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 144);
    std::vector<uint16_t> children = {0, 1, 2};
    if (rng() % 4 == 0) children.push_back(static_cast<uint16_t>(rng() % 3));  // a duplicate
    for (uint16_t c : children) {
      std::vector<uint8_t> f = contribution(s, c, seq, random_payload(rng, n));
      whole->process_frame(f.data(), static_cast<uint32_t>(f.size()), a);
      const std::vector<uint8_t> payload(f.begin() + wire::kPayloadOffset, f.end());
      std::fill(f.begin() + wire::kPayloadOffset, f.end(), 0xCD);  // the head piece holds only the header
      parts->process_frame_parts(f.data(), payload.data(), static_cast<uint32_t>(f.size()), b);
    }
    ++emissions_expected;
  }
  // A frame the engine passes on (not PANAMA) leaves whole, in one piece.
  std::vector<uint8_t> other(200);
  for (size_t i = 0; i < other.size(); ++i) other[i] = static_cast<uint8_t>(i);
  whole->process_frame(other.data(), 200, a);
  const std::vector<uint8_t> tail(other.begin() + 64, other.end());
  std::vector<uint8_t> head(other.begin(), other.begin() + 64);
  parts->process_frame_parts(head.data(), tail.data(), 200, b);

  REQUIRE(a.frames.size() == emissions_expected + 1);
  REQUIRE(b.frames.size() == a.frames.size());
  for (size_t i = 0; i < a.frames.size(); ++i) CHECK(a.frames[i] == b.frames[i]);
  CHECK(b.offered == emissions_expected);      // asked once per emission
  CHECK(b.into_buffer == emissions_expected);  // and every emission was written there
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c)
    CHECK(whole->global_counter(c) == parts->global_counter(c));
  CHECK(whole->global_counter(regmap::kGcEmitted) == emissions_expected);
  CHECK(whole->global_counter(regmap::kGcPassthrough) == 1);
}
#endif
