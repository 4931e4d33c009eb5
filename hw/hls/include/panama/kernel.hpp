// The PANAMA engine as a Vitis HLS streaming kernel: eight free-running
// processes connected by hls::streams, each owning the state it uses and
// nothing else (docs/hls.md draws the graph and lists every pragma's
// assumption).
//
//   ctrl_* ► mailbox_in ─req─► classify ─ctrl─► slot_state ─count─► counters ─resp─► mailbox_out ► ctrl_ack
//   s_axis ► ingress ──desc──────┘                 │    │
//              └─── frame beats ──► accumulate ◄───┘    └── emit cmd ──► egress ► m_axis
//                                        └───────────── beats ────────────┘
//
// mailbox_in   turns a change of ctrl_seq into a register request.
// ingress      one beat per call: counts bytes from tkeep, ORs tuser (MAC
//              error), keeps the header beat, writes up to kMaxFrameBeats
//              beats into the frame FIFO and, at tlast, the frame's
//              descriptor.
// classify     one frame (or register request) per call, pipelined at
//              II=1: wire::classify_frame on the header beat at constant
//              offsets, the (job, tree) lookup on the table's key fields
//              (all entries at once), child admission, the slot and
//              generation (a multiply, no divider): RuleTable::front. Owns
//              the table and the control registers; serves their register
//              accesses.
// slot_state   one frame per two clocks (II=2): the slot's generation and
//              bank state, read, decided (SlotTable::decide_meta) and
//              written back, forwarded to the next frames while its write
//              is in flight; sends the accumulate and egress commands and
//              the frame's counter increments. Owns the slot state.
// counters     one token per call: the frame's increments (a bit per
//              counter), or a register access to the counters. Owns the
//              counters and the 64-bit read latch; answers every register
//              request in order.
// mailbox_out  returns the last answer in ctrl_ack / ctrl_rdata.
// accumulate   one beat per call: loads or adds the payload beats into the
//              slot memory, forwards what leaves the engine (the frame when
//              it passes, the new aggregate, the stored aggregate for a
//              retransmission). The slot memory is two arrays of 512-bit
//              words, `lo` and `hi`: fp32 accumulator word k of a bank holds
//              elements 32k..32k+15 in lo and 32k+16..32k+31 in hi, whatever
//              the frame's type. An fp32 beat (16 elements, 16 fp32_add
//              lanes) touches one word of one array, alternating; a
//              bf16/fp16 beat (32 elements) widens them and touches the
//              same word of both arrays (32 fp32_add lanes), and an emitted
//              16-bit beat is both words rounded to the type. Writes reach
//              the arrays kSlotFwdDepth beats late; every read takes the
//              newest write still queued for its word (read-after-write
//              forwarding, as the RTL's data pipeline does).
// egress       one beat per call: the emitted frame's header beat
//              (wire::write_headers at constant offsets), then beats with
//              contiguous tkeep and tlast.
//
// A frame waits in the frame FIFO until it has been decided, so no beat of
// it reaches the slot memory before its length, header and IPv4 checksum
// have been checked: a malformed or truncated frame never touches a slot.
// Frames overlap everywhere: while one frame's beats are accumulated, the
// next ones are read, classified and decided.
//
// Each process is a step function here: one call is what the hardware does
// in one initiation of the process's pipeline (a beat, a frame, a token, or
// nothing when its input is empty: every read is non-blocking). A step
// returns whether it did anything, which the C simulation uses to run the
// region until it is idle. The Vitis top (src/engine_top.cpp) wraps each
// step in a process function holding the state as a static variable; the C
// simulation (kernel_csim.hpp) holds the states as members, several kernels
// side by side.
//
// The steps are templates on the engine's sizes so that the C simulation can
// run the engine tests on small configurations; the Vitis top instantiates
// the default sizes. C++14: Vitis HLS compiles this header.
#pragma once

#include <stdint.h>

#include "panama/elem16.hpp"
#include "panama/engine_rules.hpp"
#include "panama/fp32_add.hpp"
#include "panama/hls_compat.hpp"
#include "panama/wire.hpp"

#if !defined(__SYNTHESIS__)
#include <stdexcept>
#endif

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

static_assert(wire::kMaxFrameBytes % kBeatBytes == 0, "frames are whole beats");
static_assert(wire::kPayloadOffset % kBeatBytes == 0, "payload starts on a beat boundary");
static_assert(kLanes * wire::kElemBytes == kBeatBytes, "one fp32 per lane");

// ------------------------------------------------------------- the schedule
//
// What the pragmas in src/engine_top.cpp declare, as numbers: the top's
// static_asserts tie each pragma's literal to its constant here, and the
// schedule model (sim/hls_schedule) simulates the region with them.

// Initiation intervals (PIPELINE II of each process).
constexpr uint32_t kMailboxII = 1;
constexpr uint32_t kIngressII = 1;
constexpr uint32_t kClassifyII = 1;
constexpr uint32_t kSlotStateII = 2;  // a frame is at least two beats: one frame per two clocks is line rate
constexpr uint32_t kCountersII = 1;
constexpr uint32_t kAccumulateII = 1;
constexpr uint32_t kEgressII = 1;

// FIFO depths (STREAM depth of each channel).
// The frame FIFO holds a whole largest frame while it is decided and the
// beats that arrive meanwhile (store and forward, as the RTL's input FIFO).
constexpr uint32_t kFrameFifoDepth = 2 * kMaxFrameBeats;  // 288
constexpr uint32_t kDescFifoDepth = 8;
constexpr uint32_t kCtrlFifoDepth = 8;
constexpr uint32_t kSlotCmdFifoDepth = 16;
constexpr uint32_t kEmitCmdFifoDepth = 16;
constexpr uint32_t kCountFifoDepth = 8;
constexpr uint32_t kBeatFifoDepth = 32;
constexpr uint32_t kRegFifoDepth = 2;  // one request in flight (the host waits for its ack)

// Slot memory: the read latency BIND_STORAGE declares for the URAM arrays,
// and the fp32_add pipeline the accumulate stage is designed around (two
// stages, as the RTL's adder: a word's sum must exist two beats after its
// operand was read, when the same word can be read again).
constexpr uint32_t kSlotReadLatency = 3;
constexpr uint32_t kAddLatency = 2;
// Writes queued before they reach the arrays: every write issued while a
// later read of the same word can still miss it (read latency, adder,
// the write itself, one clock of margin).
constexpr uint32_t kSlotFwdDepth = kSlotReadLatency + kAddLatency + 2;
// The queued slot-state and counter writes (the read-decide-write loop of
// one frame's state spans at most two initiations of its process).
constexpr uint32_t kMetaFwdDepth = 2;
constexpr uint32_t kCounterFwdDepth = 2;
// Calls the classify stage takes no token after a register access: longer
// than its pipeline, so that a frame never meets a half-written table (the
// table's inter-iteration dependence is declared false on that basis).
constexpr uint32_t kClassifySettle = 16;

static_assert(kSlotFwdDepth >= 2, "forwarding skips the newest entry (never the same word) and needs more");

// Control ops of the register mailbox: one definition, in the register map
// (docs/register-map.md, "Register mailbox").
constexpr uint32_t kCtrlOpRead = regmap::kMailboxOpRead;
constexpr uint32_t kCtrlOpWrite = regmap::kMailboxOpWrite;

// ------------------------------------------------------------- stream types

// ingress -> classify: one per frame.
struct FrameDesc {
  Word512 header;  // the frame's first beat
  uint32_t len;    // bytes (tkeep count), kOversizeLen above kMaxFrameBeats beats
  uint32_t beats;  // beats written to the frame FIFO, at most kMaxFrameBeats
  bool mac_error;  // OR of tuser bit 0 over the frame's beats
};

// mailbox_in -> classify, and the answer counters -> mailbox_out.
struct RegReq {
  uint32_t seq;
  uint32_t op;
  uint32_t addr;
  uint32_t wdata;
};
struct RegResp {
  uint32_t seq;
  uint32_t op;
  uint32_t rdata;
};

// A frame's counter increments: bit c of gmask increments global counter c,
// bit c of emask counter c of entry eidx (no counter is incremented twice
// for one frame, and only one entry's).
struct CountMask {
  uint32_t gmask;
  uint16_t emask;
  uint8_t eidx;
  void global(uint32_t c) {
#if !defined(__SYNTHESIS__)
    if ((gmask >> c) & 1u) throw std::logic_error("kernel: a global counter incremented twice for one frame");
#endif
    gmask |= uint32_t{1} << c;
  }
  void entry(int32_t e, uint32_t c) {
#if !defined(__SYNTHESIS__)
    if (((emask >> c) & 1u) || (emask != 0 && eidx != static_cast<uint8_t>(e))) {
      throw std::logic_error("kernel: an entry counter incremented twice for one frame");
    }
#endif
    emask = static_cast<uint16_t>(emask | (1u << c));
    eidx = static_cast<uint8_t>(e);
  }
};
static_assert(regmap::kNumGlobalCounters <= 32, "global counter increments are a 32-bit mask");
static_assert(regmap::kNumEntryCounters <= 16, "entry counter increments are a 16-bit mask");

// classify -> slot_state: a frame (passed or dropped already, or on its way
// to its slot) or a register access in order with the frames.
struct CtrlToken {
  bool reg;
  // A frame.
  bool to_slot;           // r is valid; otherwise outcome and op are final
  EngineOutcome outcome;  // when !to_slot
  SlotOp op;              // when !to_slot: kPass or kNone
  uint32_t len;           // bytes
  uint32_t beats;         // beats in the frame FIFO
  SlotRequest r;
  CountMask counts;
  // A register access.
  RegReq req;
  uint32_t rdata;     // a table register's value (reads)
  bool counter_read;  // a counter's: read by the counter stage
  RegEffect fx;       // what a write does to slots and counters
};

// slot_state -> accumulate: one per frame.
struct SlotCmd {
  SlotOp op;
  bool emit;               // forward the new aggregate (kLoad, kAdd)
  bool half;               // 16-bit elements (32 per beat, both arrays per beat)
  uint8_t elem_type;       // the payload's (kLoad, kAdd) or the aggregate's (kReemit) type
  uint32_t frame_beats;    // beats of this frame in the frame FIFO
  uint32_t payload_beats;  // payload beats loaded, added or re-emitted
  uint32_t base;           // first word of (slot, bank) in each array
};

// slot_state -> egress: one per frame that leaves the engine.
struct EmitCmd {
  bool pass;         // forward the frame (beats beats of len bytes)
  bool emit;         // send header `out` and its payload beats
  uint32_t len;      // bytes of the frame sent
  uint32_t beats;    // beats of the frame sent
  wire::Header out;  // emitted header
};

// slot_state -> counters: a frame's increments or a register access.
struct CountToken {
  bool reg;
  CountMask counts;
  EngineOutcome outcome;  // the frame's (observed by the C simulation)
  RegReq req;
  uint32_t rdata;
  bool counter_read;
  RegEffect fx;
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
// Words of each slot-memory array (NumSlots x 2 banks x bank_words).
constexpr uint32_t slot_mem_words(uint32_t num_slots, uint32_t slot_words) {
  return num_slots * 2 * bank_words(slot_words);
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

// Writes on their way to a memory, newest first: a write reaches the memory
// when Depth later writes (or bubbles) have been queued behind it, and a read
// takes the newest queued write to its address over the memory's word. In
// hardware this is the register file beside the memory that covers the
// writes still in the pipeline when a later read is issued (read-after-write
// forwarding); in C simulation the memory really is Depth accesses late, so
// a forwarding mistake shows as a wrong result in the engine tests.
template <class T, uint32_t Depth>
struct WriteQueue {
  bool valid[Depth] = {};
  uint32_t addr[Depth] = {};
  T data[Depth] = {};

  // Replaces `v` (the memory's word) by the newest queued write to `a`
  // among entries first..Depth-1.
  void forward(uint32_t a, uint32_t first, T& v) const {
    for (uint32_t k = Depth; k-- > first;) {
      PANAMA_HLS(UNROLL)
      if (valid[k] && addr[k] == a) v = data[k];
    }
  }
  // Queues a write (`write` false: a bubble) and returns the oldest entry,
  // which leaves the queue now: to be written to the memory when true.
  bool push(bool write, uint32_t a, const T& d, uint32_t& out_addr, T& out_data) {
    const bool out = valid[Depth - 1];
    out_addr = addr[Depth - 1];
    out_data = data[Depth - 1];
    for (uint32_t k = Depth - 1; k > 0; --k) {
      PANAMA_HLS(UNROLL)
      valid[k] = valid[k - 1];
      addr[k] = addr[k - 1];
      data[k] = data[k - 1];
    }
    valid[0] = write;
    addr[0] = a;
    data[0] = d;
    return out;
  }
  bool empty() const {
    bool any = false;
    for (uint32_t k = 0; k < Depth; ++k) {
      PANAMA_HLS(UNROLL)
      any = any || valid[k];
    }
    return !any;
  }
};

// The rules for an engine of these sizes (and, through it, the types of the
// three pieces of rule state): SlotWords x 16 fp32 accumulators per bank.
// The kernel sums every element type; ElemTypes = fp32 only stands for an
// engine that drops 16-bit frames, for comparisons with one.
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords,
          uint32_t ElemTypes = wire::kElemTypeMaskAll>
using Rules = EngineRules<NumEntries, NumSlots, SlotWords * kLanes, ElemTypes>;

// ------------------------------------------------------------- process state

struct MailboxInState {
  uint32_t seen = 0;  // ctrl_seq of the last request
};

struct MailboxOutState {
  uint32_t ack = 0;    // ctrl_seq of the last answered request
  uint32_t rdata = 0;  // value of the last read
};

struct IngressState {
  Word512 header = Word512();
  uint32_t bytes = 0;
  uint32_t beats = 0;  // saturates at kMaxFrameBeats + 1 (oversize)
  bool mac_error = false;
};

template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords,
          uint32_t ElemTypes = wire::kElemTypeMaskAll>
struct ClassifyState {
  typename Rules<NumEntries, NumSlots, SlotWords, ElemTypes>::Table table;
  uint32_t settle = 0;  // calls left without a token after a register access
};

template <uint32_t NumSlots>
struct SlotStageState {
  SlotTable<NumSlots> slots;
  WriteQueue<RuleSlot, kMetaFwdDepth> queue;
  bool clearing = false;  // draining the queue, then clearing slots clear_next..clear_end-1
  uint32_t clear_next = 0;
  uint32_t clear_end = 0;
};

// One entry's counters, as the counter process reads and writes them.
struct EntryCounts {
  uint64_t c[regmap::kNumEntryCounters];
};

template <uint32_t NumEntries>
struct CounterStageState {
  CounterBank<NumEntries> bank;
  WriteQueue<EntryCounts, kCounterFwdDepth> queue;
  bool held = false;  // a register access waiting for the queue to drain
  CountToken held_token;
  bool clearing = false;  // clearing entries clear_next..NumEntries-1
  uint32_t clear_next = 0;
  EngineOutcome last_outcome = {EngineAction::kPassed, 0, -1};  // C simulation only
};

struct AccumulateState {
  bool active = false;  // a command is being worked on
  bool reemit = false;  // in its re-emission beats
  SlotCmd c;
  uint32_t b = 0;  // frame beat
  uint32_t w = 0;  // re-emitted payload beat
  WriteQueue<Word512, kSlotFwdDepth> lo_queue;
  WriteQueue<Word512, kSlotFwdDepth> hi_queue;
};

struct EgressState {
  bool active = false;
  EmitCmd c;
  Word512 hdr;
  uint32_t b = 0;
  uint32_t remaining = 0;
};

// The commands of a decided frame of `len` bytes in `beats` beats: always
// one for the accumulate stage, and one for egress when the frame leaves
// the engine (returns true).
template <uint32_t SlotWords>
bool frame_commands(const FrameDecision& fd, uint32_t len, uint32_t beats, SlotCmd& sc, EmitCmd& ec) {
  sc.op = fd.op;
  sc.emit = fd.emit;
  sc.frame_beats = beats;
  sc.elem_type = fd.op == SlotOp::kReemit ? fd.out.elem_type : fd.elem_type;
  sc.half = wire::elem_bytes(sc.elem_type) == 2;
  sc.payload_beats =
      beats_for_elems(fd.op == SlotOp::kReemit ? fd.out.elem_count : fd.elem_count, sc.elem_type);
  sc.base = (2 * fd.slot + fd.bank) * bank_words(SlotWords);
  ec.pass = fd.op == SlotOp::kPass;
  ec.emit = fd.emit;
  ec.len = ec.pass ? len : wire::frame_length(fd.out.elem_count, fd.out.elem_type);
  ec.beats = ec.pass ? beats : kHeaderBeats + beats_for_elems(fd.out.elem_count, fd.out.elem_type);
  ec.out = fd.out;
  return ec.pass || ec.emit;
}

// ------------------------------------------------------------- steps

// A change of ctrl_seq becomes one register request.
inline bool mailbox_in_step(MailboxInState& st, uint32_t ctrl_seq, uint32_t ctrl_op, uint32_t ctrl_addr,
                            uint32_t ctrl_wdata, hlsc::stream<RegReq>& req_out) {
  if (ctrl_seq == st.seen) return false;
  st.seen = ctrl_seq;
  RegReq q;
  q.seq = ctrl_seq;
  q.op = ctrl_op;
  q.addr = ctrl_addr;
  q.wdata = ctrl_wdata;
  req_out.write(q);
  return true;
}

// The answer to the last request, written every call.
inline bool mailbox_out_step(MailboxOutState& st, hlsc::stream<RegResp>& resp_in, uint32_t* ctrl_ack,
                             uint32_t* ctrl_rdata) {
  RegResp r;
  const bool got = resp_in.read_nb(r);
  if (got) {
    st.ack = r.seq;
    if (r.op == kCtrlOpRead) st.rdata = r.rdata;
  }
  *ctrl_ack = st.ack;
  *ctrl_rdata = st.rdata;
  return got;
}

// One input beat.
inline bool ingress_step(IngressState& st, hlsc::stream<AxisWord>& s_axis, hlsc::stream<FrameDesc>& desc_out,
                         hlsc::stream<Word512>& frame_out) {
  AxisWord w;
  if (!s_axis.read_nb(w)) return false;
  const Word512 data = hlsc::axis_data(w);
  if (st.beats == 0) st.header = data;
  if (st.beats < kMaxFrameBeats) {
    frame_out.write(data);
    st.bytes += keep_count(hlsc::axis_keep_bits(w));
    ++st.beats;
  } else {
    st.beats = kMaxFrameBeats + 1;  // oversize: the rest is consumed, not kept
  }
  st.mac_error = st.mac_error || hlsc::axis_user(w);
  if (hlsc::axis_last(w)) {
    FrameDesc d;
    d.header = st.header;
    d.len = st.beats > kMaxFrameBeats ? kOversizeLen : st.bytes;
    d.beats = st.beats > kMaxFrameBeats ? kMaxFrameBeats : st.beats;
    d.mac_error = st.mac_error;
    desc_out.write(d);
    st.bytes = 0;
    st.beats = 0;
    st.mac_error = false;
  }
  return true;
}

// One register request (first) or one frame.
template <uint32_t NumEntries, uint32_t NumSlots, uint32_t SlotWords, uint32_t ElemTypes>
bool classify_step(ClassifyState<NumEntries, NumSlots, SlotWords, ElemTypes>& st,
                   hlsc::stream<RegReq>& req_in, hlsc::stream<FrameDesc>& desc_in,
                   hlsc::stream<CtrlToken>& ctrl_out) {
  using R = Rules<NumEntries, NumSlots, SlotWords, ElemTypes>;
  if (st.settle != 0) {
    --st.settle;
    return true;
  }
  CtrlToken t = CtrlToken();
  RegReq q;
  if (req_in.read_nb(q)) {
    const uint32_t a = reg_offset(q.addr);
    t.reg = true;
    t.req = q;
    if (q.op == kCtrlOpWrite) {
      t.fx = st.table.reg_write(a, q.wdata);
    } else if (q.op == kCtrlOpRead) {
      t.counter_read = R::Counters::owns(a);
      if (!t.counter_read) t.rdata = st.table.reg_read(a);
    }
    st.settle = kClassifySettle;
    ctrl_out.write(t);
    return true;
  }
  FrameDesc d;
  if (!desc_in.read_nb(d)) return false;
  uint8_t header[kBeatBytes];
  PANAMA_HLS(ARRAY_PARTITION variable = header type = complete)
  for (uint32_t i = 0; i < kBeatBytes; ++i) {
    PANAMA_HLS(UNROLL)
    header[i] = hlsc::word_byte(d.header, i);
  }
  wire::Header h{};
  const bool classify = !d.mac_error && d.len <= wire::kMaxFrameBytes;
  const wire::FrameClass cls =
      classify ? wire::classify_frame(header, d.len, st.table.udp_port(), h, R::kElemTypes)
               : wire::FrameClass::kNotPanama;
  FrameDecision fd = FrameDecision();
  t.to_slot = st.table.front(cls, h, d.len, d.mac_error, fd, t.r, t.counts);
  t.outcome = fd.outcome;
  t.op = fd.op;
  t.len = d.len;
  t.beats = d.beats;
  ctrl_out.write(t);
  return true;
}

// One frame's slot state (or a register access's slot clear, one slot per call).
template <uint32_t NumSlots, uint32_t SlotWords>
bool slot_state_step(SlotStageState<NumSlots>& st, hlsc::stream<CtrlToken>& ctrl_in,
                     hlsc::stream<SlotCmd>& slot_out, hlsc::stream<EmitCmd>& emit_out,
                     hlsc::stream<CountToken>& count_out) {
  uint32_t out_slot;
  RuleSlot out_meta;
  if (st.clearing) {
    if (!st.queue.empty()) {  // queued writes first, so that none lands on a cleared slot
      if (st.queue.push(false, 0, RuleSlot(), out_slot, out_meta)) st.slots.slots_[out_slot] = out_meta;
      return true;
    }
    st.slots.clear_slot(st.clear_next);
    ++st.clear_next;
    st.clearing = st.clear_next != st.clear_end;
    return true;
  }
  CtrlToken t;
  if (!ctrl_in.read_nb(t)) return false;
  CountToken ct = CountToken();
  if (t.reg) {
    ct.reg = true;
    ct.req = t.req;
    ct.rdata = t.rdata;
    ct.counter_read = t.counter_read;
    ct.fx = t.fx;
    if (t.fx.reset) {
      st.clearing = true;
      st.clear_next = 0;
      st.clear_end = NumSlots;
    } else if (t.fx.commit && t.fx.slot_count != 0) {
      st.clearing = true;
      st.clear_next = t.fx.slot_base;
      st.clear_end = t.fx.slot_base + t.fx.slot_count;
    }
    count_out.write(ct);
    return true;
  }

  FrameDecision fd = FrameDecision();
  CountMask k = t.counts;
  if (t.to_slot) {
    RuleSlot m = st.slots.slots_[t.r.slot];
    st.queue.forward(t.r.slot, 0, m);
    SlotTable<NumSlots>::decide_meta(m, t.r, fd, k);
    if (st.queue.push(true, t.r.slot, m, out_slot, out_meta)) st.slots.slots_[out_slot] = out_meta;
  } else {
    fd.outcome = t.outcome;
    fd.op = t.op;
    fd.emit = false;
    if (st.queue.push(false, 0, RuleSlot(), out_slot, out_meta)) st.slots.slots_[out_slot] = out_meta;
  }

  SlotCmd sc;
  EmitCmd ec;
  if (frame_commands<SlotWords>(fd, t.len, t.beats, sc, ec)) emit_out.write(ec);
  slot_out.write(sc);

  ct.counts = k;
  ct.outcome = fd.outcome;
  count_out.write(ct);
  return true;
}

// One token's counting, or a register access to the counters (after the
// queued entry writes have landed).
template <uint32_t NumEntries>
bool counters_step(CounterStageState<NumEntries>& st, hlsc::stream<CountToken>& count_in,
                   hlsc::stream<RegResp>& resp_out) {
  uint32_t out_e;
  EntryCounts out_c;
  if (st.held) {
    if (!st.queue.empty()) {
      if (st.queue.push(false, 0, EntryCounts(), out_e, out_c)) {
        for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
          PANAMA_HLS(UNROLL)
          st.bank.entry_ctr_[out_e][c] = out_c.c[c];
        }
      }
      return true;
    }
    const CountToken& t = st.held_token;
    RegResp r;
    r.seq = t.req.seq;
    r.op = t.req.op;
    r.rdata = t.counter_read ? st.bank.read(reg_offset(t.req.addr)) : t.rdata;
    if (t.fx.reset || t.fx.clear_counters) {
      if (t.fx.reset) st.bank.reset_latch();
      st.bank.clear_globals();
      st.clearing = true;
      st.clear_next = 0;
    }
    if (t.fx.commit) st.bank.clear_entry(t.fx.entry);
    resp_out.write(r);
    st.held = false;
    return true;
  }
  if (st.clearing) {
    st.bank.clear_entry(st.clear_next);
    ++st.clear_next;
    st.clearing = st.clear_next != NumEntries;
    return true;
  }
  CountToken t;
  if (!count_in.read_nb(t)) return false;
  if (t.reg) {
    st.held = true;
    st.held_token = t;
    return true;
  }
  for (uint32_t c = 0; c < regmap::kNumGlobalCounters; ++c) {
    PANAMA_HLS(UNROLL)
    st.bank.global_[c] += (t.counts.gmask >> c) & 1u;
  }
  const bool counts_entry = t.counts.emask != 0;
  const uint32_t e = t.counts.eidx;
  EntryCounts row;
  for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
    PANAMA_HLS(UNROLL)
    row.c[c] = st.bank.entry_ctr_[e][c];
  }
  st.queue.forward(e, 0, row);
  for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
    PANAMA_HLS(UNROLL)
    row.c[c] += (t.counts.emask >> c) & 1u;
  }
  if (st.queue.push(counts_entry, e, row, out_e, out_c)) {
    for (uint32_t c = 0; c < regmap::kNumEntryCounters; ++c) {
      PANAMA_HLS(UNROLL)
      st.bank.entry_ctr_[out_e][c] = out_c.c[c];
    }
  }
  st.last_outcome = t.outcome;
  return true;
}

// A slot-memory word as the accumulate stage reads it: the array's word, or
// the newest queued write to it. The newest entry (the previous beat's) is
// never the same word: within a frame consecutive payload beats touch
// different words (fp32: the other array; 16-bit: the next word), and
// between frames there is a header beat. Skipping it keeps the loop through
// the adder at two beats (kAddLatency).
inline Word512 slot_read(const Word512* mem, const WriteQueue<Word512, kSlotFwdDepth>& q, uint32_t addr) {
#if !defined(__SYNTHESIS__)
  if (q.valid[0] && q.addr[0] == addr) throw std::logic_error("kernel: slot word read right after its write");
#endif
  Word512 v = mem[addr];
  q.forward(addr, 1, v);
  return v;
}

// One frame beat (or one re-emitted beat) against the slot memory (arrays
// `lo` and `hi`, see the top of this file).
inline bool accumulate_step(AccumulateState& st, Word512* slot_lo, Word512* slot_hi,
                            hlsc::stream<SlotCmd>& cmd_in, hlsc::stream<Word512>& frame_in,
                            hlsc::stream<Word512>& beats_out) {
  bool progress = false;
  if (!st.active) {
    if (!cmd_in.read_nb(st.c)) return false;
    st.active = true;
    st.reemit = false;
    st.b = 0;
    st.w = 0;
    progress = true;
  }
  const SlotCmd& c = st.c;
  bool write_lo = false, write_hi = false;
  uint32_t addr_lo = 0, addr_hi = 0;
  Word512 new_lo = Word512(), new_hi = Word512();
  if (!st.reemit) {
    Word512 in;
    if (!frame_in.read_nb(in)) return progress;
    const bool payload_op = c.op == SlotOp::kLoad || c.op == SlotOp::kAdd;
    const bool in_payload = payload_op && st.b >= kHeaderBeats && st.b < kHeaderBeats + c.payload_beats;
    Word512 result = in;
    if (in_payload) {
      const uint32_t p = st.b - kHeaderBeats;
      if (c.half) {
        addr_lo = addr_hi = c.base + p;
        new_lo = widen_half_beat(c.elem_type, in, 0);
        new_hi = widen_half_beat(c.elem_type, in, kLanes);
        if (c.op == SlotOp::kAdd) {
          new_lo = add_beat(slot_read(slot_lo, st.lo_queue, addr_lo), new_lo);
          new_hi = add_beat(slot_read(slot_hi, st.hi_queue, addr_hi), new_hi);
        }
        write_lo = write_hi = true;
        result = round_beat(c.elem_type, new_lo, new_hi);
      } else if ((p & 1u) == 0) {
        addr_lo = c.base + p / 2;
        if (c.op == SlotOp::kAdd) result = add_beat(slot_read(slot_lo, st.lo_queue, addr_lo), in);
        new_lo = result;
        write_lo = true;
      } else {
        addr_hi = c.base + p / 2;
        if (c.op == SlotOp::kAdd) result = add_beat(slot_read(slot_hi, st.hi_queue, addr_hi), in);
        new_hi = result;
        write_hi = true;
      }
    }
    // One stream write per beat: the frame itself, or the new aggregate.
    if (c.op == SlotOp::kPass || (in_payload && c.emit)) beats_out.write(result);
    ++st.b;
    if (st.b == c.frame_beats) {
      st.reemit = c.op == SlotOp::kReemit;
      st.active = st.reemit;
    }
  } else {
    const uint32_t w = st.w;
    if (c.half) {
      beats_out.write(round_beat(c.elem_type, slot_read(slot_lo, st.lo_queue, c.base + w),
                                 slot_read(slot_hi, st.hi_queue, c.base + w)));
    } else if ((w & 1u) == 0) {
      beats_out.write(slot_read(slot_lo, st.lo_queue, c.base + w / 2));
    } else {
      beats_out.write(slot_read(slot_hi, st.hi_queue, c.base + w / 2));
    }
    ++st.w;
    if (st.w == c.payload_beats) st.active = false;
  }
  // This beat's writes join the queues; the oldest queued writes land.
  uint32_t out_addr;
  Word512 out_data;
  if (st.lo_queue.push(write_lo, addr_lo, new_lo, out_addr, out_data)) slot_lo[out_addr] = out_data;
  if (st.hi_queue.push(write_hi, addr_hi, new_hi, out_addr, out_data)) slot_hi[out_addr] = out_data;
  return true;
}

// One output beat: tkeep contiguous from lane 0, only the last beat
// partial, bytes outside tkeep zero.
inline bool egress_step(EgressState& st, hlsc::stream<EmitCmd>& cmd_in, hlsc::stream<Word512>& beats_in,
                        hlsc::stream<AxisWord>& m_axis) {
  bool progress = false;
  if (!st.active) {
    if (!cmd_in.read_nb(st.c)) return false;
    st.active = true;
    st.b = 0;
    st.remaining = st.c.len;
    if (st.c.emit) st.hdr = header_beat(st.c.out);
    progress = true;
  }
  Word512 data;
  if (st.c.emit && st.b < kHeaderBeats) {
    data = st.hdr;
  } else if (!beats_in.read_nb(data)) {
    return progress;
  }
  const uint32_t valid = st.remaining >= kBeatBytes ? kBeatBytes : st.remaining;
  st.remaining -= valid;
  Word512 out;
  for (uint32_t i = 0; i < kBeatBytes; ++i) {
    PANAMA_HLS(UNROLL)
    hlsc::word_set_byte(out, i, i < valid ? hlsc::word_byte(data, i) : 0);
  }
  AxisWord w;
  hlsc::axis_set_data(w, out);
  hlsc::axis_set_keep_bits(w, keep_mask(valid));
  hlsc::axis_set_last(w, st.b + 1 == st.c.beats);
  hlsc::axis_set_user(w, false);
  m_axis.write(w);
  ++st.b;
  if (st.b == st.c.beats) st.active = false;
  return true;
}

}  // namespace kernel
}  // namespace panama
