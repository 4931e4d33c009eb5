// Vitis HLS top function of the PANAMA engine: a free-running kernel
// (ap_ctrl_none) with a 512-bit AXI4-Stream input (tuser bit 0 = MAC error)
// and output, and an AXI4-Lite control bundle carrying the register mailbox
// (include/panama/engine_top.hpp).
//
// The top is itself the DATAFLOW region: eight processes (kernel.hpp's step
// functions, each wrapped below in a process function that owns its state
// as a static variable and is never inlined) connected by static streams.
// Under ap_ctrl_none every process restarts on its own as soon as its
// previous initiation allows (its PIPELINE II), so frames overlap: one is
// read while earlier ones are decided, accumulated and sent. Each pragma's
// assumption is in docs/hls.md; the numbers in the pragmas are the
// constants of kernel.hpp (checked below), which the schedule model
// (sim/hls_schedule) simulates.
//
// C simulation (no __SYNTHESIS__): one call of the top runs the region until
// no process does anything (every input consumed, every answer written), so
// a caller that pushes a frame or changes ctrl_seq and calls the top once
// sees the result, as the hardware would show it some clocks later.
#include "panama/engine_top.hpp"

#include "panama/engine_sizes.hpp"

namespace {

using namespace panama;

constexpr uint32_t kEntries = kEngineTableEntries;
constexpr uint32_t kSlots = kEnginePacketSlots;
constexpr uint32_t kSlotWords = kEngineSlotWords;
constexpr uint32_t kSlotMemWords = kernel::slot_mem_words(kSlots, kSlotWords);

// The pragmas' literals (pragmas take no expressions).
static_assert(kernel::kMailboxII == 1 && kernel::kIngressII == 1 && kernel::kClassifyII == 1 &&
                  kernel::kSlotStateII == 2 && kernel::kCountersII == 1 && kernel::kAccumulateII == 1 &&
                  kernel::kEgressII == 1,
              "PIPELINE II of the processes below");
static_assert(kernel::kFrameFifoDepth == 288 && kernel::kDescFifoDepth == 8 && kernel::kCtrlFifoDepth == 8 &&
                  kernel::kSlotCmdFifoDepth == 16 && kernel::kEmitCmdFifoDepth == 16 &&
                  kernel::kCountFifoDepth == 8 && kernel::kBeatFifoDepth == 32 && kernel::kRegFifoDepth == 2,
              "STREAM depths in panama_engine_top");
static_assert(kernel::kSlotReadLatency == 3, "BIND_STORAGE latency of the slot memory");
static_assert(kernel::kClassifySettle == 16, "DEPENDENCE distance of the classify stage's table");
static_assert(kernel::kMetaFwdDepth == 2 && kernel::kCounterFwdDepth == 2,
              "write queues of II-2 / II-1 state");

// ------------------------------------------------------------- processes

// ctrl_seq/op/addr/wdata -> register requests.
PANAMA_PROCESS_RESULT mailbox_in_proc(uint32_t ctrl_seq, uint32_t ctrl_op, uint32_t ctrl_addr,
                                      uint32_t ctrl_wdata, hlsc::stream<kernel::RegReq>& req_out) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::MailboxInState st;
  PANAMA_PROCESS_RETURN(kernel::mailbox_in_step(st, ctrl_seq, ctrl_op, ctrl_addr, ctrl_wdata, req_out));
}

// s_axis -> frame beats and descriptors.
PANAMA_PROCESS_RESULT ingress_proc(hlsc::stream<hlsc::AxisWord>& s_axis,
                                   hlsc::stream<kernel::FrameDesc>& desc_out,
                                   hlsc::stream<hlsc::Word512>& frame_out) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::IngressState st;
  PANAMA_PROCESS_RETURN(kernel::ingress_step(st, s_axis, desc_out, frame_out));
}

// Classification and the table: one frame or register request per clock.
PANAMA_PROCESS_RESULT classify_proc(hlsc::stream<kernel::RegReq>& req_in,
                                    hlsc::stream<kernel::FrameDesc>& desc_in,
                                    hlsc::stream<kernel::CtrlToken>& ctrl_out) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::ClassifyState<kEntries, kSlots, kSlotWords> st;
  // The lookup compares every entry's key at once; the commit checks read
  // every entry's key and slot range at once: registers.
  PANAMA_HLS(ARRAY_PARTITION variable = st.table.key_enabled_ type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.table.key_job_ type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.table.key_tree_ type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.table.range_base_ type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.table.range_count_ type = complete)
  // The full entries are read once per frame, by index.
  PANAMA_HLS(BIND_STORAGE variable = st.table.table_ type = ram_2p impl = lutram latency = 1)
  // The table is written only by register requests, after which the stage
  // takes no token for kClassifySettle calls: whatever reads the table
  // next is at least that many iterations later.
  PANAMA_HLS(DEPENDENCE variable = st.table type = inter distance = 16 dependent = true)
  PANAMA_PROCESS_RETURN(kernel::classify_step(st, req_in, desc_in, ctrl_out));
}

// Slot state: one frame per two clocks.
PANAMA_PROCESS_RESULT slot_state_proc(hlsc::stream<kernel::CtrlToken>& ctrl_in,
                                      hlsc::stream<kernel::SlotCmd>& slot_out,
                                      hlsc::stream<kernel::EmitCmd>& emit_out,
                                      hlsc::stream<kernel::CountToken>& count_out) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 2)
  static kernel::SlotStageState<kSlots> st;
  PANAMA_HLS(BIND_STORAGE variable = st.slots.slots_ type = ram_2p impl = bram latency = 1)
  // A frame's slot word is written back two frames later (the queue) and
  // read through the queue meanwhile: no order between the memory's read
  // and write is needed.
  PANAMA_HLS(DEPENDENCE variable = st.slots.slots_ type = inter dependent = false)
  PANAMA_HLS(ARRAY_PARTITION variable = st.queue.valid type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.queue.addr type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.queue.data type = complete)
  PANAMA_PROCESS_RETURN(
      (kernel::slot_state_step<kSlots, kSlotWords>(st, ctrl_in, slot_out, emit_out, count_out)));
}

// Counters: one frame's increments (or a register access) per clock.
PANAMA_PROCESS_RESULT counters_proc(hlsc::stream<kernel::CountToken>& count_in,
                                    hlsc::stream<kernel::RegResp>& resp_out) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::CounterStageState<kEntries> st;
  PANAMA_HLS(ARRAY_PARTITION variable = st.bank.global_ type = complete)
  // One entry's ten counters read and written at once: ten LUTRAMs of one
  // 64-bit word per entry.
  PANAMA_HLS(ARRAY_PARTITION variable = st.bank.entry_ctr_ type = complete dim = 2)
  PANAMA_HLS(BIND_STORAGE variable = st.bank.entry_ctr_ type = ram_2p impl = lutram latency = 1)
  PANAMA_HLS(DEPENDENCE variable = st.bank.entry_ctr_ type = inter dependent = false)
  PANAMA_HLS(ARRAY_PARTITION variable = st.queue.valid type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.queue.addr type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.queue.data type = complete)
  PANAMA_PROCESS_RETURN(kernel::counters_step(st, count_in, resp_out));
}

// Register answers -> ctrl_ack/ctrl_rdata.
PANAMA_PROCESS_RESULT mailbox_out_proc(hlsc::stream<kernel::RegResp>& resp_in, uint32_t* ctrl_ack,
                                       uint32_t* ctrl_rdata) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::MailboxOutState st;
  PANAMA_PROCESS_RETURN(kernel::mailbox_out_step(st, resp_in, ctrl_ack, ctrl_rdata));
}

// Slot memory: one beat per clock.
PANAMA_PROCESS_RESULT accumulate_proc(hlsc::stream<kernel::SlotCmd>& cmd_in,
                                      hlsc::stream<hlsc::Word512>& frame_in,
                                      hlsc::stream<hlsc::Word512>& beats_out) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::AccumulateState st;
  // Two arrays of 512-bit words (fp32 beats alternate between them, a
  // 16-bit beat uses the same word of both), each read once and written
  // once per clock; latency = kernel::kSlotReadLatency.
  static hlsc::Word512 slot_lo[kSlotMemWords];
  static hlsc::Word512 slot_hi[kSlotMemWords];
  PANAMA_HLS(BIND_STORAGE variable = slot_lo type = ram_2p impl = uram latency = 3)
  PANAMA_HLS(BIND_STORAGE variable = slot_hi type = ram_2p impl = uram latency = 3)
  // Writes reach the arrays kSlotFwdDepth beats late and every read takes
  // the newest queued write to its word: the arrays' reads and writes need
  // no order between iterations.
  PANAMA_HLS(DEPENDENCE variable = slot_lo type = inter dependent = false)
  PANAMA_HLS(DEPENDENCE variable = slot_hi type = inter dependent = false)
  PANAMA_HLS(ARRAY_PARTITION variable = st.lo_queue.valid type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.lo_queue.addr type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.lo_queue.data type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.hi_queue.valid type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.hi_queue.addr type = complete)
  PANAMA_HLS(ARRAY_PARTITION variable = st.hi_queue.data type = complete)
  PANAMA_PROCESS_RETURN(kernel::accumulate_step(st, slot_lo, slot_hi, cmd_in, frame_in, beats_out));
}

// Emitted and passed frames -> m_axis.
PANAMA_PROCESS_RESULT egress_proc(hlsc::stream<kernel::EmitCmd>& cmd_in,
                                  hlsc::stream<hlsc::Word512>& beats_in,
                                  hlsc::stream<hlsc::AxisWord>& m_axis) {
  PANAMA_HLS(INLINE off)
  PANAMA_HLS(PIPELINE II = 1)
  static kernel::EgressState st;
  PANAMA_PROCESS_RETURN(kernel::egress_step(st, cmd_in, beats_in, m_axis));
}

}  // namespace

void panama_engine_top(panama::hlsc::stream<panama::hlsc::AxisWord>& s_axis,
                       panama::hlsc::stream<panama::hlsc::AxisWord>& m_axis, uint32_t ctrl_seq,
                       uint32_t ctrl_op, uint32_t ctrl_addr, uint32_t ctrl_wdata, uint32_t* ctrl_ack,
                       uint32_t* ctrl_rdata) {
  PANAMA_HLS(INTERFACE mode = axis port = s_axis)
  PANAMA_HLS(INTERFACE mode = axis port = m_axis)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_seq bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_op bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_addr bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_wdata bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_ack bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_rdata bundle = control)
  PANAMA_HLS(INTERFACE mode = ap_ctrl_none port = return )
  PANAMA_HLS(DATAFLOW)

  static hlsc::stream<kernel::RegReq> reg_req;
  static hlsc::stream<kernel::RegResp> reg_resp;
  static hlsc::stream<kernel::FrameDesc> desc;
  static hlsc::stream<hlsc::Word512> frame;
  static hlsc::stream<kernel::CtrlToken> ctrl;
  static hlsc::stream<kernel::SlotCmd> slot_cmd;
  static hlsc::stream<kernel::EmitCmd> emit_cmd;
  static hlsc::stream<kernel::CountToken> count;
  static hlsc::stream<hlsc::Word512> beats;
  PANAMA_HLS(STREAM variable = reg_req depth = 2)    // kRegFifoDepth
  PANAMA_HLS(STREAM variable = reg_resp depth = 2)   // kRegFifoDepth
  PANAMA_HLS(STREAM variable = desc depth = 8)       // kDescFifoDepth
  PANAMA_HLS(STREAM variable = frame depth = 288)    // kFrameFifoDepth
  PANAMA_HLS(STREAM variable = ctrl depth = 8)       // kCtrlFifoDepth
  PANAMA_HLS(STREAM variable = slot_cmd depth = 16)  // kSlotCmdFifoDepth
  PANAMA_HLS(STREAM variable = emit_cmd depth = 16)  // kEmitCmdFifoDepth
  PANAMA_HLS(STREAM variable = count depth = 8)      // kCountFifoDepth
  PANAMA_HLS(STREAM variable = beats depth = 32)     // kBeatFifoDepth

#if defined(__SYNTHESIS__)
  mailbox_in_proc(ctrl_seq, ctrl_op, ctrl_addr, ctrl_wdata, reg_req);
  ingress_proc(s_axis, desc, frame);
  classify_proc(reg_req, desc, ctrl);
  slot_state_proc(ctrl, slot_cmd, emit_cmd, count);
  counters_proc(count, reg_resp);
  mailbox_out_proc(reg_resp, ctrl_ack, ctrl_rdata);
  accumulate_proc(slot_cmd, frame, beats);
  egress_proc(emit_cmd, beats, m_axis);
#else
  // C simulation: the free-running processes, called in turn until none
  // does anything.
  for (;;) {
    bool busy = false;
    busy |= mailbox_in_proc(ctrl_seq, ctrl_op, ctrl_addr, ctrl_wdata, reg_req);
    busy |= ingress_proc(s_axis, desc, frame);
    busy |= classify_proc(reg_req, desc, ctrl);
    busy |= slot_state_proc(ctrl, slot_cmd, emit_cmd, count);
    busy |= counters_proc(count, reg_resp);
    busy |= mailbox_out_proc(reg_resp, ctrl_ack, ctrl_rdata);
    busy |= accumulate_proc(slot_cmd, frame, beats);
    busy |= egress_proc(emit_cmd, beats, m_axis);
    if (!busy) break;
  }
#endif
}
