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
// `spin_us` lengthens the spin to a time: the loop keeps polling until it
// has found nothing for that long (and for spin_polls polls). A sleep costs
// far more than asked for on a VM (a 1 us nanosleep took 32 us here), so a
// loop that expects work within that time is better off polling for it:
// in the virtual cluster's threads mode, the progress thread and the PSwitch
// thread hand frames to each other every few microseconds, and two busy
// threads fit the two CPUs (docs/performance.md measures it).
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
  uint32_t spin_us = 0;       // also spin until idle this long (0: spin_polls alone)
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
    if (cfg_.spin_us != 0) {
      const uint64_t now = monotonic_ns();
      if (idle_ == cfg_.spin_polls + 1) spin_start_ns_ = now;  // the first idle poll past the count
      if (now - spin_start_ns_ < uint64_t{cfg_.spin_us} * 1000) {
        std::this_thread::yield();
        return true;
      }
    }
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
  static uint64_t monotonic_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  }

  IdleBackoffConfig cfg_;
  uint64_t spin_start_ns_ = 0;
  uint32_t idle_ = 0;
  uint32_t sleep_us_ = 1;
  uint64_t sleeps_ = 0;
  bool slack_set_ = false;
};

}  // namespace panama::runtime
