// The software PSwitch's own settings: the "pswitch" section of a node config.
//
// The engine table (entries, shares, addresses) lives in the node config's
// engine part and is applied through sw/config; this section describes what
// only the switch around the engine needs: its ports (virtual device, link
// rate, output queue, ECN threshold, fault injection), the DSCP of each
// priority level its queues serve first, which port is the
// parent and which are the children of each (job, tree), a static MAC
// table for ordinary traffic, and the engine's pool of claimable slots and
// the trees that claim them (docs/hybrid-allreduce.md). docs/pswitch.md
// documents every key.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/config/node_config.hpp"

namespace panama::pswitch {

using Mac = config::MacAddress;

// Thrown for a section that cannot be used; the message names the key.
struct SettingsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct PortSettings {
  std::string name;                   // the neighbour's name, used by "trees" and "mac_table"
  std::string vdev;                   // DPDK device spec, e.g. "net_memif0,role=server,socket=/tmp/x.sock"
  double rate_gbps = 10.0;            // emulated link rate of the output queue; 0 = unlimited
  uint64_t queue_bytes = 4u << 20;    // output queue capacity; tail drop beyond
  uint64_t ecn_k_bytes = 256u << 10;  // CE marking threshold K; 0 = never mark
  double loss = 0.0;                  // probability a frame sent on this port is dropped
  double dup = 0.0;                   // ... is sent twice
  double reorder = 0.0;               // ... is held back and sent after the next frame
  bool uplink = false;                // towards a spine: flooding never goes uplink -> uplink
};

// A child that is not the next hop: a chain tree's previous leaf, behind a
// spine that does not serve the tree. Results sent out of `port` (one of the
// tree's children) are addressed to that child (`mac`, `ip`), so that the
// spine forwards them as it forwards any unicast frame.
struct RelayChild {
  uint32_t port = 0;
  Mac mac{};
  uint32_t ip = 0;
};

struct TreePorts {
  uint16_t job = 0;
  uint8_t tree = 0;
  int parent = -1;                 // port index of the parent; -1 at the root
  std::vector<uint32_t> children;  // port indices results are replicated to
  // The ingress binding: children[i] may speak for this tree only as child
  // id child_ids[i] (the worker's child id at a leaf, the lower PSwitch's
  // out_child_id above). Parallel to `children`; "child_ids" in the JSON,
  // by default the position in "children" (the controller's rule).
  std::vector<uint16_t> child_ids;
  // Chain trees ("relays", "group" in the JSON): children reached through
  // another switch, and the tree's group address, which results sent to the
  // other children carry (a chain leaf receives them addressed to itself).
  // group_ip 0: results go out as they came.
  std::vector<RelayChild> relays;
  Mac group_mac{};
  uint32_t group_ip = 0;
};

// A chain tree's hop through this switch, which does not serve the tree:
// aggregate-up and retransmissions of (job, tree) arriving on `child` leave
// by `parent`, results arriving on `parent` leave by `child`, also where
// these ports are child ports of other trees (whose bindings would drop
// them otherwise).
struct TransitHop {
  uint16_t job = 0;
  uint8_t tree = 0;
  uint32_t child = 0;
  uint32_t parent = 0;
};

// A (job, tree) of "trees" whose engine entry claims pool slots a group at
// a time instead of owning a fixed share. Its number of children and
// whether this switch is its root come from its TreePorts; its engine entry
// in the node config gives the addresses, fan-in and child ids its claims
// are committed with (its slot range is not used).
struct PooledTree {
  uint16_t job = 0;
  uint8_t tree = 0;
  uint32_t group_size = 1;  // G: sequences per group, pool slots per claim
  uint32_t claim_cap = 1;   // the most pool slots the tree holds at once, G..size
};

// The engine's pool (docs/hybrid-allreduce.md, "Proposed rules"): slots
// base .. base + size - 1 of the packet memory, which no fixed-share entry
// may use, and table entries table_base .. table_base + table_count - 1,
// which the switch commits one per granted group: key (claim_job, i) for
// table entry table_base + i, slot range = the group's G slots.
struct PoolSettings {
  uint32_t base = 0;
  uint32_t size = 0;
  uint64_t lease_ns = 0;  // L: how long a claim that has emitted nothing holds its slots
  uint32_t table_base = 0;
  uint32_t table_count = 0;  // groups holding slots at once, at most; 1..256
  uint16_t claim_job = 0xFFFF;
  std::vector<PooledTree> trees;

  const PooledTree* find(uint16_t job, uint8_t tree) const;
};

struct MacRoute {
  Mac mac{};
  uint32_t port = 0;
};

struct PswitchSettings {
  std::string name = "pswitch";
  uint64_t seed = 1;  // fault injection seed (each port derives its own stream)
  // The engine backend (panama/engine/backend.hpp) that aggregates: "model"
  // (the HLS C++ engine) or "rtl" (the Verilated RTL, cycle by cycle: slow,
  // for checking the hardware in a live cluster).
  std::string engine = "model";
  // The queue in front of the engine: frames wait here when the engine (a
  // software model, slower than the links) is the bottleneck, and are marked
  // CE above K like at any output port, so the workers' windows see it.
  uint64_t engine_queue_bytes = 4u << 20;
  uint64_t engine_ecn_k_bytes = 256u << 10;
  // Priority levels (the controller's, docs/controller.md "Priorities"):
  // the DSCP of each level, highest first, distinct, at most 8. Every output
  // queue and the engine queue then serve these DSCPs in strict priority,
  // before all other traffic (output_queue.hpp). Empty: one FIFO per queue.
  std::vector<uint8_t> priority_dscp;
  std::vector<PortSettings> ports;
  std::vector<TreePorts> trees;
  std::vector<TransitHop> transit;
  std::vector<MacRoute> mac_table;
  std::optional<PoolSettings> pool;  // none: no pool, claim frames go to the engine (a bad type)

  int port_index(const std::string& name) const;
  const TreePorts* find_tree(uint16_t job, uint8_t tree) const;
};

// Parses and validates a "pswitch" section. Errors read as every JSON input's
// (panama/config/json_reader.hpp): `origin` (the node config's file name)
// first, then the path in the node config, e.g. "leaf0.json:
// pswitch.ports[1].loss: out of range: 1.5 is not in 0..1". Unknown keys are
// errors. Throws SettingsError.
PswitchSettings settings_from_json(const nlohmann::json& j, const std::string& origin = "node config");

// Checks the section against the engine table it sits beside: every tree has
// an engine entry with the same (job, tree), root exactly when it has no
// parent, whose child ids include every bound child id; every entry has a
// tree (else its emissions would have nowhere to go). With a pool: no entry
// sits in the pool's table entries or has a claim entry's key, no
// fixed-share entry's slots reach into the pool, and a pooled tree's entry
// has a fan-in of at most its number of children. Throws SettingsError,
// with `origin` as settings_from_json.
void check_trees_against_entries(const PswitchSettings& s, const std::vector<config::EntryConfig>& entries,
                                 const std::string& origin = "node config");
nlohmann::json settings_to_json(const PswitchSettings& s);

}  // namespace panama::pswitch
