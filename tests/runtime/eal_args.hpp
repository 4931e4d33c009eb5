// EAL arguments shared by the runtime's DPDK tests: no hugepages, no PCI
// scan, a per-process file prefix, one lcore, quiet logs. Extra --vdev
// arguments come from PANAMA_TEST_EAL_ARGS (space separated) when set.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace panama::test {

inline std::vector<std::string> test_eal_args() {
  std::vector<std::string> a = {"--no-huge",
                                "-m",
                                "1024",
                                "--no-pci",
                                "--no-telemetry",
                                "-l",
                                "0",
                                "--log-level=lib.eal:error",
                                "--file-prefix=pnm_rt_" + std::to_string(getpid())};
  if (const char* extra = std::getenv("PANAMA_TEST_EAL_ARGS")) {
    std::istringstream in(extra);
    for (std::string s; in >> s;) a.push_back(s);
  }
  return a;
}

}  // namespace panama::test
