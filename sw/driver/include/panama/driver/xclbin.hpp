// Reading and writing xclbin containers (XRT's axlf format, xclbin.h).
//
// The reader checks what the driver relies on before anything reaches XRT
// (XRT itself crashes on a malformed container): magic, lengths, section
// bounds, and an IP_LAYOUT that holds a PANAMA kernel. The writer makes small
// but valid containers (axlf header + IP_LAYOUT) for tests and for trying the
// tool chain on XRT's no-op device; they carry no bitstream.
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
};

// Parses and checks a container held in memory; `what` names it in errors.
// Throws DriverError(kBadXclbin) with the reason when it is not usable.
XclbinInfo parse_xclbin(const std::vector<uint8_t>& image, const std::string& what);

// Reads a file whole; throws DriverError(kBadXclbin) when it cannot.
std::vector<uint8_t> read_file_bytes(const std::string& path);

struct XclbinSpec {
  std::string platform = "xilinx_u280_gen3x16_xdma_1_202211_1";
  std::optional<Uuid> uuid;  // random when not given
  std::vector<XclbinIp> ips;
};

// Builds a container with an IP_LAYOUT section (IPs sorted by base address,
// as XRT requires).
std::vector<uint8_t> build_xclbin(const XclbinSpec& spec);

// The IP layout of a PANAMA image: the RTL or the HLS kernel at the base
// address the Vitis link gives it.
XclbinSpec panama_xclbin_spec(KernelFlavor flavor, const std::string& platform);

}  // namespace panama::driver
