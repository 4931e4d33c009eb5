// The HLS kernel's register mailbox.
#include "panama/driver/register_port.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "panama/driver/errors.hpp"
#include "panama/regmap.hpp"

namespace panama::driver {

MailboxPort::MailboxPort(RegisterPort& raw, const MailboxLayout& layout, uint32_t max_polls,
                         std::string lock_path)
    : raw_(raw),
      layout_(layout),
      max_polls_(max_polls),
      lock_path_(std::move(lock_path)),
      seq_(0),
      synced_(false) {}

MailboxPort::~MailboxPort() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

namespace {

// Holds an exclusive flock(2) for one transaction.
class TransactionLock {
 public:
  TransactionLock(int fd, const std::string& path) : fd_(fd) {
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        throw DriverError(ErrorKind::kDeviceBusy,
                          "cannot lock the HLS kernel's mailbox (" + path + "): " + std::strerror(errno));
      }
    }
  }
  ~TransactionLock() {
    if (fd_ >= 0) ::flock(fd_, LOCK_UN);
  }
  TransactionLock(const TransactionLock&) = delete;
  TransactionLock& operator=(const TransactionLock&) = delete;

 private:
  int fd_;
};

}  // namespace

uint32_t MailboxPort::transact(uint32_t op, uint32_t offset, uint32_t value) {
  if (!lock_path_.empty() && lock_fd_ < 0) {
    lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) {
      throw DriverError(ErrorKind::kInvalidArgument,
                        "cannot open the mailbox lock " + lock_path_ + ": " + std::strerror(errno));
    }
  }
  TransactionLock hold(lock_fd_, lock_path_);
  // Another process may have used the mailbox since: take its sequence.
  if (lock_fd_ >= 0) synced_ = false;
  request(op, offset, value);
  return op == regmap::kMailboxOpRead ? raw_.read32(layout_.ctrl_rdata) : 0;
}

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
  return transact(regmap::kMailboxOpRead, offset, 0);
}

void MailboxPort::write32(uint32_t offset, uint32_t value) {
  transact(regmap::kMailboxOpWrite, offset, value);
}

}  // namespace panama::driver
