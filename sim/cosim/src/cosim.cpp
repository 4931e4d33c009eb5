// Co-simulation scenarios and summaries (cosim.hpp); the
// comparison itself is in compare.cpp.
#include "panama/cosim/cosim.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "panama/regmap.hpp"
#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

namespace panama::cosim {

namespace {

using namespace panama::regmap;

constexpr uint32_t kEntries = RtlEngine::kTableEntries;
constexpr uint32_t kSlots = RtlEngine::kPacketSlots;
constexpr uint32_t kSlotCapacity = RtlEngine::kSlotWords * wire::kLanes;

struct EntrySpec {
  uint16_t job = 0;
  uint8_t tree = 0;
  bool root = false;
  uint32_t fan_in = 1;
  std::vector<uint16_t> children;
  uint32_t slot_base = 0;
  uint32_t slot_count = 1;
  uint32_t lo = 0;  // lowest sequence number the workers still send
};

void push_entry(std::vector<RegWrite>& w, uint32_t index, const EntrySpec& e, bool enabled,
                std::mt19937_64& rng, uint64_t mask_override = 0) {
  TableEntry t;
  for (uint16_t c : e.children) t.child_mask |= uint64_t{1} << c;
  if (mask_override) t.child_mask = mask_override;
  t.job = e.job;
  t.tree = e.tree;
  t.enable = enabled;
  t.root = e.root;
  t.fan_in = e.fan_in;
  t.slot_base = e.slot_base;
  t.slot_count = e.slot_count;
  t.out_child_id = static_cast<uint16_t>(rng());
  const uint32_t dst_lo = static_cast<uint32_t>(rng()), dst_hi = static_cast<uint32_t>(rng());
  const uint32_t src_lo = static_cast<uint32_t>(rng()), src_hi = static_cast<uint32_t>(rng());
  t.eth_dst = detail::mac_from(dst_hi, dst_lo);
  t.eth_src = detail::mac_from(src_hi, src_lo);
  t.ip_src = static_cast<uint32_t>(rng());
  t.ip_dst = static_cast<uint32_t>(rng());
  const uint32_t ports = static_cast<uint32_t>(rng());
  t.udp_src = static_cast<uint16_t>(ports);
  t.udp_dst = static_cast<uint16_t>(ports >> 16);
  const uint32_t ttl_dscp = static_cast<uint32_t>(rng());
  t.ttl = static_cast<uint8_t>(ttl_dscp);
  t.dscp = static_cast<uint8_t>((ttl_dscp >> 8) & 0x3F);
  entry_commit_writes(index, t, [&w](uint32_t a, uint32_t v) { w.push_back({a, v}); });
}

uint32_t random_float_bits(std::mt19937_64& rng) {
  const uint32_t r = static_cast<uint32_t>(rng());
  switch (rng() % 16) {
    case 0:
      return r & 0x807FFFFFu;  // subnormal or zero
    case 1:
      return (r & 0x80000000u) | 0x7F800000u;  // infinity
    case 2:
      return 0x7F800000u | (r & 0x807FFFFFu) | 1u;  // NaN with payload
    case 3:
      return (r & 0x80000000u);  // signed zero
    case 4:
      return (r & 0x80000000u) | 0x7F7FFF00u | (r & 0xFFu);  // near the largest finite
    default: {
      // Moderate magnitudes: sums stay finite and round in every way.
      const uint32_t exp = 100 + static_cast<uint32_t>(rng() % 50);
      return (r & 0x807FFFFFu) | (exp << 23);
    }
  }
}

// A bf16 or fp16 element: every class the widening and the rounding at
// emission treat apart (zeros, subnormals, infinities, NaNs, values near the
// largest finite one, whose sums overflow to infinity when rounded), and
// moderate magnitudes whose fp32 sums round in every way.
uint16_t random_half_bits(uint8_t elem_type, std::mt19937_64& rng) {
  const uint16_t r = static_cast<uint16_t>(rng());
  if (elem_type == static_cast<uint8_t>(wire::ElemType::kBfloat16)) {
    return static_cast<uint16_t>(random_float_bits(rng) >> 16);
  }
  switch (rng() % 16) {
    case 0:
      return r & 0x83FFu;  // subnormal or zero
    case 1:
      return (r & 0x8000u) | 0x7C00u;  // infinity
    case 2:
      return 0x7C00u | (r & 0x83FFu) | 1u;  // NaN with payload
    case 3:
      return r & 0x8000u;  // signed zero
    case 4:
      return (r & 0x8000u) | 0x7BC0u | (r & 0x3Fu);  // near the largest finite
    case 5:
      return (r & 0x83FFu) | static_cast<uint16_t>((1 + rng() % 3) << 10);  // small normals
    default: {
      const uint32_t exp = 5 + static_cast<uint32_t>(rng() % 20);
      return static_cast<uint16_t>((r & 0x83FFu) | (exp << 10));
    }
  }
}

// A frame of h.elem_count random elements of h.elem_type (fp32, bf16 or fp16).
Frame make_frame(const wire::Header& h, std::mt19937_64& rng) {
  if (wire::elem_bytes(h.elem_type) == 2) {
    std::vector<uint16_t> payload(h.elem_count);
    for (auto& p : payload) p = random_half_bits(h.elem_type, rng);
    Frame f(wire::frame_length(h.elem_count, h.elem_type));
    const uint32_t n = wire::build_frame16(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
    f.resize(n);
    return f;
  }
  std::vector<uint32_t> payload(h.elem_count);
  for (auto& p : payload) p = random_float_bits(rng);
  Frame f(wire::frame_length(h.elem_count));
  const uint32_t n = wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
  f.resize(n);
  return f;
}

wire::Header base_header(uint16_t job, uint8_t tree, uint16_t child, uint32_t seq, uint16_t elems,
                         uint16_t port, std::mt19937_64& rng) {
  wire::Header h{};
  for (int i = 0; i < 6; ++i) {
    h.eth_dst[i] = static_cast<uint8_t>(rng());
    h.eth_src[i] = static_cast<uint8_t>(rng());
  }
  h.dscp = static_cast<uint8_t>(rng() & 0x3F);
  const uint32_t e = rng() % 8;
  h.ecn = e == 0 ? wire::kEcnCe : (e == 1 ? wire::kEcnNotEct : (e == 2 ? wire::kEcnEct1 : wire::kEcnEct0));
  h.ttl = static_cast<uint8_t>(rng());
  h.ip_id = static_cast<uint16_t>(rng());
  h.ip_src = static_cast<uint32_t>(rng());
  h.ip_dst = static_cast<uint32_t>(rng());
  h.udp_src = static_cast<uint16_t>(rng());
  h.udp_dst = port;
  h.version = wire::kVersion;
  h.type = static_cast<uint8_t>(wire::PacketType::kAggregateUp);
  h.job_id = job;
  h.tree_id = tree;
  h.elem_type = static_cast<uint8_t>(wire::ElemType::kFloat32);
  h.child_id = child;
  h.seq = seq;
  h.cwnd_cap = static_cast<uint16_t>(rng() % 4 == 0 ? 0xFFFF : rng() % 40);
  h.elem_count = elems;
  return h;
}

void fix_ip_checksum(Frame& f) {
  if (f.size() < wire::kIpOffset + wire::kIpHeaderBytes) return;
  wire::store_be16(f.data() + wire::kIpChecksum, 0);
  wire::store_be16(f.data() + wire::kIpChecksum, wire::ipv4_header_checksum(f.data() + wire::kIpOffset));
}

// One of the ways a PANAMA frame can be broken (wire.hpp FrameClass).
void corrupt(Frame& f, std::mt19937_64& rng) {
  switch (rng() % 11) {
    case 0:  // truncated: anywhere from inside the headers to one byte short
      f.resize(38 + rng() % (f.size() - 38));
      break;
    case 1:
      f[wire::kIpChecksum] ^= static_cast<uint8_t>(1 + rng() % 255);
      break;
    case 2:
      f[wire::kIpFlagsFrag] |= 0x20;  // more fragments
      fix_ip_checksum(f);
      break;
    case 3:
      f[wire::kPanamaVersion] = static_cast<uint8_t>(2 + rng() % 200);
      break;
    case 4:
      f[wire::kPanamaType] = static_cast<uint8_t>(rng() % 2 ? 0 : 4 + rng() % 250);
      break;
    case 5:  // no element type
      f[wire::kPanamaElemType] = static_cast<uint8_t>(rng() % 2 ? 0 : 4 + rng() % 200);
      break;
    case 6:
      wire::store_be16(f.data() + wire::kPanamaElemCount, 0);
      break;
    case 7:
      wire::store_be16(f.data() + wire::kIpTotalLen,
                       static_cast<uint16_t>(wire::load_be16(f.data() + wire::kIpTotalLen) + 4));
      fix_ip_checksum(f);
      break;
    case 8:
      wire::store_be16(f.data() + wire::kUdpLength,
                       static_cast<uint16_t>(wire::load_be16(f.data() + wire::kUdpLength) - 4));
      break;
    case 9:
      f.resize(wire::kMaxFrameBytes + 1 + rng() % 300, 0xA5);
      break;  // oversize
    default:
      wire::store_be16(f.data() + wire::kIpFlagsFrag, static_cast<uint16_t>(0x0001 + rng() % 0x1000));
      fix_ip_checksum(f);  // a non-first fragment: not PANAMA, passes
      break;
  }
}

Frame foreign_frame(std::mt19937_64& rng, uint16_t port) {
  switch (rng() % 5) {
    case 0: {  // random bytes
      Frame f(1 + rng() % 300);
      for (auto& b : f) b = static_cast<uint8_t>(rng());
      return f;
    }
    case 1: {  // IPv4 TCP
      wire::Header h = base_header(1, 0, 0, 0, static_cast<uint16_t>(1 + rng() % 20), port, rng);
      Frame f = make_frame(h, rng);
      f[wire::kIpProto] = 6;
      fix_ip_checksum(f);
      return f;
    }
    case 2: {  // UDP to another port
      wire::Header h = base_header(1, 0, 0, 0, static_cast<uint16_t>(1 + rng() % 20),
                                   static_cast<uint16_t>(port + 1 + rng() % 100), rng);
      return make_frame(h, rng);
    }
    case 3: {  // a result on its way down
      wire::Header h =
          base_header(static_cast<uint16_t>(rng()), static_cast<uint8_t>(rng() % 4), 0,
                      static_cast<uint32_t>(rng() % 100), static_cast<uint16_t>(1 + rng() % 40), port, rng);
      h.type = static_cast<uint8_t>(wire::PacketType::kResultDown);
      return make_frame(h, rng);
    }
    default: {  // another ethertype
      Frame f(60 + rng() % 100);
      for (auto& b : f) b = static_cast<uint8_t>(rng());
      f[12] = 0x86;
      f[13] = 0xDD;
      return f;
    }
  }
}

// Element type every child uses for (entry, seq), so contributions agree:
// fp32 about 40%, bf16 and fp16 about 30% each; sequences of one entry mix
// types, so slot banks of every type follow each other in one slot.
uint8_t type_for(uint32_t entry, uint32_t seq, uint64_t seed) {
  uint64_t h =
      (seed ^ (uint64_t{entry} << 36) ^ (uint64_t{seq} << 3) ^ 0x54595045ull) * 0xD6E8FEB86659FD93ull;
  h ^= h >> 31;
  const uint32_t r = static_cast<uint32_t>(h % 10);
  return static_cast<uint8_t>(r < 4 ? wire::ElemType::kFloat32
                                    : (r < 7 ? wire::ElemType::kBfloat16 : wire::ElemType::kFloat16));
}

// Element count every child uses for (entry, seq), so contributions agree.
uint16_t elems_for(uint32_t entry, uint32_t seq, uint32_t max_elems, uint64_t seed) {
  uint64_t h = (seed ^ (uint64_t{entry} << 40) ^ seq) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  if (h % 29 == 0) return static_cast<uint16_t>(1 + (h >> 8) % std::min<uint32_t>(kSlotCapacity, 2288));
  return static_cast<uint16_t>(1 + (h >> 8) % max_elems);
}

}  // namespace

size_t Scenario::frame_count() const {
  size_t n = 0;
  for (const auto& s : segments) n += s.size();
  return n;
}

std::vector<Frame> all_frames(const Scenario& sc) {
  std::vector<Frame> out;
  for (const auto& s : sc.segments) out.insert(out.end(), s.begin(), s.end());
  return out;
}

Scenario random_scenario(uint64_t seed, const TrafficOptions& opt) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Scenario sc;
  sc.seed = seed;
  sc.setup.push_back({kControl, kControlReset | kControlEnable});
  uint16_t port = wire::kDefaultUdpPort;
  if (rng() % 4 == 0) {
    port = static_cast<uint16_t>(10000 + rng() % 1000);
    sc.setup.push_back({kUdpPort, port});
  }

  // Table: a few entries over disjoint slot ranges, small shares so that
  // generations turn over quickly. Keys are drawn from 6 jobs x 3 trees, so
  // at most 18 entries (a larger table would wait forever for a new key).
  constexpr uint32_t kDistinctKeys = 6 * 3;
  const uint32_t n_entries =
      2 + static_cast<uint32_t>(rng() % (std::min<uint32_t>(kEntries, kDistinctKeys) - 1));
  std::vector<EntrySpec> entries;
  std::set<uint32_t> keys;
  uint32_t next_slot = 0;
  for (uint32_t i = 0; i < n_entries && next_slot < kSlots; ++i) {
    EntrySpec e;
    do {
      e.job = static_cast<uint16_t>(rng() % 6);
      e.tree = static_cast<uint8_t>(rng() % 3);
    } while (keys.count(e.job | (uint32_t{e.tree} << 16)));
    keys.insert(e.job | (uint32_t{e.tree} << 16));
    e.root = rng() % 2;
    const uint32_t n_children = 1 + static_cast<uint32_t>(rng() % 6);
    std::set<uint16_t> ch;
    while (ch.size() < n_children) ch.insert(static_cast<uint16_t>(rng() % 64));
    e.children.assign(ch.begin(), ch.end());
    e.fan_in = 1 + static_cast<uint32_t>(rng() % n_children);
    e.slot_base = next_slot + static_cast<uint32_t>(rng() % 2);
    e.slot_count = 1 + static_cast<uint32_t>(rng() % 6);
    if (e.slot_base + e.slot_count > kSlots) break;
    next_slot = e.slot_base + e.slot_count;
    push_entry(sc.setup, i, e, true, rng);
    entries.push_back(e);
  }
  // Commands that must fail, each with its own status code.
  {
    EntrySpec bad = entries[0];
    push_entry(sc.setup, kEntries - 1, bad, true, rng);  // duplicate key or overlap
    bad.fan_in = 0;
    push_entry(sc.setup, kEntries - 1, bad, true, rng);  // bad fan-in
    bad = entries[0];
    bad.slot_base = kSlots - 1;
    bad.slot_count = 2;
    push_entry(sc.setup, kEntries - 1, bad, true, rng);  // slot range
    sc.setup.push_back({kEntryIndex, kEntries});
    sc.setup.push_back({kEntryCmd, kCmdCommit});  // bad index
    sc.setup.push_back({kEntryCmd, 9});           // bad command
    sc.setup.push_back({kEntryIndex, 0});
    sc.setup.push_back({kEntryCmd, kCmdLoad});
  }

  const uint32_t n_segments = opt.register_changes ? 1 + static_cast<uint32_t>(rng() % 3) : 1;
  sc.segments.resize(n_segments);
  sc.between.resize(n_segments);
  std::vector<Frame> recent;
  for (uint32_t f = 0; f < opt.frames; ++f) {
    const uint32_t seg = static_cast<uint32_t>(uint64_t{f} * n_segments / opt.frames);
    Frame fr;
    const double r = unit(rng);
    if (r < opt.foreign) {
      fr = foreign_frame(rng, port);
    } else if (r < opt.foreign + opt.duplicate && !recent.empty()) {
      fr = recent[rng() % recent.size()];
    } else {
      const uint32_t ei = static_cast<uint32_t>(rng() % entries.size());
      EntrySpec& e = entries[ei];
      uint16_t job = e.job;
      uint8_t tree = e.tree;
      if (rng() % 50 == 0) job = static_cast<uint16_t>(100 + rng() % 100);  // unknown entry
      uint16_t child = e.children[rng() % e.children.size()];
      if (rng() % 40 == 0) child = static_cast<uint16_t>(rng() % 70);  // maybe not allowed
      const uint32_t seq = e.lo + static_cast<uint32_t>(rng() % (2 * e.slot_count + 2));
      uint16_t elems = elems_for(ei, seq, opt.max_elems, seed);
      if (rng() % 60 == 0) elems = static_cast<uint16_t>(elems % opt.max_elems + 1);  // count mismatch
      uint8_t type = type_for(ei, seq, seed);
      if (rng() % 40 == 0) type = static_cast<uint8_t>(1 + (type + rng() % 2) % 3);  // type mismatch
      // a 16-bit frame over the slot's capacity (it would fit in a frame)
      if (wire::elem_bytes(type) == 2 && rng() % 150 == 0 &&
          kSlotCapacity < wire::max_elems_per_frame(type)) {
        elems = static_cast<uint16_t>(kSlotCapacity + 1 +
                                      rng() % (wire::max_elems_per_frame(type) - kSlotCapacity));
      }
      wire::Header h = base_header(job, tree, child, seq, elems, port, rng);
      h.elem_type = type;
      if (unit(rng) < opt.retransmission) h.type = static_cast<uint8_t>(wire::PacketType::kRetransmission);
      fr = make_frame(h, rng);
      if (rng() % 30 == 0) fr.resize(fr.size() + 1 + rng() % 100, 0x5A);  // trailing bytes: bad length
      if (unit(rng) < opt.malformed / (1.0 - opt.foreign - opt.duplicate)) corrupt(fr, rng);
      if (rng() % 6 == 0) e.lo += static_cast<uint32_t>(rng() % (e.slot_count + 1));
      recent.push_back(fr);
      if (recent.size() > 32) recent.erase(recent.begin());
    }
    sc.segments[seg].push_back(std::move(fr));
  }
  // Register changes between segments.
  for (uint32_t s = 0; s + 1 < n_segments; ++s) {
    auto& w = sc.between[s];
    switch (rng() % 4) {
      case 0:
        w.push_back({kControl, kControlEnable | kControlClearCounters});
        break;
      case 1:
        w.push_back({kControl, 0});
        break;  // disabled: everything passes through
      case 2: {
        const uint32_t i = static_cast<uint32_t>(rng() % entries.size());
        w.push_back({kEntryIndex, i});
        w.push_back({kEntryCmd, kCmdDisable});
        break;
      }
      default: {
        const uint32_t i = static_cast<uint32_t>(rng() % entries.size());
        push_entry(w, i, entries[i], true, rng);  // re-commit: clears its slots and counters
        break;
      }
    }
  }
  if (n_segments > 1) sc.between[n_segments - 2].push_back({kControl, kControlEnable});
  // MAC errors from a generator of their own, so a seed gives the same frames
  // whatever the MAC error fraction.
  if (opt.mac_error > 0.0) {
    std::mt19937_64 mac_rng(seed ^ 0x4D41435F4552524FULL);
    sc.mac_errors.resize(n_segments);
    for (uint32_t s = 0; s < n_segments; ++s) {
      for (size_t i = 0; i < sc.segments[s].size(); ++i)
        sc.mac_errors[s].push_back(unit(mac_rng) < opt.mac_error ? 1 : 0);
    }
  }
  return sc;
}

Scenario line_rate_scenario(uint32_t frame_bytes, uint32_t jobs, uint32_t frames, uint32_t fan_in,
                            bool same_slot_runs, uint8_t elem_type) {
  std::mt19937_64 rng(frame_bytes * 7919ull + jobs + 1000003ull * (elem_type - 1u));
  Scenario sc;
  sc.seed = 0;
  sc.setup.push_back({kControl, kControlReset | kControlEnable});
  fan_in = std::clamp<uint32_t>(fan_in, 1, 64);
  const uint32_t share = kSlots / jobs;
  for (uint32_t j = 0; j < jobs; ++j) {
    EntrySpec e;
    e.job = static_cast<uint16_t>(j);
    e.tree = 0;
    e.fan_in = fan_in;
    e.children.clear();
    for (uint32_t c = 0; c < fan_in; ++c) e.children.push_back(static_cast<uint16_t>(c));
    e.slot_base = j * share;
    e.slot_count = share;
    push_entry(sc.setup, j, e, true, rng);
  }
  // The register block takes a write only once the commit's slot clear is
  // over (NUM_SLOTS / jobs clocks for the last entry), so this no-op write
  // (the port's reset value) makes the frames meet a settled engine in every
  // configuration: the rates measured are the data path's, not the clear's.
  sc.setup.push_back({kUdpPort, wire::kDefaultUdpPort});
  const uint16_t elems =
      static_cast<uint16_t>((frame_bytes - wire::kPayloadOffset) / std::max(2u, wire::elem_bytes(elem_type)));
  sc.segments.resize(1);
  sc.between.resize(1);
  uint32_t seq = 0;
  while (sc.segments[0].size() < frames) {
    for (uint32_t i = 0; i < jobs * fan_in && sc.segments[0].size() < frames; ++i) {
      const uint32_t j = same_slot_runs ? i / fan_in : i % jobs;
      const uint32_t c = same_slot_runs ? i % fan_in : i / jobs;
      wire::Header h = base_header(static_cast<uint16_t>(j), 0, static_cast<uint16_t>(c), seq, elems,
                                   wire::kDefaultUdpPort, rng);
      h.elem_type = elem_type;
      sc.segments[0].push_back(make_frame(h, rng));
    }
    ++seq;
  }
  return sc;
}

Scenario scenario_from_frames(const std::vector<Frame>& frames) {
  std::mt19937_64 rng(1);
  Scenario sc;
  sc.setup.push_back({kControl, kControlReset | kControlEnable});
  std::map<uint32_t, std::set<uint16_t>> seen;
  for (const auto& f : frames) {
    wire::Header h;
    if (wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), wire::kDefaultUdpPort, h) ==
        wire::FrameClass::kOk) {
      if (h.child_id < 64) seen[h.job_id | (uint32_t{h.tree_id} << 16)].insert(h.child_id);
    }
  }
  const uint32_t n = std::min<uint32_t>(kEntries, static_cast<uint32_t>(seen.size()));
  uint32_t i = 0;
  for (const auto& [key, children] : seen) {
    if (i == n) break;
    EntrySpec e;
    e.job = static_cast<uint16_t>(key);
    e.tree = static_cast<uint8_t>(key >> 16);
    e.children.assign(children.begin(), children.end());
    e.fan_in = static_cast<uint32_t>(children.size());
    e.slot_count = kSlots / n;
    e.slot_base = i * e.slot_count;
    push_entry(sc.setup, i, e, true, rng);
    ++i;
  }
  sc.segments.push_back(frames);
  sc.between.resize(1);
  return sc;
}

LatencySummary summarize(std::vector<uint32_t> v) {
  LatencySummary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v[v.size() / 2];
  return s;
}

}  // namespace panama::cosim
