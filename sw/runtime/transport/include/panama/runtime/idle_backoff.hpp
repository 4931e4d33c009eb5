// Idle back-off for polling loops (worker progress thread, software PSwitch,
// ring baseline).
//
// A DPDK loop on a dedicated core busy-polls: that is the lowest latency and
// costs nothing, since the core has nothing else to do. In the virtual
// cluster several such loops share few CPUs, and a loop that polls an empty
// queue takes the CPU from the process that would fill it. IdleBackoff
// spins for `spin_polls` empty polls, then sleeps, starting at
// `min_sleep_us` and doubling up to `max_sleep_us`, until a poll finds work.
// max_sleep_us = 0 turns sleeping off (busy-poll; the right setting on real
// NICs with a core per loop), with sched_yield() after the spin so a loop
// still lets other runnable threads in.
//
// Sleeps shorter than the thread's timer slack (50 us by default on Linux)
// take the slack, so the first sleep asks the kernel for 1 us of slack for
// the calling thread (prctl PR_SET_TIMERSLACK; threads it creates later
// inherit it).
#pragma once

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <thread>

namespace panama::runtime {

struct IdleBackoffConfig {
  uint32_t spin_polls = 32;   // empty polls before the first sleep (or yield)
  uint32_t min_sleep_us = 1;  // first sleep
  uint32_t max_sleep_us = 0;  // longest sleep; 0: never sleep (busy-poll)
};

class IdleBackoff {
 public:
  explicit IdleBackoff(IdleBackoffConfig c = {}) : cfg_(c) {
    cfg_.min_sleep_us = std::max<uint32_t>(1, cfg_.min_sleep_us);
    sleep_us_ = cfg_.min_sleep_us;
  }

  // The last poll found work: back to spinning.
  void busy() {
    idle_ = 0;
    sleep_us_ = cfg_.min_sleep_us;
  }

  // The last poll found nothing: spin, yield or sleep. Returns whether it
  // gave up the CPU (yielded or slept).
  bool idle() {
    if (++idle_ <= cfg_.spin_polls) return false;
    if (cfg_.max_sleep_us == 0) {
      std::this_thread::yield();
      return true;
    }
    if (!slack_set_) {
      ::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
      slack_set_ = true;
    }
    const uint32_t us = std::min(sleep_us_, cfg_.max_sleep_us);
    timespec ts{0, static_cast<long>(us) * 1000L};
    ::nanosleep(&ts, nullptr);
    ++sleeps_;
    sleep_us_ = std::min<uint32_t>(cfg_.max_sleep_us, sleep_us_ * 2);
    return true;
  }

  // busy() when `work` is non-zero, else idle(); returns whether it gave up the CPU.
  bool after_poll(uint64_t work) {
    if (work != 0) {
      busy();
      return false;
    }
    return idle();
  }

  uint64_t sleeps() const { return sleeps_; }
  const IdleBackoffConfig& config() const { return cfg_; }

 private:
  IdleBackoffConfig cfg_;
  uint32_t idle_ = 0;
  uint32_t sleep_us_ = 1;
  uint64_t sleeps_ = 0;
  bool slack_set_ = false;
};

}  // namespace panama::runtime
