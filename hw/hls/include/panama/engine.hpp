// The PANAMA aggregation engine for hosts: the golden model that the
// software PSwitch, the driver's simulation device, the pcap tool, the
// co-simulation reference and the network simulator run.
//
// One Engine instance is one bump-in-the-wire accelerator. It classifies each
// frame (wire.hpp), passes non-PANAMA frames and result-down frames through
// untouched, drops and counts malformed PANAMA frames without touching any
// slot, and adds aggregate-up / retransmission contributions element-wise
// (fp32_add.hpp) into the slot of their (job, tree) table entry. When a slot
// has `fan_in` distinct children it emits one packet: a result-down at the
// root, otherwise an aggregate-up to the parent. The emitted IPv4 ECN field is
// the OR of the contributions', and its cwnd_cap is the minimum of theirs and
// the entry's slot count (its share of the packet memory).
//
// Slots and generations (docs/protocol.md has the full rules): sequence s of
// an entry with share Q uses slot base + s % Q, generation g = s / Q, and bank
// g % 2 of that slot. A slot admits its newest generation `top`, the one
// before it (for retransmissions and duplicates), and `top + 1` once the bank
// it reuses holds an emitted generation; anything else is outside the window.
//
// Every one of those rules, the counters and the register interface
// (AXI4-Lite shaped, offsets of include/panama/regmap.hpp, the map the RTL
// engine implements too) live in EngineRules (engine_rules.hpp), whose three
// pieces the Vitis kernel's classify, slot_state and counters processes
// (kernel.hpp) use as well. This class adds the
// host datapath: frames as byte arrays, the packet memory as fp32 words, and
// runs of elements added with fp32_add_run (SSE on x86-64 hosts, bit-identical
// to the integer adder the kernel synthesizes); bf16 and fp16 payloads are
// widened to fp32 as they are loaded or added and rounded back when an
// aggregate is emitted (elem16.hpp, vector conversions where the CPU has
// them, bit-identical to the integer conversions).
//
// Template parameters size the memories at compile time; nothing is allocated
// at run time. The object is large (the packet memory lives inside it), so
// host code allocates it on the heap.
#pragma once

#include <stdint.h>

#include <type_traits>

#include "panama/elem16.hpp"
#include "panama/emit_target.hpp"
#include "panama/engine_rules.hpp"
#include "panama/engine_sizes.hpp"
#include "panama/fp32_add.hpp"
#include "panama/regmap.hpp"
#include "panama/wire.hpp"

namespace panama {

// ElemTypes: the element types it sums (wire::kElemTypeMask*); all three by
// default (as the HLS kernel and the RTL engine), fp32 only where it stands
// for an engine that sums only fp32.
template <uint32_t NumEntries = kEngineTableEntries, uint32_t NumSlots = kEnginePacketSlots,
          uint32_t SlotWords = kEngineSlotWords, uint32_t ElemTypes = wire::kElemTypeMaskAll>
class Engine {
 public:
  static constexpr uint32_t kTableEntries = NumEntries;
  static constexpr uint32_t kPacketSlots = NumSlots;
  static constexpr uint32_t kSlotWords = SlotWords;                    // 512-bit words per slot
  static constexpr uint32_t kSlotCapacity = SlotWords * wire::kLanes;  // elements per slot, any type
  static constexpr uint32_t kMaxFanIn = 64;

  static constexpr uint32_t kElemTypes = ElemTypes;

  using Rules = EngineRules<NumEntries, NumSlots, kSlotCapacity, ElemTypes>;

  // The packet memory is left uninitialised: a bank is always loaded by its
  // first contribution before it is read.
  Engine() {}

  // ------------------------------------------------------------ control

  uint32_t reg_read(uint32_t addr) { return rules_.reg_read(addr); }
  void reg_write(uint32_t addr, uint32_t value) { rules_.reg_write(addr, value); }

  // ------------------------------------------------------------ datapath

  // Processes one frame of `len` bytes. Frames the engine sends (the frame
  // itself when passed through, or an emitted aggregate) go to `out`, an
  // EmitTarget (emit_target.hpp), with no ports; the pointer is valid during
  // the call only. An aggregate is written into out.buffer(len) when the
  // target offers one, so a host that sends from buffers of its own (mbufs)
  // needs no copy. `mac_error` is the MAC's verdict on the frame (bad FCS or
  // PHY error, the input stream's tuser bit): such a frame is dropped whole
  // and counted before anything reads it, also with the engine disabled, so
  // a corrupt frame is never summed nor forwarded with a fresh FCS.
  //
  // The target is called through its own type: a `final` target class (a
  // counter, a collector) is called directly, an EmitTarget& through its
  // virtual functions.
  template <class Target>
  EngineOutcome process_frame(const uint8_t* frame, uint32_t len, Target& out, bool mac_error = false) {
    return process_frame_parts(frame, nullptr, len, out, mac_error);
  }

  // The same for a frame held in two pieces: `head` holds its first
  // min(len, kPayloadOffset) bytes (the headers), `payload` the rest (the
  // elements), as a host sending from the user's memory chains them. Null
  // `payload`: the frame is contiguous at `head`.
  template <class Target>
  EngineOutcome process_frame_parts(const uint8_t* head, const uint8_t* payload, uint32_t len, Target& out,
                                    bool mac_error = false) {
    static_assert(std::is_base_of<EmitTarget, Target>::value, "frames go to an EmitTarget (emit_target.hpp)");
    const bool split = payload != nullptr && len > wire::kPayloadOffset;
    if (!split) payload = len > wire::kPayloadOffset ? head + wire::kPayloadOffset : nullptr;
    wire::Header h{};
    const wire::FrameClass cls = (mac_error || len > wire::kMaxFrameBytes)
                                     ? wire::FrameClass::kNotPanama
                                     : wire::classify_frame(head, len, rules_.udp_port(), h, ElemTypes);
    FrameDecision d;
    rules_.decide(cls, h, len, mac_error, d);
    switch (d.op) {
      case SlotOp::kNone:
      case SlotOp::kReemit:
        break;
      case SlotOp::kPass:
        if (split) {  // passed on whole: one piece
          wire::join_frame(out_, head, payload, len);
          out.emit(out_, len, Ports{});
        } else {
          out.emit(head, len, Ports{});
        }
        break;
      // The rules only load or add frames that hold elem_count elements; the
      // length test states it where the payload is read.
      case SlotOp::kLoad:
        if (len >= wire::frame_length(d.elem_count, d.elem_type) && payload) {
          elem_load_run(d.elem_type, data_[d.slot][d.bank], payload, d.elem_count);
        }
        break;
      case SlotOp::kAdd:
        if (len >= wire::frame_length(d.elem_count, d.elem_type) && payload) {
          elem_add_run(d.elem_type, data_[d.slot][d.bank], payload, d.elem_count);
        }
        break;
    }
    if (d.emit) emit(d.out, data_[d.slot][d.bank], out);
    return d.outcome;
  }

  // A frame its receive frame FIFO dropped in front of the engine because it
  // did not fit (EngineRules::count_rx_overflow): counted, nothing else.
  EngineOutcome count_rx_overflow() { return rules_.count_rx_overflow(); }

  // Convenience for hosts and tests: the value of a counter without going
  // through the two-word register protocol.
  uint64_t global_counter(uint32_t c) const { return rules_.global_counter(c); }
  uint64_t entry_counter(uint32_t e, uint32_t c) const { return rules_.entry_counter(e, c); }
  uint16_t udp_port() const { return rules_.udp_port(); }

 private:
  template <class Target>
  void emit(const wire::Header& h, const uint32_t* d, Target& out) {
    const uint32_t len = wire::frame_length(h.elem_count, h.elem_type);
    uint8_t* b = out.buffer(len);
    uint8_t* o = b ? b : out_;
    wire::write_headers(o, h);
    elem_store_run(h.elem_type, o + wire::kPayloadOffset, d, h.elem_count);
    out.emit(o, len, Ports{});
  }

  Rules rules_;

  // Packet memory: two banks (generations) of kSlotCapacity fp32 accumulators per slot.
  uint32_t data_[NumSlots][2][kSlotCapacity];

  // Frame being emitted.
  uint8_t out_[wire::kMaxFrameBytes];
};

// The configuration the cards are built in (engine_sizes.hpp), which the
// software PSwitch and the tools use.
using DefaultEngine = Engine<>;

}  // namespace panama
