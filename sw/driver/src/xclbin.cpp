// xclbin container reader (see panama/driver/xclbin.hpp).
#include "panama/driver/xclbin.hpp"

#include <xclbin.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include "panama/driver/errors.hpp"
#include "panama/driver/kernel_names.hpp"

namespace panama::driver {

namespace {

std::string fixed_string(const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  return std::string(c, strnlen(c, n));
}

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw DriverError(ErrorKind::kBadXclbin, what + ": " + why);
}

}  // namespace

std::string uuid_to_string(const Uuid& u) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += hex[u[i] >> 4];
    s += hex[u[i] & 15];
  }
  return s;
}

const char* to_string(KernelFlavor flavor) {
  return flavor == KernelFlavor::kRtl ? "RTL kernel (direct register map)" : "HLS kernel (register mailbox)";
}

std::optional<PanamaKernel> XclbinInfo::panama_kernel() const {
  std::optional<PanamaKernel> hls;
  for (const XclbinIp& ip : ips) {
    if (ip.type != IP_KERNEL) continue;
    const size_t colon = ip.name.find(':');
    if (colon == std::string::npos) continue;
    const std::string kernel = ip.name.substr(0, colon);
    const std::string cu = ip.name.substr(colon + 1);
    if (kernel == kRtlKernelName || kernel == kRtlTwoPortKernelName)
      return PanamaKernel{KernelFlavor::kRtl, kernel, cu, ip.base_address};
    if (kernel == kHlsKernelName && !hls) hls = PanamaKernel{KernelFlavor::kHls, kernel, cu, ip.base_address};
  }
  return hls;
}

std::optional<XclbinIp> XclbinInfo::cmac_kernel(unsigned cage) const {
  std::string name = kCmacKernelPattern;
  const size_t at = name.find("{interface}");
  if (at != std::string::npos) name.replace(at, 11, std::to_string(cage));
  for (const XclbinIp& ip : ips) {
    if (ip.type == IP_KERNEL && ip.name.rfind(name + ":", 0) == 0) return ip;
  }
  return std::nullopt;
}

XclbinInfo parse_xclbin(const std::vector<uint8_t>& image, const std::string& what) {
  if (image.size() < sizeof(axlf)) {
    bad(what, "too short to be an xclbin (" + std::to_string(image.size()) + " bytes)");
  }
  axlf top;
  std::memcpy(&top, image.data(), sizeof(top));
  if (std::memcmp(top.m_magic, "xclbin2", 8) != 0) bad(what, "not an xclbin (magic is not \"xclbin2\")");
  const axlf_header& h = top.m_header;
  if (h.m_length != image.size()) {
    bad(what, "header says " + std::to_string(h.m_length) + " bytes but the file has " +
                  std::to_string(image.size()) + " (truncated or padded)");
  }
  if (h.m_numSections == 0 || h.m_numSections > XCLBIN_MAX_NUM_SECTION) {
    bad(what, "implausible section count " + std::to_string(h.m_numSections));
  }
  const uint64_t table_end =
      offsetof(axlf, m_sections) + uint64_t{h.m_numSections} * sizeof(axlf_section_header);
  if (table_end > image.size()) bad(what, "section table runs past the end of the file");

  XclbinInfo info;
  info.platform = fixed_string(h.m_platformVBNV, sizeof(h.m_platformVBNV));
  std::memcpy(info.uuid.data(), h.uuid, 16);
  info.mode = h.m_mode;
  bool have_ip_layout = false;
  for (uint32_t i = 0; i < h.m_numSections; ++i) {
    axlf_section_header s;
    std::memcpy(&s, image.data() + offsetof(axlf, m_sections) + i * sizeof(s), sizeof(s));
    if (s.m_sectionOffset > image.size() || s.m_sectionSize > image.size() - s.m_sectionOffset) {
      bad(what, "section " + std::to_string(i) + " runs past the end of the file");
    }
    info.section_kinds.push_back(s.m_sectionKind);
    if (s.m_sectionKind != IP_LAYOUT) continue;
    if (s.m_sectionSize < offsetof(ip_layout, m_ip_data)) bad(what, "IP_LAYOUT section too short");
    int32_t count;
    std::memcpy(&count, image.data() + s.m_sectionOffset, sizeof(count));
    if (count < 0 || offsetof(ip_layout, m_ip_data) + uint64_t(count) * sizeof(ip_data) > s.m_sectionSize) {
      bad(what, "IP_LAYOUT claims " + std::to_string(count) + " IPs but its section is too short");
    }
    have_ip_layout = true;
    for (int32_t k = 0; k < count; ++k) {
      ip_data d;
      std::memcpy(&d, image.data() + s.m_sectionOffset + offsetof(ip_layout, m_ip_data) + k * sizeof(d),
                  sizeof(d));
      XclbinIp ip;
      ip.name = fixed_string(d.m_name, sizeof(d.m_name));
      ip.type = d.m_type;
      ip.control = (d.properties & IP_CONTROL_MASK) >> IP_CONTROL_SHIFT;
      ip.base_address = d.m_base_address;
      info.ips.push_back(ip);
    }
  }
  if (!have_ip_layout) bad(what, "no IP_LAYOUT section: the xclbin has no kernels");
  return info;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DriverError(ErrorKind::kBadXclbin, path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DriverError(ErrorKind::kBadXclbin, path + ": read error");
  return bytes;
}

}  // namespace panama::driver
