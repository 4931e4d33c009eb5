// The HLS kernel's register mailbox and register names for messages.
#include "panama/driver/register_port.hpp"

#include <cstdio>

#include "panama/driver/errors.hpp"
#include "panama/engine_top.hpp"
#include "panama/regmap.hpp"

namespace panama::driver {

MailboxPort::MailboxPort(RegisterPort& raw, const MailboxLayout& layout, uint32_t max_polls)
    : raw_(raw), layout_(layout), max_polls_(max_polls), seq_(0), synced_(false) {}

void MailboxPort::request(uint32_t op, uint32_t offset, uint32_t value) {
  if (!synced_) {
    // The kernel acknowledges the last sequence it served; continue from
    // there so a request is never mistaken for one already served.
    seq_ = raw_.read32(layout_.ctrl_ack);
    synced_ = true;
  }
  raw_.write32(layout_.ctrl_op, op);
  raw_.write32(layout_.ctrl_addr, offset);
  raw_.write32(layout_.ctrl_wdata, value);
  ++seq_;
  raw_.write32(layout_.ctrl_seq, seq_);
  for (uint32_t i = 0; i < max_polls_; ++i) {
    if (raw_.read32(layout_.ctrl_ack) == seq_) return;
  }
  throw DriverError(ErrorKind::kRegisterAccess,
                    "HLS kernel mailbox did not acknowledge the access to " + register_name(offset) +
                        " after " + std::to_string(max_polls_) +
                        " polls: is the kernel running (free-running, ap_ctrl_none)?");
}

uint32_t MailboxPort::read32(uint32_t offset) {
  request(kCtrlOpRead, offset, 0);
  return raw_.read32(layout_.ctrl_rdata);
}

void MailboxPort::write32(uint32_t offset, uint32_t value) {
  request(kCtrlOpWrite, offset, value);
}

std::string register_name(uint32_t offset) {
  using namespace regmap;
  struct Named {
    uint32_t offset;
    const char* name;
  };
  static const Named kNames[] = {
      {kId, "ID"},
      {kVersion, "VERSION"},
      {kNumEntries, "NUM_ENTRIES"},
      {kNumSlots, "NUM_SLOTS"},
      {kSlotElems, "SLOT_ELEMS"},
      {kControl, "CONTROL"},
      {kUdpPort, "UDP_PORT"},
      {kEntryIndex, "ENTRY_INDEX"},
      {kEntryCmd, "ENTRY_CMD"},
      {kEntryStatus, "ENTRY_STATUS"},
      {kEKey, "E_KEY"},
      {kEFlags, "E_FLAGS"},
      {kEFanIn, "E_FAN_IN"},
      {kEChildMaskLo, "E_CHILD_MASK_LO"},
      {kEChildMaskHi, "E_CHILD_MASK_HI"},
      {kESlotBase, "E_SLOT_BASE"},
      {kESlotCount, "E_SLOT_COUNT"},
      {kEOutChildId, "E_OUT_CHILD_ID"},
      {kEEthDstLo, "E_ETH_DST_LO"},
      {kEEthDstHi, "E_ETH_DST_HI"},
      {kEEthSrcLo, "E_ETH_SRC_LO"},
      {kEEthSrcHi, "E_ETH_SRC_HI"},
      {kEIpSrc, "E_IP_SRC"},
      {kEIpDst, "E_IP_DST"},
      {kEUdpPorts, "E_UDP_PORTS"},
      {kEIpTtlDscp, "E_IP_TTL_DSCP"},
  };
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%03X", offset);
  for (const Named& n : kNames) {
    if (n.offset == offset) return std::string(n.name) + " (" + hex + ")";
  }
  if (offset >= kGlobalCounterBase && offset < kGlobalCounterBase + 8 * kNumGlobalCounters) {
    return std::string("counter ") + kGlobalCounterNames[(offset - kGlobalCounterBase) / 8] + " (" + hex +
           ")";
  }
  return std::string("register ") + hex;
}

}  // namespace panama::driver
