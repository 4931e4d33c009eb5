// The sizes of the PANAMA engine as the cards are built: the Vitis top
// function (src/engine_top.cpp) and the host engine's defaults (DefaultEngine,
// KernelCsim) take them from here, so that the kernel's build needs nothing
// of the host engine. C++14: Vitis HLS compiles this header.
#pragma once

#include <stdint.h>

#include "panama/wire.hpp"

namespace panama {

constexpr uint32_t kEngineTableEntries = 64;  // (job, tree) entries of the table
constexpr uint32_t kEnginePacketSlots = 512;  // slots of the packet memory
constexpr uint32_t kEngineSlotWords = 144;    // 512-bit words per slot and bank
// fp32 elements per slot: 2304, enough for any 9216-byte frame.
constexpr uint32_t kEngineSlotCapacity = kEngineSlotWords * wire::kLanes;

}  // namespace panama
