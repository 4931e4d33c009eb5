// The XRT backend: an Alveo card through Debian's libxrt (xrt::device,
// load_xclbin, xrt::ip register access). The engine's register map sits on
// the PANAMA kernel's AXI4-Lite port: directly for the RTL kernel, behind the
// mailbox for the HLS kernel. XRT errors become DriverErrors that say what to
// check; malformed xclbins are refused before XRT sees them.
#include <unistd.h>
#include <xclbin.h>

#include <experimental/xrt_ini.h>
#include <experimental/xrt_ip.h>
#include <experimental/xrt_system.h>
#include <xrt/xrt_device.h>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <system_error>

#include "backends.hpp"
#include "file_lock.hpp"
#include "panama/driver/cmac.hpp"
#include "panama/driver/register_port.hpp"

namespace panama::driver::detail {

namespace {

bool noop_mode() {
  const char* m = std::getenv("XCL_EMULATION_MODE");
  return m && std::string(m) == "noop";
}

bool is_busy(const std::exception& e) {
  if (auto* se = dynamic_cast<const std::system_error*>(&e)) {
    if (se->code().value() == EBUSY) return true;
  }
  return std::string(e.what()).find("busy") != std::string::npos;
}

// XRT's device library is found through XILINX_XRT; say so when it is not.
std::string xrt_hint(const std::string& what) {
  if (what.find("XILINX_XRT") != std::string::npos || what.find("No such library") != std::string::npos) {
    return " (set XILINX_XRT to a folder whose lib/ holds XRT's libxrt_core.so.2 and, for emulation, "
           "libxrt_noop.so.2; see docs/alveo.md)";
  }
  return "";
}

}  // namespace

// XRT 2.13's xrt::ip opens an exclusive context on its IP unless
// Runtime.rw_shared is set, and then a second process (a `panamactl
// counters` beside a controller, or the CMAC's `link` beside either) cannot
// open the kernel at all. PANAMA serialises writers itself (the per-card
// lock), so every process asks XRT for shared contexts with register access,
// before XRT reads its configuration. The process that loads the xclbin must
// have it too (the driver's KDS takes it at load time): panamactl does; for
// `xbutil program`, xrt.ini (docs/alveo.md) sets it.
bool enable_shared_access() {
  static const bool enabled = [] {
    try {
      xrt::ini::set("Runtime.rw_shared", "true");
      return true;
    } catch (const std::exception&) {
      return false;  // XRT's configuration was read already (an xrt.ini decides)
    }
  }();
  return enabled;
}

namespace {

// Register access on the kernel's AXI4-Lite port through xrt::ip.
class XrtIpPort final : public RegisterPort {
 public:
  using Namer = std::string (*)(uint32_t);
  XrtIpPort(xrt::ip ip, std::string where, Namer namer = &register_name)
      : ip_(std::move(ip)), where_(std::move(where)), namer_(namer) {}
  uint32_t read32(uint32_t offset) override {
    try {
      return ip_.read_register(offset);
    } catch (const std::exception& e) {
      fail("reading", offset, e);
    }
  }
  void write32(uint32_t offset, uint32_t value) override {
    try {
      ip_.write_register(offset, value);
    } catch (const std::exception& e) {
      fail("writing", offset, e);
    }
  }

 private:
  [[noreturn]] void fail(const char* verb, uint32_t offset, const std::exception& e) {
    std::string msg = std::string(verb) + " " + namer_(offset) + " on " + where_ + " failed: " + e.what();
    if (noop_mode()) msg += " (XRT's no-op device, XCL_EMULATION_MODE=noop, has no registers)";
    throw DriverError(is_busy(e) ? ErrorKind::kDeviceBusy : ErrorKind::kRegisterAccess, msg);
  }

  xrt::ip ip_;
  std::string where_;
  Namer namer_;
};

class XrtDevice final : public Device {
 public:
  XrtDevice(const std::string& target, const OpenOptions& options) : target_(target), options_(options) {
    enable_shared_access();
    try {
      const bool is_index = !target.empty() && target.find_first_not_of("0123456789") == std::string::npos;
      device_ = is_index ? xrt::device(static_cast<unsigned>(std::stoul(target))) : xrt::device(target);
    } catch (const std::exception& e) {
      throw DriverError(is_busy(e) ? ErrorKind::kDeviceBusy : ErrorKind::kNoDevice,
                        spec() + ": no such card: XRT: " + e.what() + xrt_hint(e.what()) +
                            " (`panamactl list` and `xbutil examine` list the cards XRT sees)");
    }
    // One lock per card, named by its PCIe address: xrt:0 and xrt:<bdf> of
    // the same card take the same lock.
    bdf_ = card_bdf();
    if (options_.mode == OpenMode::kControl) {
      lock_fd_ = lock_file(lock_path(bdf_), true, spec() + " (card " + bdf_ + ")");
      const std::string pid = "pid " + std::to_string(::getpid()) + "\n";
      if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) < 0) {
        // The pid is only for the busy message; the lock itself holds.
      }
    }
    try {
      attach_loaded();
    } catch (...) {
      unlock_file(lock_fd_);
      throw;
    }
  }

  // The card's PCIe address as XRT reports it (the user function, e.g.
  // 0000:3b:00.1); "noop" on XRT's no-op device, which has none.
  std::string card_bdf() {
    try {
      const std::string bdf = device_.get_info<xrt::info::device::bdf>();
      if (!bdf.empty()) return bdf;
    } catch (const std::exception&) {
      // XRT cannot tell (the no-op device): see below.
    }
    if (noop_mode()) return "noop";
    throw DriverError(ErrorKind::kNoDevice, spec() + ": XRT reports no PCIe address for the card");
  }

  static std::string lock_path(const std::string& bdf) {
    std::string safe = bdf;
    for (char& c : safe) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return lock_dir() + "/panama-card-" + safe + ".lock";
  }

  static std::string mailbox_lock_path(const std::string& bdf) {
    std::string p = lock_path(bdf);
    return p.substr(0, p.size() - 5) + ".mailbox.lock";
  }

  ~XrtDevice() override {
    cmac_ports_.clear();
    port_.reset();
    raw_.reset();
    unlock_file(lock_fd_);
  }
  XrtDevice(const XrtDevice&) = delete;
  XrtDevice& operator=(const XrtDevice&) = delete;

  std::string spec() const override { return "xrt:" + target_; }

  std::string description() const override {
    std::string d = "XRT card " + target_ + " (" + bdf_ + ")";
    if (xclbin_) {
      d += ", image " + uuid_to_string(xclbin_->uuid) + " (" + xclbin_->platform + "), " +
           to_string(kernel_->flavor) + " " + kernel_->xrt_ip_name();
    } else {
      d += ", no PANAMA image loaded";
    }
    if (noop_mode()) d += " [XRT no-op device]";
    return d;
  }

  void program(const std::string& xclbin_path) override {
    if (options_.mode != OpenMode::kControl) {
      throw DriverError(ErrorKind::kInvalidArgument, spec() + " was opened read-only; cannot program it");
    }
    const std::vector<uint8_t> image = read_file_bytes(xclbin_path);
    const XclbinInfo info = parse_xclbin(image, xclbin_path);
    const std::optional<PanamaKernel> kernel = info.panama_kernel();
    if (!kernel) {
      throw DriverError(ErrorKind::kBadXclbin, xclbin_path + ": holds no PANAMA kernel (looked for " +
                                                   std::string(kRtlKernelName) + " and " + kHlsKernelName +
                                                   " in its IP_LAYOUT); build it with hw/vitis");
    }
    cmac_ports_.clear();
    port_.reset();
    raw_.reset();
    xclbin_.reset();
    try {
      device_.load_xclbin(reinterpret_cast<const axlf*>(image.data()));
    } catch (const std::exception& e) {
      throw DriverError(
          is_busy(e) ? ErrorKind::kDeviceBusy : ErrorKind::kBadXclbin,
          spec() + ": XRT refused " + xclbin_path + ": " + e.what() +
              (is_busy(e) ? " (another process has the card open; close it, or see `xbutil examine`)"
                          : " (is it built for this card's platform? `xbutil examine -d` shows it)"));
    }
    attach(info, *kernel);
    identity();
  }

  std::optional<XclbinInfo> loaded_xclbin() const override { return xclbin_; }

  uint32_t read32(uint32_t offset) override { return port().read32(offset); }
  void write32(uint32_t offset, uint32_t value) override {
    if (options_.mode != OpenMode::kControl) {
      throw DriverError(ErrorKind::kInvalidArgument,
                        spec() + " was opened read-only; cannot write " + register_name(offset));
    }
    port().write32(offset, value);
  }

  RegisterPort& cmac(unsigned cage) override {
    if (!xclbin_) port();  // throws kNotProgrammed
    auto it = cmac_ports_.find(cage);
    if (it != cmac_ports_.end()) return *it->second;
    const std::optional<XclbinIp> ip = xclbin_->cmac_kernel(cage);
    if (!ip) {
      throw DriverError(ErrorKind::kUnsupported,
                        spec() + ": the loaded image has no CMAC kernel for QSFP28 cage " +
                            std::to_string(cage) + " (looked for " + cmac_name(cage) +
                            " in its IP_LAYOUT; hw/vitis/boards.json)");
    }
    const std::string name = xrt_ip_name(ip->name);
    xrt::ip handle;
    try {
      handle = xrt::ip(device_, xrt::uuid(xclbin_->uuid.data()), name);
    } catch (const std::exception& e) {
      throw DriverError(is_busy(e) ? ErrorKind::kDeviceBusy : ErrorKind::kBadXclbin,
                        spec() + ": XRT cannot open the CMAC kernel " + name + ": " + e.what());
    }
    auto port = std::make_unique<XrtIpPort>(std::move(handle), spec() + " " + name, &cmac::register_name);
    if (options_.mode == OpenMode::kControl) {
      cmac_ports_[cage] = std::move(port);
    } else {
      cmac_ports_[cage] = std::make_unique<ReadOnlyPort>(std::move(port), spec());
    }
    return *cmac_ports_[cage];
  }

 private:
  static std::string cmac_name(unsigned cage) {
    std::string name = kCmacKernelPattern;
    const size_t at = name.find("{interface}");
    if (at != std::string::npos) name.replace(at, 11, std::to_string(cage));
    return name;
  }

  // Refuses writes on a read-only open.
  class ReadOnlyPort final : public RegisterPort {
   public:
    ReadOnlyPort(std::unique_ptr<RegisterPort> p, std::string spec)
        : p_(std::move(p)), spec_(std::move(spec)) {}
    uint32_t read32(uint32_t o) override { return p_->read32(o); }
    void write32(uint32_t o, uint32_t) override {
      throw DriverError(ErrorKind::kInvalidArgument,
                        spec_ + " was opened read-only; cannot write " + cmac::register_name(o));
    }

   private:
    std::unique_ptr<RegisterPort> p_;
    std::string spec_;
  };

  static std::string lock_dir() {
    const char* d = std::getenv("PANAMA_LOCK_DIR");
    return d && *d ? d : "/tmp";
  }

  RegisterPort& port() {
    if (!port_) {
      throw DriverError(ErrorKind::kNotProgrammed,
                        spec() + " holds no PANAMA image: program one with `panamactl program -d " + spec() +
                            " <file.xclbin>`");
    }
    return *port_;
  }

  void attach(const XclbinInfo& info, const PanamaKernel& kernel) {
    xrt::ip ip;
    try {
      ip = xrt::ip(device_, xrt::uuid(info.uuid.data()), kernel.xrt_ip_name());
    } catch (const std::exception& e) {
      throw DriverError(ErrorKind::kBadXclbin,
                        spec() + ": XRT cannot open the kernel " + kernel.xrt_ip_name() + ": " + e.what());
    }
    xclbin_ = info;
    kernel_ = kernel;
    raw_ = std::make_unique<XrtIpPort>(std::move(ip), spec() + " " + kernel.xrt_ip_name());
    if (kernel.flavor == KernelFlavor::kRtl) {
      port_ = std::make_unique<PortRef>(*raw_);
    } else {
      // Every process on the card (status and counters too, which open it
      // without the card lock) takes the mailbox lock per transaction.
      port_ = std::make_unique<MailboxPort>(*raw_, kHlsMailbox, 100000, mailbox_lock_path(bdf_));
    }
  }

  // An image another process loaded: take its IP layout from XRT.
  void attach_loaded() {
    try {
      const xrt::uuid uuid = device_.get_xclbin_uuid();
      if (!uuid) return;
      const auto* layout = device_.get_xclbin_section<const ip_layout*>(IP_LAYOUT, uuid);
      if (!layout) return;
      XclbinInfo info;
      std::memcpy(info.uuid.data(), uuid.get(), 16);
      for (int32_t i = 0; i < layout->m_count; ++i) {
        const ip_data& d = layout->m_ip_data[i];
        info.ips.push_back(
            XclbinIp{std::string(reinterpret_cast<const char*>(d.m_name),
                                 strnlen(reinterpret_cast<const char*>(d.m_name), sizeof(d.m_name))),
                     d.m_type, (d.properties & IP_CONTROL_MASK) >> IP_CONTROL_SHIFT, d.m_base_address});
      }
      if (const auto kernel = info.panama_kernel()) attach(info, *kernel);
    } catch (const DriverError&) {
      throw;
    } catch (const std::exception&) {
      // No image, or XRT cannot tell: the card counts as not programmed.
    }
  }

  // Forwards to another port (the RTL kernel's map needs no adapter).
  class PortRef final : public RegisterPort {
   public:
    explicit PortRef(RegisterPort& p) : p_(p) {}
    uint32_t read32(uint32_t o) override { return p_.read32(o); }
    void write32(uint32_t o, uint32_t v) override { p_.write32(o, v); }

   private:
    RegisterPort& p_;
  };

  std::string target_;
  OpenOptions options_;
  std::string bdf_;
  int lock_fd_ = -1;
  std::map<unsigned, std::unique_ptr<RegisterPort>> cmac_ports_;
  xrt::device device_;
  std::optional<XclbinInfo> xclbin_;
  std::optional<PanamaKernel> kernel_;
  std::unique_ptr<RegisterPort> raw_;
  std::unique_ptr<RegisterPort> port_;
};

}  // namespace

std::unique_ptr<Device> open_xrt_device(const std::string& target, const OpenOptions& options) {
  if (target.empty())
    throw DriverError(ErrorKind::kInvalidArgument, "xrt: needs a card index or PCIe BDF, e.g. xrt:0");
  return std::make_unique<XrtDevice>(target, options);
}

std::vector<DeviceListing> list_xrt_devices(std::string* note) {
  std::vector<DeviceListing> out;
  size_t n = 0;
  enable_shared_access();
  try {
    n = xrt::system::enumerate_devices();
  } catch (const std::exception& e) {
    if (note) *note = std::string("XRT: ") + e.what() + xrt_hint(e.what());
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    std::string desc = "Alveo card";
    try {
      xrt::device d(static_cast<unsigned>(i));
      desc = d.get_info<xrt::info::device::name>() + " at " + d.get_info<xrt::info::device::bdf>();
    } catch (const std::exception& e) {
      desc += std::string(" (") + e.what() + ")";
    }
    out.push_back(DeviceListing{"xrt:" + std::to_string(i), desc});
  }
  if (n == 0 && note) {
    *note = noop_mode()
                ? "XRT no-op device (XCL_EMULATION_MODE=noop): XRT enumerates no cards, but xrt:0 opens"
                : "XRT sees no cards (is the xocl driver loaded? `xbutil examine` tells)";
  }
  return out;
}

}  // namespace panama::driver::detail
