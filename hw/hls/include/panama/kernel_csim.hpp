// C simulation of the Vitis kernel (kernel.hpp) behind the host engine's
// interface, so that the engine tests, the co-simulation and the benchmark
// can run the kernel's stages exactly where they run panama::Engine.
//
// KernelCsim<E, S, W> owns the state the top function keeps in static
// variables (rules, mailbox, slot memory) and calls kernel::run, the same
// DATAFLOW region the top calls. Frames go in as 512-bit beats (tkeep
// contiguous from lane 0, tuser bit 0 = mac_error on every beat) and come
// out as beats, which are checked for well-formed framing and reassembled
// for the emit target (a zero-length frame is one beat with tkeep 0, both
// ways).
// Register accesses go through the mailbox: ctrl_seq is
// changed and one invocation without a frame serves the access.
//
// Host-only (std::vector, exceptions); never part of the synthesized code.
#pragma once

#include <stdint.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "panama/emit_target.hpp"
#include "panama/engine_sizes.hpp"
#include "panama/kernel.hpp"

namespace panama {

template <uint32_t NumEntries = kEngineTableEntries, uint32_t NumSlots = kEnginePacketSlots,
          uint32_t SlotWords = kEngineSlotWords>
class KernelCsim {
 public:
  static constexpr uint32_t kTableEntries = NumEntries;
  static constexpr uint32_t kPacketSlots = NumSlots;
  static constexpr uint32_t kSlotWords = SlotWords;
  static constexpr uint32_t kSlotCapacity = SlotWords * wire::kLanes;

  KernelCsim()
      : slot_lo_(new hlsc::Word512[kernel::slot_mem_words(NumSlots, SlotWords)]),
        slot_hi_(new hlsc::Word512[kernel::slot_mem_words(NumSlots, SlotWords)]) {}

  uint32_t reg_read(uint32_t addr) {
    access(kernel::kCtrlOpRead, addr, 0);
    return rdata_;
  }
  void reg_write(uint32_t addr, uint32_t value) { access(kernel::kCtrlOpWrite, addr, value); }

  // Sends one frame through one invocation of the kernel; what the kernel
  // emits goes to `out` (its frames leave by the output stream: never into
  // out.buffer()).
  EngineOutcome process_frame(const uint8_t* frame, uint32_t len, EmitTarget& out, bool mac_error = false) {
    push_frame(frame, len, mac_error);
    invoke();
    if (!in_.empty()) throw std::logic_error("kernel C simulation: input beats left after an invocation");
    drain(out);
    return outcome_;
  }

  // Queues `len` bytes as beats on the input stream without invoking the
  // kernel (a zero-length frame is one beat with tkeep 0).
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
      in_.write(w);
    }
  }

  // One invocation of the kernel's region without a register access: it
  // reads one frame if the input holds one (otherwise it does nothing).
  void invoke() { invoke(seq_, 0, 0, 0); }

  // One invocation of the kernel's region with the given mailbox inputs.
  void invoke(uint32_t seq, uint32_t op, uint32_t addr, uint32_t wdata) {
    kernel::run<NumEntries, NumSlots, SlotWords>(in_, out_, seq, op, addr, wdata, &ack_, &rdata_, rules_,
                                                 mailbox_, slot_lo_.get(), slot_hi_.get(), outcome_);
  }

  // Reassembles the output beats into frames for `out`. Throws on framing
  // the kernel must never produce (tkeep not contiguous, a partial beat
  // before tlast, bytes outside tkeep not zero, a frame without tlast).
  void drain(EmitTarget& out) {
    std::vector<uint8_t> cur;
    while (!out_.empty()) {
      const hlsc::AxisWord w = out_.read();
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

  // The decide stage's outcome for the frame of the latest invocation.
  EngineOutcome last_outcome() const { return outcome_; }
  bool input_empty() const { return in_.empty(); }
  size_t output_beats() const { return out_.size(); }

  uint64_t global_counter(uint32_t c) const { return rules_.global_counter(c); }
  uint64_t entry_counter(uint32_t e, uint32_t c) const { return rules_.entry_counter(e, c); }
  uint16_t udp_port() const { return rules_.udp_port(); }

 private:
  void access(uint32_t op, uint32_t addr, uint32_t wdata) {
    ++seq_;
    invoke(seq_, op, addr, wdata);
    if (ack_ != seq_) throw std::logic_error("kernel C simulation: mailbox access not acknowledged");
  }

  hlsc::stream<hlsc::AxisWord> in_, out_;
  kernel::Rules<NumEntries, NumSlots, SlotWords> rules_;
  kernel::Mailbox mailbox_ = {0, 0};
  std::unique_ptr<hlsc::Word512[]> slot_lo_, slot_hi_;
  EngineOutcome outcome_ = {EngineAction::kPassed, 0, -1};
  uint32_t seq_ = 0;
  uint32_t ack_ = 0;
  uint32_t rdata_ = 0;
};

}  // namespace panama
