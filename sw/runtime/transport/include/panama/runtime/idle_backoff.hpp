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
//
// IdlePolicy below is how programs choose these settings: one named preset
// (busy, balanced, handoff) for every polling loop of a run.
#pragma once

#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace panama::runtime {

struct IdleBackoffConfig {
  uint32_t spin_polls = 32;   // empty polls before the first sleep (or yield)
  uint32_t min_sleep_us = 1;  // first sleep
  uint32_t max_sleep_us = 0;  // longest sleep; 0: never sleep (busy-poll)
  uint32_t spin_us = 0;       // also spin until idle this long (0: spin_polls alone)
};

// How every polling loop of a program waits when a poll finds nothing: the
// runtime's progress thread (RuntimeOptions::idle), the software PSwitch
// (PswitchProcessOptions::idle, SoftwarePswitch::run), the ring baseline's
// workers. One preset per kind of machine:
//
//   busy      a core per loop (real NICs): never sleep, yield the CPU after
//             32 empty polls. panama-pswitch's default.
//   balanced  more polling loops than CPUs (processes sharing a machine):
//             after 32 empty polls sleep 1, 2, 4 ... up to 50 us until a poll
//             finds work. The runtime's default; panama-cluster --nodes
//             processes and panama-torchrun.
//   handoff   a few loops that hand frames to each other within one process
//             on as many CPUs (panama-cluster --nodes threads: the progress
//             thread and the PSwitch thread): keep polling, yielding the CPU
//             after each empty poll, until idle for 2 ms; then as balanced.
//             A sleep costs far more than asked for on a VM, and a frame is
//             due within microseconds (docs/cluster.md, "Idle back-off").
//
// parse() takes a preset's name, optionally followed by overrides of its
// numbers: "handoff,spin=200", "balanced,sleep=20", "busy,polls=64".
struct IdlePolicy {
  std::string name = "balanced";  // the preset, or "<preset>+" once overridden
  uint32_t spin_polls = 32;       // empty polls before giving up the CPU (IdleBackoffConfig::spin_polls)
  uint32_t spin_us = 0;           // and keep polling until idle this long (IdleBackoffConfig::spin_us)
  uint32_t max_sleep_us = 50;     // then sleep 1, 2, 4 ... up to this; 0: yield, never sleep

  static IdlePolicy busy() { return {"busy", 32, 0, 0}; }
  static IdlePolicy balanced() { return {"balanced", 32, 0, 50}; }
  static IdlePolicy handoff() { return {"handoff", 32, 2000, 50}; }
  static constexpr const char* kNames = "busy, balanced, handoff";

  IdleBackoffConfig backoff() const { return {spin_polls, 1, max_sleep_us, spin_us}; }

  // "balanced: 32 polls, then sleep up to 50 us".
  std::string describe() const {
    std::string s = name + ": " + std::to_string(spin_polls) + " polls";
    if (spin_us != 0) s += " and " + std::to_string(spin_us) + " us";
    return s + (max_sleep_us == 0 ? ", then yield"
                                  : ", then sleep up to " + std::to_string(max_sleep_us) + " us");
  }

  // A preset by name with optional overrides ("handoff,spin=200"); throws
  // std::invalid_argument naming what it did not understand.
  static IdlePolicy parse(const std::string& text) {
    const size_t comma = text.find(',');
    const std::string preset = text.substr(0, comma);
    IdlePolicy p;
    if (preset == "busy") {
      p = busy();
    } else if (preset == "balanced") {
      p = balanced();
    } else if (preset == "handoff") {
      p = handoff();
    } else {
      throw std::invalid_argument("unknown polling preset '" + preset + "' (" + kNames + ")");
    }
    for (size_t at = comma; at != std::string::npos;) {
      const size_t next = text.find(',', at + 1);
      const std::string item =
          text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      char* end = nullptr;
      const unsigned long v = eq == std::string::npos ? 0 : std::strtoul(item.c_str() + eq + 1, &end, 10);
      if (eq == std::string::npos || eq + 1 == item.size() || *end != '\0' || v > 10000000)
        throw std::invalid_argument("polling preset override '" + item +
                                    "': expected spin=US, sleep=US or polls=N");
      if (key == "spin") {
        p.spin_us = static_cast<uint32_t>(v);
      } else if (key == "sleep") {
        p.max_sleep_us = static_cast<uint32_t>(v);
      } else if (key == "polls") {
        p.spin_polls = static_cast<uint32_t>(v);
      } else {
        throw std::invalid_argument("polling preset override '" + item +
                                    "': expected spin=US, sleep=US or polls=N");
      }
      p.name = preset + "+";
      at = next;
    }
    return p;
  }
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
