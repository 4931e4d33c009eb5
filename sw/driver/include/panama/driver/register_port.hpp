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
class MailboxPort : public RegisterPort {
 public:
  MailboxPort(RegisterPort& raw, const MailboxLayout& layout, uint32_t max_polls = 100000);
  uint32_t read32(uint32_t offset) override;
  void write32(uint32_t offset, uint32_t value) override;

 private:
  void request(uint32_t op, uint32_t offset, uint32_t value);

  RegisterPort& raw_;
  MailboxLayout layout_;
  uint32_t max_polls_;
  uint32_t seq_;
  bool synced_;  // seq_ read from the kernel (on first use, so opening never touches the card)
};

using panama::register_name;

}  // namespace panama::driver
