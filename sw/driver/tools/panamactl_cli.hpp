// panamactl's command line, callable in-process (tests) and from main().
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace panama::driver {

// Runs panamactl with `args` (without the program name). Returns the exit
// status: 0 success, 1 a device or driver error, 2 bad arguments.
int panamactl_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace panama::driver
