// Test xclbin images: small but valid containers (axlf header + IP_LAYOUT,
// no bitstream) for the driver's tests, for panamactl's tests and for trying
// the tool chain on XRT's no-op device (panama-test-xclbin). Not part of the
// driver library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "panama/driver/xclbin.hpp"

namespace panama::driver::testing {

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

// Adds the CMAC kernel of QSFP28 cage `cage` (cmac_<cage>:cmac_<cage>, as
// the Vitis link names VNx's kernel) to an image's IP layout.
XclbinSpec with_cmac(XclbinSpec spec, unsigned cage);

}  // namespace panama::driver::testing
