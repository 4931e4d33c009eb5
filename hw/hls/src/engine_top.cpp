// Vitis HLS top function of the PANAMA engine: a free-running kernel
// (ap_ctrl_none) with a 512-bit AXI4-Stream input and output and an
// AXI4-Lite control bundle. The control bundle is a mailbox onto the engine's
// register map (include/panama/regmap.hpp): the host writes ctrl_op,
// ctrl_addr and ctrl_wdata, then increments ctrl_seq; the kernel performs the
// access once and reports ctrl_seq in ctrl_ack and the read value in
// ctrl_rdata. Each invocation serves at most one register access and one frame.
#include "panama/engine_top.hpp"

namespace panama {

namespace {

// Writes emitted frames to the output stream as 512-bit beats.
struct AxisSink {
  hlsc::stream<hlsc::AxisWord>& out;
  void operator()(const uint8_t* data, uint32_t len) {
    const uint32_t beats = (len + wire::kBeatBytes - 1) / wire::kBeatBytes;
    for (uint32_t b = 0; b < beats; ++b) {
      PANAMA_HLS(PIPELINE II = 1)
      hlsc::AxisWord w;
      for (uint32_t i = 0; i < wire::kBeatBytes; ++i) {
        const uint32_t pos = b * wire::kBeatBytes + i;
        hlsc::axis_set_byte(w, i, pos < len ? data[pos] : 0);
        hlsc::axis_set_keep(w, i, pos < len);
      }
      hlsc::axis_set_last(w, b + 1 == beats);
      out.write(w);
    }
  }
};

}  // namespace
}  // namespace panama

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

  static DefaultEngine engine;
  static uint32_t served_seq = 0;
  static uint32_t last_rdata = 0;
  static uint8_t frame[wire::kMaxFrameBytes];

  if (ctrl_seq != served_seq) {
    if (ctrl_op == kCtrlOpWrite) {
      engine.reg_write(ctrl_addr, ctrl_wdata);
    } else if (ctrl_op == kCtrlOpRead) {
      last_rdata = engine.reg_read(ctrl_addr);
    }
    served_seq = ctrl_seq;
  }
  *ctrl_ack = served_seq;
  *ctrl_rdata = last_rdata;

  if (s_axis.empty()) return;
  // Gather one frame (up to tlast). Bytes beyond the buffer are consumed and
  // make the frame oversize.
  uint32_t len = 0;
  bool last = false;
  while (!last) {
    PANAMA_HLS(PIPELINE II = 1)
    const hlsc::AxisWord w = s_axis.read();
    for (uint32_t i = 0; i < wire::kBeatBytes; ++i) {
      if (hlsc::axis_keep(w, i)) {
        if (len < wire::kMaxFrameBytes) frame[len] = hlsc::axis_byte(w, i);
        ++len;
      }
    }
    last = hlsc::axis_last(w);
  }
  AxisSink sink{m_axis};
  engine.process_frame(frame, len, sink);
}
