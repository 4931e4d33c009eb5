// Pooled mode of the allreduce core (allreduce_core.hpp; the rules are
// docs/hybrid-allreduce.md's, the runtime's side docs/runtime.md, "Pooled
// mode"): claims sent ahead of each group's chunks, the per-group state
// machine (claiming, in the network, on the ring, finished), cumulative
// releases, and the ring fallback that reduces a denied group over the
// job's ranks in the plan's ring order (reduce-scatter, then all-gather)
// with acknowledged, retransmitted ring frames.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core_state.hpp"
#include "panama/claim.hpp"
#include "panama/elem16.hpp"
#include "panama/fp32_add.hpp"

namespace panama::runtime {
namespace {

// A ring frame (docs/hybrid-allreduce.md, "Ring frames"): Ethernet II /
// IPv4 / UDP to the ring port, then this header and `count` fp32 elements.
constexpr uint32_t kRVersion = wire::kPanamaOffset + 0;   // u8: 1
constexpr uint32_t kRKind = wire::kPanamaOffset + 1;      // u8: 1 data, 2 ack
constexpr uint32_t kRJob = wire::kPanamaOffset + 2;       // u16
constexpr uint32_t kRTree = wire::kPanamaOffset + 4;      // u8
constexpr uint32_t kRElemType = wire::kPanamaOffset + 5;  // u8: the group's element type (an ack: flags)
constexpr uint32_t kRRank = wire::kPanamaOffset + 6;      // u32: the sender's ring position
constexpr uint32_t kRGroup = wire::kPanamaOffset + 10;    // u32
constexpr uint32_t kRStep = wire::kPanamaOffset + 14;     // u16
constexpr uint32_t kRPiece = wire::kPanamaOffset + 16;    // u16
constexpr uint32_t kROffset = wire::kPanamaOffset + 18;   // u32: first element in the group
constexpr uint32_t kRCount = wire::kPanamaOffset + 22;    // u16: elements (0 in an ack)
constexpr uint32_t kRPayload = wire::kPanamaOffset + 24;  // 66: fp32 elements, little-endian
constexpr uint32_t kRHeaderBytes = kRPayload - wire::kPanamaOffset;
constexpr uint8_t kRingVersion = 1;
constexpr uint8_t kRingData = 1;
constexpr uint8_t kRingAck = 2;
constexpr uint8_t kRingAckCe = 0x01;  // ack flags, bit 0: the data frame arrived CE-marked
constexpr uint32_t kRingMaxPiece = (wire::kMaxFrameBytes - kRPayload) / 4;
// Where a PANAMA frame has its tree id: a transport that picks a tree's
// uplink by that byte (a dual-homed worker) sends ring frames the same way.
static_assert(kRTree == wire::kPanamaTreeId, "ring frames carry the tree id where PANAMA frames do");
static_assert(kRJob == wire::kPanamaJobId, "ring frames carry the job id where PANAMA frames do");

uint32_t pieces_of(uint32_t len, uint32_t piece) {
  return (len + piece - 1) / piece;
}

// Segment j (0..n-1) of ring group `group` of `elems` elements in pieces of
// `piece` elements (docs/hybrid-allreduce.md, "The ring"): the group's P
// pieces are cut into m = min(n, P) runs of whole pieces, run k being pieces
// [k P / m, (k + 1) P / m); segment j is run (j + group) mod n, empty when
// that is m or more. The rotation gives consecutive groups' runs to
// different ring positions.
struct Seg {
  uint32_t lo = 0, hi = 0;  // elements [lo, hi) of the group
};
Seg segment(uint32_t j, uint32_t group, uint32_t elems, uint32_t piece, uint32_t n) {
  const uint32_t pieces = pieces_of(elems, piece);
  const uint32_t m = std::min(n, pieces);
  const uint32_t k = (j + group % n) % n;
  if (k >= m) return Seg{elems, elems};
  auto at = [&](uint32_t run) {
    return static_cast<uint32_t>(std::min<uint64_t>(elems, uint64_t{run} * pieces / m * piece));
  };
  return Seg{at(k), at(k + 1)};
}

uint32_t widen16(uint8_t t, uint16_t v) {
  return t == static_cast<uint8_t>(wire::ElemType::kFloat16) ? fp16_to_fp32(v) : bf16_to_fp32(v);
}

// The segment ring position r receives at `step` (from position r - 1).
uint32_t received_segment(uint32_t r, uint32_t step, uint32_t n) {
  if (step + 2 <= n) return (r + 2 * n - 1 - step) % n;  // reduce-scatter
  return (r + n - (step - (n - 1))) % n;                 // all-gather
}

}  // namespace

// ------------------------------------------------------------------ groups

void AllreduceCore::pool_issue(Tree& t, Op& op, uint32_t first_seq, uint32_t n, size_t first_chunk,
                               size_t stride) {
  const uint32_t g_size = plan_.pooled->group_size;
  const uint64_t end = uint64_t{first_seq} + n;
  for (uint64_t s = first_seq; s < end;) {
    Group g;
    g.op = &op;
    g.first_seq = static_cast<uint32_t>(s);
    g.nseq = static_cast<uint32_t>(std::min<uint64_t>(g_size, end - s));
    g.first_chunk = first_chunk + stride * static_cast<size_t>(s - first_seq);
    g.stride = stride;
    g.elem_type = op.elem_type;
    const size_t p = plan_.elems_per_packet;
    for (uint32_t c = 0; c < g.nseq; ++c) {
      const size_t k = g.first_chunk + stride * c;
      g.elems += static_cast<uint32_t>(std::min(op.count, (k + 1) * p) - k * p);
    }
    const uint32_t index = static_cast<uint32_t>(s / g_size);
    s += g.nseq;
    t.groups.emplace(index, std::move(g));
    t.group_end = index + 1;
    ++t.st.pool.groups;
  }
}

// Sequences of ring groups and the gaps before an allreduce's first group
// never go to the engines: they are acknowledged here as they are passed.
bool AllreduceCore::pool_skip(Tree& t) {
  const uint32_t g_size = plan_.pooled->group_size;
  auto skip = [&t] {
    if (t.in_flight() >= t.ring.size()) t.grow_ring();
    Outstanding& o = t.at(t.next_seq);
    o = Outstanding{};
    o.acked = true;
    ++t.next_seq;
  };
  auto advance = [&t] {
    while (t.snd_una != t.next_seq && t.at(t.snd_una).acked) ++t.snd_una;
  };
  while (!t.segments.empty()) {
    Tree::Segment& seg = t.segments.front();
    while (t.next_seq - seg.first_seq >= seg.count) skip();  // the gap before a group boundary
    auto it = t.groups.find(t.next_seq / g_size);
    if (it != t.groups.end() && !it->second.on_ring) {
      if (it->second.state != Group::State::kNetwork) break;  // no answer yet: its chunks wait (rule 4)
      advance();
      return true;
    }
    // On the ring, or finished there and forgotten already (a group
    // finished in the network has had all its chunks sent).
    const uint32_t end = static_cast<uint32_t>(std::min<uint64_t>(
        (uint64_t{t.next_seq / g_size} + 1) * g_size, uint64_t{seg.first_seq} + seg.count));
    while (t.next_seq != end) skip();
    if (t.next_seq - seg.first_seq == seg.count) t.segments.pop_front();
  }
  advance();
  return false;
}

// Whether tree t's next chunk may go to the engines (its group is granted).
bool AllreduceCore::pool_sendable(const Tree& t) const {
  if (t.segments.empty()) return false;
  const Tree::Segment& seg = t.segments.front();
  const uint32_t s = t.next_seq - seg.first_seq < seg.count ? t.next_seq : seg.first_seq;
  auto it = t.groups.find(s / plan_.pooled->group_size);
  return it != t.groups.end() && it->second.state == Group::State::kNetwork;
}

void AllreduceCore::pool_result(Tree& t, uint32_t seq) {
  auto it = t.groups.find(seq / plan_.pooled->group_size);
  if (it == t.groups.end() || it->second.on_ring) return;
  Group& g = it->second;
  if (++g.results == g.nseq) group_done(t, g);
}

void AllreduceCore::group_done(Tree& t, Group& g) {
  g.state = Group::State::kDone;
  if (g.on_ring) {
    ++t.st.pool.on_ring;
  } else {
    ++t.st.pool.in_network;
  }
  g.ring.reset();
  g.claim_due = false;
  if (group_observer_) group_observer_(t.plan.tree_id, g.first_seq / plan_.pooled->group_size, g.on_ring);
  // Rule 5: the cumulative count of finished groups.
  while (!t.groups.empty() && t.groups.begin()->first == t.released &&
         t.groups.begin()->second.state == Group::State::kDone) {
    t.groups.erase(t.groups.begin());
    ++t.released;
    t.release_due = true;
  }
}

void AllreduceCore::on_claim_result(Tree& t, uint32_t group, bool granted, uint64_t now_ns) {
  t.last_answer_ns = std::max<uint64_t>(now_ns, 1);
  auto it = t.groups.find(group);
  if (it == t.groups.end()) {
    ++t.st.pool.answers_ignored;  // finished and released, or not issued here yet
    return;
  }
  Group& g = it->second;
  switch (g.state) {
    case Group::State::kIdle:
    case Group::State::kClaiming:
      if (granted) {
        ++t.st.pool.granted;
        g.state = Group::State::kNetwork;
      } else {
        ++t.st.pool.denied;
        to_ring(t, g, now_ns);
      }
      break;
    case Group::State::kNetwork:
      if (granted) {
        ++t.st.pool.answers_ignored;
      } else if (g.results > 0) {
        // A group that emitted a result is never expired (rule 6): this
        // cannot come from an engine that follows the rules.
        ++t.st.pool.denied_after_result;
        ++t.st.pool.answers_ignored;
      } else {
        ++t.st.pool.expired;  // the lease ended (rule 6)
        to_ring(t, g, now_ns);
      }
      break;
    default:
      ++t.st.pool.answers_ignored;
      break;
  }
}

// ------------------------------------------------------------------- ring

void AllreduceCore::to_ring(Tree& t, Group& g, uint64_t now_ns) {
  g.on_ring = true;
  g.state = Group::State::kRing;
  g.claim_due = false;
  // Chunks already sent to the engines get no result (the group holds no
  // slots any more); the buffer still holds this worker's contribution.
  for (uint32_t s = g.first_seq; s != g.first_seq + g.nseq; ++s) {
    if (s - t.snd_una < t.in_flight()) {
      Outstanding& o = t.at(s);
      o.acked = true;
      o.resend = false;
    }
  }
  while (t.snd_una != t.next_seq && t.at(t.snd_una).acked) ++t.snd_una;

  const Op& op = *g.op;
  const size_t p = plan_.elems_per_packet;
  auto rg = std::make_unique<RingGroup>();
  rg->elem_type = op.elem_type;
  rg->last_ns = now_ns;
  for (uint32_t c = 0; c < g.nseq; ++c) {
    const size_t k = g.first_chunk + g.stride * c;
    const uint32_t n = static_cast<uint32_t>(std::min(op.count, (k + 1) * p) - k * p);
    const uint8_t* src = op.data + k * p * op.elem_bytes;
    for (uint32_t i = 0; i < n; ++i) rg->own.push_back(elem_widen(op.elem_type, src, i));
  }
  const uint32_t e = static_cast<uint32_t>(rg->own.size());
  const uint32_t n = plan_.world_size;
  rg->elems = e;
  rg->piece_elems = std::min<uint32_t>(plan_.elems_per_packet, kRingMaxPiece);
  const uint32_t group = g.first_seq / plan_.pooled->group_size;
  for (uint32_t j = 0; j < n; ++j) {
    const Seg sg = segment(j, group, e, rg->piece_elems, n);
    const uint32_t np = pieces_of(sg.hi - sg.lo, rg->piece_elems);
    rg->max_pieces = std::max(rg->max_pieces, np);
    rg->total_pieces += np;
  }
  rg->got.assign(size_t{2} * (n - 1) * rg->max_pieces, 0);
  g.ring = std::move(rg);
  RingGroup& r = *g.ring;
  if (n == 1) {  // alone: the sum is this worker's contribution
    const std::vector<uint32_t> own = r.own;
    for (uint32_t off = 0; off < e; off += r.piece_elems) {
      ring_final(t, g, off, own.data() + off, std::min(r.piece_elems, e - off));
      if (t.groups.count(group) == 0 || t.groups.at(group).state == Group::State::kDone) break;
    }
    return;
  }
  // Reduce-scatter step 0: the segment of this worker's ring position.
  const Seg sg = segment(ring_pos_, group, e, r.piece_elems, n);
  const uint32_t lo = sg.lo, hi = sg.hi;
  for (uint32_t piece = 0, off = lo; off < hi; ++piece, off += r.piece_elems) {
    const uint32_t cnt = std::min(r.piece_elems, hi - off);
    ring_send(t, group, 0, piece, off, std::vector<uint32_t>(r.own.begin() + off, r.own.begin() + off + cnt));
  }
}

void AllreduceCore::ring_send(Tree& t, uint32_t group, uint32_t step, uint32_t piece, uint32_t offset,
                              std::vector<uint32_t> values) {
  const RingKey key{static_cast<uint8_t>(t.index), group, static_cast<uint16_t>(step),
                    static_cast<uint16_t>(piece)};
  if (ring_out_.count(key)) return;
  RingOut o;
  o.offset = offset;
  o.elem_type = t.groups.at(group).elem_type;  // the group is live while it sends
  o.values = std::move(values);
  ring_out_.emplace(key, std::move(o));
  ring_unsent_.push_back(key);
}

// Results of one piece (fp32 bits; for a 16-bit group, values of the type)
// into the user's buffer.
void AllreduceCore::ring_final(Tree& t, Group& g, uint32_t offset, const uint32_t* values, uint32_t count) {
  Op& op = *g.op;
  RingGroup& r = *g.ring;
  const size_t p = plan_.elems_per_packet;
  const bool wide = op.elem_type == static_cast<uint8_t>(wire::ElemType::kFloat32);
  for (uint32_t i = 0; i < count; ++i) {
    const size_t idx = offset + i;
    const size_t k = g.first_chunk + g.stride * (idx / p);
    uint8_t* dst = op.data + (k * p + idx % p) * op.elem_bytes;
    if (wide) {
      wire::store_le32(dst, values[i]);
    } else {
      const uint16_t v = elem_round16(op.elem_type, values[i]);  // exact: a value of the type
      dst[0] = static_cast<uint8_t>(v & 0xFF);
      dst[1] = static_cast<uint8_t>(v >> 8);
    }
  }
  if (++r.final_pieces != r.total_pieces) return;
  const uint64_t bytes = uint64_t{r.elems} * op.elem_bytes;
  t.st.bytes_completed += bytes;
  totals_.bytes_completed += bytes;
  if (observer_) {
    for (uint32_t c = 0; c < g.nseq; ++c) observer_(op.id, g.first_chunk + g.stride * c);
  }
  Op* o = g.op;
  o->remaining -= g.nseq;
  group_done(t, g);  // may forget g
  if (o->remaining == 0) finish(*o, OpStatus::kDone, "");
}

void AllreduceCore::ring_data(Tree& t, uint32_t group, uint32_t step, uint32_t piece, uint32_t offset,
                              uint32_t count, const uint8_t* payload, uint64_t now_ns, bool ce) {
  PoolStats& ps = t.st.pool;
  const RingKey key{static_cast<uint8_t>(t.index), group, static_cast<uint16_t>(step),
                    static_cast<uint16_t>(piece)};
  auto it = t.groups.find(group);
  if (it == t.groups.end()) {
    if (group < t.released) {  // finished here: its acknowledgement was lost
      ++ps.ring_duplicates;
      ring_acks_.push_back({key, ce});
    } else {
      ++ps.ring_early;  // not issued here yet: the sender sends it again
    }
    return;
  }
  Group& g = it->second;
  // The segment, piece, offset and count the step implies, checked before
  // the frame changes anything.
  const uint32_t n = plan_.world_size;
  const uint32_t elems = g.elems;
  const uint32_t pe = std::min<uint32_t>(plan_.elems_per_packet, kRingMaxPiece);
  const Seg sg = segment(received_segment(ring_pos_, step, n), group, elems, pe, n);
  const uint32_t lo = sg.lo, hi = sg.hi;
  const uint32_t off = lo + piece * pe;
  if (step + 2 >= 2 * n || piece >= pieces_of(hi - lo, pe) || offset != off ||
      count != std::min(pe, hi - off)) {
    ++ps.ring_malformed;
    return;
  }
  if (!g.on_ring) {
    if (g.state == Group::State::kDone || g.results > 0) {
      ++ps.ring_malformed;  // finished or answered in the network here: not from a worker that follows
                            // the rules
      return;
    }
    // The previous worker on the ring heard denied: the root's one answer (rule 4).
    ++ps.denied_by_peer;
    to_ring(t, g, now_ns);
  }
  if (g.state == Group::State::kDone) {
    ++ps.ring_duplicates;
    ring_acks_.push_back({key, ce});
    return;
  }
  RingGroup& r = *g.ring;
  uint8_t& got = r.got[size_t{step} * r.max_pieces + piece];
  ring_acks_.push_back({key, ce});
  if (got) {
    ++ps.ring_duplicates;
    return;
  }
  got = 1;
  r.last_ns = now_ns;
  std::vector<uint32_t> v(count);
  for (uint32_t i = 0; i < count; ++i) v[i] = wire::load_le32(payload + 4 * i);
  if (step + 2 <= n) {  // reduce-scatter: add this worker's contribution
    for (uint32_t i = 0; i < count; ++i) v[i] = fp32_add(v[i], r.own[offset + i]);
    if (step + 2 < n) {
      ring_send(t, group, step + 1, piece, offset, std::move(v));
      return;
    }
    // This worker owns the segment: the sum is complete. A 16-bit result is
    // rounded here, once, and travels as the fp32 value of the rounded one.
    if (r.elem_type != static_cast<uint8_t>(wire::ElemType::kFloat32)) {
      for (uint32_t& x : v) x = widen16(r.elem_type, elem_round16(r.elem_type, x));
    }
    ring_send(t, group, n - 1, piece, offset, v);
    ring_final(t, g, offset, v.data(), count);
    return;
  }
  if (step + 3 < 2 * n) ring_send(t, group, step + 1, piece, offset, v);  // all-gather: pass it on
  ring_final(t, g, offset, v.data(), count);
}

namespace {

// Ethernet II / IPv4 / UDP and the ring header; the caller adds the payload.
void write_ring_headers(uint8_t* f, const wire::Header& hdr, const MacAddress& dst_mac, uint32_t dst_ip,
                        uint16_t port, uint8_t kind, uint16_t job, uint8_t tree, uint8_t elem_type,
                        uint32_t ring_pos, uint32_t group, uint16_t step, uint16_t piece, uint32_t offset,
                        uint16_t count) {
  std::memcpy(f + wire::kEthDst, dst_mac.data(), 6);
  std::memcpy(f + wire::kEthSrc, hdr.eth_src, 6);
  wire::store_be16(f + wire::kEthType, wire::kEtherTypeIpv4);
  f[wire::kIpVerIhl] = 0x45;
  f[wire::kIpTos] = static_cast<uint8_t>((hdr.dscp << 2) | wire::kEcnEct0);
  const uint32_t udp_len = wire::kUdpHeaderBytes + kRHeaderBytes + 4u * count;
  wire::store_be16(f + wire::kIpTotalLen, static_cast<uint16_t>(wire::kIpHeaderBytes + udp_len));
  wire::store_be16(f + wire::kIpId, 0);
  wire::store_be16(f + wire::kIpFlagsFrag, 0x4000);
  f[wire::kIpTtl] = hdr.ttl;
  f[wire::kIpProto] = wire::kIpProtoUdp;
  wire::store_be16(f + wire::kIpChecksum, 0);
  wire::store_be32(f + wire::kIpSrc, hdr.ip_src);
  wire::store_be32(f + wire::kIpDst, dst_ip);
  wire::store_be16(f + wire::kIpChecksum, wire::ipv4_header_checksum(f + wire::kIpOffset));
  wire::store_be16(f + wire::kUdpSrcPort, port);
  wire::store_be16(f + wire::kUdpDstPort, port);
  wire::store_be16(f + wire::kUdpLength, static_cast<uint16_t>(udp_len));
  wire::store_be16(f + wire::kUdpChecksum, 0);
  f[kRVersion] = kRingVersion;
  f[kRKind] = kind;
  wire::store_be16(f + kRJob, job);
  f[kRTree] = tree;
  f[kRElemType] = elem_type;
  wire::store_be32(f + kRRank, ring_pos);
  wire::store_be32(f + kRGroup, group);
  wire::store_be16(f + kRStep, step);
  wire::store_be16(f + kRPiece, piece);
  wire::store_be32(f + kROffset, offset);
  wire::store_be16(f + kRCount, count);
}

}  // namespace

bool AllreduceCore::ring_poll(uint64_t now_ns, FrameOut& out, uint32_t& budget) {
  const PooledPlan& q = *plan_.pooled;
  const CongestionParams& c = plan_.congestion;
  // Acknowledgements, to the previous worker on the ring.
  while (!ring_acks_.empty() && budget > 0) {
    const RingKey k = ring_acks_.front().key;
    const uint8_t flags = ring_acks_.front().ce ? kRingAckCe : 0;  // an ack's element-type byte: its flags
    uint8_t* f = out.begin_frame(kRPayload);
    if (!f) return false;
    Tree& t = *trees_[k.tree];
    write_ring_headers(f, t.hdr, q.prev_mac, q.prev_ip, ring_port_, kRingAck, plan_.job_id, t.plan.tree_id,
                       flags, ring_pos_, k.group, k.step, k.piece, 0, 0);
    out.end_frame(kRPayload);
    ring_acks_.pop_front();
    --budget;
    ++t.st.pool.ring_acks_sent;
  }
  auto write = [&](const RingKey& k, const RingOut& o) {
    Tree& t = *trees_[k.tree];
    const uint32_t count = static_cast<uint32_t>(o.values.size());
    const uint32_t len = kRPayload + 4 * count;
    uint8_t* f = out.begin_frame(len);
    if (!f) return false;
    write_ring_headers(f, t.hdr, q.next_mac, q.next_ip, ring_port_, kRingData, plan_.job_id, t.plan.tree_id,
                       o.elem_type, ring_pos_, k.group, k.step, k.piece, o.offset,
                       static_cast<uint16_t>(count));
    wire::store_le32_run(f + kRPayload, o.values.data(), count);
    out.end_frame(len);
    --budget;
    ++t.st.pool.ring_frames_sent;
    t.st.pool.ring_bytes_sent += 4u * count;
    return true;
  };
  // Retransmissions of data frames whose acknowledgement did not come.
  const uint64_t patience = uint64_t{c.retry_budget} * c.rto_max_us * 1000;
  for (auto& kv : ring_out_) {
    RingOut& o = kv.second;
    if (!o.sent || o.deadline_ns > now_ns) continue;
    const uint64_t silent_since = std::max(last_ring_ack_ns_, o.sent_ns);
    if (o.retries >= c.retry_budget && now_ns - silent_since >= patience &&
        now_ns >= defer_failure_until_ns_) {
      const Tree& t = *trees_[kv.first.tree];
      fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) +
               ": ring frame of group " + std::to_string(kv.first.group) + " (step " +
               std::to_string(kv.first.step) + ", piece " + std::to_string(kv.first.piece) +
               ") to ring position " + std::to_string((ring_pos_ + 1) % plan_.world_size) +
               " got no acknowledgement after " + std::to_string(o.retries) +
               " retransmissions (retry_budget); the ring cannot finish the group");
      return false;
    }
    if (budget == 0 || !write(kv.first, o)) return false;
    ++o.retries;
    o.rto_ns = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(o.rto_ns) * c.rto_backoff),
                                  uint64_t{c.rto_max_us} * 1000);
    o.deadline_ns = now_ns + o.rto_ns;
    ++trees_[kv.first.tree]->st.pool.ring_retransmissions;
  }
  // New data frames, as many in flight as the ring window allows.
  const uint32_t window = ring_window_now();
  while (!ring_unsent_.empty() && ring_in_flight_ < window && budget > 0) {
    const RingKey k = ring_unsent_.front();
    auto it = ring_out_.find(k);
    if (it == ring_out_.end()) {
      ring_unsent_.pop_front();
      continue;
    }
    if (!write(k, it->second)) return false;
    RingOut& o = it->second;
    o.sent = true;
    o.sent_ns = now_ns;
    o.rto_ns = ring_have_rtt_ ? ring_rto_ns_ : trees_[k.tree]->rto_ns;  // the tree's before a ring sample
    o.deadline_ns = now_ns + o.rto_ns;
    ++ring_in_flight_;
    ring_unsent_.pop_front();
  }
  return true;
}

// ------------------------------------------------------------ claims, poll

bool AllreduceCore::write_claim(Tree& t, uint32_t group, FrameOut& out) {
  uint8_t* f = out.begin_frame(claim::kFrameBytes);
  if (!f) return false;
  claim::build_claim(f, claim::kFrameBytes, t.hdr, plan_.job_id, t.plan.tree_id, t.plan.child_id, group,
                     false);
  out.end_frame(claim::kFrameBytes);
  ++t.hdr.ip_id;
  ++t.st.pool.claims_sent;
  return true;
}

namespace {

// Groups claimed ahead of the chunks: as many as the window covers, and one
// more, counting the groups claiming or in the network; groups on the ring
// count against a second limit as large.
uint32_t claim_ahead(uint32_t window, uint32_t group_size) {
  return std::min<uint32_t>(64, std::max<uint32_t>(2, (window + group_size - 1) / group_size + 1));
}

}  // namespace

bool AllreduceCore::pool_poll(Tree& t, uint64_t now_ns, FrameOut& out, uint32_t& budget) {
  if (t.state != Tree::State::kActive) return true;
  const CongestionParams& c = plan_.congestion;
  const uint64_t patience = uint64_t{c.retry_budget} * c.rto_max_us * 1000;
  const uint32_t limit = claim_ahead(t.cc.window(), plan_.pooled->group_size);
  // With congestion control on the ring its window paces the ring groups.
  const uint32_t ring_limit = ring_cc_ ? UINT32_MAX : limit;
  uint32_t open = 0, ring = 0;
  for (auto& kv : t.groups) {
    Group& g = kv.second;
    if (g.state == Group::State::kIdle) {
      if (open >= limit || ring >= ring_limit || budget == 0) break;
      if (!write_claim(t, kv.first, out)) return false;
      --budget;
      g.state = Group::State::kClaiming;
      ++t.st.pool.claimed;
      g.claim_sent_ns = now_ns;
      g.claim_rto_ns = t.rto_ns;
      g.claim_deadline_ns = now_ns + g.claim_rto_ns;
      if (t.released > 0) t.release_due = true;  // repeated with claims (rule 5)
      ++open;
      continue;
    }
    if (g.state == Group::State::kDone) continue;
    // Groups claiming or in the network count against the claim-ahead
    // limit, groups on the ring against a limit of their own as large: a
    // denied group does not hold back the next claims while fewer groups
    // than that are on the ring, and the ring (without congestion control
    // of its own) carries no more groups at once than the network would.
    ++(g.state == Group::State::kRing ? ring : open);
    // A ring group that hears nothing from the previous worker: as a chunk
    // whose tree answers nothing, it fails the job after the patience.
    if (g.state == Group::State::kRing && now_ns - g.ring->last_ns >= patience &&
        now_ns >= defer_failure_until_ns_) {
      fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) +
               ": the ring of group " + std::to_string(kv.first) + " got nothing from ring position " +
               std::to_string((ring_pos_ + plan_.world_size - 1) % plan_.world_size) + " for " +
               std::to_string((now_ns - g.ring->last_ns) / 1000000) +
               " ms (retry_budget x rto_max_us); the job cannot finish");
      return false;
    }
    if (g.state == Group::State::kClaiming && g.claim_deadline_ns <= now_ns) {
      const uint64_t silent_since = std::max(t.last_answer_ns, g.claim_sent_ns);
      if (g.claim_retries >= c.retry_budget && now_ns - silent_since >= patience &&
          now_ns >= defer_failure_until_ns_) {
        fail_all("job " + std::to_string(plan_.job_id) + " tree " + std::to_string(t.plan.tree_id) +
                 ": the claim of group " + std::to_string(kv.first) + " got no answer after " +
                 std::to_string(g.claim_retries) +
                 " retransmissions (retry_budget), and the tree answered nothing for " +
                 std::to_string((now_ns - silent_since) / 1000000) +
                 " ms; the job cannot finish (an engine without a pool drops claims)");
        return false;
      }
      ++g.claim_retries;
      ++t.st.pool.claim_timeouts;
      g.claim_rto_ns =
          std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(g.claim_rto_ns) * c.rto_backoff),
                             uint64_t{c.rto_max_us} * 1000);
      g.claim_deadline_ns = now_ns + g.claim_rto_ns;
      g.claim_due = true;
    }
    if (g.claim_due && (g.state == Group::State::kClaiming || g.state == Group::State::kNetwork)) {
      if (budget == 0 || !write_claim(t, kv.first, out)) return false;
      --budget;
      g.claim_due = false;
      if (t.released > 0) t.release_due = true;  // repeated with claims (rule 5)
    }
    g.claim_due = false;
  }
  // Rule 5: once every group issued here is finished, the latest release
  // is repeated, asking for the root's confirmation, until it comes.
  if (!t.release_due && release_unconfirmed(t) && now_ns >= t.release_sent_ns + t.release_rto_ns) {
    t.release_due = true;
    t.release_ask = true;
    ++t.release_asks;
    ++t.st.pool.release_asks;
    t.release_rto_ns =
        std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(t.release_rto_ns) * c.rto_backoff),
                           uint64_t{c.rto_max_us} * 1000);
  }
  if (t.release_due && budget > 0) {
    uint8_t* f = out.begin_frame(claim::kFrameBytes);
    if (!f) return false;
    claim::build_release(f, claim::kFrameBytes, t.hdr, plan_.job_id, t.plan.tree_id, t.plan.child_id,
                         t.released, false, t.release_ask);
    out.end_frame(claim::kFrameBytes);
    ++t.hdr.ip_id;
    --budget;
    ++t.st.pool.releases_sent;
    t.release_due = false;
    t.release_ask = false;
    if (t.released != t.release_sent_count) {  // a new count: its own RTO and retries
      t.release_sent_count = t.released;
      t.release_asks = 0;
      t.release_rto_ns = std::max<uint64_t>(t.rto_ns, uint64_t{c.rto_min_us} * 1000);
    }
    t.release_sent_ns = now_ns;
  }
  return true;
}

// The latest release sent has no confirmation yet, nothing issued here is
// unfinished (until then releases go with the claims and retransmissions)
// and the retry budget is not spent: the release timer runs.
bool AllreduceCore::release_unconfirmed(const Tree& t) const {
  return t.state == Tree::State::kActive && t.release_sent_count == t.released && t.released > t.confirmed &&
         t.groups.empty() && t.release_asks < plan_.congestion.retry_budget;
}

uint32_t AllreduceCore::ring_window_now() const {
  return ring_cc_ ? ring_cc_->window() : plan_.pooled->ring_window;
}

bool AllreduceCore::pool_owed() const {
  return !failed() && (!ring_out_.empty() || !ring_acks_.empty());
}

// A release not sent yet: the engines free the finished groups' slots only
// when they hear it, also after this worker's last allreduce.
bool AllreduceCore::release_owed() const {
  if (failed()) return false;
  for (const auto& tp : trees_) {
    if (tp->state == Tree::State::kActive && (tp->release_due || release_unconfirmed(*tp))) return true;
  }
  return false;
}

bool AllreduceCore::pool_can_send() const {
  if (failed()) return false;
  if (!ring_acks_.empty() || (!ring_unsent_.empty() && ring_in_flight_ < ring_window_now())) return true;
  const uint32_t g_size = plan_.pooled->group_size;
  for (const auto& tp : trees_) {
    const Tree& t = *tp;
    if (t.state != Tree::State::kActive) continue;
    if (t.release_due) return true;
    const uint32_t limit = claim_ahead(t.cc.window(), g_size);
    uint32_t open = 0, ring = 0;
    for (const auto& kv : t.groups) {
      const Group& g = kv.second;
      if (g.state == Group::State::kIdle) {
        if (open < limit && ring < (ring_cc_ ? UINT32_MAX : limit)) return true;
        break;
      }
      if (g.state == Group::State::kDone) continue;
      ++(g.state == Group::State::kRing ? ring : open);  // as in pool_poll
      if (g.claim_due && (g.state == Group::State::kClaiming || g.state == Group::State::kNetwork))
        return true;
    }
    // A ring group at next_seq is passed over by send_new without a frame.
    if (!t.segments.empty()) {
      const Tree::Segment& seg = t.segments.front();
      const uint32_t s = t.next_seq - seg.first_seq < seg.count ? t.next_seq : seg.first_seq;
      auto it = t.groups.find(s / g_size);
      if (it == t.groups.end() || it->second.on_ring) return true;
    }
  }
  return false;
}

uint64_t AllreduceCore::pool_next_timer() const {
  const CongestionParams& c = plan_.congestion;
  const uint64_t patience = uint64_t{c.retry_budget} * c.rto_max_us * 1000;
  uint64_t m = UINT64_MAX;
  for (const auto& t : trees_) {
    if (t->state != Tree::State::kActive) continue;
    // As far as pool_poll looks: up to the first group not claimed yet.
    for (const auto& kv : t->groups) {
      if (kv.second.state == Group::State::kIdle) break;
      if (kv.second.state == Group::State::kClaiming) m = std::min(m, kv.second.claim_deadline_ns);
      if (kv.second.state == Group::State::kRing) m = std::min(m, kv.second.ring->last_ns + patience);
    }
    if (!t->release_due && release_unconfirmed(*t)) m = std::min(m, t->release_sent_ns + t->release_rto_ns);
  }
  for (const auto& kv : ring_out_) {
    if (kv.second.sent) m = std::min(m, kv.second.deadline_ns);
  }
  return m;
}

void AllreduceCore::pool_clear() {
  for (auto& t : trees_) t->groups.clear();
  ring_out_.clear();
  ring_unsent_.clear();
  ring_acks_.clear();
  ring_in_flight_ = 0;
}

// ------------------------------------------------------------------ frames

bool AllreduceCore::pool_frame(const uint8_t* frame, uint32_t len, uint64_t now_ns) {
  // Ring frames: IPv4 without options, UDP to the ring port.
  if (len >= kRPayload && wire::load_be16(frame + wire::kEthType) == wire::kEtherTypeIpv4 &&
      frame[wire::kIpVerIhl] == 0x45 && frame[wire::kIpProto] == wire::kIpProtoUdp &&
      wire::load_be16(frame + wire::kUdpDstPort) == ring_port_) {
    if (frame[kRVersion] != kRingVersion || wire::load_be16(frame + kRJob) != plan_.job_id) return false;
    const int ti = tree_index_[frame[kRTree]];
    if (ti < 0) {
      ++ring_unknown_tree_;
      return true;
    }
    Tree& t = *trees_[static_cast<size_t>(ti)];
    const uint32_t n = plan_.world_size;
    const uint32_t from = wire::load_be32(frame + kRRank);  // the sender's ring position
    const uint32_t group = wire::load_be32(frame + kRGroup);
    const uint16_t step = wire::load_be16(frame + kRStep);
    const uint16_t piece = wire::load_be16(frame + kRPiece);
    const uint32_t offset = wire::load_be32(frame + kROffset);
    const uint16_t count = wire::load_be16(frame + kRCount);
    if (frame[kRKind] == kRingAck) {
      if (from != (ring_pos_ + 1) % n || count != 0) {
        ++t.st.pool.ring_malformed;
        return true;
      }
      auto it = ring_out_.find(RingKey{static_cast<uint8_t>(ti), group, step, piece});
      if (it != ring_out_.end() && it->second.sent) {
        const RingOut& o = it->second;
        if (o.retries == 0 && now_ns >= o.sent_ns) {  // Karn: frames sent once
          const double r = static_cast<double>(now_ns - o.sent_ns);
          if (!ring_have_rtt_) {
            ring_srtt_ns_ = r;
            ring_rttvar_ns_ = r / 2;
            ring_have_rtt_ = true;
          } else {
            ring_rttvar_ns_ = 0.75 * ring_rttvar_ns_ + 0.25 * std::fabs(ring_srtt_ns_ - r);
            ring_srtt_ns_ = 0.875 * ring_srtt_ns_ + 0.125 * r;
          }
          const CongestionParams& c = plan_.congestion;
          const double rto = ring_srtt_ns_ + std::max(1000.0, 4 * ring_rttvar_ns_);
          ring_rto_ns_ = static_cast<uint64_t>(
              std::min(std::max(rto, c.rto_min_us * 1000.0), static_cast<double>(c.rto_max_us) * 1000.0));
        }
        ring_out_.erase(it);
        --ring_in_flight_;
        ++t.st.pool.ring_acks_received;
        const bool echo = (frame[kRElemType] & kRingAckCe) != 0;
        if (ring_cc_) {  // a fresh acknowledgement: the ring's implicit ACK stream
          ring_cc_->on_result(echo, ring_cc_->cap());
          if (echo) ++t.st.pool.ring_ce_echoes;
        }
        last_ring_ack_ns_ = std::max<uint64_t>(now_ns, 1);
      }
      return true;
    }
    ++t.st.pool.ring_frames_received;
    auto g = t.groups.find(group);
    const bool type_ok = g == t.groups.end() || frame[kRElemType] == g->second.elem_type;
    if (frame[kRKind] != kRingData || from != (ring_pos_ + n - 1) % n || len < kRPayload + 4u * count ||
        !type_ok) {
      ++t.st.pool.ring_malformed;
      return true;
    }
    const bool ce = (frame[wire::kIpTos] & 3) == wire::kEcnCe;
    if (ce) ++t.st.pool.ring_ce_received;
    ring_data(t, group, step, piece, offset, count, frame + kRPayload, now_ns, ce);
    return true;
  }
  // Claim-results from the root (a look at the type byte first: result
  // frames, the common case, are classified once, by on_frame).
  if (len <= wire::kPanamaType || !claim::is_claim_type(frame[wire::kPanamaType])) return false;
  wire::Header h;
  claim::Frame f;
  const claim::Class c = claim::parse_frame(frame, len, plan_.udp_port, h, f);
  if (c == claim::Class::kNotClaim) return false;
  if (len < wire::kPayloadOffset || h.job_id != plan_.job_id) return false;
  if (c == claim::Class::kRelease && f.confirmation && tree_index_[h.tree_id] >= 0) {
    Tree& t = *trees_[static_cast<size_t>(tree_index_[h.tree_id])];
    ++t.st.pool.confirmations;
    t.confirmed = std::max(t.confirmed, f.seq);
    return true;
  }
  if (c != claim::Class::kClaimResult || tree_index_[h.tree_id] < 0) {
    ++totals_.malformed_results;
    return true;
  }
  on_claim_result(*trees_[static_cast<size_t>(tree_index_[h.tree_id])], f.seq,
                  f.answer == claim::Answer::kGranted, now_ns);
  return true;
}

}  // namespace panama::runtime
