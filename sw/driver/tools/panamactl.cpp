// panamactl: control and inspect PANAMA engines on Alveo cards (XRT) or in
// simulation. See `panamactl --help` and docs/alveo.md.
#include <iostream>

#include "panamactl_cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return panama::driver::panamactl_main(args, std::cout, std::cerr);
}
