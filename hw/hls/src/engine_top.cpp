// Vitis HLS top function of the PANAMA engine: a free-running kernel
// (ap_ctrl_none) with a 512-bit AXI4-Stream input (tuser bit 0 = MAC error)
// and output, and an AXI4-Lite control bundle carrying the register mailbox
// (include/panama/engine_top.hpp). The body is the DATAFLOW region of
// include/panama/kernel.hpp over the engine's sizes (engine_sizes.hpp, not
// the host engine); the state lives in static variables whose reset value is
// their zero/default initialisation (no constructor loop): the rules in
// registers and BRAM/LUTRAM, the slot memory in URAM.
#include "panama/engine_top.hpp"

#include "panama/engine_sizes.hpp"

namespace {

constexpr uint32_t kEntries = panama::kEngineTableEntries;
constexpr uint32_t kSlots = panama::kEnginePacketSlots;
constexpr uint32_t kSlotWords = panama::kEngineSlotWords;
constexpr uint32_t kSlotMemWords = panama::kernel::slot_mem_words(kSlots, kSlotWords);

}  // namespace

void panama_engine_top(panama::hlsc::stream<panama::hlsc::AxisWord>& s_axis,
                       panama::hlsc::stream<panama::hlsc::AxisWord>& m_axis, uint32_t ctrl_seq,
                       uint32_t ctrl_op, uint32_t ctrl_addr, uint32_t ctrl_wdata, uint32_t* ctrl_ack,
                       uint32_t* ctrl_rdata) {
  using namespace panama;
  PANAMA_HLS(INTERFACE mode = axis port = s_axis)
  PANAMA_HLS(INTERFACE mode = axis port = m_axis)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_seq bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_op bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_addr bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_wdata bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_ack bundle = control)
  PANAMA_HLS(INTERFACE mode = s_axilite port = ctrl_rdata bundle = control)
  PANAMA_HLS(INTERFACE mode = ap_ctrl_none port = return )

  static kernel::Rules<kEntries, kSlots, kSlotWords> rules;
  static kernel::Mailbox mailbox = {0, 0};
  // Slot memory: two arrays of 512-bit words (fp32 beats alternate between
  // them, a 16-bit beat uses the same word of both), each with two ports (the
  // accumulate stage reads one word while it writes an earlier one).
  static hlsc::Word512 slot_lo[kSlotMemWords];
  static hlsc::Word512 slot_hi[kSlotMemWords];
  PANAMA_HLS(BIND_STORAGE variable = slot_lo type = ram_2p impl = uram)
  PANAMA_HLS(BIND_STORAGE variable = slot_hi type = ram_2p impl = uram)
  EngineOutcome outcome;  // observed by the C simulation harness only

  kernel::run<kEntries, kSlots, kSlotWords>(s_axis, m_axis, ctrl_seq, ctrl_op, ctrl_addr, ctrl_wdata,
                                            ctrl_ack, ctrl_rdata, rules, mailbox, slot_lo, slot_hi, outcome);
}
