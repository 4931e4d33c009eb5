// Declaration of the Vitis HLS top function (see hw/hls/src/engine_top.cpp).
#pragma once

#include <stdint.h>

#include "panama/engine.hpp"

namespace panama {

constexpr uint32_t kCtrlOpRead = 1;
constexpr uint32_t kCtrlOpWrite = 2;

}  // namespace panama

// The top function lives at global scope so that Vitis HLS's `set_top` can
// name it directly.
void panama_engine_top(panama::hlsc::stream<panama::hlsc::AxisWord>& s_axis,
                       panama::hlsc::stream<panama::hlsc::AxisWord>& m_axis, uint32_t ctrl_seq,
                       uint32_t ctrl_op, uint32_t ctrl_addr, uint32_t ctrl_wdata, uint32_t* ctrl_ack,
                       uint32_t* ctrl_rdata);
