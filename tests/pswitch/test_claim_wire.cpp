// Tests of the claim frames' wire format (include/panama/claim.hpp,
// docs/hybrid-allreduce.md): every byte of each type against hand-computed
// values, the IPv4 checksum, round trips through parse_frame, each malformed
// case refused under its own class, frames that are not claims left to
// wire::classify_frame, and that an engine without pools drops a claim frame
// as a bad type.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "hls/engine_harness.hpp"
#include "panama/claim.hpp"
#include "panama/wire.hpp"
#include "wire/reference.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::test;
using CC = claim::Class;

namespace {

// Addresses of a worker's frame to its leaf: 02:00:00:00:01:03 ->
// 02:00:00:00:00:fe, 10.0.1.3 -> 10.0.0.254, DSCP 46, not-ECT, TTL 64,
// ports 9600 -> 9600.
wire::Header addresses() {
  wire::Header h{};
  const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0xFE};
  const uint8_t src[6] = {0x02, 0, 0, 0, 1, 0x03};
  std::memcpy(h.eth_dst, dst, 6);
  std::memcpy(h.eth_src, src, 6);
  h.dscp = 46;
  h.ecn = wire::kEcnNotEct;
  h.ttl = 64;
  h.ip_id = 0;
  h.ip_src = 0x0A000103;
  h.ip_dst = 0x0A0000FE;
  h.udp_src = wire::kDefaultUdpPort;
  h.udp_dst = wire::kDefaultUdpPort;
  // PANAMA fields that build_frame must ignore.
  h.version = 9;
  h.type = 1;
  h.elem_type = 1;
  h.cwnd_cap = 77;
  h.elem_count = 12;
  return h;
}

// The 42 bytes before the PANAMA header of every frame built from
// addresses(); IPv4 total length 58 = 0x3A, checksum 0x23FB computed by hand
// (one's-complement sum of 45B8 003A 0000 4000 4011 0A00 0103 0A00 00FE).
const std::vector<uint8_t> kHead = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0xFE, 0x02, 0x00, 0x00, 0x00, 0x01, 0x03, 0x08, 0x00,  // Ethernet
    0x45, 0xB8, 0x00, 0x3A, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x23, 0xFB,              // IPv4 ...
    0x0A, 0x00, 0x01, 0x03, 0x0A, 0x00, 0x00, 0xFE,                                      // ... addresses
    0x25, 0x80, 0x25, 0x80, 0x00, 0x26, 0x00, 0x00};                                     // UDP, length 38

std::vector<uint8_t> built(const claim::Frame& f, const wire::Header& addr = addresses()) {
  std::vector<uint8_t> out(128, 0xA5);
  const uint32_t len = claim::build_frame(out.data(), static_cast<uint32_t>(out.size()), addr, f);
  REQUIRE(len == 72);
  CHECK(out[72] == 0xA5);  // nothing written past the frame
  out.resize(len);
  return out;
}

claim::Frame claim_of(uint32_t group, bool denied_below) {
  claim::Frame f;
  f.type = claim::Type::kClaim;
  f.job_id = 0x0102;
  f.tree_id = 7;
  f.child_id = 3;
  f.seq = group;
  f.denied_below = denied_below;
  return f;
}

claim::Frame result_of(uint32_t group, claim::Answer a, claim::Reason r) {
  claim::Frame f;
  f.type = claim::Type::kClaimResult;
  f.job_id = 0x0102;
  f.tree_id = 7;
  f.child_id = 3;
  f.seq = group;
  f.answer = a;
  f.reason = r;
  return f;
}

claim::Frame release_of(uint32_t count) {
  claim::Frame f;
  f.type = claim::Type::kRelease;
  f.job_id = 0x0102;
  f.tree_id = 7;
  f.child_id = 3;
  f.seq = count;
  return f;
}

CC parse(const std::vector<uint8_t>& v, claim::Frame& f, uint16_t port = wire::kDefaultUdpPort) {
  wire::Header h{};
  return claim::parse_frame(v.data(), static_cast<uint32_t>(v.size()), port, h, f);
}
CC parse(const std::vector<uint8_t>& v) {
  claim::Frame f;
  return parse(v, f);
}

bool same(const claim::Frame& a, const claim::Frame& b) {
  return a.type == b.type && a.job_id == b.job_id && a.tree_id == b.tree_id && a.child_id == b.child_id &&
         a.seq == b.seq && a.denied_below == b.denied_below && a.answer == b.answer && a.reason == b.reason;
}

}  // namespace

TEST_CASE("claim frame constants", "[claim]") {
  CHECK(static_cast<int>(claim::Type::kClaim) == 4);
  CHECK(static_cast<int>(claim::Type::kClaimResult) == 5);
  CHECK(static_cast<int>(claim::Type::kRelease) == 6);
  CHECK(claim::kFrameBytes == 72);
  CHECK(claim::kIpTotalLength == 58);
  CHECK(claim::kUdpLength == 38);
  CHECK(claim::kBodyOffset == 64);
  CHECK(static_cast<int>(claim::Reason::kPoolFull) == 1);
  CHECK(static_cast<int>(claim::Reason::kOverCap) == 2);
  CHECK(static_cast<int>(claim::Reason::kExpired) == 3);
  CHECK(static_cast<int>(claim::Reason::kDeniedBelow) == 4);
  CHECK(static_cast<int>(claim::Reason::kStale) == 5);
  // The claim types are none of the engine's packet types.
  for (uint8_t t = 4; t <= 6; ++t) {
    CHECK(t != static_cast<uint8_t>(wire::PacketType::kAggregateUp));
    CHECK(t != static_cast<uint8_t>(wire::PacketType::kResultDown));
    CHECK(t != static_cast<uint8_t>(wire::PacketType::kRetransmission));
  }
}

TEST_CASE("a claim frame has every byte where the format puts it", "[claim]") {
  const auto v = built(claim_of(0x00010203, true));
  const std::vector<uint8_t> panama = {0x01, 0x04, 0x01, 0x02, 0x07, 0x00, 0x00, 0x03,
                                       0x00, 0x01, 0x02, 0x03, 0x00, 0x00, 0x00, 0x00,  // fields
                                       0,    0,    0,    0,    0,    0,                 // pad
                                       0x01, 0,    0,    0,    0,    0,    0,    0};    // body
  std::vector<uint8_t> expect = kHead;
  expect.insert(expect.end(), panama.begin(), panama.end());
  CHECK(v == expect);
  CHECK(ref::ip_checksum(v.data()) == 0x23FB);
  CHECK(wire::ipv4_header_checksum(v.data() + wire::kIpOffset) == 0);

  const auto not_denied = built(claim_of(0x00010203, false));
  expect[64] = 0;
  CHECK(not_denied == expect);
}

TEST_CASE("a claim-result frame carries the answer and the reason in its body", "[claim]") {
  const auto v = built(result_of(0xFFFFFFFE, claim::Answer::kDenied, claim::Reason::kExpired));
  const std::vector<uint8_t> panama = {0x01, 0x05, 0x01, 0x02, 0x07, 0x00, 0x00, 0x03,
                                       0xFF, 0xFF, 0xFF, 0xFE, 0x00, 0x00, 0x00, 0x00,  // fields
                                       0,    0,    0,    0,    0,    0,                 // pad
                                       0x00, 0x03, 0,    0,    0,    0,    0,    0};    // body
  std::vector<uint8_t> expect = kHead;
  expect.insert(expect.end(), panama.begin(), panama.end());
  CHECK(v == expect);

  const auto g = built(result_of(5, claim::Answer::kGranted, claim::Reason::kNone));
  CHECK(g[43] == 5);
  CHECK(ref::get32(g.data(), ref::kSeq) == 5);
  CHECK(g[64] == 1);
  CHECK(g[65] == 0);
}

TEST_CASE("a release frame carries the released count in seq and a zero body", "[claim]") {
  const auto v = built(release_of(1000));
  const std::vector<uint8_t> panama = {0x01, 0x06, 0x01, 0x02, 0x07, 0x00, 0x00, 0x03,
                                       0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x00, 0x00,  // fields
                                       0,    0,    0,    0,    0,    0,                 // pad
                                       0,    0,    0,    0,    0,    0,    0,    0};    // body
  std::vector<uint8_t> expect = kHead;
  expect.insert(expect.end(), panama.begin(), panama.end());
  CHECK(v == expect);
}

TEST_CASE("the convenience builders equal build_frame", "[claim]") {
  const wire::Header a = addresses();
  std::vector<uint8_t> out(72);
  REQUIRE(claim::build_claim(out.data(), 72, a, 0x0102, 7, 3, 9, true) == 72);
  CHECK(out == built(claim_of(9, true)));
  REQUIRE(claim::build_claim_result(out.data(), 72, a, 0x0102, 7, 3, 9, claim::Answer::kDenied,
                                    claim::Reason::kOverCap) == 72);
  CHECK(out == built(result_of(9, claim::Answer::kDenied, claim::Reason::kOverCap)));
  REQUIRE(claim::build_release(out.data(), 72, a, 0x0102, 7, 3, 12) == 72);
  CHECK(out == built(release_of(12)));
}

TEST_CASE("a release confirmation (flag bit 0) and an ask (bit 1) round-trip; both at once do not",
          "[claim]") {
  const wire::Header a = addresses();
  std::vector<uint8_t> out(72);
  REQUIRE(claim::build_release(out.data(), 72, a, 0x0102, 7, 3, 12, true) == 72);
  std::vector<uint8_t> expect = built(release_of(12));
  expect[64] = 0x01;  // the body's first byte: flags, bit 0
  CHECK(out == expect);
  wire::Header h;
  claim::Frame f;
  REQUIRE(claim::parse_frame(out.data(), 72, wire::kDefaultUdpPort, h, f) == claim::Class::kRelease);
  CHECK(f.confirmation);
  CHECK(f.seq == 12);
  CHECK_FALSE(f.ask);
  REQUIRE(claim::build_release(out.data(), 72, a, 0x0102, 7, 3, 12, false, true) == 72);
  CHECK(out[64] == 0x02);
  REQUIRE(claim::parse_frame(out.data(), 72, wire::kDefaultUdpPort, h, f) == claim::Class::kRelease);
  CHECK_FALSE(f.confirmation);
  CHECK(f.ask);
  REQUIRE(claim::build_release(out.data(), 72, a, 0x0102, 7, 3, 12) == 72);
  REQUIRE(claim::parse_frame(out.data(), 72, wire::kDefaultUdpPort, h, f) == claim::Class::kRelease);
  CHECK_FALSE(f.confirmation);
  CHECK_FALSE(f.ask);
  CHECK(claim::build_release(out.data(), 72, a, 0x0102, 7, 3, 12, true, true) == 0);  // both: not encodable
}

TEST_CASE("build_frame refuses short buffers and answers it cannot encode", "[claim]") {
  const wire::Header a = addresses();
  std::vector<uint8_t> out(72, 0xA5);
  CHECK(claim::build_frame(out.data(), 71, a, claim_of(1, false)) == 0);
  CHECK(out == std::vector<uint8_t>(72, 0xA5));  // nothing written
  CHECK(claim::build_frame(out.data(), 72, a,
                           result_of(1, claim::Answer::kGranted, claim::Reason::kPoolFull)) == 0);
  CHECK(claim::build_frame(out.data(), 72, a, result_of(1, claim::Answer::kDenied, claim::Reason::kNone)) ==
        0);
  CHECK(claim::build_frame(out.data(), 72, a,
                           result_of(1, claim::Answer::kDenied, static_cast<claim::Reason>(6))) == 0);
  claim::Frame bad = claim_of(1, false);
  bad.type = static_cast<claim::Type>(1);
  CHECK(claim::build_frame(out.data(), 72, a, bad) == 0);
}

TEST_CASE("claim frames round-trip through parse_frame", "[claim]") {
  Rng rng(test_seed("claim frames round-trip"));
  for (int i = 0; i < 2000; ++i) {
    wire::Header a{};
    for (int k = 0; k < 6; ++k) {
      a.eth_dst[k] = static_cast<uint8_t>(uniform(rng, 0, 255));
      a.eth_src[k] = static_cast<uint8_t>(uniform(rng, 0, 255));
    }
    a.dscp = static_cast<uint8_t>(uniform(rng, 0, 63));
    a.ecn = static_cast<uint8_t>(uniform(rng, 0, 3));
    a.ttl = static_cast<uint8_t>(uniform(rng, 0, 255));
    a.ip_id = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
    a.ip_src = static_cast<uint32_t>(rng());
    a.ip_dst = static_cast<uint32_t>(rng());
    a.udp_src = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
    a.udp_dst = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
    claim::Frame f;
    f.type = static_cast<claim::Type>(uniform(rng, 4, 6));
    f.job_id = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
    f.tree_id = static_cast<uint8_t>(uniform(rng, 0, 255));
    f.child_id = static_cast<uint16_t>(uniform(rng, 0, 63));
    f.seq = static_cast<uint32_t>(rng());
    if (f.type == claim::Type::kClaim) f.denied_below = uniform(rng, 0, 1) == 1;
    if (f.type == claim::Type::kClaimResult) {
      f.reason = static_cast<claim::Reason>(uniform(rng, 0, 5));
      f.answer = f.reason == claim::Reason::kNone ? claim::Answer::kGranted : claim::Answer::kDenied;
    }
    const auto v = built(f, a);
    CHECK(ref::ip_checksum(v.data()) == ref::get16(v.data(), ref::kIpChecksum));
    claim::Frame back;
    wire::Header h{};
    const CC c = claim::parse_frame(v.data(), 72, a.udp_dst, h, back);
    REQUIRE(c == (f.type == claim::Type::kClaim         ? CC::kClaim
                  : f.type == claim::Type::kClaimResult ? CC::kClaimResult
                                                        : CC::kRelease));
    CHECK(same(back, f));
    CHECK(std::memcmp(h.eth_dst, a.eth_dst, 6) == 0);
    CHECK(std::memcmp(h.eth_src, a.eth_src, 6) == 0);
    CHECK(h.dscp == a.dscp);
    CHECK(h.ecn == a.ecn);
    CHECK(h.ttl == a.ttl);
    CHECK(h.ip_id == a.ip_id);
    CHECK(h.ip_src == a.ip_src);
    CHECK(h.ip_dst == a.ip_dst);
    CHECK(h.udp_src == a.udp_src);
  }
}

TEST_CASE("frames that are not claim frames are left to wire::classify_frame", "[claim]") {
  // A data frame (aggregate-up) and a result-down.
  wire::Header h = addresses();
  h.version = 1;
  h.type = 1;
  h.elem_type = 1;
  h.elem_count = 2;
  const std::vector<uint32_t> p = {1, 2};
  CHECK(parse(ref::encode(h, p)) == CC::kNotClaim);
  h.type = 2;
  CHECK(parse(ref::encode(h, p)) == CC::kNotClaim);
  // Another UDP port, another EtherType, IPv4 with options.
  const auto v = built(claim_of(1, false));
  claim::Frame f;
  CHECK(parse(v, f, 9601) == CC::kNotClaim);
  auto arp = v;
  ref::put16(arp, ref::kEthType, 0x0806);
  CHECK(parse(arp) == CC::kNotClaim);
  auto opts = v;
  opts[ref::kIpVerIhl] = 0x46;
  CHECK(parse(opts) == CC::kNotClaim);
  // Types next to the claim types.
  for (uint8_t t : {0, 3, 7, 255}) {
    auto o = v;
    o[ref::kType] = t;
    CHECK(parse(o) == CC::kNotClaim);
  }
  // Too short to hold the type byte.
  auto tiny = v;
  tiny.resize(ref::kType);
  CHECK(parse(tiny) == CC::kNotClaim);
}

TEST_CASE("each malformed claim frame gets its class", "[claim]") {
  const auto good = built(claim_of(4, false));
  const auto good_result = built(result_of(4, claim::Answer::kDenied, claim::Reason::kPoolFull));

  SECTION("truncated") {
    for (size_t n = ref::kType + 1; n < 72; ++n) {
      auto v = good;
      v.resize(n);
      INFO("length " << n);
      CHECK(parse(v) == CC::kTruncated);
    }
  }
  SECTION("bad IPv4 checksum") {
    auto v = good;
    v[ref::kIpChecksum] ^= 0x01;
    CHECK(parse(v) == CC::kBadIpHeader);
  }
  SECTION("fragment (MF set)") {
    auto v = good;
    ref::put16(v, ref::kIpFlagsFrag, 0x2000);
    ref::fix_ip_checksum(v);
    CHECK(parse(v) == CC::kBadIpHeader);
  }
  SECTION("bad version") {
    auto v = good;
    v[ref::kVersion] = 2;
    CHECK(parse(v) == CC::kBadVersion);
  }
  SECTION("nonzero elem_type") {
    auto v = good;
    v[ref::kElemType] = 1;
    CHECK(parse(v) == CC::kBadElemType);
  }
  SECTION("nonzero elem_count") {
    auto v = good;
    ref::put16(v, ref::kElemCount, 1);
    CHECK(parse(v) == CC::kBadElemCount);
  }
  SECTION("nonzero cwnd_cap") {
    auto v = good;
    ref::put16(v, ref::kCwndCap, 8);
    CHECK(parse(v) == CC::kBadCwndCap);
  }
  SECTION("IPv4 total length not 58") {
    auto v = good;
    ref::put16(v, ref::kIpTotalLen, 62);
    ref::fix_ip_checksum(v);
    CHECK(parse(v) == CC::kBadLength);
  }
  SECTION("UDP length not 38") {
    auto v = good;
    ref::put16(v, ref::kUdpLen, 30);
    CHECK(parse(v) == CC::kBadLength);
  }
  SECTION("longer than 72 bytes") {
    auto v = good;
    v.push_back(0);
    CHECK(parse(v) == CC::kBadLength);
  }
  SECTION("unknown claim flags") {
    for (uint8_t b : {0x02, 0x80, 0x03}) {
      auto v = good;
      v[64] = b;
      CHECK(parse(v) == CC::kBadBody);
    }
  }
  SECTION("nonzero reserved body bytes") {
    for (size_t i = 65; i < 72; ++i) {
      auto v = good;
      v[i] = 1;
      CHECK(parse(v) == CC::kBadBody);
    }
    for (size_t i = 66; i < 72; ++i) {
      auto v = good_result;
      v[i] = 1;
      CHECK(parse(v) == CC::kBadBody);
    }
    auto rel = built(release_of(3));
    for (uint8_t flags : {0x04, 0x80, 0x03}) {  // unknown bits; a confirmation that asks
      rel[64] = flags;
      CHECK(parse(rel) == CC::kBadBody);
    }
    for (uint8_t flags : {0x01, 0x02}) {  // a confirmation, an ask
      rel[64] = flags;
      CHECK(parse(rel) == CC::kRelease);
    }
    for (size_t i = 65; i < 72; ++i) {
      auto v = built(release_of(3));
      v[i] = 1;
      CHECK(parse(v) == CC::kBadBody);
    }
  }
  SECTION("answers and reasons that do not fit") {
    auto v = good_result;
    v[64] = 2;  // neither granted nor denied
    CHECK(parse(v) == CC::kBadBody);
    v = good_result;
    v[65] = 6;  // no such reason
    CHECK(parse(v) == CC::kBadBody);
    v = good_result;
    v[64] = 1;  // granted with a reason
    CHECK(parse(v) == CC::kBadBody);
    v = good_result;
    v[65] = 0;  // denied without one
    CHECK(parse(v) == CC::kBadBody);
  }
  SECTION("padding is ignored") {
    auto v = good;
    v[ref::kPad] = 0xFF;
    v[ref::kPad + 5] = 0x11;
    claim::Frame f;
    CHECK(parse(v, f) == CC::kClaim);
    CHECK(f.seq == 4);
  }
  SECTION("the first rule broken decides") {
    auto v = good;
    v[ref::kVersion] = 2;
    ref::put16(v, ref::kElemCount, 1);
    v[64] = 0xFF;
    CHECK(parse(v) == CC::kBadVersion);
    v[ref::kIpChecksum] ^= 0x01;
    CHECK(parse(v) == CC::kBadIpHeader);
    v.resize(70);
    CHECK(parse(v) == CC::kTruncated);
  }
}

TEST_CASE("the engine's classification sees claim frames as a bad type", "[claim]") {
  for (const auto& f :
       {claim_of(1, false), result_of(1, claim::Answer::kGranted, claim::Reason::kNone), release_of(1)}) {
    const auto v = built(f);
    wire::Header h{};
    CHECK(wire::classify_frame(v.data(), 72, wire::kDefaultUdpPort, h) == wire::FrameClass::kBadType);
  }
}

TEST_CASE("an engine without pools drops claim frames as a bad type and changes nothing", "[claim]") {
  auto eng = std::make_unique<EngineUnderTest<8, 64, 4>>();
  EntrySpec s;  // job 1, tree 0, root, fan-in 2, children 0 and 1
  s.slot_count = 4;
  REQUIRE(commit_entry(*eng, 0, s) == regmap::kStatusOk);
  wire::Header a = addresses();
  a.udp_dst = s.udp_dst;
  for (int type = 4; type <= 6; ++type) {
    claim::Frame f = type == 4   ? claim_of(0, false)
                     : type == 5 ? result_of(0, claim::Answer::kGranted, claim::Reason::kNone)
                                 : release_of(1);
    f.job_id = s.job;
    f.tree_id = s.tree;
    f.child_id = 0;
    const auto frame = built(f, a);
    const Counters before = snapshot(*eng);
    Sink sink;
    send(*eng, frame, sink);
    INFO("type " << type);
    CHECK(sink.frames.empty());
    CHECK(counter_delta(before, snapshot(*eng)) == "frames_in+1 drop_bad_type+1");
  }
}
