// The protocol core's test rig (core_rig.hpp).
#include "core_rig.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "panama/cluster/test_data.hpp"
#include "panama/engine/backend.hpp"
#include "panama/table_entry.hpp"
#include "support/frames.hpp"

namespace panama::test::core {

using runtime::AllreduceCore;
using runtime::CommStats;
using runtime::OpId;
using runtime::OpStatus;
using runtime::Plan;
using runtime::TreePlan;

uint64_t seed_from_env() {
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

Plan make_plan(uint32_t rank, uint32_t world, uint32_t trees, uint32_t elems, uint16_t initial_cap,
               bool backups) {
  Plan p;
  p.job_id = kJob;
  p.rank = rank;
  p.world_size = world;
  p.local_mac = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(rank)};
  p.local_ip = 0x0A000100u + rank;
  p.elems_per_packet = elems;
  for (uint32_t t = 0; t < trees; ++t) {
    TreePlan tp;
    tp.tree_id = static_cast<uint8_t>(10 + t);
    tp.child_id = static_cast<uint16_t>((rank + t) % world);  // a different child id per tree
    tp.dst_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(0xF0 + t)};
    tp.dst_ip = 0x0A0000F0u + t;
    tp.initial_cwnd_cap = initial_cap;
    p.trees.push_back(tp);
  }
  for (uint32_t t = 0; backups && t < trees; ++t) {
    TreePlan tp = p.trees[t];
    tp.tree_id = static_cast<uint8_t>(10 + trees + t);
    tp.child_id = static_cast<uint16_t>((rank + 1) % world);
    tp.dst_mac[5] = static_cast<uint8_t>(0xE0 + t);
    tp.dst_ip = 0x0A0000E0u + t;
    tp.backup_for = static_cast<int16_t>(10 + t);
    p.trees.push_back(tp);
  }
  p.congestion.rto_initial_us = 200;
  p.congestion.rto_min_us = 100;
  p.congestion.rto_max_us = 3000;
  p.congestion.retry_budget = 100000;
  return p;
}

void configure_engine(TestEngine& eng, uint32_t world, uint32_t trees, uint32_t q) {
  for (uint32_t t = 0; t < trees; ++t) {
    TableEntry e;
    e.job = kJob;
    e.tree = static_cast<uint8_t>(10 + t);
    e.root = true;
    e.fan_in = world;
    e.child_mask = (uint64_t{1} << world) - 1;
    e.slot_base = t * q;
    e.slot_count = q;
    e.udp_src = e.udp_dst = wire::kDefaultUdpPort;
    REQUIRE(commit_entry(eng, t, e) == regmap::kStatusOk);
  }
}

namespace {

void set_ecn(Frame& f, uint8_t ecn) {
  f[wire::kIpTos] = static_cast<uint8_t>((f[wire::kIpTos] & ~3u) | ecn);
  wire::store_be16(f.data() + wire::kIpChecksum, 0);
  wire::store_be16(f.data() + wire::kIpChecksum, wire::ipv4_header_checksum(f.data() + wire::kIpOffset));
}

uint32_t tree_index(const Frame& f) {
  return f.size() > wire::kPanamaTreeId ? f[wire::kPanamaTreeId] - 10u : UINT32_MAX;
}

}  // namespace

Rig::Rig(uint64_t seed, uint32_t world, uint32_t trees, uint32_t elems, uint32_t slots, uint16_t initial_cap,
         Faults faults, Setup setup)
    : rng(seed), world_(world), q_(slots), faults_(faults) {
  const uint32_t all = setup.backups ? 2 * trees : trees;
  std::vector<Plan> plans;
  for (uint32_t r = 0; r < world; ++r) {
    plans.push_back(make_plan(r, world, trees, elems, initial_cap, setup.backups));
    if (setup.adjust) setup.adjust(plans.back());
  }
  fabric::Options o;
  o.make_engine = [] { return std::make_unique<ModelBackend<TestEngine>>(); };
  o.link_delay_ns = 2000;
  o.link_jitter_ns = uint64_t{faults.reorder_window - 1} * 3000;
  o.poll_budget = 32;
  o.random_poll = true;
  o.zero_copy = setup.zero_copy;
  o.frames_read_elsewhere = setup.streaming_copy_bytes != 0;
  o.seed = rng();
  net_ = std::make_unique<fabric::Fabric>(fabric::one_switch_topology(plans, slots), o);
  // The ports' own faults: up on what the PSwitch receives, down on what it sends.
  const double reorder = faults.reorder_window > 1 ? 0.1 : 0.0;
  for (uint32_t r = 0; r < world; ++r) {
    net_->set_port_faults(0, r, pswitch::FaultConfig{faults.loss_up, faults.dup, reorder},
                          pswitch::FaultConfig{faults.loss_down, faults.dup, reorder});
  }

  unanswered.assign(world, std::vector<std::set<uint32_t>>(all));
  delivered.assign(world, std::vector<std::set<uint32_t>>(all));
  latest_cap.assign(world, std::vector<uint16_t>(all, initial_cap));
  writes.resize(world);
  cwnd_trace.assign(world, std::vector<std::vector<double>>(all));
  for (uint32_t r = 0; r < world; ++r) {
    worker(r).set_write_observer([this, r](OpId op, size_t chunk) { ++writes[r][{op, chunk}]; });
    worker(r).set_streaming_copy_bytes(setup.streaming_copy_bytes);
  }

  net_->on_worker_send = [this](uint32_t w, const Frame& f) { sent(w, f); };
  net_->on_arrival = [this](fabric::Endpoint, fabric::Endpoint to, Frame& f) {
    if (to.is_worker()) return true;
    if (dead_.count(tree_index(f))) return false;  // nobody answers on a dead tree
    if (chance(faults_.ce_up)) set_ecn(f, wire::kEcnCe);
    return true;
  };
  // Once per result, before the PSwitch replicates it: every worker sees the same marks.
  net_->on_switch_emit = [this](uint32_t, Frame& r, Ports) {
    if (chance(faults_.ce_down)) set_ecn(r, wire::kEcnCe);
    if (chance(faults_.cap_change)) wire::store_be16(r.data() + wire::kPanamaCwndCap, 1 + rng() % q_);
  };
  net_->deliver = [this](uint32_t w, const Frame& f) { deliver(w, f); };
}

void Rig::sent(uint32_t w, const Frame& f) {
  wire::Header h;
  REQUIRE(wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), wire::kDefaultUdpPort, h) ==
          wire::FrameClass::kOk);
  const uint32_t t = h.tree_id - 10u;
  if (h.type == static_cast<uint8_t>(wire::PacketType::kAggregateUp)) {
    auto& un = unanswered[w][t];
    const uint32_t lowest = un.empty() ? h.seq : *un.begin();
    if (h.seq - lowest >= latest_cap[w][t]) ++window_violations;
    un.insert(h.seq);
  }
}

void Rig::deliver(uint32_t w, const Frame& f) {
  const uint32_t t = tree_index(f);
  const uint32_t seq = wire::load_be32(f.data() + wire::kPanamaSeq);
  const bool fresh = delivered[w][t].insert(seq).second;
  REQUIRE(worker(w).on_frame(f.data(), static_cast<uint32_t>(f.size()), now()));
  if (!fresh) return;
  unanswered[w][t].erase(seq);
  latest_cap[w][t] = wire::load_be16(f.data() + wire::kPanamaCwndCap);
  const double cwnd = worker(w).congestion(t).cwnd();
  cwnd_trace[w][t].push_back(cwnd);
  if (cwnd > std::max<uint16_t>(1, latest_cap[w][t])) ++cap_violations;
  if (chance(faults_.poison)) {
    // A late duplicate with a different payload: writing it would corrupt the buffer.
    Frame p = f;
    for (size_t b = wire::kPayloadOffset; b < p.size(); ++b) p[b] ^= 0x5A;
    net_->inject(net_->uplink(w), fabric::Endpoint::worker(w), std::move(p), 1000 + rng() % 30000);
  }
}

void Rig::step(bool may_jump) {
  net_->step(may_jump ? UINT64_MAX : 1000 + rng() % 50000);
}

void Rig::kill(uint32_t t) {
  dead_.insert(t);
  std::vector<bool> cut(world_);
  for (uint32_t w = 0; w < world_; ++w) cut[w] = rng() % 2;
  net_->erase_in_flight([&](fabric::Endpoint to, const Frame& f) {
    if (tree_index(f) != t) return false;
    return to.is_worker() ? static_cast<bool>(cut[to.index]) : true;
  });
}

void Rig::check_no_frame_references(const void* p, size_t bytes) {
  early_finishes += net_->frames_referencing(p, bytes);
}

float contribution(uint32_t w, uint32_t r, size_t i) {
  return static_cast<float>(static_cast<int>((w * 131 + r * 17 + i * 7) % 601) - 300);
}

double contribution16(uint32_t w, uint32_t r, size_t i, wire::ElemType type) {
  const uint32_t h = static_cast<uint32_t>(w * 131 + r * 17 + i * 7);
  const int m =
      type == wire::ElemType::kBfloat16 ? static_cast<int>(h % 511) - 255 : static_cast<int>(h % 4095) - 2047;
  return std::ldexp(m, static_cast<int>((h / 7) % 5) - 2);
}

namespace {

wire::ElemType dtype_of(const Scenario& s, size_t r) {
  return r < s.dtypes.size() ? s.dtypes[r] : wire::ElemType::kFloat32;
}

// Worker w's buffer for allreduce r of `s`.
std::vector<uint8_t> scenario_buffer(const Scenario& s, uint32_t w, size_t r) {
  const wire::ElemType t = dtype_of(s, r);
  const size_t eb = wire::elem_bytes(static_cast<uint8_t>(t));
  std::vector<uint8_t> b(s.sizes[r] * eb);
  for (size_t i = 0; i < s.sizes[r]; ++i) {
    if (t == wire::ElemType::kFloat32) {
      const float v = contribution(w, static_cast<uint32_t>(r), i);
      std::memcpy(&b[4 * i], &v, 4);
    } else {
      const uint16_t v = cluster::round16(contribution16(w, static_cast<uint32_t>(r), i, t), t);  // exact
      std::memcpy(&b[2 * i], &v, 2);
    }
  }
  return b;
}

// Elements of worker w's result of allreduce r that differ from the expected bits.
size_t scenario_mismatches(const Scenario& s, const std::vector<uint8_t>& got, size_t r, size_t* rounded) {
  const wire::ElemType t = dtype_of(s, r);
  size_t wrong = 0;
  for (size_t i = 0; i < s.sizes[r]; ++i) {
    if (t == wire::ElemType::kFloat32) {
      float sum = 0;
      for (uint32_t k = 0; k < s.world; ++k) sum += contribution(k, static_cast<uint32_t>(r), i);
      wrong += std::memcmp(&got[4 * i], &sum, 4) != 0;
    } else {
      double sum = 0;  // exact
      for (uint32_t k = 0; k < s.world; ++k) sum += contribution16(k, static_cast<uint32_t>(r), i, t);
      cluster::Rounding how = cluster::Rounding::kExact;
      const uint16_t want = cluster::round16(sum, t, &how);
      *rounded += how != cluster::Rounding::kExact;
      wrong += std::memcmp(&got[2 * i], &want, 2) != 0;
    }
  }
  return wrong;
}

}  // namespace

uint64_t run_scenario(uint64_t seed, const Scenario& s, uint64_t* rounded_out) {
  INFO("seed " << seed << " (set PANAMA_TEST_SEED to reproduce)");
  REQUIRE(make_plan(0, s.world, s.trees, s.elems, s.initial_cap).congestion.failover_after == 6);
  Setup setup;
  setup.backups = s.kill_tree >= 0;
  if (s.kill_tree >= 0) setup.adjust = [&](Plan& p) { p.congestion.failover_after = s.failover_after; };
  setup.streaming_copy_bytes = s.streaming_copy_bytes;
  setup.zero_copy = s.zero_copy;
  Rig c(seed, s.world, s.trees, s.elems, s.q, s.initial_cap, s.faults, setup);
  bool killed = s.kill_tree < 0;
  std::vector<std::vector<std::vector<uint8_t>>> bufs(s.world);
  std::vector<std::vector<OpId>> ids(s.world);
  for (uint32_t w = 0; w < s.world; ++w) {
    for (size_t r = 0; r < s.sizes.size(); ++r) bufs[w].push_back(scenario_buffer(s, w, r));
  }
  // Allreduces are issued at different times on different workers, several in flight.
  std::vector<size_t> issued(s.world, 0);
  auto all_done = [&] {
    for (uint32_t w = 0; w < s.world; ++w) {
      if (issued[w] < s.sizes.size() || c.worker(w).pending_ops() > 0) return false;
    }
    return true;
  };
  uint64_t steps = 0;
  while (!all_done()) {
    bool answered = true;  // a tree dies only after it answered every worker once
    if (s.kill_tree >= 0) {
      for (uint32_t w = 0; w < s.world; ++w)
        answered &= !c.delivered[w][static_cast<size_t>(s.kill_tree)].empty();
    }
    if (!killed && steps >= s.kill_step && answered) {
      c.kill(static_cast<uint32_t>(s.kill_tree));
      killed = true;
    }
    bool lagging = false;
    for (uint32_t w = 0; w < s.world; ++w) {
      if (!killed && issued[w] + 1 >= s.sizes.size()) continue;
      if (issued[w] < s.sizes.size() && c.rng() % 3 == 0) {
        const size_t r = issued[w];
        ids[w].push_back(c.worker(w).start(bufs[w][r].data(), s.sizes[r], dtype_of(s, r), c.now()));
        ++issued[w];
      }
      lagging |= issued[w] < s.sizes.size() && (killed || issued[w] + 1 < s.sizes.size());
    }
    c.step(s.kill_tree < 0 || !lagging);
    for (uint32_t w = 0; w < s.world; ++w) {
      for (size_t r = 0; r < ids[w].size(); ++r) {
        if (c.worker(w).status(ids[w][r]) != OpStatus::kPending)
          c.check_no_frame_references(bufs[w][r].data(), bufs[w][r].size());
      }
    }
    REQUIRE(++steps < 1000000);
  }
  CHECK(c.early_finishes == 0);
  CHECK(c.window_violations == 0);
  CHECK(c.cap_violations == 0);
  if (std::getenv("PANAMA_TEST_VERBOSE")) {
    const CommStats st = c.worker(0).stats();
    std::cout << "  world " << s.world << " trees " << s.trees << " ops " << s.sizes.size() << " steps "
              << steps << " sent " << st.packets_sent << " retrans " << st.retransmissions << " dup "
              << st.duplicate_results << " ce " << st.results_ce << " reductions "
              << st.trees[0].cwnd_reductions << " bytes " << st.bytes_completed << "\n";
  }
  uint64_t replayed_kept = 0, rounded_elements = 0;
  uint64_t payload_bytes = 0;  // of all allreduces, in their types
  for (size_t r = 0; r < s.sizes.size(); ++r)
    payload_bytes += s.sizes[r] * wire::elem_bytes(static_cast<uint8_t>(dtype_of(s, r)));
  for (uint32_t w = 0; w < s.world; ++w) {
    CHECK_FALSE(c.worker(w).failed());
    size_t expected_writes = 0, rounded = 0;
    for (size_t r = 0; r < s.sizes.size(); ++r) {
      REQUIRE(c.worker(w).status(ids[w][r]) == OpStatus::kDone);
      expected_writes += (s.sizes[r] + s.elems - 1) / s.elems;
      INFO("allreduce " << r << " of " << s.sizes[r] << " elements, type "
                        << static_cast<int>(dtype_of(s, r)));
      CHECK(scenario_mismatches(s, bufs[w][r], r, &rounded) == 0);
    }
    rounded_elements += rounded;
    size_t twice = 0;
    for (auto& kv : c.writes[w]) twice += kv.second != 1;
    CHECK(c.writes[w].size() == expected_writes);
    CHECK(twice == 0);
    const CommStats st = c.worker(w).stats();
    CHECK(st.bytes_completed == st.bytes_issued);
    CHECK(st.bytes_completed == payload_bytes);
    CHECK(st.bytes_sent >= payload_bytes);
    CHECK(st.ops_completed == s.sizes.size());
    if (s.kill_tree >= 0) {
      CHECK(st.failovers == 1);
      replayed_kept += st.trees[static_cast<size_t>(s.kill_tree)].replayed_kept;
      CHECK(st.trees[static_cast<size_t>(s.kill_tree)].state == "dead");
      CHECK(st.trees[s.trees + static_cast<size_t>(s.kill_tree)].state == "active");
      // Every worker restarted the dead tree's sequences at the same point.
      CHECK(st.trees[static_cast<size_t>(s.kill_tree)].restart_seq ==
            c.worker(0).stats().trees[static_cast<size_t>(s.kill_tree)].restart_seq);
      for (size_t t = 0; t < st.trees.size(); ++t) {
        if (t != static_cast<size_t>(s.kill_tree) && t != s.trees + static_cast<size_t>(s.kill_tree)) {
          CHECK(st.trees[t].state == (t < s.trees ? "active" : "standby"));
        }
      }
    }
  }
  if (rounded_out) *rounded_out += rounded_elements;
  return replayed_kept;
}

}  // namespace panama::test::core
