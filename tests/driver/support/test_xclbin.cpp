// Test xclbin images (test_xclbin.hpp).
#include "test_xclbin.hpp"

#include <xclbin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <random>

#include "panama/driver/kernel_names.hpp"

namespace panama::driver::testing {

namespace {

// Base address of the engine's control port in the images written here; a
// linked design gets its address from v++ and the driver reads it from the
// container, never from here.
constexpr uint64_t kDefaultKernelBase = 0x1800000;

}  // namespace

std::vector<uint8_t> build_xclbin(const XclbinSpec& spec) {
  std::vector<XclbinIp> ips = spec.ips;
  std::stable_sort(ips.begin(), ips.end(),
                   [](const XclbinIp& a, const XclbinIp& b) { return a.base_address < b.base_address; });
  const size_t header_bytes = (sizeof(axlf) + 7) & ~size_t{7};  // one section header, 8-byte aligned
  const size_t layout_bytes = offsetof(ip_layout, m_ip_data) + ips.size() * sizeof(ip_data);
  std::vector<uint8_t> image(header_bytes + ((layout_bytes + 7) & ~size_t{7}), 0);

  axlf top;
  std::memset(&top, 0, sizeof(top));
  std::memcpy(top.m_magic, "xclbin2", 8);
  top.m_signature_length = -1;
  std::memset(top.reserved, 0xFF, sizeof(top.reserved));
  top.m_header.m_length = image.size();
  top.m_header.m_timeStamp = static_cast<uint64_t>(std::time(nullptr));
  top.m_header.m_versionMajor = 2;
  top.m_header.m_versionMinor = 13;
  top.m_header.m_mode = XCLBIN_FLAT;
  std::strncpy(reinterpret_cast<char*>(top.m_header.m_platformVBNV), spec.platform.c_str(),
               sizeof(top.m_header.m_platformVBNV) - 1);
  Uuid uuid{};
  if (spec.uuid) {
    uuid = *spec.uuid;
  } else {
    std::random_device rd;
    for (uint8_t& b : uuid) b = static_cast<uint8_t>(rd());
    uuid[6] = static_cast<uint8_t>((uuid[6] & 0x0F) | 0x40);  // version 4 (random)
    uuid[8] = static_cast<uint8_t>((uuid[8] & 0x3F) | 0x80);
  }
  std::memcpy(top.m_header.uuid, uuid.data(), 16);
  top.m_header.m_numSections = 1;
  top.m_sections[0].m_sectionKind = IP_LAYOUT;
  std::strncpy(top.m_sections[0].m_sectionName, "ip_layout", sizeof(top.m_sections[0].m_sectionName) - 1);
  top.m_sections[0].m_sectionOffset = header_bytes;
  top.m_sections[0].m_sectionSize = layout_bytes;
  std::memcpy(image.data(), &top, sizeof(top));

  const int32_t count = static_cast<int32_t>(ips.size());
  std::memcpy(image.data() + header_bytes, &count, sizeof(count));
  for (size_t k = 0; k < ips.size(); ++k) {
    ip_data d;
    std::memset(&d, 0, sizeof(d));
    d.m_type = ips[k].type;
    d.properties = (ips[k].control << IP_CONTROL_SHIFT) & IP_CONTROL_MASK;
    d.m_base_address = ips[k].base_address;
    std::strncpy(reinterpret_cast<char*>(d.m_name), ips[k].name.c_str(), sizeof(d.m_name) - 1);
    std::memcpy(image.data() + header_bytes + offsetof(ip_layout, m_ip_data) + k * sizeof(d), &d, sizeof(d));
  }
  return image;
}

XclbinSpec panama_xclbin_spec(KernelFlavor flavor, const std::string& platform) {
  XclbinSpec spec;
  spec.platform = platform;
  XclbinIp ip;
  ip.name = flavor == KernelFlavor::kRtl ? std::string(kRtlKernelName) + ":" + kRtlComputeUnit
                                         : std::string(kHlsKernelName) + ":" + kHlsComputeUnit;
  ip.type = IP_KERNEL;
  ip.control = AP_CTRL_NONE;
  ip.base_address = kDefaultKernelBase;
  spec.ips.push_back(ip);
  return spec;
}

XclbinSpec with_cmac(XclbinSpec spec, unsigned cage) {
  std::string name = kCmacKernelPattern;
  const size_t at = name.find("{interface}");
  if (at != std::string::npos) name.replace(at, 11, std::to_string(cage));
  XclbinIp ip;
  ip.name = name + ":" + name;
  ip.type = IP_KERNEL;
  ip.control = AP_CTRL_NONE;
  ip.base_address = kDefaultKernelBase + 0x10000 * (cage + 1);
  spec.ips.push_back(ip);
  return spec;
}

}  // namespace panama::driver::testing
