// The switch around the engine: decides, per received frame, where it goes.
//
//  - ingress binding first: an aggregate-up / retransmission must carry a
//    (job, tree, child) the controller bound to its ingress port (a child
//    port of that tree with that child id); a port that is any tree's child
//    port speaks only for its bindings, also for trees served elsewhere, and
//    never sends result-down. Anything else is dropped and counted
//    (binding_drops) before the engine sees it (docs/pswitch.md, Isolation);
//  - aggregate-up / retransmission for a (job, tree) this switch serves ->
//    the engine; what the engine emits goes to the tree's parent port
//    (aggregate-up) or, at the root, is replicated to the tree's child ports
//    (the result-down multicast group);
//  - malformed PANAMA frames -> the engine, which drops and counts them;
//  - result-down for a served (job, tree) arriving on its parent port ->
//    replicated to the child ports; from any other port -> dropped, counted;
//  - a chain tree's hop through this switch ("transit": it does not serve
//    the tree): aggregate-up / retransmission (and claim, release) from the
//    hop's child port to its parent port, result-down (and claim-result)
//    the other way, also where those ports have bindings of other trees;
//  - everything else (incl. PANAMA frames of trees not served here) ->
//    forwarded by destination MAC from the static table, or flooded.
//
// A result leaving by a relay port of its tree (a chain's previous leaf,
// behind a spine) is addressed to that leaf; to the other child ports it
// carries the tree's group address when the tree names one.
//
// No I/O here: frames to send go to an emit target (panama/emit_target.hpp)
// with the ports they leave by: one port, or a tree's child ports at once for
// a replicated result (a target that holds frames in buffers can share one
// buffer between them). The target copies what it keeps (the data pointer is
// only valid during the call). The aggregation itself is the engine's
// (hw/hls), called as it is, with the target's buffer(): the engine writes an
// emission straight into the target's own buffer (an mbuf), which the emit()
// that follows then carries. The engine is an Engine<> or an EngineBackend:
// both take an EmitTarget.
//
// A received frame may come in two pieces (on_frame_parts: its 64 header
// bytes and, elsewhere, its payload, as a worker sending from its own memory
// chains them): the engine reads the payload where it is; a frame sent on
// unchanged (forwarded, replicated) is joined first.
//
// The pool (settings.pool, docs/hybrid-allreduce.md): pooled trees claim the
// engine's pool slots a group at a time (ClaimPool) instead of owning a
// share. The engine is the same: this switch gives every group that holds
// slots a table entry of its own (a "claim entry", one of the pool's table
// entries), committed through the register map with the tree's entry as a
// template, key (claim_job, i) and slot range = the group's G slots; the
// commit empties those slots, and the entry is disabled when the group
// frees them (denied, expired, released). A pooled tree's contribution for
// sequence s of group k is fed to the engine with its header rewritten
// (copied into a scratch header; the payload stays where it is): key of the
// claim entry, seq s - kG (generation 0 of slot s - kG of the range). What
// the engine emits with a claim entry's key is rewritten back before it
// leaves: the tree's key, seq s, cwnd_cap the minimum of the counted
// contributions' and the tree's claim cap. Claim frames
// (panama/claim.hpp) of pooled trees never reach the engine: claims and
// releases from bound child ports and claim-results from the parent port go
// to the pool, and what it answers goes up or down the tree. Time comes from
// the harness (advance()), which also ends the leases.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "panama/claim.hpp"
#include "panama/emit_target.hpp"
#include "panama/engine_rules.hpp"
#include "panama/pswitch/claim_pool.hpp"
#include "panama/pswitch/settings.hpp"
#include "panama/regmap.hpp"
#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

namespace panama::pswitch {

struct PortSwitchCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t to_engine = 0;
  uint64_t forwarded = 0;      // ordinary frames sent out of this port by MAC lookup
  uint64_t flooded = 0;        // ordinary frames flooded out of this port
  uint64_t binding_drops = 0;  // PANAMA frames whose (job, tree, child) is not bound to this port
};

struct TreeSwitchCounters {
  uint64_t contributions_in = 0;  // frames handed to the engine
  uint64_t aggregates_up = 0;     // engine emissions sent to the parent
  uint64_t results_from_parent = 0;
  uint64_t results_emitted = 0;  // results the engine produced here (root)
  uint64_t result_copies = 0;    // copies sent to child ports
  uint64_t results_resent = 0;   // stored results re-sent to the one child that retransmitted
};

// The pool's frames and engine entries, per pooled tree (and summed). The
// pool's own counters (claims, verdicts, expiries, DROP_NO_CLAIM,
// DROP_STALE_GROUP, ...) are ClaimPool's (SwitchCore::pool()).
struct PoolSwitchCounters {
  uint64_t claims_in = 0;           // claims from a bound child port
  uint64_t claims_up = 0;           // claims passed to the parent port
  uint64_t answers_down = 0;        // root: claim-results sent to the child ports
  uint64_t claim_results_in = 0;    // claim-results from the parent port, replicated down
  uint64_t releases_in = 0;         // releases from a bound child port
  uint64_t releases_up = 0;         // releases passed to the parent port
  uint64_t confirmations_down = 0;  // release confirmations sent or replicated to child ports
  uint64_t mapped = 0;              // contributions fed to the engine through a claim entry
  uint64_t counted = 0;             // ... which the engine counted (the lease renewed)
  uint64_t no_claim_answers = 0;    // DROP_NO_CLAIM answered to the child with the claim-result
  uint64_t emissions = 0;           // engine emissions of a claim entry mapped back to the tree
  uint64_t entry_commits = 0;       // claim entries committed (a group took its slots)
  uint64_t entry_disables = 0;      // claim entries disabled (the group freed its slots)
  uint64_t commit_failures = 0;     // the engine refused a claim entry (ENTRY_STATUS not OK)
  uint64_t unmapped = 0;            // a group holding slots without a claim entry (after a failure)

  PoolSwitchCounters& operator+=(const PoolSwitchCounters& o) {
    claims_in += o.claims_in;
    claims_up += o.claims_up;
    answers_down += o.answers_down;
    claim_results_in += o.claim_results_in;
    releases_in += o.releases_in;
    releases_up += o.releases_up;
    confirmations_down += o.confirmations_down;
    mapped += o.mapped;
    counted += o.counted;
    no_claim_answers += o.no_claim_answers;
    emissions += o.emissions;
    entry_commits += o.entry_commits;
    entry_disables += o.entry_disables;
    commit_failures += o.commit_failures;
    unmapped += o.unmapped;
    return *this;
  }
};

struct SwitchCounters {
  uint64_t claim_malformed = 0;    // malformed claim frames, dropped (a switch with a pool)
  uint64_t engine_drops = 0;       // frames the engine dropped (its counters say why)
  uint64_t result_wrong_port = 0;  // result-down for a served tree not from its parent
  uint64_t no_parent = 0;          // aggregate-up emitted for a tree without a parent port
  uint64_t hairpin_drops = 0;      // MAC table points back at the ingress port
  uint64_t binding_drops = 0;      // sum of the ports' binding_drops
  uint64_t transit = 0;            // frames passed along a chain tree's hop (settings.transit)
};

template <class Engine>
class SwitchCore {
 public:
  // A switch without a pool (settings.pool empty; SettingsError otherwise).
  SwitchCore(const PswitchSettings& settings, Engine& engine) : SwitchCore(settings, engine, {}) {}

  // `entries`: the engine entries of the node config. A pooled tree's entry
  // is the template of its claim entries (the caller commits only the
  // others). With a pool, the pool's table entries are disabled here, and
  // the engine's capacity registers are checked against the pool. Throws
  // SettingsError.
  SwitchCore(const PswitchSettings& settings, Engine& engine, const std::vector<config::EntryConfig>& entries)
      : s_(settings),
        engine_(engine),
        ports_(settings.ports.size()),
        trees_(settings.trees.size()),
        child_port_(settings.ports.size(), false),
        parent_port_(settings.ports.size(), false) {
    held_.reserve(wire::kMaxFrameBytes);
    joined_.reserve(wire::kMaxFrameBytes);
    readdressed_.reserve(wire::kMaxFrameBytes);
    mapped_.reserve(wire::kMaxFrameBytes);
    for (const TreePorts& t : s_.trees) {
      for (uint32_t p : t.children) child_port_[p] = true;
      if (t.parent >= 0) parent_port_[t.parent] = true;
    }
    if (s_.pool) set_up_pool(entries);
  }

  // The harness's clock: frames from now on are handled at `now_ns`, and
  // every claim whose lease ended at or before it is expired (its claim
  // entry disabled). Returns the number of groups expired.
  size_t advance(uint64_t now_ns) {
    now_ = now_ns;
    if (!pool_) return 0;
    const std::vector<PoolExpiry> ex = pool_->advance(now_ns);
    for (const PoolExpiry& e : ex) sync(e.entry, e.group);
    return ex.size();
  }
  uint64_t now() const { return now_; }

  void on_frame(uint32_t in_port, const uint8_t* frame, uint32_t len, EmitTarget& out) {
    on_frame_parts(in_port, frame, nullptr, len, out);
  }

  // A frame whose first min(len, 64) bytes are at `head` and the rest at
  // `payload` (null: contiguous at `head`).
  void on_frame_parts(uint32_t in_port, const uint8_t* head, const uint8_t* payload, uint32_t len,
                      EmitTarget& out) {
    PortSwitchCounters& pc = ports_[in_port];
    ++pc.rx_frames;
    pc.rx_bytes += len;

    wire::Header h;
    const wire::FrameClass cls = wire::classify_frame(head, len, engine_.udp_port(), h);
    if (pool_ && cls != wire::FrameClass::kNotPanama && len > wire::kPanamaType &&
        claim::is_claim_type(head[wire::kPanamaType]) && on_claim_frame(in_port, head, payload, len, out)) {
      return;
    }
    if (cls == wire::FrameClass::kOk) {
      const int t = tree_index(h.job_id, h.tree_id);
      if (t < 0 && pass_hop(in_port, h, false, head, payload, len, out)) return;
      if (!bound(in_port, t, h.child_id)) {
        drop_unbound(in_port);
        return;
      }
      if (t >= 0 && pool_of_tree_[t] >= 0) {
        pooled_contribution(in_port, t, h, head, payload, len, out);
        return;
      }
      if (t >= 0) {
        ++trees_[t].contributions_in;
        to_engine(in_port, head, payload, len, out);
        return;
      }
    } else if (cls == wire::FrameClass::kResultDown) {
      const int t = tree_index(h.job_id, h.tree_id);
      if (t >= 0) {
        const TreePorts& tp = s_.trees[t];
        if (tp.parent != static_cast<int>(in_port)) {
          ++ctr_.result_wrong_port;
          return;
        }
        ++trees_[t].results_from_parent;
        replicate(t, whole(head, payload, len), len, out);
        return;
      }
      if (pass_hop(in_port, h, true, head, payload, len, out)) return;
      if (child_port_[in_port] && !parent_port_[in_port]) {  // results never flow up
        drop_unbound(in_port);
        return;
      }
    } else if (wire::is_malformed(cls)) {
      // A claim frame of a chain tree's hop through this switch passes
      // along the hop as the tree's other frames do: claims and releases
      // up, claim-results down.
      if (cls == wire::FrameClass::kBadType && claim::is_claim_type(h.type) &&
          tree_index(h.job_id, h.tree_id) < 0 &&
          pass_hop(in_port, h, h.type == static_cast<uint8_t>(claim::Type::kClaimResult), head, payload, len,
                   out)) {
        return;
      }
      to_engine(in_port, head, payload, len, out);
      return;
    }
    forward_l2(in_port, whole(head, payload, len), len, out);
  }

  const PortSwitchCounters& port_counters(uint32_t p) const { return ports_[p]; }
  const TreeSwitchCounters& tree_counters(uint32_t t) const { return trees_[t]; }
  const SwitchCounters& counters() const { return ctr_; }
  const PswitchSettings& settings() const { return s_; }

  // ---- the pool (null / zero without one)
  const ClaimPool* pool() const { return pool_.get(); }
  // The pool's entry index of tree index `t` (settings.trees), -1 when not pooled.
  int pool_entry(uint32_t t) const { return pool_of_tree_[t]; }
  const PoolSwitchCounters& pool_tree_counters(uint32_t t) const { return pool_ctr_[t]; }
  PoolSwitchCounters pool_counters() const {
    PoolSwitchCounters sum;
    for (const PoolSwitchCounters& c : pool_ctr_) sum += c;
    return sum;
  }
  // The table entry that carries (pool entry, group) in the engine, -1 when none.
  int claim_entry(uint32_t pool_entry, uint32_t group) const {
    const auto it = claim_of_.find({pool_entry, group});
    return it == claim_of_.end() ? -1 : static_cast<int>(pool_table_base() + it->second);
  }
  uint32_t live_claim_entries() const { return static_cast<uint32_t>(claim_of_.size()); }

 private:
  int tree_index(uint16_t job, uint8_t tree) const {
    for (size_t i = 0; i < s_.trees.size(); ++i) {
      if (s_.trees[i].job == job && s_.trees[i].tree == tree) return static_cast<int>(i);
    }
    return -1;
  }

  // May `in_port` speak as `child` for tree index `t` (-1: not served here)?
  bool bound(uint32_t in_port, int t, uint16_t child) const {
    if (t < 0) return !child_port_[in_port];  // transit: only from ports without bindings
    const TreePorts& tp = s_.trees[t];
    for (size_t k = 0; k < tp.children.size(); ++k) {
      // No child_ids: positional, as settings_from_json defaults them.
      if (tp.children[k] == in_port) return (k < tp.child_ids.size() ? tp.child_ids[k] : k) == child;
    }
    return false;
  }

  void drop_unbound(uint32_t in_port) {
    ++ports_[in_port].binding_drops;
    ++ctr_.binding_drops;
  }

  // The frame contiguous: `head` itself, or both pieces joined in joined_.
  const uint8_t* whole(const uint8_t* head, const uint8_t* payload, uint32_t len) {
    if (!payload || len <= wire::kPayloadOffset) return head;
    joined_.resize(len);
    wire::join_frame(joined_.data(), head, payload, len);
    return joined_.data();
  }

  // What the engine emits for a contribution, straight on to its port(s),
  // written into the output's own buffer when it offers one.
  class EngineOut final : public EmitTarget {
   public:
    EngineOut(SwitchCore& core, EmitTarget& out) : core_(core), out_(out) {}
    uint8_t* buffer(uint32_t n) override {
      uint8_t* b = out_.buffer(n);
      core_.writable_ = b;  // the engine writes its emission there: the switch may rewrite it
      return b;
    }
    void emit(const uint8_t* d, uint32_t n, Ports) override { core_.from_engine(d, n, out_, -1); }

   private:
    SwitchCore& core_;
    EmitTarget& out_;
  };

  // An emission held back while its cause is decided (in held_).
  class Hold final : public EmitTarget {
   public:
    explicit Hold(std::vector<uint8_t>& held) : held_(held) {}
    void emit(const uint8_t* d, uint32_t n, Ports) override { held_.assign(d, d + n); }

   private:
    std::vector<uint8_t>& held_;
  };

  EngineOutcome to_engine(uint32_t in_port, const uint8_t* head, const uint8_t* payload, uint32_t len,
                          EmitTarget& out, uint16_t* cap_slot = nullptr, uint16_t cap = 0) {
    ++ports_[in_port].to_engine;
    const bool retransmission =
        len > wire::kPanamaType &&
        head[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kRetransmission);
    // A pooled contribution's cwnd_cap joins its slot's minimum before the
    // engine may emit, and leaves it again when the engine did not count it.
    const uint16_t cap_before = cap_slot ? *cap_slot : 0;
    if (cap_slot) *cap_slot = std::min(*cap_slot, cap);
    auto counted = [&](const EngineOutcome& o) {
      if (cap_slot && o.action != EngineAction::kAggregated && o.action != EngineAction::kEmitted)
        *cap_slot = cap_before;
    };
    if (!retransmission) {
      EngineOut to_ports(*this, out);
      const EngineOutcome o = engine_.process_frame_parts(head, payload, len, to_ports);
      if (o.action == EngineAction::kDropped) ++ctr_.engine_drops;
      counted(o);
      return o;
    }
    // A retransmission may make the engine re-emit a stored result. Only the
    // child that asked is missing it, so it goes back out of the ingress port
    // instead of to every child. Hold the emission until the outcome says which.
    held_.clear();
    Hold hold(held_);
    const EngineOutcome o = engine_.process_frame_parts(head, payload, len, hold);
    if (o.action == EngineAction::kDropped) ++ctr_.engine_drops;
    counted(o);
    if (held_.empty()) return o;
    writable_ = held_.data();
    from_engine(held_.data(), static_cast<uint32_t>(held_.size()), out,
                o.action == EngineAction::kReemitted ? static_cast<int>(in_port) : -1);
    return o;
  }

  // An emitted aggregate: up to the parent, or (a result) down to the children.
  // `only_port` >= 0: a re-emitted result, sent to that child port only.
  void from_engine(const uint8_t* d, uint32_t n, EmitTarget& out, int only_port) {
    uint8_t* const writable = writable_;
    writable_ = nullptr;
    const uint16_t job = wire::load_be16(d + wire::kPanamaJobId);
    const uint8_t tree = d[wire::kPanamaTreeId];
    if (pool_ && job == s_.pool->claim_job && tree < s_.pool->table_count) {
      d = map_back(d, n, writable);
      if (d == nullptr) return;
    }
    const int t = tree_index(wire::load_be16(d + wire::kPanamaJobId), d[wire::kPanamaTreeId]);
    if (t < 0) {
      // An engine entry without switch ports: configuration mismatch.
      ++ctr_.no_parent;
      return;
    }
    if (d[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown)) {
      if (only_port >= 0) {
        ++trees_[t].results_resent;
        const uint32_t port = static_cast<uint32_t>(only_port);
        emit_result(t, d, n, Ports{&port, 1}, out);
        return;
      }
      ++trees_[t].results_emitted;
      replicate(t, d, n, out);
      return;
    }
    const TreePorts& tp = s_.trees[t];
    if (tp.parent < 0) {
      ++ctr_.no_parent;
      return;
    }
    ++trees_[t].aggregates_up;
    send(out, static_cast<uint32_t>(tp.parent), d, n);
  }

  static void send(EmitTarget& out, uint32_t port, const uint8_t* d, uint32_t n) {
    out.emit(d, n, Ports{&port, 1});
  }

  // A result to every child port of tree index `t`: one multicast emission
  // (and one per relay port).
  void replicate(int t, const uint8_t* d, uint32_t n, EmitTarget& out) {
    const std::vector<uint32_t>& children = s_.trees[t].children;
    trees_[t].result_copies += children.size();
    if (children.empty()) return;
    emit_result(t, d, n, Ports{children.data(), static_cast<uint32_t>(children.size())}, out);
  }

  // A result of tree index `t` out of `to`: as it is, unless the tree has
  // relays (a copy addressed to the relay's leaf each) or a group address
  // the frame does not carry yet (a copy addressed to the group).
  void emit_result(int t, const uint8_t* d, uint32_t n, Ports to, EmitTarget& out) {
    const TreePorts& tp = s_.trees[t];
    const bool as_is = tp.group_ip == 0 || wire::load_be32(d + wire::kIpDst) == tp.group_ip;
    if (tp.relays.empty() && as_is) {
      out.emit(d, n, to);
      return;
    }
    plain_.clear();
    for (uint32_t p : to) {
      const RelayChild* relay = nullptr;
      for (const RelayChild& r : tp.relays) relay = r.port == p ? &r : relay;
      if (relay == nullptr) {
        plain_.push_back(p);
        continue;
      }
      readdress(d, n, relay->mac, relay->ip);
      send(out, p, readdressed_.data(), n);
    }
    if (plain_.empty()) return;
    const Ports rest{plain_.data(), static_cast<uint32_t>(plain_.size())};
    if (as_is) {
      out.emit(d, n, rest);
      return;
    }
    readdress(d, n, tp.group_mac, tp.group_ip);
    out.emit(readdressed_.data(), n, rest);
  }

  // The frame in readdressed_, its destination MAC and IP replaced (IPv4
  // header checksum recomputed; the UDP checksum is 0, not used).
  void readdress(const uint8_t* d, uint32_t n, const Mac& mac, uint32_t ip) {
    readdressed_.assign(d, d + n);
    uint8_t* f = readdressed_.data();
    std::memcpy(f + wire::kEthDst, mac.data(), 6);
    wire::store_be32(f + wire::kIpDst, ip);
    wire::store_be16(f + wire::kIpChecksum, 0);
    wire::store_be16(f + wire::kIpChecksum, wire::ipv4_header_checksum(f + wire::kIpOffset));
  }

  // A chain tree's hop through this switch: an aggregate-up / retransmission
  // (`result` false) from the hop's child port to its parent port, a result
  // the other way. False when no hop of (job, tree) starts at `in_port`.
  bool pass_hop(uint32_t in_port, const wire::Header& h, bool result, const uint8_t* head,
                const uint8_t* payload, uint32_t len, EmitTarget& out) {
    for (const TransitHop& hop : s_.transit) {
      if (hop.job != h.job_id || hop.tree != h.tree_id || (result ? hop.parent : hop.child) != in_port)
        continue;
      const uint32_t to = result ? hop.child : hop.parent;
      ++ctr_.transit;
      ++ports_[to].forwarded;
      send(out, to, whole(head, payload, len), len);
      return true;
    }
    return false;
  }

  void forward_l2(uint32_t in_port, const uint8_t* frame, uint32_t len, EmitTarget& out) {
    if (len >= 6 && (frame[0] & 1) == 0) {  // unicast: look it up
      for (const MacRoute& r : s_.mac_table) {
        if (std::memcmp(r.mac.data(), frame, 6) == 0) {
          if (r.port == in_port) {
            ++ctr_.hairpin_drops;
          } else {
            ++ports_[r.port].forwarded;
            send(out, r.port, frame, len);
          }
          return;
        }
      }
    }
    // Loop-free flooding on a leaf-spine fabric: from a host, to the other
    // hosts and the first uplink; from an uplink, to the hosts only.
    const bool from_uplink = s_.ports[in_port].uplink;
    bool uplink_used = from_uplink;
    for (uint32_t p = 0; p < ports_.size(); ++p) {
      if (p == in_port) continue;
      if (s_.ports[p].uplink) {
        if (uplink_used) continue;
        uplink_used = true;
      }
      ++ports_[p].flooded;
      send(out, p, frame, len);
    }
  }

  // ------------------------------------------------------------ the pool

  // One of the pool's table entries, carrying a group that holds slots.
  struct ClaimEntry {
    bool live = false;
    uint32_t pool_entry = 0;
    uint32_t group = 0;
    uint32_t slot = 0;  // first slot of the group's G
  };

  uint32_t pool_table_base() const { return s_.pool ? s_.pool->table_base : 0; }

  void set_up_pool(const std::vector<config::EntryConfig>& entries) {
    const PoolSettings& p = *s_.pool;
    const uint32_t slots = engine_.reg_read(regmap::kNumSlots);
    const uint32_t table = engine_.reg_read(regmap::kNumEntries);
    if (uint64_t{p.base} + p.size > slots) {
      throw SettingsError("pswitch.pool: slots " + std::to_string(p.base) + ".." +
                          std::to_string(p.base + p.size - 1) + " run past the engine's " +
                          std::to_string(slots) + " slots");
    }
    if (uint64_t{p.table_base} + p.table_count > table) {
      throw SettingsError("pswitch.pool: table entries " + std::to_string(p.table_base) + ".." +
                          std::to_string(p.table_base + p.table_count - 1) + " run past the engine's " +
                          std::to_string(table) + " entries");
    }
    std::vector<PooledEntry> pooled;
    for (const PooledTree& pt : p.trees) {
      const int t = tree_index(pt.job, pt.tree);
      const std::string name =
          "pswitch.pool: job " + std::to_string(pt.job) + " tree " + std::to_string(pt.tree);
      if (t < 0) throw SettingsError(name + " is not in pswitch.trees");
      const config::EntryConfig* e = nullptr;
      for (const config::EntryConfig& c : entries) e = (c.job == pt.job && c.tree == pt.tree) ? &c : e;
      if (e == nullptr)
        throw SettingsError(name + " has no engine entry (the template of its claim entries)");
      const TreePorts& tp = s_.trees[t];
      PooledEntry pe;
      pe.job = pt.job;
      pe.tree = pt.tree;
      pe.group_size = pt.group_size;
      pe.claim_cap = pt.claim_cap;
      pe.children = static_cast<uint32_t>(tp.children.size());
      pe.root = tp.parent < 0;
      pooled.push_back(pe);
      pool_of_tree_[t] = static_cast<int>(pooled.size() - 1);
      tree_of_pool_.push_back(t);
      TableEntry te = e->table_entry();
      te.root = pe.root;
      templates_.push_back(te);
    }
    try {
      pool_ = std::make_unique<ClaimPool>(PoolConfig{p.base, p.size, p.lease_ns, p.table_count}, pooled);
    } catch (const std::invalid_argument& x) {
      throw SettingsError(std::string("pswitch.pool: ") + x.what());
    }
    claims_.assign(p.table_count, ClaimEntry{});
    slot_cap_.assign(p.size, 0xFFFF);
    for (uint32_t i = 0; i < p.table_count; ++i) entry_command(p.table_base + i, regmap::kCmdDisable);
  }

  uint32_t entry_command(uint32_t index, uint32_t cmd) {
    engine_.reg_write(regmap::kEntryIndex, index);
    engine_.reg_write(regmap::kEntryCmd, cmd);
    return engine_.reg_read(regmap::kEntryStatus);
  }

  // Brings the engine in line with the pool for one group: a group that
  // holds slots has a claim entry over them, one that does not has none.
  void sync(uint32_t pe, uint32_t group) {
    const std::optional<GroupView> g = pool_->group(pe, group);
    const bool holds = g && g->holds;
    const auto it = claim_of_.find({pe, group});
    if (it != claim_of_.end() && (!holds || claims_[it->second].slot != g->slot)) {
      disable_claim(it->second);
      claim_of_.erase(it);
    }
    if (holds && claim_of_.find({pe, group}) == claim_of_.end()) commit_claim(pe, group, g->slot);
  }

  // After a release: the claim entries of the groups it forgot.
  void sync_released(uint32_t pe) {
    const uint32_t released = pool_->released(pe);
    for (auto it = claim_of_.begin(); it != claim_of_.end();) {
      if (it->first.first == pe && it->first.second < released) {
        disable_claim(it->second);
        it = claim_of_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void commit_claim(uint32_t pe, uint32_t group, uint32_t slot) {
    const PoolSettings& p = *s_.pool;
    PoolSwitchCounters& pc = pool_ctr_[tree_of_pool_[pe]];
    uint32_t i = 0;
    while (i < claims_.size() && claims_[i].live) ++i;
    if (i == claims_.size()) {  // the pool holds at most table_count groups: not reached
      ++pc.commit_failures;
      return;
    }
    TableEntry te = templates_[pe];
    te.job = p.claim_job;
    te.tree = static_cast<uint8_t>(i);
    te.enable = true;
    te.slot_base = slot;
    te.slot_count = pool_->entry(pe).group_size;
    const StagedRegisters staged = pack_entry(te);
    for (uint32_t k = 0; k < regmap::kNumStagedRegisters; ++k)
      engine_.reg_write(regmap::kStagedBase + 4 * k, staged[k]);
    if (entry_command(p.table_base + i, regmap::kCmdCommit) != regmap::kStatusOk) {
      ++pc.commit_failures;
      return;
    }
    ++pc.entry_commits;
    claims_[i] = ClaimEntry{true, pe, group, slot};
    claim_of_[{pe, group}] = i;
    std::fill(slot_cap_.begin() + (slot - p.base), slot_cap_.begin() + (slot - p.base + te.slot_count),
              0xFFFF);
  }

  void disable_claim(uint32_t i) {
    entry_command(s_.pool->table_base + i, regmap::kCmdDisable);
    ++pool_ctr_[tree_of_pool_[claims_[i].pool_entry]].entry_disables;
    claims_[i].live = false;
  }

  // The position of `in_port` among tree `t`'s children: its child index in the pool.
  uint16_t child_index(int t, uint32_t in_port) const {
    const std::vector<uint32_t>& c = s_.trees[t].children;
    return static_cast<uint16_t>(std::find(c.begin(), c.end(), in_port) - c.begin());
  }

  // A claim frame (type 4..6) with a pool here. False: not a pooled tree's
  // (handled as before: the engine drops it as a bad type).
  bool on_claim_frame(uint32_t in_port, const uint8_t* head, const uint8_t* payload, uint32_t len,
                      EmitTarget& out) {
    const uint8_t* f = whole(head, payload, len);
    wire::Header h;
    claim::Frame cf;
    const claim::Class cc = claim::parse_frame(f, len, engine_.udp_port(), h, cf);
    if (cc == claim::Class::kNotClaim) return false;
    if (claim::is_malformed(cc)) {
      ++ctr_.claim_malformed;
      return true;
    }
    const int t = tree_index(cf.job_id, cf.tree_id);
    if (t < 0 || pool_of_tree_[t] < 0) return false;
    const uint32_t pe = static_cast<uint32_t>(pool_of_tree_[t]);
    const TreePorts& tp = s_.trees[t];
    PoolSwitchCounters& pc = pool_ctr_[t];
    if (cc == claim::Class::kRelease && cf.confirmation) {
      if (tp.parent != static_cast<int>(in_port)) {
        ++ctr_.result_wrong_port;
        return true;
      }
      const ConfirmStep c = pool_->on_confirmation(pe, cf.seq);
      if (c.to == ConfirmTo::kAll) {
        confirm(t, cf.seq, tp.children, out);
      } else if (c.to == ConfirmTo::kListed) {
        std::vector<uint32_t> to;
        for (uint16_t k : c.children) to.push_back(tp.children[k]);
        confirm(t, cf.seq, to, out);
      }
      return true;
    }
    if (cc == claim::Class::kClaimResult) {
      if (tp.parent != static_cast<int>(in_port)) {
        ++ctr_.result_wrong_port;
        return true;
      }
      ++pc.claim_results_in;
      pool_->on_claim_result(pe, cf.seq, cf.answer);
      sync(pe, cf.seq);
      if (!tp.children.empty())
        emit_result(t, f, len, Ports{tp.children.data(), static_cast<uint32_t>(tp.children.size())}, out);
      return true;
    }
    if (!bound(in_port, t, cf.child_id)) {
      drop_unbound(in_port);
      return true;
    }
    const uint16_t child = child_index(t, in_port);
    if (cc == claim::Class::kRelease) {
      ++pc.releases_in;
      const ReleaseStep r = pool_->on_release(pe, child, cf.seq, cf.ask);
      if (r.grew) sync_released(pe);
      if (r.drop != PoolDrop::kNone) return true;
      if (tp.parent >= 0) {
        // Passed up with every release, an ask as an ask, so that the
        // root's confirmation comes back to the child that asked.
        claim::Frame up;
        up.type = claim::Type::kRelease;
        up.seq = r.released;
        up.ask = cf.ask;
        send_claim_frame(t, up, static_cast<uint32_t>(tp.parent), out);
        ++pc.releases_up;
      } else if (r.confirm == ConfirmTo::kAll) {
        confirm(t, r.released, tp.children, out);  // the root: every child hears the new count
      } else if (r.confirm == ConfirmTo::kSender) {
        confirm(t, r.released, std::vector<uint32_t>{in_port}, out);  // only the one that asked
      }
      return true;
    }
    ++pc.claims_in;
    const ClaimStep st = pool_->on_claim(pe, child, cf.seq, cf.denied_below, now_);
    sync(pe, cf.seq);
    if (st.action == ClaimAction::kPassUp && tp.parent >= 0) {
      claim::Frame up;
      up.type = claim::Type::kClaim;
      up.seq = cf.seq;
      up.denied_below = st.denied_below;
      send_claim_frame(t, up, static_cast<uint32_t>(tp.parent), out);
      ++pc.claims_up;
    } else if (st.action == ClaimAction::kAnswer) {
      answer(t, cf.seq, st.answer, st.reason, tp.children, out);
      ++pc.answers_down;
    }
    return true;
  }

  // A claim frame of tree `t` from this switch, addressed as its engine
  // entry addresses what it emits (child id: the entry's out_child_id).
  const uint8_t* build_claim_frame(int t, claim::Frame f) {
    const TableEntry& te = templates_[pool_of_tree_[t]];
    wire::Header a{};
    std::memcpy(a.eth_dst, te.eth_dst.data(), 6);
    std::memcpy(a.eth_src, te.eth_src.data(), 6);
    a.dscp = te.dscp;
    a.ttl = te.ttl;
    a.ip_src = te.ip_src;
    a.ip_dst = te.ip_dst;
    a.udp_src = te.udp_src;
    a.udp_dst = te.udp_dst;
    f.job_id = te.job;
    f.tree_id = te.tree;
    f.child_id = te.out_child_id;
    claim::build_frame(claim_buf_, claim::kFrameBytes, a, f);
    return claim_buf_;
  }

  void send_claim_frame(int t, const claim::Frame& f, uint32_t port, EmitTarget& out) {
    send(out, port, build_claim_frame(t, f), claim::kFrameBytes);
  }

  // The root's claim-result for `group`, to `to` (the children, or the one
  // child whose contribution found no claim), addressed as results are.
  void answer(int t, uint32_t group, claim::Answer a, claim::Reason r, const std::vector<uint32_t>& to,
              EmitTarget& out) {
    if (to.empty()) return;
    claim::Frame f;
    f.type = claim::Type::kClaimResult;
    f.seq = group;
    f.answer = a;
    f.reason = r;
    emit_result(t, build_claim_frame(t, f), claim::kFrameBytes,
                Ports{to.data(), static_cast<uint32_t>(to.size())}, out);
  }

  // A release confirmation with the root's released count, to `to`.
  void confirm(int t, uint32_t released, const std::vector<uint32_t>& to, EmitTarget& out) {
    if (to.empty()) return;
    claim::Frame f;
    f.type = claim::Type::kRelease;
    f.seq = released;
    f.confirmation = true;
    emit_result(t, build_claim_frame(t, f), claim::kFrameBytes,
                Ports{to.data(), static_cast<uint32_t>(to.size())}, out);
    pool_ctr_[t].confirmations_down += to.size();
  }

  // A pooled tree's aggregate-up / retransmission from a bound child.
  void pooled_contribution(uint32_t in_port, int t, const wire::Header& h, const uint8_t* head,
                           const uint8_t* payload, uint32_t len, EmitTarget& out) {
    const uint32_t pe = static_cast<uint32_t>(pool_of_tree_[t]);
    PoolSwitchCounters& pc = pool_ctr_[t];
    const SlotLookup r = pool_->lookup(pe, h.seq);
    if (r.drop != PoolDrop::kNone) {
      if (r.drop == PoolDrop::kNoClaim && r.has_answer) {
        answer(t, r.group, r.answer, r.reason, std::vector<uint32_t>{in_port}, out);
        ++pc.no_claim_answers;
      }
      return;
    }
    const auto it = claim_of_.find({pe, r.group});
    if (it == claim_of_.end()) {
      ++pc.unmapped;
      return;
    }
    const uint32_t g_size = pool_->entry(pe).group_size;
    const uint32_t offset = h.seq - r.group * g_size;
    // The header in scratch, with the claim entry's key and seq; the payload
    // is read where it is.
    const uint32_t head_len = len < wire::kPayloadOffset ? len : wire::kPayloadOffset;
    std::memcpy(scratch_head_, head, head_len);
    wire::store_be16(scratch_head_ + wire::kPanamaJobId, s_.pool->claim_job);
    scratch_head_[wire::kPanamaTreeId] = static_cast<uint8_t>(it->second);
    wire::store_be32(scratch_head_ + wire::kPanamaSeq, offset);
    const uint8_t* body =
        payload ? payload : (len > wire::kPayloadOffset ? head + wire::kPayloadOffset : nullptr);
    ++trees_[t].contributions_in;
    ++pc.mapped;
    const EngineOutcome o =
        to_engine(in_port, scratch_head_, body, len, out, &slot_cap_[r.slot - s_.pool->base], h.cwnd_cap);
    if (o.action == EngineAction::kAggregated || o.action == EngineAction::kEmitted) {
      ++pc.counted;
      pool_->renew(pe, h.seq, now_);
    }
  }

  // An emission of a claim entry, with the tree's key, seq and cwnd_cap
  // back: in place when `writable` is where the engine wrote it, else in
  // mapped_. Null: no live claim entry has that key (dropped).
  const uint8_t* map_back(const uint8_t* d, uint32_t n, uint8_t* writable) {
    const uint32_t i = d[wire::kPanamaTreeId];
    if (!claims_[i].live) {
      ++ctr_.no_parent;
      return nullptr;
    }
    const ClaimEntry& c = claims_[i];
    uint8_t* w = writable;
    if (w != d) {
      mapped_.assign(d, d + n);
      w = mapped_.data();
    }
    const PooledEntry& pe = pool_->entry(c.pool_entry);
    const uint32_t offset = wire::load_be32(w + wire::kPanamaSeq);
    const uint32_t seq = c.group * pe.group_size + offset;
    wire::store_be16(w + wire::kPanamaJobId, pe.job);
    w[wire::kPanamaTreeId] = pe.tree;
    wire::store_be32(w + wire::kPanamaSeq, seq);
    const uint32_t slot_cap = slot_cap_[c.slot - s_.pool->base + offset];
    wire::store_be16(w + wire::kPanamaCwndCap,
                     static_cast<uint16_t>(std::min<uint32_t>(slot_cap, pe.claim_cap)));
    pool_->on_emitted(c.pool_entry, seq);
    ++pool_ctr_[tree_of_pool_[c.pool_entry]].emissions;
    return w;
  }

  const PswitchSettings& s_;
  Engine& engine_;
  std::vector<PortSwitchCounters> ports_;
  std::vector<TreeSwitchCounters> trees_;
  SwitchCounters ctr_;
  std::vector<uint8_t> held_;         // an emission held back while its cause is decided
  std::vector<uint8_t> joined_;       // a two-piece frame made contiguous to be sent on
  std::vector<uint8_t> readdressed_;  // a result with another destination (relay, group)
  std::vector<uint32_t> plain_;       // a result's ports that take it as it is
  std::vector<bool> child_port_;      // per port: a child port of some tree (has bindings)
  std::vector<bool> parent_port_;     // per port: the parent port of some tree
  std::vector<uint8_t> mapped_;       // an emission mapped back from a claim entry (not written in place)
  uint8_t* writable_ = nullptr;       // where the engine wrote its emission, when the switch may rewrite it

  // The pool (settings.pool).
  uint64_t now_ = 0;
  std::unique_ptr<ClaimPool> pool_;
  std::vector<int> pool_of_tree_ = std::vector<int>(s_.trees.size(), -1);  // per tree: pool entry, -1
  std::vector<PoolSwitchCounters> pool_ctr_ = std::vector<PoolSwitchCounters>(s_.trees.size());
  std::vector<int> tree_of_pool_;      // per pool entry: tree index
  std::vector<TableEntry> templates_;  // per pool entry: its engine entry, the claim entries' template
  std::vector<ClaimEntry> claims_;     // the pool's table entries
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> claim_of_;  // (pool entry, group) -> claims_ index
  std::vector<uint16_t> slot_cap_;  // per pool slot: least cwnd_cap of the contributions counted
  uint8_t scratch_head_[wire::kPayloadOffset] = {};  // a pooled contribution's rewritten header
  uint8_t claim_buf_[claim::kFrameBytes] = {};       // a claim frame this switch sends
};

}  // namespace panama::pswitch
