// The HLS kernel's register mailbox.
#include "panama/driver/register_port.hpp"

#include "panama/driver/errors.hpp"
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
  request(regmap::kMailboxOpRead, offset, 0);
  return raw_.read32(layout_.ctrl_rdata);
}

void MailboxPort::write32(uint32_t offset, uint32_t value) {
  request(regmap::kMailboxOpWrite, offset, value);
}

}  // namespace panama::driver
