// Advisory device locks (see file_lock.hpp).
#include "file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "panama/driver/errors.hpp"

namespace panama::driver::detail {

int lock_file(const std::string& path, bool exclusive, const std::string& device) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw DriverError(ErrorKind::kInvalidArgument,
                      device + ": cannot open " + path + ": " + std::strerror(errno));
  }
  if (::flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {0};
    // Lock files hold "pid <n>" on their first line; journals do not.
    const ssize_t n = ::pread(fd, pid, sizeof(pid) - 1, 0);
    ::close(fd);
    std::string holder;
    if (n > 4 && std::strncmp(pid, "pid ", 4) == 0)
      holder = " (held by process " + std::string(pid + 4, std::strcspn(pid + 4, "\n")) + ")";
    if (err == EWOULDBLOCK) {
      throw DriverError(ErrorKind::kDeviceBusy,
                        device + " is busy: another process controls it" + holder + "; lock file " + path);
    }
    throw DriverError(ErrorKind::kDeviceBusy, device + ": cannot lock " + path + ": " + std::strerror(err));
  }
  return fd;
}

void unlock_file(int fd) {
  if (fd >= 0) {
    ::flock(fd, LOCK_UN);
    ::close(fd);
  }
}

}  // namespace panama::driver::detail
