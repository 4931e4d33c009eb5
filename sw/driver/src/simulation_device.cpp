// The simulation backend's Device (see panama/driver/simulation.hpp).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "file_lock.hpp"
#include "panama/driver/cmac.hpp"
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

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Strict: an even number of hex digits, nothing else.
bool from_hex(const std::string& s, Frame& out) {
  if (s.size() % 2) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = hex_digit(s[i]), lo = hex_digit(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" -> 16 bytes; false when malformed.
bool parse_uuid(const std::string& text, Uuid& out) {
  if (text.size() != 36) return false;
  size_t k = 0;
  for (size_t i = 0; i < text.size();) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (text[i] != '-') return false;
      ++i;
      continue;
    }
    const int hi = hex_digit(text[i]), lo = hex_digit(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[k++] = static_cast<uint8_t>(hi << 4 | lo);
    i += 2;
  }
  return k == out.size();
}

// True when nothing but white space is left on the line.
bool at_end(std::istringstream& ls) {
  ls >> std::ws;
  return ls.eof();
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
      ok = (ls >> std::hex >> off >> val) && at_end(ls);
      if (ok) engine_->reg_write(off, val);
    } else if (tag == "f") {
      std::string hex;
      ok = (ls >> hex) && from_hex(hex, frame) && at_end(ls);
      if (ok) {
        uint64_t sent = 0;
        EmitFn count([&sent](const uint8_t*, uint32_t) { ++sent; });
        engine_->process_frame(frame.data(), static_cast<uint32_t>(frame.size()), count);
        cmacs_[0].count_frames(1, sent);
      }
    } else if (tag == "x") {
      std::string uuid, platform, ip;
      XclbinInfo info;
      ok = (ls >> uuid >> platform >> ip) && at_end(ls) && parse_uuid(uuid, info.uuid) &&
           ip.find(':') != std::string::npos;
      if (ok) {
        info.platform = platform;
        info.ips.push_back(XclbinIp{ip, 1, 2, 0});
        xclbin_ = info;
      }
    } else if (tag == "m") {
      unsigned cage = 0;
      uint32_t off = 0, val = 0;
      ok = (ls >> cage >> std::hex >> off >> val) && at_end(ls) && cage < cmacs_.size();
      if (ok) cmacs_[cage].write32(off, val);
    } else if (tag == "p") {
      unsigned cage = 0;
      std::string what;
      int v = -1;
      ok = (ls >> cage >> what >> v) && at_end(ls) && cage < cmacs_.size() && (v == 0 || v == 1) &&
           (what == "cable" || what == "peer_rsfec");
      if (ok && what == "cable") cmacs_[cage].set_cable(v == 1);
      if (ok && what == "peer_rsfec") cmacs_[cage].set_peer_rsfec(v == 1);
    } else if (tag == "k") {
      unsigned cage = 0;
      int index = -1;
      unsigned long long live = 0, latched = 0;
      ok = (ls >> cage >> index >> std::hex >> live >> latched) && at_end(ls) && cage < cmacs_.size() &&
           index >= 0 && index < SimCmac::kCounterCount;
      if (ok) cmacs_[cage].set_counter(index, live, latched);
    } else {
      ok = tag.empty();
    }
    if (!ok) {
      throw DriverError(ErrorKind::kInvalidArgument,
                        options_.sim_state + ":" + std::to_string(lineno) +
                            ": corrupt simulation state line \"" + line.substr(0, 60) +
                            "\"; remove the file (or run `panamactl reset`) to start afresh");
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
  // The MACs are not part of the engine: their state survives an engine reset.
  for (unsigned cage = 0; cage < cmacs_.size(); ++cage) {
    for (const std::string& l : cmacs_[cage].state_lines(cage)) journal(l);
  }
}

void SimulationDevice::check_cage(unsigned cage) const {
  if (cage >= cmacs_.size()) {
    throw DriverError(ErrorKind::kInvalidArgument, spec() + ": QSFP28 cage " + std::to_string(cage) +
                                                       " does not exist (the cards have cages 0 and 1)");
  }
}

namespace {

// A simulated CMAC's registers; writes are journaled.
class SimCmacPort final : public RegisterPort {
 public:
  SimCmacPort(SimCmac& mac, unsigned cage, std::function<void(const std::string&)> journal, bool writable,
              std::string spec)
      : mac_(mac), cage_(cage), journal_(std::move(journal)), writable_(writable), spec_(std::move(spec)) {}
  uint32_t read32(uint32_t offset) override { return mac_.read32(offset); }
  void write32(uint32_t offset, uint32_t value) override {
    if (!writable_) {
      throw DriverError(ErrorKind::kInvalidArgument,
                        spec_ + " was opened read-only; cannot write " + cmac::register_name(offset));
    }
    mac_.write32(offset, value);
    // TICK_REG only latches counters; every reader ticks before reading.
    if (offset == cmac::kTick) return;
    char line[48];
    std::snprintf(line, sizeof(line), "m %u %x %x", cage_, offset, value);
    journal_(line);
  }

 private:
  SimCmac& mac_;
  unsigned cage_;
  std::function<void(const std::string&)> journal_;
  bool writable_;
  std::string spec_;
};

}  // namespace

RegisterPort& SimulationDevice::cmac(unsigned cage) {
  check_cage(cage);
  if (!cmac_ports_[cage]) {
    cmac_ports_[cage] = std::make_unique<SimCmacPort>(
        cmacs_[cage], cage, [this](const std::string& l) { journal(l); }, options_.mode == OpenMode::kControl,
        spec());
  }
  return *cmac_ports_[cage];
}

void SimulationDevice::set_sim_cable(unsigned cage, bool connected) {
  check_cage(cage);
  cmacs_[cage].set_cable(connected);
  journal("p " + std::to_string(cage) + " cable " + (connected ? "1" : "0"));
}

void SimulationDevice::set_sim_peer_rsfec(unsigned cage, bool on) {
  check_cage(cage);
  cmacs_[cage].set_peer_rsfec(on);
  journal("p " + std::to_string(cage) + " peer_rsfec " + (on ? "1" : "0"));
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
  EmitFn collect([&out](const uint8_t* d, uint32_t n) { out.emplace_back(d, d + n); });
  engine_->process_frame(data, len, collect);
  cmacs_[0].count_frames(1, out.size());
  journal("f " + to_hex(data, len));
  return out;
}

}  // namespace panama::driver
