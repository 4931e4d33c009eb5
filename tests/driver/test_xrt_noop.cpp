// The XRT backend on XRT's no-op device (XCL_EMULATION_MODE=noop, set by
// CTest): xclbin containers written by the driver, checked against XRT's own
// parser; open, load, register access and its errors; the device lock.
#include <sys/stat.h>
#include <unistd.h>

#include <experimental/xrt_xclbin.h>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "driver/driver_errors.hpp"
#include "driver/support/test_xclbin.hpp"
#include "panama/driver/cmac.hpp"
#include "panama/driver/device.hpp"
#include "panama/driver/kernel_names.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/driver/xclbin.hpp"
#include "panama/regmap.hpp"
#include "support/temp_dir.hpp"

using namespace panama::driver;
using namespace panama::driver::testing;

// XRT's own configuration reader (exported by libxrt_coreutil; XRT 2.13's
// config_reader.h is not installed): what XRT will use for Runtime.rw_shared.
namespace xrt_core::config::detail {
bool get_bool_value(const char* key, bool default_value);
}

namespace {

std::string temp_dir() {
  return panama::test::temp_dir("panama-driver-test");
}

std::string write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

template <class T>
T load_at(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

using panama::test::kind_of;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DriverError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the xclbin writer's containers parse in XRT's own xclbin parser", "[driver][xclbin]") {
  Uuid uuid{};
  for (size_t i = 0; i < uuid.size(); ++i) uuid[i] = static_cast<uint8_t>(0xA0 + i);
  XclbinSpec spec = panama_xclbin_spec(KernelFlavor::kRtl, "xilinx_u55c_gen3x16_xdma_3_202210_1");
  spec.uuid = uuid;
  spec.ips.push_back(XclbinIp{"other_kernel:other_1", 1, 2, 0x1000});  // lower address: must be sorted first
  const std::vector<uint8_t> image = build_xclbin(spec);

  // Fixed facts of the axlf layout: magic at 0, m_header at 304, its m_length first.
  REQUIRE(std::memcmp(image.data(), "xclbin2", 8) == 0);
  CHECK(load_at<uint64_t>(image, 304) == image.size());
  CHECK(image.size() % 8 == 0);

  const std::vector<char> chars(image.begin(), image.end());
  xrt::xclbin x(chars);
  CHECK(x.get_xsa_name() == "xilinx_u55c_gen3x16_xdma_3_202210_1");
  CHECK(x.get_uuid().to_string() == "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  const auto ips = x.get_ips();
  REQUIRE(ips.size() == 2);
  CHECK(ips[0].get_name() == "other_kernel:other_1");
  CHECK(ips[1].get_name() == std::string(kRtlKernelName) + ":" + kRtlComputeUnit);
  CHECK(ips[1].get_control_type() == xrt::xclbin::ip::control_type::none);

  const XclbinInfo info = parse_xclbin(image, "mem");
  CHECK(uuid_to_string(info.uuid) == "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
  REQUIRE(info.panama_kernel());
  CHECK(info.panama_kernel()->flavor == KernelFlavor::kRtl);
  CHECK(info.panama_kernel()->xrt_ip_name() == std::string(kRtlKernelName) + ":{" + kRtlComputeUnit + "}");

  const XclbinInfo hls = parse_xclbin(build_xclbin(panama_xclbin_spec(KernelFlavor::kHls, "p")), "hls");
  REQUIRE(hls.panama_kernel());
  CHECK(hls.panama_kernel()->flavor == KernelFlavor::kHls);
  CHECK(hls.panama_kernel()->kernel == kHlsKernelName);
}

TEST_CASE("malformed xclbins are refused with the reason", "[driver][xclbin]") {
  const std::vector<uint8_t> good = build_xclbin(panama_xclbin_spec(KernelFlavor::kRtl, "p"));
  auto parse = [](std::vector<uint8_t> b) { return [b] { parse_xclbin(b, "bad.xclbin"); }; };

  CHECK(kind_of(parse({1, 2, 3})) == ErrorKind::kBadXclbin);
  CHECK_THAT(message_of(parse({1, 2, 3})), Catch::Contains("too short"));

  auto wrong_magic = good;
  wrong_magic[6] = '1';
  CHECK_THAT(message_of(parse(wrong_magic)), Catch::Contains("magic"));

  auto truncated = good;
  truncated.resize(good.size() - 8);
  CHECK_THAT(message_of(parse(truncated)), Catch::Contains("truncated"));

  auto past_end = good;  // first section header at 456: kind, name[16], pad, offset
  const uint64_t huge = 1u << 20;
  std::memcpy(past_end.data() + 456 + 24, &huge, 8);
  CHECK_THAT(message_of(parse(past_end)), Catch::Contains("past the end"));

  auto no_layout = good;  // section kind 8 (IP_LAYOUT) -> 6 (MEM_TOPOLOGY)
  const uint32_t mem_topology = 6;
  std::memcpy(no_layout.data() + 304 + 152, &mem_topology, 4);
  CHECK_THAT(message_of(parse(no_layout)), Catch::Contains("no IP_LAYOUT"));

  XclbinSpec foreign;
  foreign.ips.push_back(XclbinIp{"vadd:vadd_1", 1, 0, 0x1800000});
  CHECK_FALSE(parse_xclbin(build_xclbin(foreign), "vadd").panama_kernel());
}

TEST_CASE("XRT backend on the no-op device: open, load, register access errors", "[driver][xrt]") {
  REQUIRE(std::getenv("XILINX_XRT") != nullptr);
  REQUIRE(std::string(std::getenv("XCL_EMULATION_MODE")) == "noop");
  const std::string dir = temp_dir();
  ::setenv("PANAMA_LOCK_DIR", dir.c_str(), 1);

  auto dev = open_device("xrt:0");
  CHECK(dev->spec() == "xrt:0");
  CHECK_FALSE(dev->loaded_xclbin());
  CHECK(kind_of([&] { dev->read32(panama::regmap::kId); }) == ErrorKind::kNotProgrammed);

  SECTION("a PANAMA RTL image loads; its registers are refused by the no-op shim") {
    const std::vector<uint8_t> image = build_xclbin(panama_xclbin_spec(KernelFlavor::kRtl, "noop"));
    const std::string path = write_file(dir + "/rtl.xclbin", image);
    const std::string msg = message_of([&] { dev->program(path); });
    CHECK_THAT(msg, Catch::Contains("ID (0x000)") && Catch::Contains("Operation not permitted"));
    // The image did load: the device reports its uuid and kernel.
    REQUIRE(dev->loaded_xclbin());
    CHECK(dev->loaded_xclbin()->uuid == parse_xclbin(image, "x").uuid);
    CHECK_THAT(dev->description(),
               Catch::Contains(std::string(kRtlKernelName) + ":{" + kRtlComputeUnit + "}"));
    CHECK(kind_of([&] { dev->read32(panama::regmap::kVersion); }) == ErrorKind::kRegisterAccess);
    CHECK(kind_of([&] { dev->write32(panama::regmap::kUdpPort, 9600); }) == ErrorKind::kRegisterAccess);
    CHECK(kind_of([&] { dev->set_enabled(false); }) == ErrorKind::kRegisterAccess);
    CHECK(kind_of([&] { dev->identity(); }) == ErrorKind::kRegisterAccess);
    CHECK_THAT(message_of([&] { dev->clear_counters(); }), Catch::Contains("CONTROL (0x014)"));
  }
  SECTION("an HLS image goes through the mailbox, whose registers are refused too") {
    const std::string path =
        write_file(dir + "/hls.xclbin", build_xclbin(panama_xclbin_spec(KernelFlavor::kHls, "noop")));
    CHECK(kind_of([&] { dev->program(path); }) == ErrorKind::kRegisterAccess);
    REQUIRE(dev->loaded_xclbin());
    CHECK(dev->loaded_xclbin()->panama_kernel()->flavor == KernelFlavor::kHls);
  }
  SECTION("images without a PANAMA kernel, malformed or missing files are refused before XRT") {
    XclbinSpec foreign;
    foreign.ips.push_back(XclbinIp{"vadd:vadd_1", 1, 0, 0x1800000});
    const std::string vadd = write_file(dir + "/vadd.xclbin", build_xclbin(foreign));
    CHECK_THAT(message_of([&] { dev->program(vadd); }), Catch::Contains("no PANAMA kernel"));
    const std::string junk = write_file(dir + "/junk.xclbin", std::vector<uint8_t>(600, 0x5A));
    CHECK(kind_of([&] { dev->program(junk); }) == ErrorKind::kBadXclbin);
    CHECK(kind_of([&] { dev->program(dir + "/missing.xclbin"); }) == ErrorKind::kBadXclbin);
    CHECK_FALSE(dev->loaded_xclbin());
  }
  SECTION("a second controller gets 'busy'; readers do not") {
    const std::string msg = message_of([] { open_device("xrt:0"); });
    CHECK_THAT(msg, Catch::Contains("busy") && Catch::Contains("process " + std::to_string(::getpid())));
    CHECK(kind_of([] { open_device("xrt:0"); }) == ErrorKind::kDeviceBusy);
    OpenOptions ro;
    ro.mode = OpenMode::kReadOnly;
    auto reader = open_device("xrt:0", ro);
    CHECK(kind_of([&] { reader->write32(panama::regmap::kControl, 0); }) == ErrorKind::kInvalidArgument);
    dev.reset();
    CHECK_NOTHROW(open_device("xrt:0"));  // released with the first device
  }
}

TEST_CASE("XRT backend: shared register access, one lock per card, the CMAC kernel", "[driver][xrt]") {
  const std::string dir = temp_dir();
  ::setenv("PANAMA_LOCK_DIR", dir.c_str(), 1);
  auto dev = open_device("xrt:0");
  // Every xrt::ip this process opens is a shared context with register
  // access (XRT 2.13 would otherwise open them exclusively).
  CHECK(xrt_core::config::detail::get_bool_value("Runtime.rw_shared", false));

  // The lock is named by the card, not by the spec that named it: the no-op
  // device has no PCIe address and counts as card "noop".
  CHECK(std::filesystem::exists(dir + "/panama-card-noop.lock"));
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    CHECK(f.path().filename().string().find("xrt") == std::string::npos);
  }
  CHECK_THAT(message_of([] { open_device("xrt:0"); }),
             Catch::Contains("card noop") && Catch::Contains("busy"));
  CHECK_THAT(dev->description(), Catch::Contains("(noop)"));

  // An image with the CMAC kernel of cage 0: the driver opens it through
  // xrt::ip; the no-op shim refuses its registers, and the error names them.
  const std::vector<uint8_t> image =
      build_xclbin(with_cmac(panama_xclbin_spec(KernelFlavor::kRtl, "noop"), 0));
  const std::string path = write_file(dir + "/cmac.xclbin", image);
  CHECK(kind_of([&] { dev->program(path); }) == ErrorKind::kRegisterAccess);
  REQUIRE(dev->loaded_xclbin());
  RegisterPort& mac = dev->cmac(0);
  CHECK_THAT(message_of([&] { cmac::read_status(mac); }),
             Catch::Contains("CMAC STAT_RX_STATUS_REG") && Catch::Contains("Operation not permitted"));
  CHECK(kind_of([&] { cmac::set_rsfec(mac, true); }) == ErrorKind::kRegisterAccess);
  CHECK_THAT(message_of([&] { dev->cmac(1); }),
             Catch::Contains("no CMAC kernel") && Catch::Contains("cmac_1"));
  CHECK(kind_of([&] { dev->cmac(1); }) == ErrorKind::kUnsupported);

  // A reader beside the controller: on a card it sees the image and opens
  // the same kernels (shared contexts); the no-op shim keeps a loaded image
  // per device handle, so here the reader sees none.
  OpenOptions ro;
  ro.mode = OpenMode::kReadOnly;
  auto reader = open_device("xrt:0", ro);
  CHECK(kind_of([&] { reader->cmac(0); }) == ErrorKind::kNotProgrammed);
}

TEST_CASE("device specs are checked", "[driver]") {
  CHECK(kind_of([] { open_device("pcie"); }) == ErrorKind::kInvalidArgument);
  CHECK(kind_of([] { open_device("xrt:"); }) == ErrorKind::kInvalidArgument);
  CHECK(kind_of([] { open_device(""); }) == ErrorKind::kInvalidArgument);
}
