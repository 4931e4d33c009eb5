// C simulation of the Vitis kernel (kernel.hpp) behind the host engine's
// interface, so that the engine tests, the co-simulation and the benchmark
// can run the kernel's processes exactly where they run panama::Engine.
//
// KernelCsim<E, S, W> owns what the top function's processes keep in static
// variables (each process's state, the slot memory) and the streams between
// them, wired as src/engine_top.cpp wires them. The region is free-running:
// a step calls every process once (kernel.hpp's step functions: one
// initiation each), and the harness steps it until no process does
// anything. Frames go in as 512-bit beats (tkeep contiguous from lane 0,
// tuser bit 0 = mac_error on every beat) and come out as beats, which are
// checked for well-formed framing and reassembled for the emit target (a
// zero-length frame is one beat with tkeep 0, both ways). Register accesses
// go through the mailbox: ctrl_seq is changed and the region runs until the
// answer is back.
//
// What it shows: the order of everything (frames overlapping in the region,
// register accesses in order with frames, writes reaching the slot memory,
// slot state and counters late and forwarded to the reads meanwhile). What
// it cannot show: time. The schedule model (sim/hls_schedule) simulates the
// region's processes in clocks.
//
// Host-only (std::vector, exceptions); never part of the synthesized code.
#pragma once

#include <stdint.h>

#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "panama/emit_target.hpp"
#include "panama/engine_sizes.hpp"
#include "panama/kernel.hpp"

namespace panama {

// ElemTypes: the element types the kernel sums (all three, as the card is
// built, and as the RTL engine its co-simulation compares with); fp32 only
// stands for an engine that drops 16-bit frames.
template <uint32_t NumEntries = kEngineTableEntries, uint32_t NumSlots = kEnginePacketSlots,
          uint32_t SlotWords = kEngineSlotWords, uint32_t ElemTypes = wire::kElemTypeMaskAll>
class KernelCsim {
 public:
  static constexpr uint32_t kTableEntries = NumEntries;
  static constexpr uint32_t kPacketSlots = NumSlots;
  static constexpr uint32_t kSlotWords = SlotWords;
  static constexpr uint32_t kSlotCapacity = SlotWords * wire::kLanes;
  static constexpr uint32_t kElemTypes = ElemTypes;

  KernelCsim()
      : slot_lo_(new hlsc::Word512[kernel::slot_mem_words(NumSlots, SlotWords)]),
        slot_hi_(new hlsc::Word512[kernel::slot_mem_words(NumSlots, SlotWords)]) {}

  uint32_t reg_read(uint32_t addr) {
    access(kernel::kCtrlOpRead, addr, 0);
    return rdata_;
  }
  void reg_write(uint32_t addr, uint32_t value) { access(kernel::kCtrlOpWrite, addr, value); }

  // Sends one frame through the kernel and runs it until it is idle; what
  // the kernel emits goes to `out` (its frames leave by the output stream:
  // never into out.buffer()).
  EngineOutcome process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out, bool mac_error = false) {
    push_frame(frame, len, mac_error);
    invoke();
    drain(out);
    return last_outcome();
  }

  // Queues `len` bytes as beats in front of the kernel's input without
  // running it (a zero-length frame is one beat with tkeep 0).
  void push_frame(const uint8_t* frame, uint32_t len, bool mac_error) {
    const uint32_t beats = len == 0 ? 1 : kernel::beats_for_bytes(len);
    for (uint32_t b = 0; b < beats; ++b) {
      hlsc::AxisWord w{};
      for (uint32_t i = 0; i < kernel::kBeatBytes; ++i) {
        const uint32_t pos = b * kernel::kBeatBytes + i;
        w.data[i] = pos < len ? frame[pos] : 0;
      }
      const uint32_t rest = len - b * kernel::kBeatBytes;
      w.keep = len == 0 ? 0 : kernel::keep_mask(rest);
      w.last = b + 1 == beats;
      w.user = mac_error ? 1 : 0;
      queued_.push_back(w);
    }
  }

  // Hands the next queued frame (if any) to the kernel's input stream and
  // runs the region until it is idle: the frame is decided and its output
  // (if any) is in the output stream. Without a queued frame it only runs
  // the region (which then does nothing).
  void invoke() { invoke(seq_, 0, 0, 0); }

  // The same with the given mailbox inputs.
  void invoke(uint32_t seq, uint32_t op, uint32_t addr, uint32_t wdata) {
    while (!queued_.empty()) {
      const hlsc::AxisWord w = queued_.front();
      queued_.pop_front();
      s_axis_.write(w);
      if (w.last) break;
    }
    run_until_idle(seq, op, addr, wdata);
    if (!s_axis_.empty()) throw std::logic_error("kernel C simulation: input beats left in an idle region");
  }

  // Reassembles the output beats into frames for `out`. Throws on framing
  // the kernel must never produce (tkeep not contiguous, a partial beat
  // before tlast, bytes outside tkeep not zero, a frame without tlast).
  void drain(EmitTarget& out) {
    std::vector<uint8_t> cur;
    while (!m_axis_.empty()) {
      const hlsc::AxisWord w = m_axis_.read();
      uint32_t n = 0;
      while (n < kernel::kBeatBytes && ((w.keep >> n) & 1u)) ++n;
      // A zero-length frame is one beat with tkeep 0 and tlast, as it came in.
      const bool empty_frame = n == 0 && w.last && cur.empty();
      if (w.keep != kernel::keep_mask(n) || (n == 0 && !empty_frame) ||
          (!w.last && n != kernel::kBeatBytes)) {
        throw std::logic_error("kernel C simulation: malformed output beat, tkeep " + std::to_string(w.keep));
      }
      for (uint32_t i = n; i < kernel::kBeatBytes; ++i) {
        if (w.data[i] != 0) throw std::logic_error("kernel C simulation: nonzero byte outside tkeep");
      }
      cur.insert(cur.end(), w.data, w.data + n);
      if (w.last) {
        out.emit(cur.data(), static_cast<uint32_t>(cur.size()), Ports{});
        cur.clear();
      }
    }
    if (!cur.empty()) throw std::logic_error("kernel C simulation: output frame without tlast");
  }

  // The outcome of the latest frame the counter process counted: after
  // invoke(), the frame it handed in.
  EngineOutcome last_outcome() const { return counters_.last_outcome; }
  // No frame queued in front of the kernel.
  bool input_empty() const { return queued_.empty(); }
  size_t output_beats() const { return m_axis_.size(); }

  uint64_t global_counter(uint32_t c) const { return counters_.bank.global_counter(c); }
  // An entry's counter as the counter process sees it: through its queue of
  // writes not yet in the counter memory.
  uint64_t entry_counter(uint32_t e, uint32_t c) const {
    if (e >= NumEntries || c >= regmap::kNumEntryCounters) return 0;
    kernel::EntryCounts row;
    for (uint32_t i = 0; i < regmap::kNumEntryCounters; ++i) row.c[i] = counters_.bank.entry_ctr_[e][i];
    counters_.queue.forward(e, 0, row);
    return row.c[c];
  }
  uint16_t udp_port() const { return classify_.table.udp_port(); }

  // Calls every process once, in the region's order; true when any did
  // something.
  bool step(uint32_t seq, uint32_t op, uint32_t addr, uint32_t wdata) {
    using namespace kernel;
    bool busy = false;
    busy |= mailbox_in_step(mailbox_in_, seq, op, addr, wdata, reg_req_);
    busy |= ingress_step(ingress_, s_axis_, desc_, frame_);
    busy |= classify_step(classify_, reg_req_, desc_, ctrl_);
    busy |= slot_state_step<NumSlots, SlotWords>(slot_state_, ctrl_, slot_cmd_, emit_cmd_, count_);
    busy |= counters_step(counters_, count_, reg_resp_);
    busy |= mailbox_out_step(mailbox_out_, reg_resp_, &ack_, &rdata_);
    busy |= accumulate_step(accumulate_, slot_lo_.get(), slot_hi_.get(), slot_cmd_, frame_, beats_);
    busy |= egress_step(egress_, emit_cmd_, beats_, m_axis_);
    return busy;
  }

 private:
  void run_until_idle(uint32_t seq, uint32_t op, uint32_t addr, uint32_t wdata) {
    while (step(seq, op, addr, wdata)) {
    }
  }

  void access(uint32_t op, uint32_t addr, uint32_t wdata) {
    ++seq_;
    run_until_idle(seq_, op, addr, wdata);
    if (ack_ != seq_) throw std::logic_error("kernel C simulation: mailbox access not acknowledged");
  }

  // Input beats not yet handed to the kernel.
  std::deque<hlsc::AxisWord> queued_;
  // The region's streams.
  hlsc::stream<hlsc::AxisWord> s_axis_, m_axis_;
  hlsc::stream<kernel::RegReq> reg_req_;
  hlsc::stream<kernel::RegResp> reg_resp_;
  hlsc::stream<kernel::FrameDesc> desc_;
  hlsc::stream<hlsc::Word512> frame_, beats_;
  hlsc::stream<kernel::CtrlToken> ctrl_;
  hlsc::stream<kernel::SlotCmd> slot_cmd_;
  hlsc::stream<kernel::EmitCmd> emit_cmd_;
  hlsc::stream<kernel::CountToken> count_;
  // The processes' state.
  kernel::MailboxInState mailbox_in_{};
  kernel::MailboxOutState mailbox_out_{};
  kernel::IngressState ingress_{};
  kernel::ClassifyState<NumEntries, NumSlots, SlotWords, ElemTypes> classify_{};
  kernel::SlotStageState<NumSlots> slot_state_{};
  kernel::CounterStageState<NumEntries> counters_{};
  kernel::AccumulateState accumulate_{};
  kernel::EgressState egress_{};
  std::unique_ptr<hlsc::Word512[]> slot_lo_, slot_hi_;
  // The mailbox as the host sees it.
  uint32_t seq_ = 0;
  uint32_t ack_ = 0;
  uint32_t rdata_ = 0;
};

}  // namespace panama
