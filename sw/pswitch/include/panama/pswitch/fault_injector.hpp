// Loss, duplication and reordering injected on a port's transmit side, for
// testing the protocol's recovery. Decisions come from a seeded generator, so
// a run is reproducible from its seed; each port derives its own stream.
#pragma once

#include <cstdint>

namespace panama::pswitch {

// splitmix64: small, fast, and identical on every platform.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // True with probability p.
  bool chance(double p) {
    if (p <= 0.0) return false;
    if (p >= 1.0) return true;
    return static_cast<double>(next() >> 11) * 0x1.0p-53 < p;
  }

 private:
  uint64_t state_;
};

struct FaultConfig {
  double loss = 0.0;
  double dup = 0.0;
  double reorder = 0.0;
  uint64_t hold_ns = 50'000;  // a held frame is released after this long alone
};

struct FaultCounters {
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
};

template <class Handle>
class FaultInjector {
 public:
  FaultInjector(const FaultConfig& cfg, uint64_t seed) : cfg_(cfg), rng_(seed) {}

  bool active() const { return cfg_.loss > 0.0 || cfg_.dup > 0.0 || cfg_.reorder > 0.0; }

  // Passes `h` through the faults. `out(Handle)` transmits, `clone(Handle)`
  // returns a copy (or a null-like handle when none can be made, which is
  // then not sent), `release(Handle)` frees a lost frame.
  template <class Out, class Clone, class Release>
  void send(Handle h, uint64_t now_ns, Out&& out, Clone&& clone, Release&& release) {
    if (rng_.chance(cfg_.loss)) {
      ++ctr_.lost;
      release(h);
      return;
    }
    const bool dup = rng_.chance(cfg_.dup);
    if (held_valid_) {
      // This frame overtakes the held one.
      out(h);
      if (dup) send_copy(h, out, clone);
      held_valid_ = false;
      out(held_);
      return;
    }
    if (rng_.chance(cfg_.reorder)) {
      ++ctr_.reordered;
      if (dup) send_copy(h, out, clone);  // the copy goes now, the original later
      held_ = h;
      held_valid_ = true;
      held_since_ns_ = now_ns;
      return;
    }
    out(h);
    if (dup) send_copy(h, out, clone);
  }

  // Sends a held frame that nothing has overtaken for hold_ns (or, with
  // force, at once).
  template <class Out>
  void flush(uint64_t now_ns, Out&& out, bool force = false) {
    if (held_valid_ && (force || now_ns - held_since_ns_ >= cfg_.hold_ns)) {
      held_valid_ = false;
      out(held_);
    }
  }

  const FaultCounters& counters() const { return ctr_; }

  // The frame held back for reordering, if any, and when flush() lets it go.
  bool holding() const { return held_valid_; }
  Handle held() const { return held_; }
  uint64_t release_at_ns() const { return held_since_ns_ + cfg_.hold_ns; }

 private:
  template <class Out, class Clone>
  void send_copy(Handle h, Out& out, Clone& clone) {
    Handle c = clone(h);
    if (!c) return;
    ++ctr_.duplicated;
    out(c);
  }

  FaultConfig cfg_;
  SplitMix64 rng_;
  FaultCounters ctr_;
  Handle held_{};
  bool held_valid_ = false;
  uint64_t held_since_ns_ = 0;
};

}  // namespace panama::pswitch
