// Co-simulation of the RTL engine against the Vitis kernel's stages: the
// same scenario runs on the Verilated RTL (with tvalid gaps and tready
// back-pressure) and on the kernel's DATAFLOW region in C simulation
// (hw/hls/include/panama/kernel.hpp through KernelCsim) driven beat by beat
// with idle invocations, queued frames and an output that is not drained.
// Every outcome, every emitted frame (beat framing checked on the kernel
// side, bytes compared with the RTL's), every entry-command status, register
// and counter must agree.
#pragma once

#include <cstdint>

#include "panama/cosim/cosim.hpp"
#include "panama/cosim/rtl_engine.hpp"
#include "panama/kernel_csim.hpp"

namespace panama::cosim {

// The kernel in the RTL's configuration: its sizes, and the same element
// types (fp32, bf16 and fp16: ELEM_TYPES 0xE on both).
using KernelModel = KernelCsim<RtlEngine::kTableEntries, RtlEngine::kPacketSlots, RtlEngine::kSlotWords,
                               wire::kElemTypeMaskAll>;

// How the kernel's C simulation is driven (the untimed counterpart of
// StreamShaping: only the order of beats, invocations and drains varies).
struct KernelDriving {
  double idle_probability = 0.0;   // an invocation with an empty input before a frame
  double queue_probability = 0.0;  // a frame's beats are queued behind the previous frame's before it runs
  double hold_probability = 0.0;   // output beats are left in m_axis (back-pressure) for a while
  uint64_t seed = 1;
};

// Runs `sc` on a fresh kernel C simulation and on `rtl` (reset first through
// CONTROL) and compares them; the RTL-side figures are in the result's stats.
CompareResult compare_kernel(const Scenario& sc, RtlEngine& rtl, const StreamShaping& rtl_shaping,
                             const KernelDriving& driving);

}  // namespace panama::cosim
