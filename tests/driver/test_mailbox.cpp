// The driver's HLS-kernel mailbox against the Vitis top function itself
// (hw/hls/src/engine_top.cpp): a register file at the offsets of
// hw/vitis/kernels.json stands for the kernel's AXI4-Lite port, and every
// poll of ctrl_ack runs the free-running kernel once, as the hardware would
// between two host accesses.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "panama/driver/errors.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/engine/apply_config.hpp"
#include "panama/engine_top.hpp"
#include "panama/regmap.hpp"
#include "support/temp_dir.hpp"

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

namespace {

// A kernel's mailbox registers shared by several hosts (threads here, as
// processes on a card): every register access is atomic, nothing more, and
// every access yields so that hosts interleave wherever they can. The
// kernel serves a request on the poll of ctrl_ack after ctrl_seq changed,
// over a scratch register file. Each access is logged with its host.
class SharedKernel {
 public:
  uint32_t read(int host, uint32_t offset) {
    std::this_thread::yield();
    std::lock_guard<std::mutex> g(m_);
    log_.push_back({host, offset, false});
    if (offset == kHlsMailbox.ctrl_ack && regs_[kHlsMailbox.ctrl_seq] != regs_[kHlsMailbox.ctrl_ack]) {
      const uint32_t addr = regs_[kHlsMailbox.ctrl_addr];
      if (regs_[kHlsMailbox.ctrl_op] == regmap::kMailboxOpWrite)
        scratch_[addr] = regs_[kHlsMailbox.ctrl_wdata];
      regs_[kHlsMailbox.ctrl_rdata] = scratch_[addr];
      regs_[kHlsMailbox.ctrl_ack] = regs_[kHlsMailbox.ctrl_seq];
    }
    return regs_[offset];
  }
  void write(int host, uint32_t offset, uint32_t value) {
    std::this_thread::yield();
    std::lock_guard<std::mutex> g(m_);
    log_.push_back({host, offset, true});
    regs_[offset] = value;
  }
  struct Access {
    int host;
    uint32_t offset;
    bool write;
  };
  std::vector<Access> log() {
    std::lock_guard<std::mutex> g(m_);
    return log_;
  }

 private:
  std::mutex m_;
  std::map<uint32_t, uint32_t> regs_, scratch_;
  std::vector<Access> log_;
};

class HostPort final : public RegisterPort {
 public:
  HostPort(SharedKernel& k, int host) : k_(k), host_(host) {}
  uint32_t read32(uint32_t offset) override { return k_.read(host_, offset); }
  void write32(uint32_t offset, uint32_t value) override { k_.write(host_, offset, value); }

 private:
  SharedKernel& k_;
  int host_;
};

}  // namespace

TEST_CASE("mailbox transactions of hosts sharing one kernel never interleave under the mailbox lock",
          "[driver][mailbox]") {
  const std::string dir = panama::test::temp_dir("pnm_mailbox_lock");
  const std::string lock = dir + "/card.mailbox.lock";
  SharedKernel kernel;
  constexpr int kHosts = 3;
  constexpr uint32_t kOps = 300;
  std::vector<std::thread> hosts;
  std::vector<uint32_t> wrong(kHosts, 0);
  for (int h = 0; h < kHosts; ++h) {
    hosts.emplace_back([&, h] {
      HostPort raw(kernel, h);
      MailboxPort mailbox(raw, kHlsMailbox, 100000, lock);  // each opens the lock file itself, like a process
      for (uint32_t i = 0; i < kOps; ++i) {
        const uint32_t addr = 0x100 * (h + 1) + (i % 16) * 4;
        const uint32_t value = (static_cast<uint32_t>(h) << 24) | i;
        mailbox.write32(addr, value);
        if (mailbox.read32(addr) != value) ++wrong[h];
      }
    });
  }
  for (std::thread& t : hosts) t.join();
  for (int h = 0; h < kHosts; ++h) CHECK(wrong[h] == 0);
  // Each transaction is one run of one host's accesses: ctrl_ack (the
  // sequence, re-read under the lock), op, addr, wdata, seq, polls of
  // ctrl_ack, and ctrl_rdata for a read. A host's run starts with a read of
  // ctrl_ack and no other host's access falls inside it.
  const std::vector<SharedKernel::Access> log = kernel.log();
  size_t runs = 0, interleaved = 0;
  for (size_t i = 0; i < log.size();) {
    size_t j = i + 1;
    while (j < log.size() && log[j].host == log[i].host) ++j;
    // A run holds whole transactions: as many seq writes as op writes.
    size_t ops = 0, seqs = 0;
    for (size_t k = i; k < j; ++k) {
      if (log[k].write && log[k].offset == kHlsMailbox.ctrl_op) ++ops;
      if (log[k].write && log[k].offset == kHlsMailbox.ctrl_seq) ++seqs;
    }
    if (ops != seqs || ops == 0) ++interleaved;
    ++runs;
    i = j;
  }
  INFO(runs << " runs of one host's accesses");
  CHECK(interleaved == 0);
}
