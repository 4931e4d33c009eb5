// Errors the driver reports. Every failure a user can cause or meet (no card,
// card in use, wrong xclbin, register access refused, read-back mismatch,
// configuration too large for the card) is a DriverError with a kind that
// callers and tests can tell apart and a message that says what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace panama::driver {

enum class ErrorKind {
  kNoDevice,          // no such card, or XRT cannot find its device library
  kDeviceBusy,        // another process holds the card (or the simulation state)
  kBadXclbin,         // not an xclbin, unreadable, or without a PANAMA kernel
  kIncompatible,      // identity or register-map version does not match this driver
  kNotProgrammed,     // the card holds no PANAMA xclbin yet
  kRegisterAccess,    // a register read or write failed in the backend
  kReadbackMismatch,  // a written register reads back a different value
  kCapacity,          // the configuration does not fit the engine (entries, slots)
  kConfigRejected,    // the engine refused a configured entry (ENTRY_STATUS error)
  kInvalidArgument,   // bad device spec, file, or value
  kUnsupported,       // the operation does not exist on this backend
};

const char* to_string(ErrorKind kind);

class DriverError : public std::runtime_error {
 public:
  DriverError(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace panama::driver
