// The Vitis top function panama_engine_top (hw/hls/src/engine_top.cpp):
// frames go in and come out as 512-bit AXI4-Stream beats (tkeep/tlast),
// registers are reached through the ctrl_seq/ctrl_op mailbox, tuser bit 0
// marks a frame the MAC found bad. The function keeps its state (rules, slot
// memory) in static variables, so this is a binary of its own and each test
// starts with CONTROL.RESET.
#include <catch2/catch.hpp>

#include "hls/engine_harness.hpp"
#include "panama/engine_top.hpp"

using namespace panama;
using namespace panama::test;

namespace {

// Drives the top function like the host and the stream neighbours would.
struct Top {
  hlsc::stream<hlsc::AxisWord> in, out;
  uint32_t seq = 1000;  // any start value: the kernel serves a change of ctrl_seq
  uint32_t ack = 0, rdata = 0;

  void invoke(uint32_t op, uint32_t addr, uint32_t wdata) {
    panama_engine_top(in, out, seq, op, addr, wdata, &ack, &rdata);
  }
  void access(uint32_t op, uint32_t addr, uint32_t wdata) {
    ++seq;
    invoke(op, addr, wdata);
    REQUIRE(ack == seq);
  }
  uint32_t reg_read(uint32_t addr) {
    access(regmap::kMailboxOpRead, addr, 0);
    return rdata;
  }
  void reg_write(uint32_t addr, uint32_t value) { access(regmap::kMailboxOpWrite, addr, value); }
  uint64_t read64(uint32_t addr) {
    const uint32_t lo = reg_read(addr);
    return (uint64_t{reg_read(addr + 4)} << 32) | lo;
  }

  // Queues `frame` as beats: 64 bytes each, tkeep set for the valid bytes,
  // tlast on the final beat.
  void push(const std::vector<uint8_t>& frame, bool mac_error_on_last = false) {
    const size_t beats = (frame.size() + 63) / 64;
    for (size_t b = 0; b < beats; ++b) {
      hlsc::AxisWord w{};
      for (size_t i = 0; i < 64; ++i) {
        const size_t pos = b * 64 + i;
        w.data[i] = pos < frame.size() ? frame[pos] : 0xCD;
        if (pos < frame.size()) w.keep |= uint64_t{1} << i;
      }
      w.last = b + 1 == beats;
      w.user = (mac_error_on_last && w.last) ? 1 : 0;
      in.write(w);
    }
  }
  // Sends one frame through one invocation without a register access.
  void send(const std::vector<uint8_t>& frame) {
    push(frame);
    invoke(0, 0, 0);
    REQUIRE(in.empty());
  }

  // Collects the output frames, checking the beat framing on the way.
  std::vector<std::vector<uint8_t>> drain() {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<uint8_t> cur;
    while (!out.empty()) {
      const hlsc::AxisWord w = out.read();
      uint32_t n = 0;
      while (n < 64 && ((w.keep >> n) & 1)) ++n;
      INFO("output beat " << cur.size() / 64 << " keep 0x" << std::hex << w.keep);
      // Valid bytes are contiguous from lane 0; only the last beat may be partial.
      CHECK(n > 0);
      CHECK((n == 64 ? w.keep == ~uint64_t{0} : w.keep == (uint64_t{1} << n) - 1));
      if (!w.last) CHECK(n == 64);
      cur.insert(cur.end(), w.data, w.data + n);
      if (w.last) {
        frames.push_back(cur);
        cur.clear();
      }
    }
    CHECK(cur.empty());  // no frame left without tlast
    return frames;
  }

  void reset() {
    reg_write(regmap::kControl, regmap::kControlEnable | regmap::kControlReset);
    reg_write(regmap::kUdpPort, 9600);
    drain();
  }
};

Top& top() {
  static Top t;  // one top function instance, like the kernel
  return t;
}

uint32_t gaddr(uint32_t c) {
  return 0x200 + 8 * c;
}

}  // namespace

TEST_CASE("top: identity and parameters through the mailbox", "[engine][top]") {
  Top& t = top();
  t.reset();
  CHECK(t.reg_read(0x000) == 0x504E4D41u);
  CHECK(t.reg_read(0x004) == 0x00010003u);
  CHECK(t.reg_read(0x008) == 64);
  CHECK(t.reg_read(0x00C) == 512);
  CHECK(t.reg_read(0x010) == 2304);
  CHECK(t.reg_read(0x014) == 1);
  CHECK(t.reg_read(0x018) == 9600);
  CHECK(t.reg_read(0x01C) == 0xEu);  // ELEM_TYPES: fp32, bf16, fp16
}

TEST_CASE("top: a register access is served once per ctrl_seq change", "[engine][top]") {
  Top& t = top();
  t.reset();
  std::vector<uint8_t> arp(60, 0x11);
  ref::put16(arp, ref::kEthType, 0x0806);
  t.send(arp);
  CHECK(t.reg_read(gaddr(regmap::kGcFramesIn)) == 1);
  // Further invocations with the same ctrl_seq (and a frame each) do not
  // repeat the read: ack and rdata stay.
  const uint32_t seq = t.seq;
  for (int i = 0; i < 3; ++i) {
    t.push(arp);
    t.invoke(regmap::kMailboxOpRead, gaddr(regmap::kGcFramesIn), 0);
    CHECK(t.ack == seq);
    CHECK(t.rdata == 1);
  }
  CHECK(t.drain().size() == 4);
  CHECK(t.reg_read(gaddr(regmap::kGcFramesIn)) == 4);
  // An invocation with a register access and a frame serves both.
  t.push(arp);
  t.access(regmap::kMailboxOpWrite, regmap::kUdpPort, 4242);
  CHECK(t.in.empty());
  CHECK(t.drain().size() == 1);
  CHECK(t.reg_read(regmap::kUdpPort) == 4242);
  // An unknown op acknowledges without an access.
  t.access(7, regmap::kUdpPort, 1);
  CHECK(t.reg_read(regmap::kUdpPort) == 4242);
  // Invocations with nothing to do leave the output empty.
  t.invoke(0, 0, 0);
  CHECK(t.out.empty());
}

TEST_CASE("top: frames of every beat shape pass through unchanged", "[engine][top]") {
  Top& t = top();
  t.reset();
  Rng rng(test_seed("top pass-through"));
  std::vector<size_t> lengths = {1, 14, 37, 38, 60, 63, 64, 65, 127, 128, 129, 1500, 9152, 9215, 9216};
  for (int i = 0; i < 40; ++i) lengths.push_back(uniform(rng, 1, 9216));
  for (size_t len : lengths) {
    std::vector<uint8_t> f(len);
    for (auto& b : f) b = static_cast<uint8_t>(rng());
    if (len >= 14) ref::put16(f, ref::kEthType, 0x86DD);
    t.send(f);
    const auto out = t.drain();
    INFO("length " << len);
    REQUIRE(out.size() == 1);
    CHECK(out[0] == f);
  }
  CHECK(t.read64(gaddr(regmap::kGcPassthrough)) == lengths.size());
}

TEST_CASE("top: oversize frames are consumed, dropped and counted", "[engine][top]") {
  Top& t = top();
  t.reset();
  for (size_t len : {9217u, 9280u, 9281u, 64u * 300u}) {
    std::vector<uint8_t> f(len, 0x42);
    t.send(f);
    CHECK(t.drain().empty());
  }
  CHECK(t.read64(gaddr(regmap::kGcDropOversize)) == 4);
  CHECK(t.read64(gaddr(regmap::kGcFramesIn)) == 4);
  // The stream is in step afterwards: the next frame passes.
  std::vector<uint8_t> arp(42, 0);
  ref::put16(arp, ref::kEthType, 0x0806);
  t.send(arp);
  const auto out = t.drain();
  REQUIRE(out.size() == 1);
  CHECK(out[0] == arp);
}

TEST_CASE("top: aggregation through beats and the mailbox", "[engine][top]") {
  Top& t = top();
  t.reset();
  Rng rng(test_seed("top aggregation"));
  EntrySpec s = random_addresses(EntrySpec{}, rng);
  s.job = 1234;
  s.tree = 5;
  s.root = false;
  s.fan_in = 3;
  s.child_mask = (uint64_t{1} << 0) | (uint64_t{1} << 31) | (uint64_t{1} << 32);
  s.slot_base = 500;
  s.slot_count = 12;
  REQUIRE(commit_entry(t, 63, s) == regmap::kStatusOk);
  const uint16_t kids[3] = {0, 31, 32};

  uint64_t emitted = 0, ce = 0;
  uint32_t seq = 0;
  for (uint32_t n : {1u, 15u, 16u, 17u, 31u, 32u, 33u, 500u, 2287u, 2288u}) {
    RefSlot r;
    r.seq = seq;
    for (int k = 0; k < 3; ++k) {
      const auto p = random_payload(rng, n);
      const uint8_t ecn = uniform(rng, 0, 4) == 0 ? wire::kEcnCe : wire::kEcnEct0;
      const uint16_t cap = static_cast<uint16_t>(uniform(rng, 1, 40));
      r.add(kids[k], p, ecn, cap);
      ce += ecn == wire::kEcnCe;
      t.send(contribution(s, kids[k], seq, p, ecn, cap));
    }
    const auto out = t.drain();
    INFO("elem_count " << n);
    REQUIRE(out.size() == 1);
    CHECK(out[0] == expected_emission(s, r, false));
    ++emitted;
    // A retransmission re-emits it as a retransmission (non-root entry).
    t.send(contribution(s, 31, seq, random_payload(rng, n), 2, 0xFFFF, 3));
    const auto again = t.drain();
    REQUIRE(again.size() == 1);
    CHECK(again[0] == expected_emission(s, r, true));
    ++seq;
  }
  // A malformed frame is dropped.
  auto bad = contribution(s, 0, seq, {ref::bits(1.0f)});
  bad[ref::kIpChecksum] ^= 0x80;
  t.send(bad);
  CHECK(t.drain().empty());

  CHECK(t.read64(gaddr(regmap::kGcEmitted)) == emitted);
  CHECK(t.read64(gaddr(regmap::kGcRetransServed)) == emitted);
  CHECK(t.read64(gaddr(regmap::kGcAggregated)) == 3 * emitted);
  CHECK(t.read64(gaddr(regmap::kGcEcnMarked)) == ce);
  CHECK(t.read64(gaddr(regmap::kGcDropBadIpHeader)) == 1);
  CHECK(t.read64(0x1000 + 0x80 * 63 + 8 * regmap::kEcEmitted) == emitted);
  CHECK(t.read64(0x1000 + 0x80 * 63 + 8 * regmap::kEcRetransServed) == emitted);
}

TEST_CASE("top: frames queued back to back overlap in the region and leave in order", "[engine][top]") {
  // The region is free-running: a call runs it until it is idle, so frames
  // queued together are in its processes at the same time (one read while
  // the previous ones are decided and accumulated). Contributions to the
  // same slot words right behind each other take the sums still in the
  // slot memory's write queue; a register access queued with them is served
  // in order with them.
  Top& t = top();
  t.reset();
  Rng rng(test_seed("top back to back"));
  EntrySpec s = random_addresses(EntrySpec{}, rng);
  s.root = true;
  s.fan_in = 4;
  s.child_mask = 0xF;
  s.slot_base = 0;
  s.slot_count = 1;  // every sequence number in the same slot, banks alternating
  REQUIRE(commit_entry(t, 7, s) == regmap::kStatusOk);
  std::vector<std::vector<uint8_t>> expected;
  for (uint32_t seq = 0; seq < 6; ++seq) {
    const uint32_t n = seq % 2 == 0 ? 16 : 2288;  // one payload beat, and a full slot
    RefSlot r;
    r.seq = seq;
    for (uint16_t c = 0; c < 4; ++c) {
      const auto p = random_payload(rng, n);
      r.add(c, p, wire::kEcnEct0, 0xFFFF);
      t.push(contribution(s, c, seq, p));
    }
    expected.push_back(expected_emission(s, r, false));
  }
  std::vector<uint8_t> other(100, 0x33);
  ref::put16(other, ref::kEthType, 0x86DD);
  t.push(other);
  t.invoke(0, 0, 0);
  CHECK(t.in.empty());
  auto out = t.drain();
  REQUIRE(out.size() == expected.size() + 1);
  for (size_t i = 0; i < expected.size(); ++i) CHECK(out[i] == expected[i]);
  CHECK(out.back() == other);
  CHECK(t.read64(gaddr(regmap::kGcAggregated)) == 24);
  CHECK(t.read64(gaddr(regmap::kGcEmitted)) == 6);
  CHECK(t.read64(0x1000 + 0x80 * 7 + 8 * regmap::kEcAggregated) == 24);
}

TEST_CASE("top: tuser on the last beat drops the frame whole, also with ENABLE off", "[engine][top]") {
  Top& t = top();
  t.reset();
  Rng rng(test_seed("top mac error"));
  EntrySpec s = random_addresses(EntrySpec{}, rng);
  s.fan_in = 1;
  s.child_mask = 1;
  REQUIRE(commit_entry(t, 0, s) == regmap::kStatusOk);
  const auto payload = random_payload(rng, 40);
  const auto good = contribution(s, 0, 0, payload);  // ECT(0), cwnd_cap 0xFFFF
  std::vector<uint8_t> other(300);
  for (auto& b : other) b = static_cast<uint8_t>(rng());
  ref::put16(other, ref::kEthType, 0x86DD);
  const std::vector<uint8_t>* bad_frames[] = {&good, &other};
  for (const std::vector<uint8_t>* f : bad_frames) {
    t.push(*f, true);
    t.invoke(0, 0, 0);
    CHECK(t.in.empty());
    CHECK(t.drain().empty());
  }
  t.reg_write(regmap::kControl, 0);  // ENABLE off: frames pass, but not bad ones
  t.push(other, true);
  t.invoke(0, 0, 0);
  CHECK(t.drain().empty());
  t.send(other);
  auto out = t.drain();
  REQUIRE(out.size() == 1);
  CHECK(out[0] == other);
  t.reg_write(regmap::kControl, regmap::kControlEnable);
  CHECK(t.read64(gaddr(regmap::kGcDropMacError)) == 3);
  CHECK(t.read64(gaddr(regmap::kGcFramesIn)) == 4);
  CHECK(t.read64(gaddr(regmap::kGcAggregated)) == 0);
  // The slot was never touched: the good frame now aggregates and emits.
  t.send(good);
  out = t.drain();
  REQUIRE(out.size() == 1);
  RefSlot r;
  r.seq = 0;
  r.add(0, payload, wire::kEcnEct0, 0xFFFF);
  CHECK(out[0] == expected_emission(s, r, false));
}

TEST_CASE("top: bf16 and fp16 through the two slot arrays, up to a slot's 2304 elements", "[engine][top]") {
  Top& t = top();
  t.reset();
  Rng rng(test_seed("top 16-bit aggregation"));
  EntrySpec s = random_addresses(EntrySpec{}, rng);
  s.root = true;
  s.fan_in = 2;
  s.child_mask = 0x3;
  s.slot_base = 510;  // the last slots: the arrays' last words
  s.slot_count = 2;
  REQUIRE(commit_entry(t, 0, s) == regmap::kStatusOk);
  uint32_t seq = 0;
  for (uint8_t type : {ref::kBf16, ref::kFp16}) {
    for (uint32_t n : {1u, 16u, 17u, 32u, 33u, 2303u, 2304u}) {
      std::vector<std::vector<uint16_t>> p(2, std::vector<uint16_t>(n));
      std::vector<uint32_t> acc(n);
      for (int c = 0; c < 2; ++c) {
        for (uint32_t i = 0; i < n; ++i) {
          p[c][i] = ref::random_element16(rng, type);
          acc[i] = c == 0 ? ref::widen16(type, p[c][i]) : ref::host_add(acc[i], ref::widen16(type, p[c][i]));
        }
        wire::Header h{};
        h.ecn = wire::kEcnEct0;
        h.ttl = 64;
        h.udp_src = 1;
        h.udp_dst = wire::kDefaultUdpPort;
        h.version = 1;
        h.type = 1;
        h.job_id = s.job;
        h.tree_id = s.tree;
        h.elem_type = type;
        h.child_id = static_cast<uint16_t>(c);
        h.seq = seq;
        h.cwnd_cap = 0xFFFF;
        h.elem_count = static_cast<uint16_t>(n);
        t.send(ref::encode16(h, p[c]));
      }
      const auto out = t.drain();
      INFO("type " << int{type} << " elem_count " << n);
      REQUIRE(out.size() == 1);
      REQUIRE(out[0].size() == 64 + 2 * n);
      uint32_t bad = 0;
      for (uint32_t i = 0; i < n; ++i) {
        const uint16_t got = static_cast<uint16_t>(out[0][64 + 2 * i] | (out[0][65 + 2 * i] << 8));
        bad += got != ref::round16(type, acc[i]);
      }
      CHECK(bad == 0);
      CHECK(out[0][ref::kElemType] == type);
      ++seq;
    }
  }
}
