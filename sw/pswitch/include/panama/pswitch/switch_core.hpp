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
//    the tree): aggregate-up / retransmission from the hop's child port to
//    its parent port, result-down the other way, also where those ports
//    have bindings of other trees;
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
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "panama/emit_target.hpp"
#include "panama/engine_rules.hpp"
#include "panama/pswitch/settings.hpp"
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

struct SwitchCounters {
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
  SwitchCore(const PswitchSettings& settings, Engine& engine)
      : s_(settings),
        engine_(engine),
        ports_(settings.ports.size()),
        trees_(settings.trees.size()),
        child_port_(settings.ports.size(), false),
        parent_port_(settings.ports.size(), false) {
    held_.reserve(wire::kMaxFrameBytes);
    joined_.reserve(wire::kMaxFrameBytes);
    readdressed_.reserve(wire::kMaxFrameBytes);
    for (const TreePorts& t : s_.trees) {
      for (uint32_t p : t.children) child_port_[p] = true;
      if (t.parent >= 0) parent_port_[t.parent] = true;
    }
  }

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
    if (cls == wire::FrameClass::kOk) {
      const int t = tree_index(h.job_id, h.tree_id);
      if (t < 0 && pass_hop(in_port, h, false, head, payload, len, out)) return;
      if (!bound(in_port, t, h.child_id)) {
        drop_unbound(in_port);
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
      to_engine(in_port, head, payload, len, out);
      return;
    }
    forward_l2(in_port, whole(head, payload, len), len, out);
  }

  const PortSwitchCounters& port_counters(uint32_t p) const { return ports_[p]; }
  const TreeSwitchCounters& tree_counters(uint32_t t) const { return trees_[t]; }
  const SwitchCounters& counters() const { return ctr_; }
  const PswitchSettings& settings() const { return s_; }

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
    uint8_t* buffer(uint32_t n) override { return out_.buffer(n); }
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

  void to_engine(uint32_t in_port, const uint8_t* head, const uint8_t* payload, uint32_t len,
                 EmitTarget& out) {
    ++ports_[in_port].to_engine;
    const bool retransmission =
        len > wire::kPanamaType &&
        head[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kRetransmission);
    if (!retransmission) {
      EngineOut to_ports(*this, out);
      if (engine_.process_frame_parts(head, payload, len, to_ports).action == EngineAction::kDropped)
        ++ctr_.engine_drops;
      return;
    }
    // A retransmission may make the engine re-emit a stored result. Only the
    // child that asked is missing it, so it goes back out of the ingress port
    // instead of to every child. Hold the emission until the outcome says which.
    held_.clear();
    Hold hold(held_);
    const EngineOutcome o = engine_.process_frame_parts(head, payload, len, hold);
    if (o.action == EngineAction::kDropped) ++ctr_.engine_drops;
    if (held_.empty()) return;
    from_engine(held_.data(), static_cast<uint32_t>(held_.size()), out,
                o.action == EngineAction::kReemitted ? static_cast<int>(in_port) : -1);
  }

  // An emitted aggregate: up to the parent, or (a result) down to the children.
  // `only_port` >= 0: a re-emitted result, sent to that child port only.
  void from_engine(const uint8_t* d, uint32_t n, EmitTarget& out, int only_port) {
    const uint16_t job = wire::load_be16(d + wire::kPanamaJobId);
    const uint8_t tree = d[wire::kPanamaTreeId];
    const int t = tree_index(job, tree);
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
};

}  // namespace panama::pswitch
