// The simulated CMAC (see panama/driver/simulation.hpp).
#include <cstdio>

#include "panama/driver/cmac.hpp"
#include "panama/driver/simulation.hpp"

namespace panama::driver {

using namespace cmac;

bool SimCmac::local_rsfec() const {
  return (rsfec_active_ & 3) == 3;
}

void SimCmac::note_link_change() {
  if (!link_up()) latched_down_.fill(true);
}

bool SimCmac::link_up() const {
  if (loopback_ & 1) return true;
  if (!cable_) return false;
  // Either direction of RS-FEC alone, or a mismatch with the far end, gives
  // no lock (the far end's encoding is not ours).
  if ((rsfec_active_ & 3) != 0 && (rsfec_active_ & 3) != 3) return false;
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
    case kReset:
      return reset_;
    // A latched register reports the drop once, then the state now.
    case kStatTxStatus:
      latched_down_[0] = !up;
      return 0;
    case kStatRxStatus: {
      const bool shown = up && !latched_down_[1];
      latched_down_[1] = !up;
      return shown ? (kRxStatus | kRxAligned) : kRxLocalFault;
    }
    case kStatRxBlockLock:
    case kStatRxLaneSync: {
      bool& latch = latched_down_[offset == kStatRxBlockLock ? 2 : 3];
      const bool shown = up && !latch;
      latch = !up;
      return shown ? kAllPcsLanes : 0;
    }
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
      note_link_change();
      break;
    case kRsfecConfigEnable:
      rsfec_enable_ = value & 3;
      break;
    case kRsfecConfigIndCorrection:
      rsfec_ind_ = value & 7;
      break;
    case kReset:
      // The user logic in reset drops the link; the RS-FEC enables written
      // so far take effect as it comes out.
      reset_ = value;
      if (value & kResetUsrRxTx) {
        latched_down_.fill(true);
        rsfec_active_ = rsfec_enable_;
      }
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
  // The enables in effect (written, then a RESET_REG pulse), then the enables
  // as written since.
  for (const auto& [off, val] :
       {std::pair{kGtLoopback, loopback_}, std::pair{kRsfecConfigEnable, rsfec_active_},
        std::pair{kReset, kResetUsrRxTx}, std::pair{kReset, reset_},
        std::pair{kRsfecConfigEnable, rsfec_enable_}, std::pair{kRsfecConfigIndCorrection, rsfec_ind_}}) {
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
