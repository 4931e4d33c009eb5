// panama-test-xclbin: writes a test xclbin (the PANAMA kernel's IP layout,
// no bitstream) for XRT's no-op device and the simulation backend, so the
// driver and panamactl can be tried without a card or the Vitis tools.
//
//   panama-test-xclbin OUT [--kernel rtl|hls] [--platform VBNV]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>

#include "panama/driver/errors.hpp"
#include "test_xclbin.hpp"

int main(int argc, char** argv) {
  using namespace panama::driver;
  CLI::App app{"Writes a test xclbin: the PANAMA kernel's IP layout, no bitstream"};
  std::string out, flavor = "rtl", platform = "xilinx_u280_gen3x16_xdma_1_202211_1";
  app.add_option("out", out, "output file")->required();
  app.add_option("--kernel", flavor, "rtl or hls")
      ->check(CLI::IsMember({"rtl", "hls"}))
      ->capture_default_str();
  app.add_option("--platform", platform, "platform VBNV recorded in the header")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const auto image = testing::build_xclbin(
        testing::panama_xclbin_spec(flavor == "rtl" ? KernelFlavor::kRtl : KernelFlavor::kHls, platform));
    std::ofstream f(out, std::ios::binary);
    f.write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
    f.close();
    if (!f) {
      std::fprintf(stderr, "panama-test-xclbin: %s: cannot write\n", out.c_str());
      return 1;
    }
    const XclbinInfo info = parse_xclbin(image, out);
    std::printf("%s: test xclbin %s for %s with %s (IP layout only, no bitstream)\n", out.c_str(),
                uuid_to_string(info.uuid).c_str(), platform.c_str(),
                info.panama_kernel()->xrt_ip_name().c_str());
  } catch (const DriverError& e) {
    std::fprintf(stderr, "panama-test-xclbin: %s\n", e.what());
    return 1;
  }
  return 0;
}
