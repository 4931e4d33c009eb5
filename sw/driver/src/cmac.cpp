// CMAC register table, status reading and verdict (see panama/driver/cmac.hpp).
#include "panama/driver/cmac.hpp"

#include <bitset>
#include <cstdio>

#include "panama/driver/register_port.hpp"

namespace panama::driver::cmac {

const std::vector<Register> kRegisters = {
    {"GT_RESET_REG", kGtReset, Kind::kControl, "bit 0 gt_reset_all"},
    {"RESET_REG", kReset, Kind::kControl, "bit 30 usr_rx_reset, bit 31 usr_tx_reset"},
    {"CONFIGURATION_TX_REG1", kConfigTx1, Kind::kControl, "bit 0 ctl_tx_enable, bit 4 ctl_tx_send_rfi"},
    {"CONFIGURATION_RX_REG1", kConfigRx1, Kind::kControl, "bit 0 ctl_rx_enable"},
    {"CORE_VERSION_REG", kCoreVersion, Kind::kStatus, "IP version"},
    {"GT_LOOPBACK_REG", kGtLoopback, Kind::kControl, "bit 0: 1 = near-end PMA loopback, 0 = normal"},
    {"STAT_TX_STATUS_REG", kStatTxStatus, Kind::kStatus, "bit 0 stat_tx_local_fault (latched: read twice)"},
    {"STAT_RX_STATUS_REG", kStatRxStatus, Kind::kStatus,
     "bit 0 status, 1 aligned, 2 misaligned, 3 aligned_err, 4 hi_ber, 5 remote_fault, 6 local_fault, "
     "7 internal_local_fault, 8 received_local_fault (latched: read twice)"},
    {"STAT_RX_BLOCK_LOCK_REG", kStatRxBlockLock, Kind::kStatus,
     "bits 19:0 block lock per PCS lane (latched: read twice)"},
    {"STAT_RX_LANE_SYNC_REG", kStatRxLaneSync, Kind::kStatus,
     "bits 19:0 lane sync per PCS lane (latched: read twice)"},
    {"TICK_REG", kTick, Kind::kControl, "write 1: latch the statistics counters"},
    {"STAT_TX_TOTAL_PACKETS", kStatTxTotalPackets, Kind::kCounter, "frames sent (48 bits, LSW first)"},
    {"STAT_TX_TOTAL_GOOD_PACKETS", kStatTxTotalGoodPackets, Kind::kCounter, "good frames sent"},
    {"STAT_RX_TOTAL_PACKETS", kStatRxTotalPackets, Kind::kCounter, "frames received"},
    {"STAT_RX_TOTAL_GOOD_PACKETS", kStatRxTotalGoodPackets, Kind::kCounter, "good frames received"},
    {"STAT_RX_BAD_FCS", kStatRxBadFcs, Kind::kCounter, "frames received with a bad FCS"},
    {"RSFEC_CONFIG_INDICATION_CORRECTION", kRsfecConfigIndCorrection, Kind::kControl,
     "bit 0 correction, 1 indication, 2 IEEE error indication mode"},
    {"STAT_RSFEC_STATUS_REG", kStatRsfecStatus, Kind::kStatus, "RS-FEC lock and alignment (shown raw)"},
    {"STAT_RX_RSFEC_CORRECTED_CW_INC", kStatRsfecCorrected, Kind::kCounter, "RS-FEC corrected codewords"},
    {"STAT_RX_RSFEC_UNCORRECTED_CW_INC", kStatRsfecUncorrected, Kind::kCounter,
     "RS-FEC uncorrectable codewords"},
    {"RSFEC_CONFIG_ENABLE", kRsfecConfigEnable, Kind::kControl, "bit 0 RX RS-FEC, bit 1 TX RS-FEC"},
};

std::string register_name(uint32_t offset) {
  for (const Register& r : kRegisters) {
    if (r.offset == offset) return std::string("CMAC ") + r.name;
    if (r.kind == Kind::kCounter && r.offset + 4 == offset) return std::string("CMAC ") + r.name + " (MSW)";
  }
  char b[32];
  std::snprintf(b, sizeof(b), "CMAC register 0x%04X", offset);
  return b;
}

namespace {

uint64_t counter(RegisterPort& p, uint32_t offset) {
  const uint64_t lo = p.read32(offset);
  const uint64_t hi = p.read32(offset + 4) & 0xFFFF;
  return lo | (hi << 32);
}

// The status registers latch an event (a lane that lost lock, a fault) until
// they are read: the first read returns what happened since the last one,
// the second the state now (as VNx's link_status reads them,
// Notebooks/vnx_utils.py lines 119-122).
uint32_t read_now(RegisterPort& p, uint32_t offset) {
  p.read32(offset);
  return p.read32(offset);
}

}  // namespace

bool LinkStatus::up() const {
  const uint32_t faults = kRxRemoteFault | kRxLocalFault | kRxHiBer | kRxMisaligned;
  return (rx_status & kRxStatus) && (rx_status & kRxAligned) && !(rx_status & faults);
}

std::string LinkStatus::verdict() const {
  const std::string fec = rsfec_on() ? "on" : "off";
  if (up()) {
    if (near_end_loopback()) {
      return "link up in near-end loopback: the card's MAC and transceivers work; the cable and the switch "
             "are not part of this test";
    }
    return "link up: 100GBASE-R aligned on all 20 PCS lanes, RS-FEC " + fec;
  }
  const int locked = static_cast<int>(std::bitset<20>(block_lock & kAllPcsLanes).count());
  if (near_end_loopback()) {
    return "link down although in near-end loopback: the transceivers or their reference clock do not work "
           "(wrong GT reference clock for this board? see docs/alveo.md, xbutil examine)";
  }
  if (rx_status & kRxHiBer) {
    return "link down: high bit error rate; reseat or replace the module / cable, check it is 100G";
  }
  if (rx_status & kRxRemoteFault) {
    return "link down: the far end reports a remote fault (it does not receive us); check RS-FEC matches "
           "(here " +
           fec + ") and the switch port's speed is fixed at 100G";
  }
  if (locked == 0) {
    return "link down: no PCS lane locks: no signal, or RS-FEC differs between the ends (here " + fec +
           "): check the module and cable, that the switch port is up at 100G with auto-negotiation off, "
           "and set RS-FEC the same on both ends (panamactl link --rsfec on|off)";
  }
  if (locked < 20) {
    return "link down: only " + std::to_string(locked) +
           " of 20 PCS lanes lock: a bad lane in the module or cable; try another";
  }
  return "link down: every PCS lane locks but the lanes do not align; check RS-FEC (here " + fec +
         ") and the switch port's speed";
}

LinkStatus read_status(RegisterPort& p) {
  LinkStatus s;
  s.rx_status = read_now(p, kStatRxStatus);
  s.tx_status = read_now(p, kStatTxStatus);
  s.block_lock = read_now(p, kStatRxBlockLock);
  s.lane_sync = read_now(p, kStatRxLaneSync);
  s.loopback = p.read32(kGtLoopback);
  s.rsfec_enable = p.read32(kRsfecConfigEnable);
  s.rsfec_status = p.read32(kStatRsfecStatus);
  s.core_version = p.read32(kCoreVersion);
  p.write32(kTick, 1);
  Counters& c = s.counters;
  c.rx_packets = counter(p, kStatRxTotalPackets);
  c.rx_good_packets = counter(p, kStatRxTotalGoodPackets);
  c.rx_bad_fcs = counter(p, kStatRxBadFcs);
  c.tx_packets = counter(p, kStatTxTotalPackets);
  c.tx_good_packets = counter(p, kStatTxTotalGoodPackets);
  c.rsfec_corrected = counter(p, kStatRsfecCorrected);
  c.rsfec_uncorrected = counter(p, kStatRsfecUncorrected);
  return s;
}

void set_rsfec(RegisterPort& p, bool on) {
  p.write32(kRsfecConfigEnable, on ? kRsfecEnableOn : 0);
  p.write32(kRsfecConfigIndCorrection, on ? kRsfecIndCorrectionOn : 0);
  // The RS-FEC controls take effect when the MAC's user logic leaves reset:
  // pulse usr_rx_reset and usr_tx_reset (VNx's rsfec setter,
  // Notebooks/vnx_utils.py lines 270-280).
  p.write32(kReset, kResetUsrRxTx);
  p.write32(kReset, 0);
}

void set_loopback(RegisterPort& p, bool on) {
  p.write32(kGtLoopback, on ? 1 : 0);
}

}  // namespace panama::driver::cmac
