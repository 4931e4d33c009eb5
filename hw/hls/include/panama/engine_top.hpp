// Declaration of the Vitis HLS top function (see hw/hls/src/engine_top.cpp)
// and its register mailbox: the host writes ctrl_op, ctrl_addr and
// ctrl_wdata, then changes ctrl_seq; the kernel performs the access once and
// reports ctrl_seq in ctrl_ack and the read value in ctrl_rdata. The
// AXI4-Lite offsets of these arguments are assigned by Vitis HLS; the driver
// takes them from hw/vitis/kernels.json, and hw/vitis/hls/check_mailbox.py
// compares the two after synthesis (docs/hls.md).
#pragma once

#include <stdint.h>

#include "panama/hls_compat.hpp"
#include "panama/kernel.hpp"

// The top function lives at global scope so that Vitis HLS's `set_top` can
// name it directly. In hardware it is a free-running DATAFLOW region
// (ap_ctrl_none): its processes run continuously. In C simulation one call
// runs the region until it is idle: every frame queued on s_axis is
// processed, a change of ctrl_seq is served and answered.
void panama_engine_top(panama::hlsc::stream<panama::hlsc::AxisWord>& s_axis,
                       panama::hlsc::stream<panama::hlsc::AxisWord>& m_axis, uint32_t ctrl_seq,
                       uint32_t ctrl_op, uint32_t ctrl_addr, uint32_t ctrl_wdata, uint32_t* ctrl_ack,
                       uint32_t* ctrl_rdata);
