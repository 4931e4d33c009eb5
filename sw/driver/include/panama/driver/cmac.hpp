// The 100G MAC's registers as `panamactl link` uses them: Xilinx's CMAC
// (UltraScale+ 100G Ethernet subsystem, PG203 register map), reached through
// the AXI4-Lite port of the CMAC kernel VNx builds (cmac_<n>, one per QSFP28
// cage; its port is the CMAC's register space from offset 0).
//
// kRegisters is the one table of every offset and bit the driver touches; the
// simulation backend models the same registers (SimCmac) and docs/alveo.md
// prints the same table. Offsets were taken from VNx's cmac kernel
// description (Ethernet/template.xml) and PG203; on a card, confirm them
// against the CMAC's version register and PG203 of that IP version.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace panama::driver {
class RegisterPort;
}

namespace panama::driver::cmac {

// Offsets.
constexpr uint32_t kGtReset = 0x0000;    // GT_RESET_REG: bit 0 gt_reset_all (self-clearing)
constexpr uint32_t kReset = 0x0004;      // RESET_REG: bit 30 usr_rx_reset, bit 31 usr_tx_reset
constexpr uint32_t kConfigTx1 = 0x000C;  // CONFIGURATION_TX_REG1: bit 0 ctl_tx_enable, bit 4 ctl_tx_send_rfi
constexpr uint32_t kConfigRx1 = 0x0014;  // CONFIGURATION_RX_REG1: bit 0 ctl_rx_enable
constexpr uint32_t kCoreVersion = 0x0024;  // CORE_VERSION_REG
constexpr uint32_t kGtLoopback = 0x0090;   // GT_LOOPBACK_REG: bit 0 = 1: near-end PMA loopback
// The four status registers below latch events until read: read_status reads each twice.
constexpr uint32_t kStatTxStatus = 0x0200;     // STAT_TX_STATUS_REG: bit 0 stat_tx_local_fault
constexpr uint32_t kStatRxStatus = 0x0204;     // STAT_RX_STATUS_REG
constexpr uint32_t kStatRxBlockLock = 0x020C;  // STAT_RX_BLOCK_LOCK_REG: bit n = PCS lane n (20 lanes)
constexpr uint32_t kStatRxLaneSync = 0x0210;   // STAT_RX_LANE_SYNC_REG: bit n = PCS lane n
constexpr uint32_t kTick = 0x02B0;             // TICK_REG: write 1 to latch every statistics counter
constexpr uint32_t kStatTxTotalPackets = 0x0500;
constexpr uint32_t kStatTxTotalGoodPackets = 0x0508;
constexpr uint32_t kStatRxTotalPackets = 0x0608;
constexpr uint32_t kStatRxTotalGoodPackets = 0x0610;
constexpr uint32_t kStatRxBadFcs = 0x06C0;
constexpr uint32_t kRsfecConfigIndCorrection =
    0x1000;  // bit 0 correction, bit 1 indication, bit 2 IEEE indication mode
constexpr uint32_t kStatRsfecStatus = 0x1004;       // STAT_RSFEC_STATUS_REG (shown raw)
constexpr uint32_t kStatRsfecCorrected = 0x1008;    // STAT_RX_RSFEC_CORRECTED_CW_INC
constexpr uint32_t kStatRsfecUncorrected = 0x1010;  // STAT_RX_RSFEC_UNCORRECTED_CW_INC
constexpr uint32_t kRsfecConfigEnable = 0x107C;     // bit 0 ctl_rx_rsfec_enable, bit 1 ctl_tx_rsfec_enable

// RESET_REG: usr_rx_reset (bit 30) and usr_tx_reset (bit 31); set_rsfec
// pulses both so that new RS-FEC settings take effect.
constexpr uint32_t kResetUsrRxTx = 0xC0000000u;

// STAT_RX_STATUS_REG bits.
constexpr uint32_t kRxStatus = 1u << 0;
constexpr uint32_t kRxAligned = 1u << 1;
constexpr uint32_t kRxMisaligned = 1u << 2;
constexpr uint32_t kRxAlignedErr = 1u << 3;
constexpr uint32_t kRxHiBer = 1u << 4;
constexpr uint32_t kRxRemoteFault = 1u << 5;
constexpr uint32_t kRxLocalFault = 1u << 6;
constexpr uint32_t kRxInternalLocalFault = 1u << 7;
constexpr uint32_t kRxReceivedLocalFault = 1u << 8;
constexpr uint32_t kAllPcsLanes = 0xFFFFF;  // 20 PCS lanes
// RSFEC values written to turn RS-FEC on (both directions; correction,
// indication and IEEE indication mode), and off.
constexpr uint32_t kRsfecEnableOn = 0x3;
constexpr uint32_t kRsfecIndCorrectionOn = 0x7;

enum class Kind { kControl, kStatus, kCounter };
struct Register {
  const char* name;
  uint32_t offset;
  Kind kind;
  const char* meaning;
};

// The table (docs/alveo.md prints it).
extern const std::vector<Register> kRegisters;
// The name of a register at `offset`, or its offset in hex.
std::string register_name(uint32_t offset);

struct Counters {
  uint64_t rx_packets = 0, rx_good_packets = 0, rx_bad_fcs = 0;
  uint64_t tx_packets = 0, tx_good_packets = 0;
  uint64_t rsfec_corrected = 0, rsfec_uncorrected = 0;
};

struct LinkStatus {
  uint32_t rx_status = 0;  // STAT_RX_STATUS_REG (second read)
  uint32_t tx_status = 0;
  uint32_t block_lock = 0;
  uint32_t lane_sync = 0;
  uint32_t loopback = 0;
  uint32_t rsfec_enable = 0;
  uint32_t rsfec_status = 0;
  uint32_t core_version = 0;
  Counters counters;

  bool up() const;
  bool rsfec_on() const { return (rsfec_enable & 3) == 3; }
  bool near_end_loopback() const { return (loopback & 1) != 0; }
  // One sentence: up, or the most likely cause and what to check.
  std::string verdict() const;
};

// Reads status (each latched status register twice), latches and reads counters.
LinkStatus read_status(RegisterPort& port);
// Writes the RS-FEC enables and pulses RESET_REG so that they take effect.
void set_rsfec(RegisterPort& port, bool on);
void set_loopback(RegisterPort& port, bool on);

}  // namespace panama::driver::cmac
