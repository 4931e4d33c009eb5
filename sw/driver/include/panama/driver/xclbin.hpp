// Reading xclbin containers (XRT's axlf format, xclbin.h).
//
// The reader checks what the driver relies on before anything reaches XRT
// (XRT itself crashes on a malformed container): magic, lengths, section
// bounds, and an IP_LAYOUT that holds a PANAMA kernel. Test images (an IP
// layout, no bitstream) are written by tests/driver/support/test_xclbin.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace panama::driver {

using Uuid = std::array<uint8_t, 16>;
std::string uuid_to_string(const Uuid& uuid);

// One IP of the IP_LAYOUT section.
struct XclbinIp {
  std::string name;      // "kernel:compute_unit"
  uint32_t type = 1;     // IP_KERNEL
  uint32_t control = 2;  // AP_CTRL_NONE: free-running
  uint64_t base_address = 0;
};

enum class KernelFlavor { kRtl, kHls };
const char* to_string(KernelFlavor flavor);

// The PANAMA kernel found in an xclbin.
struct PanamaKernel {
  KernelFlavor flavor;
  std::string kernel;
  std::string compute_unit;
  uint64_t base_address;
  std::string xrt_ip_name() const { return kernel + ":{" + compute_unit + "}"; }
};

struct XclbinInfo {
  std::string platform;  // platform VBNV, e.g. xilinx_u280_gen3x16_xdma_1_202211_1
  Uuid uuid{};
  uint16_t mode = 0;  // XCLBIN_MODE
  std::vector<XclbinIp> ips;
  std::vector<uint32_t> section_kinds;
  // The PANAMA kernel (RTL preferred when both are present), if any.
  std::optional<PanamaKernel> panama_kernel() const;
  // The CMAC kernel of QSFP28 cage `cage` (cmac_<cage>:<cu>), if any.
  std::optional<XclbinIp> cmac_kernel(unsigned cage) const;
};
// "kernel:cu" -> "kernel:{cu}", the name xrt::ip takes.
inline std::string xrt_ip_name(const std::string& layout_name) {
  const size_t colon = layout_name.find(':');
  if (colon == std::string::npos) return layout_name;
  return layout_name.substr(0, colon + 1) + "{" + layout_name.substr(colon + 1) + "}";
}

// Parses and checks a container held in memory; `what` names it in errors.
// Throws DriverError(kBadXclbin) with the reason when it is not usable.
XclbinInfo parse_xclbin(const std::vector<uint8_t>& image, const std::string& what);

// Reads a file whole; throws DriverError(kBadXclbin) when it cannot.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace panama::driver
