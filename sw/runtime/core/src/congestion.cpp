// Per-tree DCTCP-style congestion control (see congestion.hpp for the rules).
#include "panama/runtime/congestion.hpp"

#include <algorithm>
#include <cmath>

namespace panama::runtime {
namespace {
uint32_t floor_at_least_1(double x) {
  return x < 1.0 ? 1u : static_cast<uint32_t>(std::floor(x));
}
}  // namespace

TreeCongestion::TreeCongestion(const CongestionParams& p, uint16_t initial_cap)
    : g_(p.g),
      cwnd_(p.initial_cwnd),
      alpha_(p.initial_alpha),
      ssthresh_(p.ssthresh),
      cap_(std::max<uint16_t>(1, initial_cap)) {
  cwnd_ = std::min(std::max(cwnd_, 1.0), static_cast<double>(cap_));
  win_size_ = floor_at_least_1(cwnd_);
}

uint32_t TreeCongestion::window() const {
  return std::min<uint32_t>(floor_at_least_1(cwnd_), cap_);
}

void TreeCongestion::on_result(bool ce, uint16_t cap) {
  cap_ = std::max<uint16_t>(1, cap);  // a cap of 0 would stall the tree for good
  ++win_results_;
  if (ce) ++win_ce_;

  if (ce) {
    if (hold_ == 0) {
      const double before = cwnd_;
      cwnd_ = std::max(1.0, cwnd_ * (1.0 - alpha_ / 2.0));
      ssthresh_ = std::max(1.0, cwnd_);
      hold_ = floor_at_least_1(before);
      ++reductions_;
    }
  } else if (cwnd_ < ssthresh_) {
    cwnd_ += 1.0;
  } else {
    cwnd_ += 1.0 / cwnd_;
  }
  if (hold_ > 0) --hold_;
  cwnd_ = std::min(std::max(cwnd_, 1.0), static_cast<double>(cap_));

  if (win_results_ >= win_size_) {
    const double f = static_cast<double>(win_ce_) / static_cast<double>(win_results_);
    alpha_ = (1.0 - g_) * alpha_ + g_ * f;
    ++alpha_updates_;
    win_results_ = 0;
    win_ce_ = 0;
    win_size_ = floor_at_least_1(cwnd_);
  }
}

}  // namespace panama::runtime
