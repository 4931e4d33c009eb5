// Where the frames an engine or a switch sends go: the one interface through
// which the host engine (engine.hpp), the kernel's C simulation, every engine
// backend (panama/engine/backend.hpp) and the switch logic around an engine
// (panama/pswitch/switch_core.hpp) hand out what they send.
//
//  - emit(frame, len, ports): one frame. An engine has a single output and
//    emits to no ports; a switch names the ports it leaves by: one, or
//    several for a result replicated to a tree's children (one call for the
//    whole group, so that a target holding frames in buffers of its own can
//    send one shared buffer instead of a copy per port);
//  - buffer(len): space of the target's own for the next frame of `len`
//    bytes (an mbuf), or null (the default). An emitter that builds a frame
//    (an engine's aggregate) writes it there and passes that same pointer
//    to emit(), so the target sends it without a copy. Space handed out
//    but not emitted into stays the target's, to hand out again.
//
// The pointer given to emit() is valid during the call only. Host code only
// (the Vitis kernel streams its frames on AXI4-Stream).
#pragma once

#include <stdint.h>

#include <utility>

namespace panama {

// The ports a frame leaves by (none: an engine's single output).
struct Ports {
  const uint32_t* list = nullptr;
  uint32_t count = 0;

  const uint32_t* begin() const { return list; }
  const uint32_t* end() const { return list + count; }
  bool empty() const { return count == 0; }
};

class EmitTarget {
 public:
  virtual ~EmitTarget() = default;
  virtual uint8_t* buffer(uint32_t len) {
    (void)len;
    return nullptr;
  }
  virtual void emit(const uint8_t* frame, uint32_t len, Ports to) = 0;
};

// A callable f(frame, len) as a target: every frame, whatever its ports.
template <class F>
class EmitFn final : public EmitTarget {
 public:
  explicit EmitFn(F f) : f_(std::move(f)) {}
  void emit(const uint8_t* frame, uint32_t len, Ports) override { f_(frame, len); }

 private:
  F f_;
};

// A callable f(port, frame, len) as a target: called once per port (a
// replicated frame once for each, an engine's emission never).
template <class F>
class PortEmitFn final : public EmitTarget {
 public:
  explicit PortEmitFn(F f) : f_(std::move(f)) {}
  void emit(const uint8_t* frame, uint32_t len, Ports to) override {
    for (uint32_t p : to) f_(p, frame, len);
  }

 private:
  F f_;
};

}  // namespace panama
