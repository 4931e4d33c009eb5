// Backend entry points used by open_device() and list_devices().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "panama/driver/device.hpp"

namespace panama::driver::detail {

// `target` is what follows "xrt:": a device index or a PCIe BDF.
std::unique_ptr<Device> open_xrt_device(const std::string& target, const OpenOptions& options);
std::vector<DeviceListing> list_xrt_devices(std::string* note);
// Sets XRT's Runtime.rw_shared for this process (once, before XRT reads its
// configuration); false when XRT had read it already.
bool enable_shared_access();

}  // namespace panama::driver::detail
