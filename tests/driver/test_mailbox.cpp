// The driver's HLS-kernel mailbox against the Vitis top function itself
// (hw/hls/src/engine_top.cpp): a register file at the offsets of
// hw/vitis/kernels.json stands for the kernel's AXI4-Lite port, and every
// poll of ctrl_ack runs the free-running kernel once, as the hardware would
// between two host accesses.
#include <catch2/catch.hpp>
#include <map>

#include "panama/engine/apply_config.hpp"
#include "panama/driver/errors.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/engine_top.hpp"
#include "panama/regmap.hpp"

using namespace panama;
using namespace panama::driver;

namespace {

class HlsKernelPort final : public RegisterPort {
 public:
  explicit HlsKernelPort(bool running = true) : running_(running) {}
  uint32_t read32(uint32_t offset) override {
    if (offset == kHlsMailbox.ctrl_ack && running_) step();
    return regs_[offset];
  }
  void write32(uint32_t offset, uint32_t value) override {
    ++writes_;
    regs_[offset] = value;
  }
  uint32_t writes() const { return writes_; }

 private:
  void step() {
    hlsc::stream<hlsc::AxisWord> in, out;
    uint32_t ack = 0, rdata = 0;
    panama_engine_top(in, out, regs_[kHlsMailbox.ctrl_seq], regs_[kHlsMailbox.ctrl_op],
                      regs_[kHlsMailbox.ctrl_addr], regs_[kHlsMailbox.ctrl_wdata], &ack, &rdata);
    regs_[kHlsMailbox.ctrl_ack] = ack;
    regs_[kHlsMailbox.ctrl_rdata] = rdata;
  }
  bool running_;
  uint32_t writes_ = 0;
  std::map<uint32_t, uint32_t> regs_;
};

struct Regs final : RegisterAccess {
  explicit Regs(RegisterPort& p) : port(p) {}
  uint32_t read32(uint32_t a) override { return port.read32(a); }
  void write32(uint32_t a, uint32_t v) override { port.write32(a, v); }
  RegisterPort& port;
};

}  // namespace

TEST_CASE("the register map through the HLS kernel's mailbox", "[driver][mailbox]") {
  HlsKernelPort kernel;
  MailboxPort mailbox(kernel, kHlsMailbox);
  CHECK(mailbox.read32(regmap::kId) == 0x504E4D41u);  // 'PNMA'
  CHECK(mailbox.read32(regmap::kVersion) >> 16 == regmap::kVersionMajor);
  mailbox.write32(regmap::kUdpPort, 4791);
  CHECK(mailbox.read32(regmap::kUdpPort) == 4791);

  // A whole configuration, with its status checks and read-back, through it.
  config::NodeConfig cfg;
  cfg.node = "hls";
  config::EntryConfig e;
  e.index = 2;
  e.job = 3;
  e.tree = 1;
  e.root = true;
  e.fan_in = 2;
  e.children = {4, 9};
  e.slot_base = 10;
  e.slot_count = 6;
  cfg.entries.push_back(e);
  Regs regs(mailbox);
  const config::EngineInfo info = config::apply_node_config(regs, cfg);
  CHECK(info.num_entries == 64);
  mailbox.write32(regmap::kEntryIndex, 2);
  mailbox.write32(regmap::kEntryCmd, regmap::kCmdLoad);
  CHECK(mailbox.read32(regmap::kESlotBase) == 10);
  CHECK(mailbox.read32(regmap::kEChildMaskLo) == ((1u << 4) | (1u << 9)));
}

TEST_CASE("a mailbox that is never answered is a clear error, not a hang", "[driver][mailbox]") {
  HlsKernelPort stopped(false);
  MailboxPort mailbox(stopped, kHlsMailbox, 50);
  try {
    mailbox.read32(regmap::kId);
    FAIL("no error");
  } catch (const DriverError& err) {
    CHECK(err.kind() == ErrorKind::kRegisterAccess);
    CHECK_THAT(std::string(err.what()),
               Catch::Contains("did not acknowledge") && Catch::Contains("ID (0x000)"));
  }
}
