// The simulated CMAC (see panama/driver/simulation.hpp).
#include <cstdio>

#include "panama/driver/cmac.hpp"
#include "panama/driver/simulation.hpp"

namespace panama::driver {

using namespace cmac;

bool SimCmac::local_rsfec() const {
  return (rsfec_enable_ & 3) == 3;
}

bool SimCmac::link_up() const {
  if (loopback_ & 1) return true;
  if (!cable_) return false;
  // Either direction of RS-FEC alone, or a mismatch with the far end, gives
  // no lock (the far end's encoding is not ours).
  if ((rsfec_enable_ & 3) != 0 && (rsfec_enable_ & 3) != 3) return false;
  return local_rsfec() == peer_rsfec_;
}

uint32_t SimCmac::read32(uint32_t offset) {
  const bool up = link_up();
  auto latched = [this](int i, uint32_t half) {
    const uint64_t v = latched_[i];
    return half ? static_cast<uint32_t>((v >> 32) & 0xFFFF) : static_cast<uint32_t>(v);
  };
  switch (offset) {
    case kCoreVersion:
      return 0x00000301;  // a CMAC 3.1 answers so; the model has no real version
    case kGtLoopback:
      return loopback_;
    case kRsfecConfigEnable:
      return rsfec_enable_;
    case kRsfecConfigIndCorrection:
      return rsfec_ind_;
    case kConfigTx1:
      return 1;
    case kConfigRx1:
      return 1;
    case kStatTxStatus:
      return 0;
    case kStatRxStatus:
      return up ? (kRxStatus | kRxAligned) : kRxLocalFault;
    case kStatRxBlockLock:
    case kStatRxLaneSync:
      return up ? kAllPcsLanes : 0;
    case kStatRsfecStatus:
      return 0;
    default:
      break;
  }
  for (int i = 0; i < kCounterCount; ++i) {
    if (offset == kCounterOffsets[i]) return latched(i, 0);
    if (offset == kCounterOffsets[i] + 4) return latched(i, 1);
  }
  return 0;
}

void SimCmac::write32(uint32_t offset, uint32_t value) {
  switch (offset) {
    case kGtLoopback:
      loopback_ = value & 1;
      break;
    case kRsfecConfigEnable:
      rsfec_enable_ = value & 3;
      break;
    case kRsfecConfigIndCorrection:
      rsfec_ind_ = value & 7;
      break;
    case kTick:
      if (value & 1) latched_ = live_;
      break;
    default:
      break;
  }
}

void SimCmac::count_frames(uint64_t received, uint64_t sent) {
  live_[0] += received;  // RX total
  live_[1] += received;  // RX good
  live_[3] += sent;      // TX total
  live_[4] += sent;      // TX good
}

std::vector<std::string> SimCmac::state_lines(unsigned cage) const {
  std::vector<std::string> out;
  char b[96];
  std::snprintf(b, sizeof(b), "p %u cable %d", cage, cable_ ? 1 : 0);
  out.emplace_back(b);
  std::snprintf(b, sizeof(b), "p %u peer_rsfec %d", cage, peer_rsfec_ ? 1 : 0);
  out.emplace_back(b);
  for (const auto& [off, val] :
       {std::pair{kGtLoopback, loopback_}, std::pair{kRsfecConfigEnable, rsfec_enable_},
        std::pair{kRsfecConfigIndCorrection, rsfec_ind_}}) {
    std::snprintf(b, sizeof(b), "m %u %x %x", cage, off, val);
    out.emplace_back(b);
  }
  for (int i = 0; i < kCounterCount; ++i) {
    std::snprintf(b, sizeof(b), "k %u %d %llx %llx", cage, i, static_cast<unsigned long long>(live_[i]),
                  static_cast<unsigned long long>(latched_[i]));
    out.emplace_back(b);
  }
  return out;
}

void SimCmac::set_counter(int index, uint64_t live, uint64_t latched) {
  if (index >= 0 && index < kCounterCount) {
    live_[index] = live;
    latched_[index] = latched;
  }
}

}  // namespace panama::driver
