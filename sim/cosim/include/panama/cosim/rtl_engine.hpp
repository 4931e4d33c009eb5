// RtlEngine: the Verilated RTL engine (hw/rtl/panama_engine.sv) behind the
// interface of panama::Engine, so every harness that runs the HLS model (the
// pcap tool, the driver's simulation backend, the co-simulation) can run the
// RTL instead.
//
// reg_read / reg_write are real AXI4-Lite transactions; process_frame sends
// one frame through the 512-bit AXI4-Stream input, clocks the design until it
// is idle again and hands every emitted frame to the emit target
// (panama/emit_target.hpp). run() streams many frames back to back, the way a
// link delivers them, optionally with random tvalid gaps and tready
// back-pressure, and records cycle statistics.
//
// The engine's input is a MAC's: it takes every beat, and its receive frame
// FIFO drops a frame whole when it does not fit (DROP_RX_OVERFLOW) or when
// it carries the MAC-error flag (DROP_MAC_ERROR). By default the source
// here waits before each frame until the FIFO has room for it, so no frame
// is lost (process_frame always does); StreamShaping::mac_source makes it a
// MAC that never waits. A frame the FIFO dropped gets the outcome "dropped"
// with that counter, in its place in the list run() returns.
//
// The engine is built in one configuration (kTableEntries, kPacketSlots,
// kSlotWords); ModelEngine is the HLS model with the same parameters.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "panama/emit_target.hpp"
#include "panama/engine.hpp"

namespace panama::cosim {

// One emitted frame or tvalid/tready pattern knob per run.
struct StreamShaping {
  double in_gap_probability = 0.0;     // chance that a beat is held back for a clock
  double out_stall_probability = 0.0;  // chance that m_axis_tready is low in a clock
  uint64_t seed = 1;
  // false: before a frame's first beat the source waits until the receive
  // FIFO has room for the whole frame (status_rx_free), so nothing is
  // dropped for room; true: the source is a MAC and never waits, frames
  // that do not fit are dropped by the FIFO (DROP_RX_OVERFLOW).
  bool mac_source = false;
};

// Cycle figures of the runs since the last reset_stats().
struct CycleStats {
  uint64_t cycles = 0;                   // clocks spent streaming (run / process_frame)
  uint64_t in_offered_cycles = 0;        // clocks in which the source had a beat to send
  uint64_t in_beats = 0;                 // beats sent (the engine takes every beat)
  uint64_t in_stall_cycles = 0;          // had a beat but waited: no room in the receive FIFO
  uint64_t engine_stall_cycles = 0;      // the receive FIFO had a beat the input stage did not take, why:
  uint64_t stall_in_fifo = 0;            //   input FIFO full (store and forward)
  uint64_t stall_desc_fifo = 0;          //   descriptor FIFO full
  uint64_t stall_other = 0;              //   anything else (a register write drains the pipeline)
  uint64_t rx_drop_overflow = 0;         // frames the receive FIFO dropped: no room (DROP_RX_OVERFLOW)
  uint64_t rx_drop_bad = 0;              // frames the receive FIFO dropped: MAC error (DROP_MAC_ERROR)
  uint64_t out_beats = 0;                // beats sent
  uint64_t out_backpressure_cycles = 0;  // m_axis_tvalid high, tready low
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  // Per emitted frame: clocks from its input frame's first beat sent into
  // the engine (the receive FIFO) to its first beat out.
  std::vector<uint32_t> latencies;

  double beats_per_offered_cycle() const {
    return in_offered_cycles ? static_cast<double>(in_beats) / static_cast<double>(in_offered_cycles) : 0.0;
  }
};

class RtlEngine {
 public:
  static constexpr uint32_t kTableEntries = PANAMA_RTL_NUM_ENTRIES;
  static constexpr uint32_t kPacketSlots = PANAMA_RTL_NUM_SLOTS;
  static constexpr uint32_t kSlotWords = PANAMA_RTL_SLOT_WORDS;
  // Clocks of the slot-word read-add-write loop (panama_datapath ADD_LAT):
  // two contributions to one word are issued at least this far apart.
  static constexpr uint32_t kAddLoopClocks = 2;
  // The model of this engine: the same sizes and the same element types,
  // fp32, bf16 and fp16 (ELEM_TYPES 0xE).
  using ModelEngine = Engine<kTableEntries, kPacketSlots, kSlotWords, wire::kElemTypeMaskAll>;

  // `vcd_path`: write a waveform (only when built with PANAMA_RTL_TRACE).
  explicit RtlEngine(const std::string& vcd_path = "");
  ~RtlEngine();
  RtlEngine(const RtlEngine&) = delete;
  RtlEngine& operator=(const RtlEngine&) = delete;

  uint32_t reg_read(uint32_t addr);
  void reg_write(uint32_t addr, uint32_t value);

  // The same contract as Engine::process_frame; the outcome comes from the
  // engine's decision status port (or its receive FIFO's, for a frame it
  // dropped). `mac_error` drives s_axis_tuser[0] on one beat of the frame
  // (the MAC's bad-FCS flag). The source waits for room in the receive FIFO
  // (never needed for one frame), whatever the shaping. Emitted frames come
  // off the output stream: `out.buffer()` is never asked.
  EngineOutcome process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out, bool mac_error = false);

  // Streams `frames` back to back (shaped by set_shaping), waits until the
  // engine is idle, and returns one outcome per frame in order (a frame the
  // receive FIFO dropped: kDropped with kGcDropRxOverflow or
  // kGcDropMacError, entry -1). `mac_errors` is empty (no MAC errors) or
  // holds one flag per frame; a flagged frame carries s_axis_tuser[0] on one
  // beat chosen by the shaping generator.
  std::vector<EngineOutcome> run(const std::vector<std::vector<uint8_t>>& frames, EmitTarget& out,
                                 const std::vector<uint8_t>& mac_errors = {});

  void set_shaping(const StreamShaping& s);
  const CycleStats& stats() const;
  void reset_stats();
  uint64_t cycle() const;  // clocks since construction

  // Clocks without progress after which a run is declared hung (an error).
  void set_hang_limit(uint64_t cycles);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace panama::cosim
