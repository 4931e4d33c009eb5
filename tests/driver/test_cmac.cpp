// The CMAC procedures of the driver (panama/driver/cmac.hpp) against the
// simulated CMAC (SimCmac), which models what they depend on: RS-FEC
// enables that take effect only at a RESET_REG pulse, and status registers
// that latch a drop of the link until read.
#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "panama/driver/cmac.hpp"
#include "panama/driver/register_port.hpp"
#include "panama/driver/simulation.hpp"

using namespace panama::driver;

namespace {

// SimCmac's registers as a port, with every write recorded.
class Port final : public RegisterPort {
 public:
  explicit Port(SimCmac& mac) : mac_(mac) {}
  uint32_t read32(uint32_t offset) override { return mac_.read32(offset); }
  void write32(uint32_t offset, uint32_t value) override {
    writes.emplace_back(offset, value);
    mac_.write32(offset, value);
  }
  std::vector<std::pair<uint32_t, uint32_t>> writes;

 private:
  SimCmac& mac_;
};

}  // namespace

TEST_CASE("RS-FEC settings take effect at the RESET_REG pulse that set_rsfec ends with", "[driver][cmac]") {
  SimCmac mac;  // cable in, far end with RS-FEC on, the CMAC with RS-FEC off
  Port port(mac);
  CHECK_FALSE(mac.link_up());
  // The enables alone change nothing until the user logic goes through reset.
  port.write32(cmac::kRsfecConfigEnable, cmac::kRsfecEnableOn);
  port.write32(cmac::kRsfecConfigIndCorrection, cmac::kRsfecIndCorrectionOn);
  CHECK_FALSE(mac.link_up());
  CHECK_FALSE(cmac::read_status(port).up());

  port.writes.clear();
  cmac::set_rsfec(port, true);
  REQUIRE(port.writes.size() == 4);
  CHECK(port.writes[2] == std::pair{cmac::kReset, 0xC0000000u});
  CHECK(port.writes[3] == std::pair{cmac::kReset, 0u});
  CHECK(mac.link_up());
  const cmac::LinkStatus s = cmac::read_status(port);
  CHECK(s.up());
  CHECK(s.rsfec_on());
  CHECK(s.block_lock == cmac::kAllPcsLanes);
  CHECK(s.lane_sync == cmac::kAllPcsLanes);

  cmac::set_rsfec(port, false);
  CHECK_FALSE(mac.link_up());
  CHECK_FALSE(cmac::read_status(port).up());
}

TEST_CASE("after a flap the latched status registers read stale once; read_status shows the link now",
          "[driver][cmac]") {
  SimCmac mac;
  Port port(mac);
  cmac::set_rsfec(port, true);
  REQUIRE(cmac::read_status(port).up());

  // Unplugged and plugged back with nobody reading in between.
  mac.set_cable(false);
  mac.set_cable(true);
  REQUIRE(mac.link_up());
  // One read: the lanes that lost lock, though they are locked again.
  CHECK(mac.read32(cmac::kStatRxBlockLock) == 0);
  CHECK(mac.read32(cmac::kStatRxBlockLock) == cmac::kAllPcsLanes);

  mac.set_cable(false);
  mac.set_cable(true);
  const cmac::LinkStatus s = cmac::read_status(port);
  CHECK(s.up());
  CHECK(s.block_lock == cmac::kAllPcsLanes);
  CHECK(s.lane_sync == cmac::kAllPcsLanes);
  CHECK(s.verdict().rfind("link up", 0) == 0);

  // Down now: both reads say so.
  mac.set_cable(false);
  const cmac::LinkStatus d = cmac::read_status(port);
  CHECK_FALSE(d.up());
  CHECK(d.block_lock == 0);
}
