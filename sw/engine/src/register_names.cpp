// Register names for messages (panama/engine/register_access.hpp), from the
// register map's generated tables.
#include <cstdio>

#include "panama/engine/register_access.hpp"
#include "panama/regmap.hpp"

namespace panama {

std::string register_name(uint32_t offset) {
  using namespace regmap;
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%03X", offset);
  for (const RegisterInfo& r : kRegisters) {
    if (r.offset == offset) return std::string(r.name) + " (" + hex + ")";
  }
  if (offset >= kGlobalCounterBase && offset < kGlobalCounterBase + 8 * kNumGlobalCounters) {
    const uint32_t c = (offset - kGlobalCounterBase) / 8;
    return std::string("counter ") + kGlobalCounterNames[c] + (offset % 8 ? " high word" : "") + " (" + hex +
           ")";
  }
  if (offset >= kEntryCounterBase) {
    const uint32_t e = (offset - kEntryCounterBase) / kEntryCounterStride;
    const uint32_t c = (offset - kEntryCounterBase - e * kEntryCounterStride) / 8;
    if (c < kNumEntryCounters) {
      return "entry " + std::to_string(e) + " counter " + kEntryCounterNames[c] +
             (offset % 8 ? " high word" : "") + " (" + hex + ")";
    }
  }
  return std::string("register ") + hex;
}

}  // namespace panama
