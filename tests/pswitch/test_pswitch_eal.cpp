// The software PSwitch's EAL arguments: virtual devices run without
// hugepages or PCI; a port given as a PCI address turns both back on and
// allow-lists the NIC.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "panama/pswitch/software_pswitch.hpp"

using panama::pswitch::PortSettings;
using panama::pswitch::pswitch_eal_args;
using panama::pswitch::PswitchSettings;

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

PswitchSettings with_ports(const std::vector<std::string>& specs) {
  PswitchSettings s;
  s.name = "s0";
  for (size_t i = 0; i < specs.size(); ++i) {
    PortSettings p;
    p.name = "p" + std::to_string(i);
    p.vdev = specs[i];
    s.ports.push_back(p);
  }
  return s;
}

}  // namespace

TEST_CASE("virtual devices only: no hugepages, no PCI, one --vdev per port") {
  const auto a = pswitch_eal_args(
      with_ports({"net_memif0,role=server,socket=/tmp/a.sock", "net_memif1,role=client,socket=/tmp/b.sock"}),
      "px");
  CHECK(has(a, "--no-huge"));
  CHECK(has(a, "--no-pci"));
  CHECK(has(a, "--file-prefix=px"));
  CHECK(has(a, "--vdev=net_memif0,role=server,socket=/tmp/a.sock"));
  CHECK(has(a, "--vdev=net_memif1,role=client,socket=/tmp/b.sock"));
  CHECK(std::none_of(a.begin(), a.end(), [](const std::string& x) { return x.rfind("--allow=", 0) == 0; }));
}

TEST_CASE("a port given as a PCI address is allow-listed and enables hugepages and PCI") {
  const auto a = pswitch_eal_args(with_ports({"0000:3b:00.0", "0000:3b:00.1,rxq_cqe_comp_en=0"}), "px");
  CHECK_FALSE(has(a, "--no-huge"));
  CHECK_FALSE(has(a, "--no-pci"));
  CHECK(has(a, "--allow=0000:3b:00.0"));
  CHECK(has(a, "--allow=0000:3b:00.1,rxq_cqe_comp_en=0"));
  // Not PCI addresses: a name with the wrong shape stays a virtual device.
  const auto b = pswitch_eal_args(with_ports({"0000:3b:00", "net_ring0"}), "px");
  CHECK(has(b, "--no-pci"));
  CHECK(has(b, "--vdev=0000:3b:00"));
}
