// What the protocol core's tests share: plans of a test job, an engine
// configured for it, and a rig that runs whole allreduces of W workers
// through one PSwitch at the root of every tree of the in-memory fabric
// (panama/fabric/fabric.hpp), with faults of its own on top of the ports'
// loss, duplication and reordering: CE marks up and down, cap changes,
// poisoned late duplicates, a tree's PSwitch dying. The rig checks what it
// can see from outside: the window bound from the frames the workers send,
// the cap bound after each fresh result, every chunk written once.
//
// Seed: PANAMA_TEST_SEED overrides the random seed (printed on failure).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "panama/engine.hpp"
#include "panama/fabric/fabric.hpp"
#include "panama/runtime/allreduce_core.hpp"

namespace panama::test::core {

using Frame = std::vector<uint8_t>;
using TestEngine = Engine<16, 256, 4>;  // 64 elements per slot
constexpr uint16_t kJob = 42;

uint64_t seed_from_env();

// Trees 10..10+trees-1 are the primaries; with `backups`, tree 10+trees+t
// stands by for tree 10+t.
runtime::Plan make_plan(uint32_t rank, uint32_t world, uint32_t trees, uint32_t elems, uint16_t initial_cap,
                        bool backups = false);

// One root entry per tree: fan-in `world`, `q` slots each.
void configure_engine(TestEngine& eng, uint32_t world, uint32_t trees, uint32_t q);

struct Faults {
  double loss_up = 0, loss_down = 0, dup = 0, ce_up = 0, ce_down = 0, cap_change = 0, poison = 0;
  uint32_t reorder_window = 1;  // > 1: frames overtake each other, more the larger it is
};

// How the workers run besides their plans.
struct Setup {
  bool backups = false;                        // plans with a backup tree per primary
  std::function<void(runtime::Plan&)> adjust;  // changes every plan before the workers start
  size_t streaming_copy_bytes = 0;             // AllreduceCore::set_streaming_copy_bytes
  bool zero_copy = false;                      // AllreduceCore::set_zero_copy_send
};

// W workers, one root PSwitch with one entry per tree, and a faulty network.
class Rig {
 public:
  Rig(uint64_t seed, uint32_t world, uint32_t trees, uint32_t elems, uint32_t slots, uint16_t initial_cap,
      Faults faults, Setup setup = Setup{});

  runtime::AllreduceCore& worker(uint32_t w) { return net_->worker(w); }
  uint32_t world() const { return world_; }
  uint64_t now() const { return net_->now(); }

  // One step of the fabric. `may_jump`: time may skip to the next
  // retransmission timer when the network is idle (false while some worker
  // is yet to start an allreduce: a worker late by several RTOs looks like a
  // dead tree to the others).
  void step(bool may_jump = true);

  // The PSwitch of tree index t dies: frames on their way to it are gone,
  // nothing it receives is answered any more, and its last results reach
  // only some workers (the multicast was cut part-way).
  void kill(uint32_t t);

  // Zero-copy send: counts a finished allreduce whose buffer (`bytes` at
  // `p`) some frame still references (early_finishes).
  void check_no_frame_references(const void* p, size_t bytes);
  void check_no_frame_references(const std::vector<float>& buf) {
    check_no_frame_references(buf.data(), 4 * buf.size());
  }

  std::mt19937_64 rng;
  // Harness-side view per (worker, tree index): sequences sent but whose
  // result was not delivered yet, results delivered, and the cap of the
  // latest fresh result.
  std::vector<std::vector<std::set<uint32_t>>> unanswered;
  std::vector<std::vector<std::set<uint32_t>>> delivered;
  std::vector<std::vector<uint16_t>> latest_cap;
  std::vector<std::map<std::pair<runtime::OpId, size_t>, int>> writes;  // per worker
  std::vector<std::vector<std::vector<double>>> cwnd_trace;  // [worker][tree] after each fresh result
  uint64_t window_violations = 0, cap_violations = 0, early_finishes = 0;

 private:
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  void sent(uint32_t w, const Frame& f);
  void deliver(uint32_t w, const Frame& f);

  uint32_t world_, q_;
  Faults faults_;
  std::set<uint32_t> dead_;  // tree indices whose PSwitch is gone
  std::unique_ptr<fabric::Fabric> net_;
};

// Contribution of worker w to element i of allreduce r: small integers, so
// the fp32 sum is exact whatever order the engine adds them in.
float contribution(uint32_t w, uint32_t r, size_t i);

// The same for a 16-bit type: m * 2^s exact in the type (|m| < 2^8 for
// bf16, < 2^11 for fp16; s in [-2, 2]), so sums of a few workers are exact
// in fp32 in any order but often need rounding to the type.
double contribution16(uint32_t w, uint32_t r, size_t i, wire::ElemType type);

struct Scenario {
  uint32_t world, trees, elems, q;
  uint16_t initial_cap;
  std::vector<size_t> sizes;
  Faults faults;
  // Element type of each allreduce (missing ones: fp32). 16-bit results are
  // checked against round-to-nearest-even of the exact sum, which the engine
  // gives as its fp32 sum of these contributions is exact.
  std::vector<wire::ElemType> dtypes{};
  int kill_tree = -1;      // with backups: this primary's PSwitch dies ...
  uint64_t kill_step = 0;  // ... at this step (no worker issues its last allreduce before)
  uint32_t failover_after = 6;
  size_t streaming_copy_bytes = 0;  // AllreduceCore::set_streaming_copy_bytes of every worker
  bool zero_copy = false;           // AllreduceCore::set_zero_copy_send of every worker
};

// Runs the scenario's allreduces, issued at different times on different
// workers, several in flight, and checks every result bit for bit, every
// chunk written once, the window and cap bounds and, with a tree killed,
// the failover, and the payload bytes counted. Returns the dead tree's
// replayed_kept summed over workers; adds to `*rounded` (if given) the
// 16-bit result elements, over workers, whose exact sum needed rounding.
uint64_t run_scenario(uint64_t seed, const Scenario& s, uint64_t* rounded = nullptr);

}  // namespace panama::test::core
