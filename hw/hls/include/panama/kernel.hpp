// The PANAMA engine as a Vitis HLS streaming kernel: four stages connected
// by hls::streams in a DATAFLOW region, each a loop over 512-bit words.
//
//   s_axis -> ingress --desc--> decide --cmd--> accumulate --beats--> egress -> m_axis
//               \--------frame beats----------->/    \--------emit cmd-------->/
//
// ingress     reads one frame from the input stream, one beat per clock:
//             keeps the first (header) beat, counts bytes from tkeep, ORs
//             tuser (MAC error), forwards up to kMaxFrameBeats beats into the
//             frame FIFO and, at tlast, sends the frame's descriptor.
// decide      serves the register mailbox, classifies the header beat
//             (wire::classify_frame on 64 bytes at constant offsets) and
//             applies EngineRules::decide, the same rules the host engine
//             runs: table lookup, child admission, generation window,
//             duplicates, fan-in, counters, emitted header.
// accumulate  one beat per clock: loads or adds the payload beats into the
//             slot memory and forwards what leaves the engine (the frame
//             itself when it passes, the new aggregate when the slot
//             completes, the stored aggregate for a retransmission). The slot
//             memory is two arrays of 512-bit words, `lo` and `hi`: fp32
//             accumulator word k of a bank holds elements 32k..32k+15 in lo
//             and 32k+16..32k+31 in hi, whatever the frame's type. An fp32
//             beat (16 elements, 16 fp32_add lanes) touches one word of one
//             array, alternating; a bf16/fp16 beat (32 elements) widens them
//             and touches the same word of both arrays (32 fp32_add lanes),
//             and an emitted 16-bit beat is both words rounded to the type.
// egress      builds the header beat of an emitted frame (wire::write_headers
//             at constant offsets) and writes beats with tkeep/tlast.
//
// A frame waits in the frame FIFO until its descriptor has been decided, so
// a frame is decided before any of its payload reaches the slot memory: a
// malformed or truncated frame never touches a slot. Everything else streams
// at one beat per clock. docs/hls.md lists each pragma's assumption and what
// Vitis HLS is expected to report for it.
//
// The stage functions and kernel_run are templates on the engine's sizes so
// that the C simulation can run the engine tests on small configurations;
// the Vitis top (src/engine_top.cpp) instantiates the default sizes.
#pragma once

#include <stdint.h>

#include "panama/elem16.hpp"
#include "panama/engine_rules.hpp"
#include "panama/fp32_add.hpp"
#include "panama/hls_compat.hpp"
#include "panama/wire.hpp"

namespace panama {
namespace kernel {

using hlsc::AxisWord;
using hlsc::Word512;

// ------------------------------------------------------------- geometry

constexpr uint32_t kBeatBytes = wire::kBeatBytes;                       // 64 bytes per beat
constexpr uint32_t kLanes = wire::kLanes;                               // 16 fp32 lanes per beat
constexpr uint32_t kLanes16 = 2 * kLanes;                               // 32 16-bit lanes per beat
constexpr uint32_t kMaxFrameBeats = wire::kMaxFrameBytes / kBeatBytes;  // 144
constexpr uint32_t kHeaderBeats = wire::kPayloadOffset / kBeatBytes;    // 1: payload starts at beat 1
constexpr uint64_t kFullKeep = ~uint64_t{0};
// An oversize frame's length as the descriptor reports it (any value above
// kMaxFrameBytes is dropped as oversize).
constexpr uint32_t kOversizeLen = wire::kMaxFrameBytes + 1;
// The frame FIFO holds a whole frame while it is decided, and the next one.
constexpr uint32_t kFrameFifoDepth = 2 * kMaxFrameBeats;
// Command FIFOs: a few frames of decisions in flight.
constexpr uint32_t kCmdFifoDepth = 4;

static_assert(wire::kMaxFrameBytes % kBeatBytes == 0, "frames are whole beats");
static_assert(wire::kPayloadOffset % kBeatBytes == 0, "payload starts on a beat boundary");
static_assert(kLanes * wire::kElemBytes == kBeatBytes, "one fp32 per lane");

// Control ops of the register mailbox: one definition, in the register map
// (docs/register-map.md, "Register mailbox").
constexpr uint32_t kCtrlOpRead = regmap::kMailboxOpRead;
constexpr uint32_t kCtrlOpWrite = regmap::kMailboxOpWrite;

// ------------------------------------------------------------- stream types

// ingress -> decide: one per invocation (valid = a frame was read).
struct FrameDesc {
  Word512 header;  // the frame's first beat
  uint32_t len;    // bytes (tkeep count), kOversizeLen above kMaxFrameBeats beats
  uint32_t beats;  // beats written to the frame FIFO, at most kMaxFrameBeats
  bool mac_error;  // OR of tuser bit 0 over the frame's beats
  bool valid;
};

// decide -> accumulate.
struct SlotCmd {
  SlotOp op;
  bool emit;               // forward the new aggregate (kLoad, kAdd)
  bool half;               // 16-bit elements (32 per beat, both arrays per beat)
  uint8_t elem_type;       // the payload's (kLoad, kAdd) or the aggregate's (kReemit) type
  uint32_t frame_beats;    // beats of this frame in the frame FIFO
  uint32_t payload_beats;  // payload beats loaded, added or re-emitted
  uint32_t base;           // first word of (slot, bank) in each array
  bool valid;
};

// decide -> egress.
struct EmitCmd {
  bool pass;         // forward the frame (frame_beats beats of len bytes)
  bool emit;         // send header `out` and its payload beats
  uint32_t len;      // bytes of the frame sent
  uint32_t beats;    // beats of the frame sent
  wire::Header out;  // emitted header
  bool valid;
};

// Register mailbox state (decide stage).
struct Mailbox {
  uint32_t served_seq;
  uint32_t last_rdata;
};

// ------------------------------------------------------------- helpers

inline uint32_t beats_for_bytes(uint32_t bytes) {
  return (bytes + kBeatBytes - 1) / kBeatBytes;
}
inline uint32_t beats_for_elems(uint32_t elems) {
  return (elems + kLanes - 1) / kLanes;
}
// Payload beats of `elems` elements of `elem_type` (16 or 32 per beat).
inline uint32_t beats_for_elems(uint32_t elems, uint8_t elem_type) {
  return wire::elem_bytes(elem_type) == 2 ? (elems + kLanes16 - 1) / kLanes16 : beats_for_elems(elems);
}
// Words of one (slot, bank) in each of the two slot-memory arrays.
constexpr uint32_t bank_words(uint32_t slot_words) {
  return (slot_words + 1) / 2;
}

// Number of set tkeep bits.
inline uint32_t keep_count(uint64_t keep) {
  PANAMA_HLS(INLINE)
  uint32_t n = 0;
  for (uint32_t i = 0; i < kBeatBytes; ++i) {
    PANAMA_HLS(UNROLL)
    n += static_cast<uint32_t>((keep >> i) & 1u);
  }
  return n;
}

// tkeep of a beat carrying `bytes` (0..64) valid bytes from lane 0.
inline uint64_t keep_mask(uint32_t bytes) {
  return bytes >= kBeatBytes ? kFullKeep : ((uint64_t{1} << bytes) - 1);
}

// The 16 lanes of `acc` plus those of `in`, one fp32_add per lane.
inline Word512 add_beat(const Word512& acc, const Word512& in) {
  PANAMA_HLS(INLINE)
  Word512 r;
  for (uint32_t l = 0; l < kLanes; ++l) {
    PANAMA_HLS(UNROLL)
    hlsc::word_set_lane(r, l, fp32_add(hlsc::word_lane(acc, l), hlsc::word_lane(in, l)));
  }
  return r;
}

// 16-bit lanes first..first+15 of a beat of type t, widened to 16 fp32 lanes.
inline Word512 widen_half_beat(uint8_t t, const Word512& in, uint32_t first) {
  PANAMA_HLS(INLINE)
  Word512 r;
  for (uint32_t l = 0; l < kLanes; ++l) {
    PANAMA_HLS(UNROLL)
    const uint16_t v = hlsc::word_half(in, first + l);
    hlsc::word_set_lane(
        r, l, t == static_cast<uint8_t>(wire::ElemType::kFloat16) ? fp16_to_fp32(v) : bf16_to_fp32(v));
  }
  return r;
}

// The 16 fp32 lanes of `lo` and of `hi` rounded to type t: one beat of 32.
inline Word512 round_beat(uint8_t t, const Word512& lo, const Word512& hi) {
  PANAMA_HLS(INLINE)
  Word512 r;
  for (uint32_t l = 0; l < kLanes; ++l) {
    PANAMA_HLS(UNROLL)
    hlsc::word_set_half(r, l, elem_round16(t, hlsc::word_lane(lo, l)));
    hlsc::word_set_half(r, kLanes + l, elem_round16(t, hlsc::word_lane(hi, l)));
  }
  return r;
}

// ------------------------------------------------------------- stages

// Reads one frame (up to tlast) when the input holds one.
inline void ingress(hlsc::stream<AxisWord>& s_axis, hlsc::stream<FrameDesc>& desc_out,
                    hlsc::stream<Word512>& frame_out) {
  FrameDesc d;
  d.len = 0;
  d.beats = 0;
  d.mac_error = false;
  d.valid = false;
  if (s_axis.empty()) {
    desc_out.write(d);
    return;
  }
  uint32_t bytes = 0;
  uint32_t beats = 0;  // saturates at kMaxFrameBeats + 1
  bool last = false;
  PANAMA_LOOP(ingress_beats)
  while (!last) {
    PANAMA_HLS(PIPELINE II = 1)
    const AxisWord w = s_axis.read();
    const Word512 data = hlsc::axis_data(w);
    if (beats == 0) d.header = data;
    if (beats < kMaxFrameBeats) {
      frame_out.write(data);
      bytes += keep_count(hlsc::axis_keep_bits(w));
      ++beats;
    } else {
      beats = kMaxFrameBeats + 1;  // oversize: the rest is consumed, not kept
    }
    d.mac_error = d.mac_error || hlsc::axis_user(w);
    last = hlsc::axis_last(w);
  }
  d.len = beats > kMaxFrameBeats ? kOversizeLen : bytes;
  d.beats = beats > kMaxFrameBeats ? kMaxFrameBeats : beats;
  d.valid = true;
  desc_out.write(d);
}

// Serves the mailbox, then decides the frame of this invocation.
template <class Rules, uint32_t SlotWords>
void decide(Rules& rules, Mailbox& mailbox, uint32_t ctrl_seq, uint32_t ctrl_op, uint32_t ctrl_addr,
            uint32_t ctrl_wdata, uint32_t* ctrl_ack, uint32_t* ctrl_rdata, hlsc::stream<FrameDesc>& desc_in,
            hlsc::stream<SlotCmd>& slot_out, hlsc::stream<EmitCmd>& emit_out, EngineOutcome& outcome) {
  if (ctrl_seq != mailbox.served_seq) {
    if (ctrl_op == kCtrlOpWrite) {
      rules.reg_write(ctrl_addr, ctrl_wdata);
    } else if (ctrl_op == kCtrlOpRead) {
      mailbox.last_rdata = rules.reg_read(ctrl_addr);
    }
    mailbox.served_seq = ctrl_seq;
  }
  *ctrl_ack = mailbox.served_seq;
  *ctrl_rdata = mailbox.last_rdata;

  const FrameDesc d = desc_in.read();
  SlotCmd sc{};
  EmitCmd ec{};
  sc.valid = d.valid;
  ec.valid = d.valid;
  if (!d.valid) {
    slot_out.write(sc);
    emit_out.write(ec);
    return;
  }

  uint8_t header[kBeatBytes];
  PANAMA_HLS(ARRAY_PARTITION variable = header type = complete)
  for (uint32_t i = 0; i < kBeatBytes; ++i) {
    PANAMA_HLS(UNROLL)
    header[i] = hlsc::word_byte(d.header, i);
  }
  wire::Header h{};
  const bool classify = !d.mac_error && d.len <= wire::kMaxFrameBytes;
  const wire::FrameClass cls =
      classify ? wire::classify_frame(header, d.len, rules.udp_port(), h, Rules::kElemTypes)
               : wire::FrameClass::kNotPanama;
  FrameDecision fd{};
  rules.decide(cls, h, d.len, d.mac_error, fd);
  outcome = fd.outcome;

  sc.op = fd.op;
  sc.emit = fd.emit;
  sc.frame_beats = d.beats;
  sc.elem_type = fd.op == SlotOp::kReemit ? fd.out.elem_type : fd.elem_type;
  sc.half = wire::elem_bytes(sc.elem_type) == 2;
  sc.payload_beats =
      beats_for_elems(fd.op == SlotOp::kReemit ? fd.out.elem_count : fd.elem_count, sc.elem_type);
  sc.base = (2 * fd.slot + fd.bank) * bank_words(SlotWords);
  slot_out.write(sc);

  ec.pass = fd.op == SlotOp::kPass;
  ec.emit = fd.emit;
  ec.len = ec.pass ? d.len : wire::frame_length(fd.out.elem_count, fd.out.elem_type);
  ec.beats = ec.pass ? d.beats : kHeaderBeats + beats_for_elems(fd.out.elem_count, fd.out.elem_type);
  ec.out = fd.out;
  emit_out.write(ec);
}

// Applies the slot command to the frame's beats and the slot memory (arrays
// `lo` and `hi`, see the top of this file).
inline void accumulate(Word512* slot_lo, Word512* slot_hi, hlsc::stream<SlotCmd>& cmd_in,
                       hlsc::stream<Word512>& frame_in, hlsc::stream<Word512>& beats_out) {
  const SlotCmd c = cmd_in.read();
  if (!c.valid) return;
  const bool payload_op = c.op == SlotOp::kLoad || c.op == SlotOp::kAdd;
  PANAMA_LOOP(accumulate_beats)
  for (uint32_t b = 0; b < c.frame_beats; ++b) {
    PANAMA_HLS(PIPELINE II = 1)
    // Payload beat p of an fp32 frame reads and writes word base + p/2 of
    // array p%2 only; of a 16-bit frame, word base + p of both arrays. No two
    // beats of a frame touch the same word of an array, and frames follow
    // each other only after this loop has finished, so the read-modify-write
    // carries no dependence from one iteration to the next.
    PANAMA_HLS(DEPENDENCE variable = slot_lo type = inter dependent = false)
    PANAMA_HLS(DEPENDENCE variable = slot_hi type = inter dependent = false)
    const Word512 in = frame_in.read();
    const bool in_payload = payload_op && b >= kHeaderBeats && b < kHeaderBeats + c.payload_beats;
    Word512 result = in;
    if (in_payload) {
      const uint32_t p = b - kHeaderBeats;
      if (c.half) {
        const uint32_t addr = c.base + p;
        Word512 lo = widen_half_beat(c.elem_type, in, 0);
        Word512 hi = widen_half_beat(c.elem_type, in, kLanes);
        if (c.op == SlotOp::kAdd) {
          lo = add_beat(slot_lo[addr], lo);
          hi = add_beat(slot_hi[addr], hi);
        }
        slot_lo[addr] = lo;
        slot_hi[addr] = hi;
        result = round_beat(c.elem_type, lo, hi);
      } else {
        const uint32_t addr = c.base + p / 2;
        Word512* mem = (p & 1u) ? slot_hi : slot_lo;
        if (c.op == SlotOp::kAdd) result = add_beat(mem[addr], in);
        mem[addr] = result;
      }
    }
    // One stream write per iteration: the frame itself, or the new aggregate.
    if (c.op == SlotOp::kPass || (in_payload && c.emit)) beats_out.write(result);
  }
  if (c.op != SlotOp::kReemit) return;
  PANAMA_LOOP(reemit_beats)
  for (uint32_t w = 0; w < c.payload_beats; ++w) {
    PANAMA_HLS(PIPELINE II = 1)
    if (c.half) {
      beats_out.write(round_beat(c.elem_type, slot_lo[c.base + w], slot_hi[c.base + w]));
    } else {
      beats_out.write((w & 1u) ? slot_hi[c.base + w / 2] : slot_lo[c.base + w / 2]);
    }
  }
}

// The header beat of an emitted frame.
inline Word512 header_beat(const wire::Header& h) {
  uint8_t bytes[kBeatBytes];
  PANAMA_HLS(ARRAY_PARTITION variable = bytes type = complete)
  wire::write_headers(bytes, h);
  Word512 w;
  for (uint32_t i = 0; i < kBeatBytes; ++i) {
    PANAMA_HLS(UNROLL)
    hlsc::word_set_byte(w, i, bytes[i]);
  }
  return w;
}

// Writes the frame this invocation sends, if any, as AXI4-Stream beats:
// tkeep contiguous from lane 0, only the last beat partial, bytes outside
// tkeep zero.
inline void egress(hlsc::stream<EmitCmd>& cmd_in, hlsc::stream<Word512>& beats_in,
                   hlsc::stream<AxisWord>& m_axis) {
  const EmitCmd c = cmd_in.read();
  if (!c.valid || (!c.pass && !c.emit)) return;
  const Word512 hdr = header_beat(c.out);
  uint32_t remaining = c.len;
  PANAMA_LOOP(egress_beats)
  for (uint32_t b = 0; b < c.beats; ++b) {
    PANAMA_HLS(PIPELINE II = 1)
    const Word512 data = (c.emit && b < kHeaderBeats) ? hdr : beats_in.read();
    const uint32_t valid = remaining >= kBeatBytes ? kBeatBytes : remaining;
    remaining -= valid;
    AxisWord w;
    Word512 out;
    for (uint32_t i = 0; i < kBeatBytes; ++i) {
      PANAMA_HLS(UNROLL)
      hlsc::word_set_byte(out, i, i < valid ? hlsc::word_byte(data, i) : 0);
    }
    hlsc::axis_set_data(w, out);
    hlsc::axis_set_keep_bits(w, keep_mask(valid));
    hlsc::axis_set_last(w, b + 1 == c.beats);
    hlsc::axis_set_user(w, false);
    m_axis.write(w);
  }
}

// ------------------------------------------------------------- the region

// The rules the decide stage keeps (table, slot generations, counters,
// registers) for an engine of these sizes; the slot memory beside them is
// two arrays of slot_mem_words() words of 512 bits each (NumSlots x 2 banks
// x bank_words(SlotWords)): SlotWords x 16 fp32 accumulators per bank.
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords>
using Rules = EngineRules<NumEntries, NumSlots, SlotWords * kLanes, wire::kElemTypeMaskAll>;

constexpr uint32_t slot_mem_words(uint32_t num_slots, uint32_t slot_words) {
  return num_slots * 2 * bank_words(slot_words);
}

// One invocation: at most one register access and one frame.
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords>
void run(hlsc::stream<AxisWord>& s_axis, hlsc::stream<AxisWord>& m_axis, uint32_t ctrl_seq, uint32_t ctrl_op,
         uint32_t ctrl_addr, uint32_t ctrl_wdata, uint32_t* ctrl_ack, uint32_t* ctrl_rdata,
         Rules<NumEntries, NumSlots, SlotWords>& rules, Mailbox& mailbox, Word512* slot_lo, Word512* slot_hi,
         EngineOutcome& outcome) {
  PANAMA_HLS(DATAFLOW)
  hlsc::stream<FrameDesc> desc;
  hlsc::stream<Word512> frame;
  hlsc::stream<SlotCmd> slot_cmd;
  hlsc::stream<EmitCmd> emit_cmd;
  hlsc::stream<Word512> beats;
  PANAMA_HLS(STREAM variable = frame depth = 288)  // kFrameFifoDepth
  PANAMA_HLS(STREAM variable = beats depth = 4)
  PANAMA_HLS(STREAM variable = desc depth = 4)      // kCmdFifoDepth
  PANAMA_HLS(STREAM variable = slot_cmd depth = 4)  // kCmdFifoDepth
  PANAMA_HLS(STREAM variable = emit_cmd depth = 4)  // kCmdFifoDepth

  ingress(s_axis, desc, frame);
  decide<Rules<NumEntries, NumSlots, SlotWords>, SlotWords>(rules, mailbox, ctrl_seq, ctrl_op, ctrl_addr,
                                                            ctrl_wdata, ctrl_ack, ctrl_rdata, desc, slot_cmd,
                                                            emit_cmd, outcome);
  accumulate(slot_lo, slot_hi, slot_cmd, frame, beats);
  egress(emit_cmd, beats, m_axis);
}

static_assert(kFrameFifoDepth == 288, "the frame FIFO pragma in run() says 288");
static_assert(kCmdFifoDepth == 4, "the command FIFO pragmas in run() say 4");

}  // namespace kernel
}  // namespace panama
