// The simulation backend's Device (see panama/driver/simulation.hpp).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "file_lock.hpp"
#include "panama/driver/errors.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/driver/simulation.hpp"
#include "panama/regmap.hpp"

namespace panama::driver {

namespace {

constexpr const char* kJournalHeader = "panama-sim-journal 1";

std::string to_hex(const uint8_t* d, uint32_t n) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (uint32_t i = 0; i < n; ++i) {
    s += hex[d[i] >> 4];
    s += hex[d[i] & 15];
  }
  return s;
}

bool from_hex(const std::string& s, Frame& out) {
  if (s.size() % 2) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    unsigned v;
    if (std::sscanf(s.c_str() + i, "%2x", &v) != 1) return false;
    out.push_back(static_cast<uint8_t>(v));
  }
  return true;
}

std::string xclbin_line(const XclbinInfo& info) {
  const auto k = info.panama_kernel();
  return "x " + uuid_to_string(info.uuid) + " " + info.platform + " " + k->kernel + ":" + k->compute_unit;
}

// kAuto: the RTL engine when available, else the model.
std::unique_ptr<EngineBackend> make_backend(SimEngineKind kind) {
  if (kind == SimEngineKind::kModel || (kind == SimEngineKind::kAuto && !rtl_engine_available())) {
    return make_engine_backend("model");
  }
  if (!rtl_engine_available()) {
    throw DriverError(ErrorKind::kUnsupported,
                      "sim:rtl: this build has no Verilated RTL engine (Verilator was not found at build "
                      "time); use sim:model, or install verilator (scripts/setup.sh) and rebuild");
  }
  return make_engine_backend("rtl");
}

}  // namespace

bool rtl_engine_available() {
  return have_engine_backend("rtl");
}

SimulationDevice::SimulationDevice(SimEngineKind kind, const OpenOptions& options)
    : kind_(kind), options_(options), engine_(make_backend(kind)), engine_name_(engine_->description()) {
  if (options_.sim_state.empty()) return;
  lock_fd_ = detail::lock_file(options_.sim_state, options_.mode == OpenMode::kControl, spec());
  try {
    replay();
  } catch (...) {
    detail::unlock_file(lock_fd_);
    throw;
  }
  if (options_.mode == OpenMode::kControl) {
    const int fd = ::dup(lock_fd_);
    journal_ = fd >= 0 ? ::fdopen(fd, "a") : nullptr;
    if (!journal_) {
      detail::unlock_file(lock_fd_);
      throw DriverError(ErrorKind::kInvalidArgument,
                        spec() + ": cannot append to " + options_.sim_state + ": " + std::strerror(errno));
    }
    if (std::ftell(journal_) == 0) journal(kJournalHeader);
  }
}

SimulationDevice::~SimulationDevice() {
  if (journal_) std::fclose(journal_);
  detail::unlock_file(lock_fd_);
}

std::string SimulationDevice::spec() const {
  switch (kind_) {
    case SimEngineKind::kRtl:
      return "sim:rtl";
    case SimEngineKind::kModel:
      return "sim:model";
    case SimEngineKind::kAuto:
      break;
  }
  return "sim";
}

std::string SimulationDevice::description() const {
  std::string d = "simulation: " + engine_name_ + ", state " +
                  (options_.sim_state.empty() ? std::string("in memory") : options_.sim_state);
  if (xclbin_) d += ", image " + uuid_to_string(xclbin_->uuid) + " (" + xclbin_->platform + ")";
  return d;
}

void SimulationDevice::replay() {
  std::ifstream in(options_.sim_state);
  std::string line;
  if (!std::getline(in, line)) return;  // new state file
  if (line != kJournalHeader) {
    throw DriverError(ErrorKind::kInvalidArgument,
                      options_.sim_state + " is not a PANAMA simulation state file (first line \"" +
                          line.substr(0, 40) + "\")");
  }
  size_t lineno = 1;
  Frame frame;
  while (std::getline(in, line)) {
    ++lineno;
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    bool ok = true;
    if (tag == "w") {
      uint32_t off = 0, val = 0;
      ok = static_cast<bool>(ls >> std::hex >> off >> val);
      if (ok) engine_->reg_write(off, val);
    } else if (tag == "f") {
      std::string hex;
      ok = (ls >> hex) && from_hex(hex, frame);
      if (ok)
        engine_->process_frame(frame.data(), static_cast<uint32_t>(frame.size()),
                               [](const uint8_t*, uint32_t) {});
    } else if (tag == "x") {
      std::string uuid, platform, ip;
      ok = static_cast<bool>(ls >> uuid >> platform >> ip);
      if (ok) {
        XclbinInfo info;
        info.platform = platform;
        for (size_t i = 0, k = 0; i + 1 < uuid.size() && k < 16; ++i) {
          if (uuid[i] == '-') continue;
          unsigned v;
          std::sscanf(uuid.c_str() + i, "%2x", &v);
          info.uuid[k++] = static_cast<uint8_t>(v);
          ++i;
        }
        info.ips.push_back(XclbinIp{ip, 1, 2, 0});
        xclbin_ = info;
      }
    } else {
      ok = tag.empty();
    }
    if (!ok) {
      throw DriverError(ErrorKind::kInvalidArgument, options_.sim_state + ":" + std::to_string(lineno) +
                                                         ": corrupt simulation state line");
    }
  }
}

void SimulationDevice::journal(const std::string& line) {
  if (!journal_) return;
  std::fputs(line.c_str(), journal_);
  std::fputc('\n', journal_);
  std::fflush(journal_);
}

void SimulationDevice::restart_journal() {
  if (!journal_) return;
  std::fflush(journal_);
  if (::ftruncate(::fileno(journal_), 0) != 0) {
    throw DriverError(ErrorKind::kInvalidArgument,
                      spec() + ": cannot truncate " + options_.sim_state + ": " + std::strerror(errno));
  }
  std::fseek(journal_, 0, SEEK_SET);
  journal(kJournalHeader);
  if (xclbin_) journal(xclbin_line(*xclbin_));
}

void SimulationDevice::program(const std::string& xclbin_path) {
  if (options_.mode != OpenMode::kControl) {
    throw DriverError(ErrorKind::kInvalidArgument, spec() + " was opened read-only; cannot program it");
  }
  const XclbinInfo info = parse_xclbin(read_file_bytes(xclbin_path), xclbin_path);
  if (!info.panama_kernel()) {
    throw DriverError(ErrorKind::kBadXclbin, xclbin_path + ": holds no PANAMA kernel (looked for " +
                                                 std::string(kRtlKernelName) + " and " + kHlsKernelName +
                                                 ")");
  }
  // A simulated engine is always present; programming records the image and
  // checks the engine's identity as on a card.
  xclbin_ = info;
  journal(xclbin_line(info));
  identity();
}

uint32_t SimulationDevice::read32(uint32_t offset) {
  return engine_->reg_read(offset);
}

void SimulationDevice::write32(uint32_t offset, uint32_t value) {
  if (options_.mode != OpenMode::kControl) {
    throw DriverError(ErrorKind::kInvalidArgument,
                      spec() + " was opened read-only; cannot write " + register_name(offset));
  }
  if (offset == regmap::kControl && (value & regmap::kControlReset)) restart_journal();
  engine_->reg_write(offset, value);
  char line[40];
  std::snprintf(line, sizeof(line), "w %x %x", offset, value);
  journal(line);
}

std::vector<Frame> SimulationDevice::send_frame(const uint8_t* data, uint32_t len) {
  if (options_.mode != OpenMode::kControl) {
    throw DriverError(ErrorKind::kInvalidArgument, spec() + " was opened read-only; cannot send frames");
  }
  std::vector<Frame> out;
  engine_->process_frame(data, len, [&out](const uint8_t* d, uint32_t n) { out.emplace_back(d, d + n); });
  journal("f " + to_hex(data, len));
  return out;
}

}  // namespace panama::driver
