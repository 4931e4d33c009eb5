// A one-engine switch on DPDK ports, inside the calling process.
//
// Runs the real HLS C++ engine (the "model" engine backend) as the root of
// every configured (job, tree): frames received on any of its ports go
// through the engine, and each result it emits is replicated to all ports
// (what the multicast of a real switch does). Optional random loss on
// receive exercises retransmission. The engine sums every element type
// (fp32, bf16, fp16: ELEM_TYPES 0xE) by the rules of docs/protocol.md §7, so
// 16-bit allreduces get exactly the bits a PSwitch would send; the switch
// itself only replicates frames and never reads a payload. It exists so
// that the runtime's tests, the example's --loopback mode and the worker
// benchmark run a real end-to-end allreduce without other processes; the
// full software PSwitch (queues, ECN marking, trees of switches) is
// sw/pswitch. It is a library of its own (panama_loopback_switch), not part
// of the runtime API.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "panama/runtime/dpdk.hpp"
#include "panama/wire.hpp"

namespace panama::runtime {

struct LoopbackSwitchConfig {
  struct Entry {
    uint16_t job_id = 0;
    uint8_t tree_id = 0;
    uint32_t fan_in = 1;       // children (workers) that complete a slot
    uint64_t child_mask = 1;   // allowed child ids
    uint32_t slot_count = 64;  // the entry's share Q (its results carry cwnd_cap <= Q)
  };
  std::vector<std::string> ports;  // DPDK port names
  uint16_t udp_port = wire::kDefaultUdpPort;
  std::vector<Entry> entries;
  double rx_loss = 0;  // probability of dropping each received frame
  uint64_t seed = 1;   // for rx_loss
};

class LoopbackSwitch {
 public:
  // Opens the ports, configures the engine through its register interface and
  // starts the forwarding thread. Throws DpdkError / std::runtime_error.
  LoopbackSwitch(std::shared_ptr<DpdkEal> eal, const LoopbackSwitchConfig& config);
  ~LoopbackSwitch();  // stops the thread
  LoopbackSwitch(const LoopbackSwitch&) = delete;
  LoopbackSwitch& operator=(const LoopbackSwitch&) = delete;

  // An engine counter (regmap::kGc*), read consistently with the thread.
  uint64_t global_counter(uint32_t counter) const;
  uint64_t frames_lost() const;  // dropped by rx_loss

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace panama::runtime
