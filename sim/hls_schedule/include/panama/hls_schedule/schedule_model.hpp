// A cycle-level model of the HLS kernel's schedule (hw/hls/src/engine_top.cpp,
// hw/hls/include/panama/kernel.hpp) as its pragmas declare it: the eight
// free-running processes with their initiation intervals (PIPELINE II),
// the FIFOs between them with their depths (STREAM depth), the slot
// memory's read latency (BIND_STORAGE latency) and its write queue, driven
// by the frame patterns of the RTL's line-rate co-simulation
// (sim/cosim's line_rate_scenario, copied here, not linked).
//
// It models the schedule written in the code, not what Vitis HLS will
// produce: the IIs and depths are the kernel's constants (kernel.hpp, tied
// to the pragmas' literals by static_asserts in engine_top.cpp); each
// process's pipeline depth (clocks from an initiation to its FIFO write) is
// an estimate (Params), because only csynth knows it. What a frame makes
// each process do (beats, commands, slot words) comes from the kernel's own
// rules and command derivation (EngineRules, kernel::frame_commands).
//
// Per clock, each process starts at most one initiation when its II allows
// it, does work only when the inputs it needs are there and its outputs
// have room (counting writes still in its pipeline: a credit scheme, never
// a stall inside a pipeline), and otherwise starts an empty initiation, as
// the kernel's non-blocking steps do. The input offers one beat per clock
// (full offered load, no gaps) and the output never pushes back, as in the
// co-simulation's line-rate runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "panama/kernel.hpp"

namespace panama::hls_schedule {

// The schedule: IIs and depths as declared, pipeline depths estimated.
struct Params {
  // Initiation intervals (kernel.hpp).
  uint32_t ingress_ii = kernel::kIngressII;
  uint32_t classify_ii = kernel::kClassifyII;
  uint32_t slot_state_ii = kernel::kSlotStateII;
  uint32_t counters_ii = kernel::kCountersII;
  uint32_t accumulate_ii = kernel::kAccumulateII;
  uint32_t egress_ii = kernel::kEgressII;
  // FIFO depths (kernel.hpp).
  uint32_t frame_fifo = kernel::kFrameFifoDepth;
  uint32_t desc_fifo = kernel::kDescFifoDepth;
  uint32_t ctrl_fifo = kernel::kCtrlFifoDepth;
  uint32_t slot_cmd_fifo = kernel::kSlotCmdFifoDepth;
  uint32_t emit_cmd_fifo = kernel::kEmitCmdFifoDepth;
  uint32_t count_fifo = kernel::kCountFifoDepth;
  uint32_t beat_fifo = kernel::kBeatFifoDepth;
  // Clocks from an initiation to its FIFO write, FIFO included (estimates):
  // ingress registers the beat; classify runs the IPv4 checksum tree, the
  // key compare, the share multiply and the entry read; slot_state reads,
  // decides and queues the slot word; accumulate reads the slot memory
  // (kSlotReadLatency), adds (kAddLatency) and rounds; egress builds the
  // header beat.
  uint32_t ingress_depth = 2;
  uint32_t classify_depth = 14;
  uint32_t slot_state_depth = 5;
  uint32_t counters_depth = 3;
  uint32_t accumulate_depth = kernel::kSlotReadLatency + kernel::kAddLatency + 3;
  uint32_t egress_depth = 4;
  // The slot memory's loop: a word written by a beat can be read again, with
  // its new value forwarded from the write queue, by the beat `add_loop`
  // beats later (kAddLatency; the code skips the newest queued write).
  uint32_t add_loop = kernel::kAddLatency;
  uint32_t slot_fwd_depth = kernel::kSlotFwdDepth;
};

// One FIFO's figures over a run.
struct FifoStats {
  std::string name;
  uint32_t depth = 0;
  uint32_t max_occupancy = 0;  // entries held or reserved (in a producer's pipeline)
  uint64_t full_waits = 0;     // initiations of the producer that waited for room
};

struct Result {
  uint64_t frames = 0;
  uint64_t in_beats = 0;
  uint64_t out_beats = 0;
  uint64_t emitted = 0;          // frames sent (aggregates and pass-through)
  uint64_t first_accept = 0;     // clock of the first input beat
  uint64_t last_accept = 0;      // clock of the last input beat
  uint64_t end = 0;              // clock after which nothing is left in the region
  uint64_t offered_cycles = 0;   // clocks an input beat was offered
  uint64_t stall_cycles = 0;     // of which the beat was not taken
  uint64_t forwarded_reads = 0;  // slot-memory reads that took a queued write
  uint64_t loop_violations = 0;  // reads of a word fewer than add_loop beats after its write (must be 0)
  uint64_t queue_misses = 0;     // reads of a word written, not landed, and not in the queue (must be 0)
  std::vector<FifoStats> fifos;

  // Input beats per clock while the input was offered (1.0: never held back).
  double accept_rate() const {
    return in_beats == 0
               ? 0.0
               : static_cast<double>(in_beats) / static_cast<double>(last_accept - first_accept + 1);
  }
  // Input beats per clock over the whole run, filling and draining included.
  double sustained_rate() const {
    return in_beats == 0 ? 0.0 : static_cast<double>(in_beats) / static_cast<double>(end - first_accept);
  }
};

// A line-rate pattern of the RTL's co-simulation (tests/cosim/test_cosim.cpp,
// panama_cosim --bench): `jobs` entries of fan-in `fan_in`, every frame a
// PANAMA contribution of `frame_bytes` bytes; with `same_slot_runs` the
// fan_in contributions to a slot come back to back, otherwise the jobs are
// interleaved. `passthrough` replaces every frame by a non-PANAMA frame of
// the same size (not one of the RTL's patterns: the one-beat-frame limit).
struct Pattern {
  std::string name;
  uint32_t frame_bytes;
  uint32_t jobs;
  uint32_t fan_in;
  bool same_slot_runs;
  uint32_t frames;
  bool passthrough = false;
};

// The co-simulation's line-rate patterns: its benchmark's sizes with same-slot
// runs (8 jobs x 4 children), its interleaved sizes, its one-slot sizes (1
// job of fan-in 64), with the frame counts of its tests.
std::vector<Pattern> line_rate_patterns();

// Beats a frame of `bytes` bytes takes on the 512-bit stream.
inline uint32_t frame_beats(uint32_t bytes) {
  return bytes == 0 ? 1 : (bytes + 63) / 64;
}

// Runs `p` through the schedule.
Result simulate(const Pattern& p, const Params& params = Params());

}  // namespace panama::hls_schedule
