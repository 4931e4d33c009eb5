// Advisory locks that keep two controllers off one device: flock(2) on a
// file, with the holder's pid inside for the error message.
#pragma once

#include <string>

namespace panama::driver::detail {

// Opens (creating if needed) and locks `path`; returns the descriptor.
// Throws DriverError(kDeviceBusy) naming `device` and the holder's pid when
// another process holds a conflicting lock, kInvalidArgument when the file
// cannot be opened.
int lock_file(const std::string& path, bool exclusive, const std::string& device);
void unlock_file(int fd);

}  // namespace panama::driver::detail
