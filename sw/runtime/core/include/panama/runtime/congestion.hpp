// Per-tree congestion control of a worker: DCTCP-style, results as implicit ACKs.
//
// The state is a function of the stream of fresh results of the tree only
// (each result's CE bit and cwnd_cap), never of local timers or send times:
// every worker of a tree sees the same result stream, so their windows move
// in lock step and no worker overruns the slots the others are still using.
// For the same reason a timeout does not shrink cwnd here; the window is
// bounded by cwnd_cap, which is what protects the engines' slot memory.
//
//  - alpha <- (1-g)·alpha + g·F once per window of results, F = CE fraction;
//    a window is floor(cwnd) results, measured when it starts.
//  - on a CE result: cwnd <- cwnd·(1 - alpha/2) and ssthresh <- cwnd, at most
//    once per window: after a reduction from cwnd_before, the next
//    floor(cwnd_before) - 1 results cannot reduce again. A CE result never
//    increases cwnd.
//  - otherwise: cwnd += 1 below ssthresh (slow start), cwnd += 1/cwnd above.
//  - always 1 <= cwnd <= cwnd_cap, the cap of the latest result (initially
//    the plan's initial_cwnd_cap).
#pragma once

#include <cstdint>

#include "panama/runtime/plan.hpp"

namespace panama::runtime {

class TreeCongestion {
 public:
  TreeCongestion(const CongestionParams& params, uint16_t initial_cap);

  // One fresh result of the tree: `ce` = the result carried CE, `cap` = its cwnd_cap.
  void on_result(bool ce, uint16_t cap);

  double cwnd() const { return cwnd_; }
  double alpha() const { return alpha_; }
  double ssthresh() const { return ssthresh_; }
  uint16_t cap() const { return cap_; }
  // Sequences this worker may have outstanding: floor(cwnd), within [1, cap].
  uint32_t window() const;
  uint64_t reductions() const { return reductions_; }
  uint64_t alpha_updates() const { return alpha_updates_; }

 private:
  double g_;
  double cwnd_;
  double alpha_;
  double ssthresh_;
  uint16_t cap_;
  uint32_t win_size_;  // results in the current alpha window
  uint32_t win_results_ = 0;
  uint32_t win_ce_ = 0;
  uint32_t hold_ = 0;  // results left before another reduction is allowed
  uint64_t reductions_ = 0;
  uint64_t alpha_updates_ = 0;
};

}  // namespace panama::runtime
