// Tests of the wire format (include/panama/wire.hpp) against the layout of
// docs/protocol.md: field offsets and byte order, the IPv4 checksum, the
// encoders' round trip through classify_frame, recognition of non-PANAMA
// frames, every malformed case, and that classification never reads past
// the frame (each truncation is placed right before an inaccessible page).
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "panama/wire.hpp"
#include "wire/reference.hpp"

using namespace panama;
using namespace panama::test;
using FC = wire::FrameClass;

namespace {

// `len` bytes that end exactly at a PROT_NONE page: any read past the end
// faults, with or without a sanitizer.
class GuardedCopy {
 public:
  GuardedCopy(const uint8_t* data, size_t len) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    pages_ = (len + page - 1) / page + 1;
    base_ = static_cast<uint8_t*>(
        mmap(nullptr, pages_ * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base_ != MAP_FAILED);
    guard_ = base_ + (pages_ - 1) * page;
    REQUIRE(mprotect(guard_, page, PROT_NONE) == 0);
    ptr_ = guard_ - len;
    if (len > 0) std::memcpy(ptr_, data, len);
    page_ = page;
  }
  ~GuardedCopy() { munmap(base_, pages_ * page_); }
  GuardedCopy(const GuardedCopy&) = delete;
  GuardedCopy& operator=(const GuardedCopy&) = delete;
  const uint8_t* data() const { return ptr_; }

 private:
  uint8_t* base_ = nullptr;
  uint8_t* guard_ = nullptr;
  uint8_t* ptr_ = nullptr;
  size_t pages_ = 0;
  size_t page_ = 0;
};

FC classify(const std::vector<uint8_t>& f, uint16_t port = wire::kDefaultUdpPort) {
  GuardedCopy g(f.data(), f.size());
  wire::Header h{};
  return wire::classify_frame(g.data(), static_cast<uint32_t>(f.size()), port, h);
}

wire::Header random_header(Rng& rng, uint8_t type) {
  wire::Header h{};
  for (int i = 0; i < 6; ++i) {
    h.eth_dst[i] = static_cast<uint8_t>(uniform(rng, 0, 255));
    h.eth_src[i] = static_cast<uint8_t>(uniform(rng, 0, 255));
  }
  h.dscp = static_cast<uint8_t>(uniform(rng, 0, 63));
  h.ecn = static_cast<uint8_t>(uniform(rng, 0, 3));
  h.ttl = static_cast<uint8_t>(uniform(rng, 0, 255));
  h.ip_id = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  h.ip_src = static_cast<uint32_t>(rng());
  h.ip_dst = static_cast<uint32_t>(rng());
  h.udp_src = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  h.udp_dst = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  h.version = wire::kVersion;
  h.type = type;
  h.job_id = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  h.tree_id = static_cast<uint8_t>(uniform(rng, 0, 255));
  h.elem_type = 1;
  h.child_id = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  h.seq = static_cast<uint32_t>(rng());
  h.cwnd_cap = static_cast<uint16_t>(uniform(rng, 0, 0xFFFF));
  h.elem_count =
      static_cast<uint16_t>(uniform(rng, 0, 9) == 0 ? uniform(rng, 1, ref::kMaxElems) : uniform(rng, 1, 40));
  return h;
}

std::vector<uint32_t> random_payload(Rng& rng, uint32_t n) {
  std::vector<uint32_t> p(n);
  for (auto& v : p) v = static_cast<uint32_t>(rng());
  return p;
}

std::vector<uint8_t> build(const wire::Header& h, const std::vector<uint32_t>& p) {
  std::vector<uint8_t> f(ref::kMaxFrame + 64, 0xA5);
  const uint32_t len = wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, p.data());
  REQUIRE(len == 64u + 4u * h.elem_count);
  f.resize(len);
  return f;
}

// A valid aggregate-up frame for the malformed-frame checks.
std::vector<uint8_t> valid_frame(uint16_t n = 5) {
  wire::Header h{};
  h.ttl = 64;
  h.ecn = wire::kEcnEct0;
  h.ip_src = 0x0A000001;
  h.ip_dst = 0x0A0000FE;
  h.udp_src = 1234;
  h.udp_dst = wire::kDefaultUdpPort;
  h.version = 1;
  h.type = 1;
  h.job_id = 3;
  h.tree_id = 1;
  h.elem_type = 1;
  h.child_id = 2;
  h.seq = 9;
  h.cwnd_cap = 0xFFFF;
  h.elem_count = n;
  std::vector<uint32_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = ref::bits(1.0f + static_cast<float>(i));
  return ref::encode(h, p);
}

bool same_header(const wire::Header& a, const wire::Header& b) {
  return std::memcmp(a.eth_dst, b.eth_dst, 6) == 0 && std::memcmp(a.eth_src, b.eth_src, 6) == 0 &&
         a.dscp == b.dscp && a.ecn == b.ecn && a.ttl == b.ttl && a.ip_id == b.ip_id && a.ip_src == b.ip_src &&
         a.ip_dst == b.ip_dst && a.udp_src == b.udp_src && a.udp_dst == b.udp_dst && a.version == b.version &&
         a.type == b.type && a.job_id == b.job_id && a.tree_id == b.tree_id && a.elem_type == b.elem_type &&
         a.child_id == b.child_id && a.seq == b.seq && a.cwnd_cap == b.cwnd_cap &&
         a.elem_count == b.elem_count;
}

}  // namespace

TEST_CASE("reference checksum matches a published IPv4 header example", "[wire]") {
  // The textbook example header 4500 0073 0000 4000 4011 xxxx c0a8 0001 c0a8 00c7 has checksum 0xb861.
  std::vector<uint8_t> f(64, 0);
  const uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                          0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  std::memcpy(f.data() + 14, ip, 20);
  CHECK(ref::ip_checksum(f.data()) == 0xB861);
  CHECK(wire::ipv4_header_checksum(f.data() + 14) == 0xB861);  // field zero: the value to store
  f[24] = 0xB8;
  f[25] = 0x61;
  CHECK(wire::ipv4_header_checksum(f.data() + 14) == 0);  // field filled: verifies
}

TEST_CASE("layout constants match docs/protocol.md", "[wire]") {
  CHECK(wire::kEthType == ref::kEthType);
  CHECK(wire::kIpTos == ref::kIpTos);
  CHECK(wire::kIpTotalLen == ref::kIpTotalLen);
  CHECK(wire::kIpFlagsFrag == ref::kIpFlagsFrag);
  CHECK(wire::kIpChecksum == ref::kIpChecksum);
  CHECK(wire::kUdpDstPort == ref::kUdpDst);
  CHECK(wire::kUdpLength == ref::kUdpLen);
  CHECK(wire::kPanamaOffset == 42);
  CHECK(wire::kPanamaSeq == ref::kSeq);
  CHECK(wire::kPanamaCwndCap == ref::kCwndCap);
  CHECK(wire::kPanamaElemCount == ref::kElemCount);
  CHECK(wire::kPayloadOffset == ref::kPayload);
  CHECK(wire::kMaxFrameBytes == 9216);
  CHECK(wire::kMaxElemsPerFrame == 2288);
  CHECK(wire::kMinPanamaFrameBytes == 68);
  CHECK(wire::kDefaultUdpPort == 9600);
  CHECK(wire::frame_length(2288) == 9216);
  CHECK(wire::ip_total_length(1) == 54);
  CHECK(wire::udp_length(1) == 34);
}

TEST_CASE("every header field lands at its documented offset in network byte order", "[wire]") {
  wire::Header h{};
  const uint8_t dst[6] = {0x11, 0x12, 0x13, 0x14, 0x15, 0x16};
  const uint8_t src[6] = {0x21, 0x22, 0x23, 0x24, 0x25, 0x26};
  std::memcpy(h.eth_dst, dst, 6);
  std::memcpy(h.eth_src, src, 6);
  h.dscp = 0x2E;
  h.ecn = wire::kEcnCe;
  h.ttl = 0x3C;
  h.ip_id = 0xBEEF;
  h.ip_src = 0xC0A80102;
  h.ip_dst = 0xE0000005;
  h.udp_src = 0x1234;
  h.udp_dst = 0x2580;
  h.version = 1;
  h.type = 3;
  h.job_id = 0xABCD;
  h.tree_id = 0x7E;
  h.elem_type = 1;
  h.child_id = 0x0102;
  h.seq = 0xDEADBEEF;
  h.cwnd_cap = 0x8001;
  h.elem_count = 3;
  const std::vector<uint32_t> p = {0x3F800000u, 0x80000001u, 0x12345678u};
  const auto f = build(h, p);

  const std::vector<uint8_t> expect_head = {
      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x08, 0x00,  // Ethernet
      0x45, 0xBB, 0x00, 0x3E, 0xBE, 0xEF, 0x40, 0x00, 0x3C, 0x11, 0x00, 0x00,              // IPv4 ...
      0xC0, 0xA8, 0x01, 0x02, 0xE0, 0x00, 0x00, 0x05,                                      // ... addresses
      0x12, 0x34, 0x25, 0x80, 0x00, 0x2A, 0x00, 0x00,                                      // UDP
      0x01, 0x03, 0xAB, 0xCD, 0x7E, 0x01, 0x01, 0x02, 0xDE, 0xAD, 0xBE, 0xEF,              // PANAMA ...
      0x80, 0x01, 0x00, 0x03, 0,    0,    0,    0,    0,    0,                             // ... + pad
      0x00, 0x00, 0x80, 0x3F, 0x01, 0x00, 0x00, 0x80, 0x78, 0x56, 0x34, 0x12};             // payload LE
  REQUIRE(f.size() == expect_head.size());
  // TOS 0xBB = DSCP 0x2E << 2 | CE; total length 62 = 20 + 8 + 22 + 12; UDP length 42.
  for (size_t i = 0; i < f.size(); ++i) {
    if (i == 24 || i == 25) continue;  // checksum, checked below
    INFO("byte " << i);
    CHECK(f[i] == expect_head[i]);
  }
  CHECK(ref::get16(f.data(), 24) == ref::ip_checksum(f.data()));
  CHECK(f == ref::encode(h, p));
}

TEST_CASE("build_frame equals the reference encoding and round-trips through classify_frame", "[wire]") {
  Rng rng(test_seed("wire round trip"));
  for (int iter = 0; iter < 3000; ++iter) {
    const uint8_t type = static_cast<uint8_t>(uniform(rng, 1, 3));
    wire::Header h = random_header(rng, type);
    const auto p = random_payload(rng, h.elem_count);
    const auto f = build(h, p);
    INFO("iteration " << iter << " elem_count " << h.elem_count);
    REQUIRE(f == ref::encode(h, p));

    // write_headers alone writes the same 64 bytes and leaves the payload alone.
    std::vector<uint8_t> w(f.size(), 0x5A);
    wire::write_headers(w.data(), h);
    CHECK(std::equal(w.begin(), w.begin() + 64, f.begin()));
    CHECK(std::all_of(w.begin() + 64, w.end(), [](uint8_t b) { return b == 0x5A; }));

    // Independent checksum verification: the stored field is what RFC 1071 asks for.
    CHECK(ref::get16(f.data(), ref::kIpChecksum) == ref::ip_checksum(f.data()));

    wire::Header d{};
    GuardedCopy g(f.data(), f.size());
    const FC c = wire::classify_frame(g.data(), static_cast<uint32_t>(f.size()), h.udp_dst, d);
    REQUIRE(c == (type == 2 ? FC::kResultDown : FC::kOk));
    CHECK(same_header(d, h));
    if (h.udp_dst != wire::kDefaultUdpPort) CHECK(classify(f) == FC::kNotPanama);
  }
}

TEST_CASE("build_frame refuses zero, oversized element counts and short buffers", "[wire]") {
  wire::Header h{};
  h.version = 1;
  h.type = 1;
  h.elem_type = 1;
  std::vector<uint32_t> p(3000, 0);
  std::vector<uint8_t> f(10000, 0x77);
  h.elem_count = 0;
  CHECK(wire::build_frame(f.data(), 10000, h, p.data()) == 0);
  h.elem_count = 2289;
  CHECK(wire::build_frame(f.data(), 10000, h, p.data()) == 0);
  h.elem_count = 2288;
  CHECK(wire::build_frame(f.data(), 9215, h, p.data()) == 0);
  CHECK(std::all_of(f.begin(), f.end(), [](uint8_t b) { return b == 0x77; }));  // nothing written
  CHECK(wire::build_frame(f.data(), 9216, h, p.data()) == 9216);
  h.elem_count = 1;
  CHECK(wire::build_frame(f.data(), 67, h, p.data()) == 0);
  CHECK(wire::build_frame(f.data(), 68, h, p.data()) == 68);
}

TEST_CASE("build_frame16 equals the reference encoding of bf16 and fp16 frames and round-trips", "[wire]") {
  Rng rng(test_seed("wire 16-bit round trip"));
  for (int iter = 0; iter < 2000; ++iter) {
    wire::Header h = random_header(rng, static_cast<uint8_t>(uniform(rng, 1, 3)));
    h.elem_type = static_cast<uint8_t>(uniform(rng, 2, 3));
    h.elem_count = static_cast<uint16_t>(uniform(rng, 1, 4576));
    std::vector<uint16_t> p(h.elem_count);
    for (auto& v : p) v = static_cast<uint16_t>(rng());
    std::vector<uint8_t> f(wire::frame_length(h.elem_count, h.elem_type));
    INFO("iteration " << iter << " elem_count " << h.elem_count);
    REQUIRE(f.size() == 64 + 2u * h.elem_count);
    REQUIRE(wire::build_frame16(f.data(), static_cast<uint32_t>(f.size()), h, p.data()) == f.size());
    REQUIRE(f == ref::encode16(h, p));
    wire::Header d{};
    GuardedCopy g(f.data(), f.size());
    const FC c = wire::classify_frame(g.data(), static_cast<uint32_t>(f.size()), h.udp_dst, d);
    REQUIRE(c == (h.type == 2 ? FC::kResultDown : FC::kOk));
    CHECK(same_header(d, h));
  }
  // Limits: (9216 - 64) / 2 = 4576 elements; not an fp32 type; short buffers.
  wire::Header h{};
  h.version = 1;
  h.type = 1;
  h.elem_type = 2;
  std::vector<uint16_t> p(5000, 0);
  std::vector<uint8_t> f(10000, 0x77);
  h.elem_count = 4577;
  CHECK(wire::build_frame16(f.data(), 10000, h, p.data()) == 0);
  h.elem_count = 4576;
  CHECK(wire::build_frame16(f.data(), 9215, h, p.data()) == 0);
  CHECK(wire::build_frame16(f.data(), 9216, h, p.data()) == 9216);
  h.elem_type = 1;
  CHECK(wire::build_frame16(f.data(), 10000, h, p.data()) == 0);
  h.elem_type = 3;
  h.elem_count = 1;
  CHECK(wire::build_frame16(f.data(), 65, h, p.data()) == 0);
  CHECK(wire::build_frame16(f.data(), 66, h, p.data()) == 66);
  std::vector<uint32_t> p32(4, 0);
  CHECK(wire::build_frame(f.data(), 10000, h, p32.data()) == 0);  // build_frame is fp32's
}

TEST_CASE("every truncation of a valid frame is classified without reading past its end", "[wire]") {
  for (uint16_t n : {1, 7, 16, 17, 2288}) {
    const auto full = valid_frame(n);
    for (size_t len = 0; len <= full.size(); ++len) {
      std::vector<uint8_t> t(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
      FC expect;
      if (len < 38) {
        expect = FC::kNotPanama;  // the UDP destination port is not even there
      } else if (len < full.size()) {
        expect = FC::kTruncated;
      } else {
        expect = FC::kOk;
      }
      INFO("elem_count " << n << " len " << len);
      REQUIRE(classify(t) == expect);
    }
  }
  // Bytes after the payload: longer than elem_count needs, a bad length
  // (docs/protocol.md section 4), one byte or many, also zeros.
  for (size_t extra : {1, 3, 4, 30, 64}) {
    auto longer = valid_frame(1);
    longer.resize(longer.size() + extra, 0xCC);
    INFO("extra bytes " << extra);
    CHECK(classify(longer) == FC::kBadLength);
  }
  auto zeros = valid_frame(17);
  zeros.resize(zeros.size() + 4, 0);
  CHECK(classify(zeros) == FC::kBadLength);
  // A truncated frame is still truncated, a result-down frame passes whatever
  // follows it.
  auto cut = valid_frame(17);
  cut.resize(cut.size() - 4);
  CHECK(classify(cut) == FC::kTruncated);
}

TEST_CASE("frames that are not PANAMA are recognised as such", "[wire]") {
  const auto base = valid_frame(4);
  REQUIRE(classify(base) == FC::kOk);

  auto other_ethertype = [&](uint16_t et) {
    auto f = base;
    ref::put16(f, ref::kEthType, et);
    return f;
  };
  CHECK(classify(other_ethertype(0x0806)) == FC::kNotPanama);  // ARP
  CHECK(classify(other_ethertype(0x86DD)) == FC::kNotPanama);  // IPv6
  CHECK(classify(other_ethertype(0x8100)) == FC::kNotPanama);  // VLAN tag
  CHECK(classify(other_ethertype(0x0008)) == FC::kNotPanama);  // byte-swapped IPv4

  auto f = base;
  f[ref::kIpVerIhl] = 0x46;  // one word of options
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kNotPanama);
  f = base;
  f[ref::kIpVerIhl] = 0x65;  // not version 4
  CHECK(classify(f) == FC::kNotPanama);

  f = base;
  f[ref::kIpProto] = 6;  // TCP
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kNotPanama);

  f = base;
  ref::put16(f, ref::kUdpDst, 9601);
  CHECK(classify(f) == FC::kNotPanama);
  CHECK(classify(f, 9601) == FC::kOk);  // the port is the engine's configuration
  CHECK(classify(base, 1234) == FC::kNotPanama);

  for (uint16_t frag : {0x0001, 0x0010, 0x1FFF, 0x2001, 0x4008}) {
    f = base;
    ref::put16(f, ref::kIpFlagsFrag, frag);  // non-first fragment: no UDP header inside
    ref::fix_ip_checksum(f);
    INFO("flags/fragment 0x" << std::hex << frag);
    CHECK(classify(f) == FC::kNotPanama);
  }

  for (size_t len : {0, 1, 13, 14, 33, 37}) {  // tiny frames
    std::vector<uint8_t> t(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(len));
    CHECK(classify(t) == FC::kNotPanama);
  }
}

TEST_CASE("each malformed PANAMA frame gets its FrameClass", "[wire]") {
  const auto base = valid_frame(5);
  auto f = base;

  f[ref::kIpChecksum] ^= 0x01;
  CHECK(classify(f) == FC::kBadIpHeader);

  f = base;
  ref::put16(f, ref::kIpFlagsFrag, 0x2000);  // MF on a first fragment
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kBadIpHeader);
  f = base;
  ref::put16(f, ref::kIpFlagsFrag, 0x0000);  // DF clear is fine
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kOk);

  for (uint8_t v : {0, 2, 0x81, 0xFF}) {
    f = base;
    f[ref::kVersion] = v;
    CHECK(classify(f) == FC::kBadVersion);
  }
  for (uint8_t t : {0, 4, 0x81, 0xFF}) {
    f = base;
    f[ref::kType] = t;
    CHECK(classify(f) == FC::kBadType);
  }
  for (uint8_t t : {0, 4, 0xFF}) {
    f = base;
    f[ref::kElemType] = t;
    CHECK(classify(f) == FC::kBadElemType);
  }
  // bf16 and fp16 are types: an fp32-sized frame relabelled is a bad length
  // for an engine that sums them, a bad element type for one that does not.
  for (uint8_t t : {2, 3}) {
    f = base;
    f[ref::kElemType] = t;
    CHECK(classify(f) == FC::kBadLength);
    wire::Header h{};
    CHECK(wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), wire::kDefaultUdpPort, h,
                               wire::kElemTypeMaskFloat32) == FC::kBadElemType);
  }

  f = base;
  ref::put16(f, ref::kElemCount, 0);
  CHECK(classify(f) == FC::kBadElemCount);
  ref::put16(f, ref::kIpTotalLen, 50);  // lengths consistent with zero elements: still bad
  ref::put16(f, ref::kUdpLen, 30);
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kBadElemCount);

  f = base;
  ref::put16(f, ref::kIpTotalLen, 20 + 8 + 22 + 4 * 5 + 4);
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kBadLength);
  f = base;
  ref::put16(f, ref::kIpTotalLen, 20 + 8 + 22 + 4 * 5 - 1);
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kBadLength);
  f = base;
  ref::put16(f, ref::kUdpLen, 8 + 22 + 4 * 5 + 4);
  CHECK(classify(f) == FC::kBadLength);
  f = base;
  ref::put16(f, ref::kUdpLen, 8 + 22 + 4 * 4);
  CHECK(classify(f) == FC::kBadLength);

  // Header claims more elements (with consistent lengths) than the frame holds.
  f = base;
  ref::put16(f, ref::kElemCount, 6);
  ref::put16(f, ref::kIpTotalLen, 20 + 8 + 22 + 4 * 6);
  ref::put16(f, ref::kUdpLen, 8 + 22 + 4 * 6);
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kTruncated);

  // Padding bytes are ignored when received; the UDP checksum is ignored too.
  f = base;
  for (size_t i = 0; i < 6; ++i) f[ref::kPad + i] = 0xFF;
  ref::put16(f, ref::kUdpChecksum, 0x1234);
  CHECK(classify(f) == FC::kOk);

  // A result-down frame is recognised as such.
  f = base;
  f[ref::kType] = 2;
  CHECK(classify(f) == FC::kResultDown);
}

TEST_CASE("a frame with several faults is classified by the first rule of docs/protocol.md section 4",
          "[wire]") {
  const auto base = valid_frame(5);
  auto f = base;
  // bad checksum (3) + bad version (4) -> bad IP header
  f[ref::kVersion] = 9;
  f[ref::kIpChecksum] ^= 0x10;
  CHECK(classify(f) == FC::kBadIpHeader);
  ref::fix_ip_checksum(f);
  CHECK(classify(f) == FC::kBadVersion);
  // bad version (4) + bad type (5) -> bad version
  f[ref::kType] = 9;
  CHECK(classify(f) == FC::kBadVersion);
  // bad type (5) + bad elem type (7) -> bad type
  f = base;
  f[ref::kType] = 0;
  f[ref::kElemType] = 0;
  CHECK(classify(f) == FC::kBadType);
  // result-down (6) is decided before the element type (7) and count (8)
  f = base;
  f[ref::kType] = 2;
  f[ref::kElemType] = 0;
  ref::put16(f, ref::kElemCount, 0);
  CHECK(classify(f) == FC::kResultDown);
  // bad elem type (7) + zero count (8) -> bad elem type
  f = base;
  f[ref::kElemType] = 5;
  ref::put16(f, ref::kElemCount, 0);
  CHECK(classify(f) == FC::kBadElemType);
  // inconsistent length (9) on a frame that is also too short for its count (10) -> bad length
  f = base;
  ref::put16(f, ref::kElemCount, 100);
  CHECK(classify(f) == FC::kBadLength);
  // shorter than 64 bytes (2) beats a bad checksum (3)
  f = base;
  f[ref::kIpChecksum] ^= 0xFF;
  f.resize(63);
  CHECK(classify(f) == FC::kTruncated);
}
