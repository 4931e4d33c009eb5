// A 32-bit register port onto the engine's register map
// (include/panama/regmap.hpp), as a backend provides it, and the adapter that
// reaches the map through the HLS kernel's mailbox.
#pragma once

#include <cstdint>
#include <string>

#include "panama/driver/kernel_names.hpp"
#include "panama/engine/register_access.hpp"

namespace panama::driver {

class RegisterPort {
 public:
  virtual ~RegisterPort() = default;
  // Both throw DriverError(kRegisterAccess) when the backend cannot access
  // the register.
  virtual uint32_t read32(uint32_t offset) = 0;
  virtual void write32(uint32_t offset, uint32_t value) = 0;
};

// The HLS kernel (hw/hls/src/engine_top.cpp) serves one register access per
// request: the host writes op, address and data, then a new sequence number;
// the kernel answers with that number in ctrl_ack (and the read value in
// ctrl_rdata). `raw` is the kernel's own AXI4-Lite port.
//
// The mailbox is one set of registers for every process on the card (a
// controller, `panamactl status` and `counters` beside it): with `lock_path`
// set, each transaction (op, address, data, sequence, acknowledgement, read
// value) runs under an exclusive flock(2) of that file, and the sequence is
// re-read from ctrl_ack under the lock, so transactions of different
// processes never interleave and none is mistaken for another's.
class MailboxPort : public RegisterPort {
 public:
  MailboxPort(RegisterPort& raw, const MailboxLayout& layout, uint32_t max_polls = 100000,
              std::string lock_path = {});
  ~MailboxPort() override;
  MailboxPort(const MailboxPort&) = delete;
  MailboxPort& operator=(const MailboxPort&) = delete;
  uint32_t read32(uint32_t offset) override;
  void write32(uint32_t offset, uint32_t value) override;

 private:
  // One transaction; returns ctrl_rdata for a read.
  uint32_t transact(uint32_t op, uint32_t offset, uint32_t value);
  void request(uint32_t op, uint32_t offset, uint32_t value);

  RegisterPort& raw_;
  MailboxLayout layout_;
  uint32_t max_polls_;
  std::string lock_path_;
  int lock_fd_ = -1;  // opened on first use
  uint32_t seq_;
  bool synced_;  // seq_ read from the kernel (on first use, so opening never touches the card)
};

using panama::register_name;

}  // namespace panama::driver
