// panama-sample-gen: writes the bundled sample (samples/basic.*): a pcap of
// the traffic one PSwitch's engine sees and the node configuration for it.
//
// Two jobs with two trees each and four workers per job. Job 1's trees have
// their root here (the engine emits result-down packets to the tree's
// multicast group); job 2's trees continue to a parent (the engine emits
// aggregate-up packets). Workers send within a window no larger than the
// entry's share Q, in random order, so arrival is shuffled but never outside
// the live slot generations. Mixed in: ECN CE marks, a duplicate, a
// retransmission per job, malformed and unroutable PANAMA frames, and
// non-PANAMA traffic (ARP, TCP, DNS, a result passing down). Deterministic
// for a given seed (std::mt19937_64 only; no std distributions, whose output
// differs between standard libraries).
//
// --dtype picks the element type of the contributions: fp32 (the bundled
// sample), bf16, fp16, or mixed (job 1 in bf16, job 2 in fp16, and one
// fp16 contribution sent to a bf16 slot, which the engine drops as a type
// mismatch).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cstring>
#include <iostream>
#include <random>
#include <vector>

#include "panama/config/node_config.hpp"
#include "panama/pcap/pcap_file.hpp"
#include "panama/wire.hpp"

namespace {

using panama::config::MacAddress;
namespace wire = panama::wire;

constexpr int64_t kStartSec = 1795219200;  // 2026-11-21 00:00:00 UTC
constexpr uint32_t kWorkers = 4;
constexpr uint32_t kShare = 8;   // slots per (job, tree): Q
constexpr uint32_t kWindow = 6;  // sequences a worker may have ahead of the oldest incomplete one
const MacAddress kEngineMac = {0x02, 0, 0, 0, 0, 0x10};
constexpr uint32_t kEngineIp = 0x0A00000A;  // 10.0.0.10
const MacAddress kParentMac = {0x02, 0, 0, 0, 0x01, 0};
constexpr uint32_t kParentIp = 0x0A000101;  // 10.0.1.1

struct JobSpec {
  uint16_t job;
  bool root;
  uint16_t elems;
  uint32_t seqs;
  uint8_t elem_type = 1;  // wire::ElemType
};
JobSpec kJobs[] = {{1, true, 32, 14, 1}, {2, false, 100, 12, 1}};

MacAddress worker_mac(uint16_t job, uint32_t w) {
  return {0x02, 0, 0, static_cast<uint8_t>(job), 0, static_cast<uint8_t>(w + 1)};
}
uint32_t worker_ip(uint16_t job, uint32_t w) {
  return 0x0A000000u | (uint32_t{job} << 16) | (w + 1);
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return rng_() % n; }
  bool chance(uint32_t per_mille) { return below(1000) < per_mille; }

  // A gradient-like fp32 bit pattern: mostly small normals of either sign,
  // now and then a subnormal or a negative zero (the numeric contract keeps both).
  uint32_t gradient_bits() {
    const uint32_t sign = static_cast<uint32_t>(below(2)) << 31;
    const uint32_t mant = static_cast<uint32_t>(rng_()) & 0x7FFFFF;
    const uint64_t kind = below(400);
    if (kind == 0) return sign | mant;  // subnormal
    if (kind == 1) return 0x80000000u;  // -0
    const uint32_t exp = 127 - 14 + static_cast<uint32_t>(below(11));
    return sign | (exp << 23) | mant;
  }

  // The same for a 16-bit type: small normals of either sign around 2^-7,
  // now and then a subnormal or -0.
  uint16_t gradient_bits16(uint8_t elem_type) {
    const bool bf = elem_type == static_cast<uint8_t>(wire::ElemType::kBfloat16);
    const uint32_t mbits = bf ? 7 : 10;
    const uint32_t bias = bf ? 127 : 15;
    const uint32_t sign = static_cast<uint32_t>(below(2)) << 15;
    const uint32_t mant = static_cast<uint32_t>(rng_()) & ((1u << mbits) - 1);
    const uint64_t kind = below(400);
    if (kind == 0) return static_cast<uint16_t>(sign | (mant == 0 ? 1 : mant));  // subnormal
    if (kind == 1) return 0x8000u;                                               // -0
    const uint32_t exp = bias - 12 + static_cast<uint32_t>(below(11));
    return static_cast<uint16_t>(sign | (exp << mbits) | mant);
  }

  std::vector<uint8_t> contribution(const JobSpec& js, uint8_t tree, uint32_t worker, uint32_t seq) {
    wire::Header h{};
    const MacAddress src = worker_mac(js.job, worker);
    std::memcpy(h.eth_src, src.data(), 6);
    std::memcpy(h.eth_dst, kEngineMac.data(), 6);
    h.ecn = chance(60) ? wire::kEcnCe : wire::kEcnEct0;
    h.ttl = 64;
    h.ip_id = ip_id_++;
    h.ip_src = worker_ip(js.job, worker);
    h.ip_dst = kEngineIp;
    h.udp_src = wire::kDefaultUdpPort;
    h.udp_dst = wire::kDefaultUdpPort;
    h.version = wire::kVersion;
    h.type = static_cast<uint8_t>(wire::PacketType::kAggregateUp);
    h.job_id = js.job;
    h.tree_id = tree;
    h.elem_type = js.elem_type;
    h.child_id = static_cast<uint16_t>(worker);
    h.seq = seq;
    h.cwnd_cap = static_cast<uint16_t>(4 + below(13));  // each worker's latest cap, some below the share
    h.elem_count = js.elems;
    std::vector<uint8_t> f(wire::frame_length(js.elems, js.elem_type));
    if (wire::elem_bytes(js.elem_type) == 2) {
      std::vector<uint16_t> payload(js.elems);
      for (uint16_t& v : payload) v = gradient_bits16(js.elem_type);
      wire::build_frame16(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
    } else {
      std::vector<uint32_t> payload(js.elems);
      for (uint32_t& v : payload) v = gradient_bits();
      wire::build_frame(f.data(), static_cast<uint32_t>(f.size()), h, payload.data());
    }
    return f;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  uint16_t ip_id_ = 1;
};

// Ethernet header + IPv4 header (no options) for non-PANAMA frames.
std::vector<uint8_t> ipv4_frame(const MacAddress& src, const MacAddress& dst, uint32_t ip_src,
                                uint32_t ip_dst, uint8_t proto, const std::vector<uint8_t>& l4) {
  std::vector<uint8_t> f(34 + l4.size());
  std::memcpy(&f[0], dst.data(), 6);
  std::memcpy(&f[6], src.data(), 6);
  wire::store_be16(&f[12], wire::kEtherTypeIpv4);
  f[14] = 0x45;
  wire::store_be16(&f[16], static_cast<uint16_t>(20 + l4.size()));
  wire::store_be16(&f[20], 0x4000);
  f[22] = 64;
  f[23] = proto;
  wire::store_be32(&f[26], ip_src);
  wire::store_be32(&f[30], ip_dst);
  wire::store_be16(&f[24], wire::ipv4_header_checksum(&f[14]));
  std::memcpy(&f[34], l4.data(), l4.size());
  if (f.size() < 60) f.resize(60, 0);  // Ethernet minimum (without FCS)
  return f;
}

// Internet checksum of a TCP/UDP segment with its IPv4 pseudo-header.
uint16_t l4_checksum(uint32_t ip_src, uint32_t ip_dst, uint8_t proto, const std::vector<uint8_t>& seg) {
  uint32_t sum = (ip_src >> 16) + (ip_src & 0xFFFF) + (ip_dst >> 16) + (ip_dst & 0xFFFF) + proto +
                 static_cast<uint32_t>(seg.size());
  for (size_t i = 0; i < seg.size(); i += 2) sum += (seg[i] << 8) | (i + 1 < seg.size() ? seg[i + 1] : 0);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

std::vector<uint8_t> arp_request(const MacAddress& src, uint32_t ip_src, uint32_t ip_target) {
  std::vector<uint8_t> f(60, 0);
  std::memset(&f[0], 0xFF, 6);
  std::memcpy(&f[6], src.data(), 6);
  wire::store_be16(&f[12], 0x0806);
  wire::store_be16(&f[14], 1);       // Ethernet
  wire::store_be16(&f[16], 0x0800);  // IPv4
  f[18] = 6;
  f[19] = 4;
  wire::store_be16(&f[20], 1);  // request
  std::memcpy(&f[22], src.data(), 6);
  wire::store_be32(&f[28], ip_src);
  wire::store_be32(&f[38], ip_target);
  return f;
}

std::vector<uint8_t> tcp_syn(const MacAddress& src, const MacAddress& dst, uint32_t ip_src, uint32_t ip_dst,
                             uint16_t sport, uint16_t dport, uint32_t isn) {
  std::vector<uint8_t> seg(20, 0);
  wire::store_be16(&seg[0], sport);
  wire::store_be16(&seg[2], dport);
  wire::store_be32(&seg[4], isn);
  seg[12] = 5 << 4;
  seg[13] = 0x02;  // SYN
  wire::store_be16(&seg[14], 64240);
  wire::store_be16(&seg[16], l4_checksum(ip_src, ip_dst, 6, seg));
  return ipv4_frame(src, dst, ip_src, ip_dst, 6, seg);
}

std::vector<uint8_t> dns_query(const MacAddress& src, const MacAddress& dst, uint32_t ip_src,
                               uint32_t ip_dst) {
  const uint8_t q[] = {0x12, 0x34, 0x01, 0x00, 0, 1,   0,   0,   0,   0,   0, 0, 7, 'p', 'a', 'r',
                       'a',  'm',  's',  '0',  5, 'l', 'o', 'c', 'a', 'l', 0, 0, 1, 0,   1};
  std::vector<uint8_t> seg(8 + sizeof q);
  wire::store_be16(&seg[0], 40123);
  wire::store_be16(&seg[2], 53);
  wire::store_be16(&seg[4], static_cast<uint16_t>(seg.size()));
  std::memcpy(&seg[8], q, sizeof q);
  wire::store_be16(&seg[6], l4_checksum(ip_src, ip_dst, 17, seg));
  return ipv4_frame(src, dst, ip_src, ip_dst, 17, seg);
}

// One (job, tree) stream of contributions, sent within the window.
struct Stream {
  const JobSpec* js;
  uint8_t tree;
  std::vector<std::vector<bool>> sent;                    // [worker][seq]
  std::vector<uint32_t> count;                            // contributions per seq
  std::vector<std::vector<std::vector<uint8_t>>> frames;  // [seq][worker], as sent
  uint32_t oldest = 0;                                    // oldest incomplete seq
  uint32_t remaining;

  bool allowed(uint32_t w, uint32_t s) const { return !sent[w][s] && s < oldest + kWindow; }
};

panama::config::NodeConfig node_config() {
  panama::config::NodeConfig cfg;
  cfg.node = "pswitch0";
  uint32_t index = 0;
  for (const JobSpec& js : kJobs) {
    for (uint8_t tree = 0; tree < 2; ++tree) {
      panama::config::EntryConfig e;
      e.index = index;
      e.job = js.job;
      e.tree = tree;
      e.root = js.root;
      e.fan_in = kWorkers;
      e.children = {0, 1, 2, 3};
      e.slot_base = index * kShare;
      e.slot_count = kShare;
      e.eth_src = kEngineMac;
      e.ip_src = kEngineIp;
      if (js.root) {  // down to the tree's multicast group
        e.eth_dst = {0x01, 0x00, 0x5E, static_cast<uint8_t>(js.job), 0, tree};
        e.ip_dst = 0xEF000000u | (uint32_t{js.job} << 16) | tree;  // 239.job.0.tree
      } else {  // up to the parent, where this engine is child 3
        e.eth_dst = kParentMac;
        e.ip_dst = kParentIp;
        e.out_child_id = 3;
      }
      e.udp_src = e.udp_dst = wire::kDefaultUdpPort;
      cfg.entries.push_back(e);
      ++index;
    }
  }
  return cfg;
}

std::vector<std::vector<uint8_t>> generate(Generator& g) {
  std::vector<Stream> streams;
  for (const JobSpec& js : kJobs) {
    for (uint8_t tree = 0; tree < 2; ++tree) {
      Stream s{&js,
               tree,
               std::vector<std::vector<bool>>(kWorkers, std::vector<bool>(js.seqs)),
               std::vector<uint32_t>(js.seqs),
               std::vector<std::vector<std::vector<uint8_t>>>(js.seqs,
                                                              std::vector<std::vector<uint8_t>>(kWorkers)),
               0,
               kWorkers * js.seqs};
      streams.push_back(std::move(s));
    }
  }

  std::vector<std::vector<uint8_t>> out;
  uint32_t contributions = 0;
  bool duplicated = false;
  bool retransmitted[2] = {false, false};
  for (;;) {
    std::vector<size_t> live;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (streams[i].remaining > 0) live.push_back(i);
    }
    if (live.empty()) break;
    Stream& st = streams[live[g.below(live.size())]];
    const JobSpec& js = *st.js;

    std::vector<std::pair<uint32_t, uint32_t>> choices;  // (worker, seq), each worker's oldest first
    for (uint32_t w = 0; w < kWorkers; ++w) {
      for (uint32_t s = st.oldest; s < js.seqs && s < st.oldest + kWindow; ++s) {
        if (st.allowed(w, s)) choices.emplace_back(w, s);
      }
    }
    // Mostly in order per worker, sometimes any sequence in the window (reordering).
    std::pair<uint32_t, uint32_t> pick = choices[g.below(choices.size())];
    if (!g.chance(300)) {
      const uint32_t w = pick.first;
      for (const auto& c : choices) {
        if (c.first == w) {
          pick = c;
          break;
        }
      }
    }
    const auto [w, s] = pick;
    std::vector<uint8_t> f = g.contribution(js, st.tree, w, s);
    st.sent[w][s] = true;
    st.frames[s][w] = f;
    ++st.count[s];
    --st.remaining;
    ++contributions;
    out.push_back(f);

    if (!duplicated && contributions > 30 && st.count[s] < kWorkers) {
      out.push_back(f);  // the same frame twice, as a flaky link would deliver it
      duplicated = true;
    }
    if (st.count[s] == kWorkers) {
      // The slot completed: a worker that missed the result asks again.
      const size_t j = js.root ? 0 : 1;
      if (!retransmitted[j] && contributions > 60 * (j + 1)) {
        std::vector<uint8_t> r = st.frames[s][(w + 1) % kWorkers];
        r[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kRetransmission);
        out.push_back(r);
        retransmitted[j] = true;
      }
      while (st.oldest < js.seqs && st.count[st.oldest] == kWorkers) ++st.oldest;
    }
  }

  // Frames the engine must drop and count, built from a real contribution.
  const JobSpec& j1 = kJobs[0];
  std::vector<std::vector<uint8_t>> extras;
  {
    std::vector<uint8_t> f = g.contribution(j1, 0, 1, 2);
    f.resize(f.size() - 20);  // truncated: shorter than its IPv4 length
    extras.push_back(f);
  }
  {
    std::vector<uint8_t> f = g.contribution(j1, 1, 2, 3);
    f[wire::kIpChecksum] ^= 0x5A;  // bad IPv4 header checksum
    extras.push_back(f);
  }
  {
    std::vector<uint8_t> f = g.contribution(j1, 0, 0, 4);
    f[wire::kPanamaVersion] = 2;  // a future protocol version
    extras.push_back(f);
  }
  extras.push_back(g.contribution(JobSpec{9, true, 16, 1, j1.elem_type}, 0, 0, 0));  // no entry for job 9
  extras.push_back(g.contribution(j1, 0, 3, 5));
  wire::store_be16(extras.back().data() + wire::kPanamaChildId, 5);  // child 5 is not in the tree

  // Other traffic through the same port: passes through untouched.
  const MacAddress w0 = worker_mac(1, 0);
  const MacAddress w1 = worker_mac(2, 1);
  extras.push_back(arp_request(w0, worker_ip(1, 0), kEngineIp));
  extras.push_back(arp_request(w1, worker_ip(2, 1), worker_ip(2, 2)));
  extras.push_back(tcp_syn(w0, kEngineMac, worker_ip(1, 0), 0x0A000201, 51234, 22, 0x1F2E3D4C));
  extras.push_back(tcp_syn(w1, kEngineMac, worker_ip(2, 1), 0x0A000202, 40000, 443, 0x01020304));
  extras.push_back(dns_query(w1, kEngineMac, worker_ip(2, 1), 0x0A000035));
  {
    // A result of job 3 coming down from its root through this switch.
    std::vector<uint8_t> f = g.contribution(JobSpec{3, true, 24, 1, j1.elem_type}, 0, 0, 0);
    f[wire::kPanamaType] = static_cast<uint8_t>(wire::PacketType::kResultDown);
    extras.push_back(f);
  }
  if (j1.elem_type != kJobs[1].elem_type) {
    // Mixed types: right after the first contribution to job 1's sequence 3
    // on tree 0, another worker sends that sequence in job 2's type: the slot
    // is open and that worker not yet counted, so the engine drops it as a
    // type mismatch (the worker's real contribution comes later).
    for (size_t i = 0; i < out.size(); ++i) {
      const uint8_t* p = out[i].data();
      if (wire::load_be16(p + wire::kPanamaJobId) == j1.job && p[wire::kPanamaTreeId] == 0 &&
          wire::load_be32(p + wire::kPanamaSeq) == 3) {
        JobSpec other = j1;
        other.elem_type = kJobs[1].elem_type;
        const uint32_t child = (wire::load_be16(p + wire::kPanamaChildId) + 1u) % kWorkers;
        out.insert(out.begin() + static_cast<long>(i) + 1, g.contribution(other, 0, child, 3));
        break;
      }
    }
  }
  // Each at a random place (never before the first frame, so the start looks like a job starting).
  for (auto& f : extras) out.insert(out.begin() + 1 + static_cast<long>(g.below(out.size())), std::move(f));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Writes the PANAMA sample: a pcap of one PSwitch engine's input traffic and its node configuration.",
      "panama-sample-gen"};
  std::string pcap_path;
  std::string config_path;
  uint64_t seed = 1;
  std::string dtype = "fp32";
  app.add_option("--pcap", pcap_path, "output pcap of input frames")->required();
  app.add_option("--dtype", dtype,
                 "element type of the contributions: fp32, bf16, fp16, or mixed (job 1 bf16, job 2 fp16)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16", "mixed"}))
      ->capture_default_str();
  app.add_option("--config", config_path, "output node configuration (JSON)")->required();
  app.add_option("--seed", seed, "random seed (the bundled sample uses 1)")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "panama-sample-gen: error: " << e.what() << "\nRun 'panama-sample-gen --help' for usage.\n";
    return 2;
  }
  const uint8_t t1 = dtype == "fp16" ? 3 : (dtype == "fp32" ? 1 : 2);
  const uint8_t t2 = dtype == "bf16" ? 2 : (dtype == "fp32" ? 1 : 3);
  kJobs[0].elem_type = t1;
  kJobs[1].elem_type = t2;
  try {
    Generator g(seed);
    const std::vector<std::vector<uint8_t>> frames = generate(g);
    panama::pcapio::PcapWriter writer(pcap_path, false);
    panama::pcapio::Timestamp ts{kStartSec, 0};
    for (const auto& f : frames) {
      ts.frac += 1 + static_cast<uint32_t>(g.below(3));  // 1..3 us apart
      writer.write(ts, f.data(), static_cast<uint32_t>(f.size()));
    }
    writer.close();
    panama::config::save_node_config(node_config(), config_path);
    std::cerr << fmt::format(
        "panama-sample-gen: wrote {} frames to {} and the node configuration to {} (seed {}, {})\n",
        frames.size(), pcap_path, config_path, seed, dtype);
  } catch (const std::exception& e) {
    std::cerr << "panama-sample-gen: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
