// DPDK transport: EAL set-up and one Ethernet port with one RX/TX queue pair.
//
// Used by the worker runtime and the software PSwitch. Works on any PMD: the
// tests and the demo use virtual devices (net_memif between processes,
// net_ring pairs inside one process) with --no-huge, so neither a NIC nor
// hugepages are needed (docs/runtime.md, "DPDK on this machine").
//
// Set-up, the polling loop and tear-down are separate: constructors do all
// allocation (mempool, queues); rx_burst/tx_burst/alloc_bulk are thin,
// allocation-free wrappers for the hot loop. Errors are DpdkError exceptions
// carrying DPDK's own reason (rte_strerror); nothing calls rte_exit or aborts.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct rte_mbuf;
struct rte_mempool;

namespace panama::runtime {

class DpdkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The named port does not exist (the message lists the ports that do).
class DpdkPortNotFound : public DpdkError {
 public:
  using DpdkError::DpdkError;
};

// The process's DPDK environment abstraction layer. DPDK allows one
// rte_eal_init per process, so initialize() initialises it on the first call
// and returns the same object afterwards (when called with the same
// arguments; different arguments are an error, since they cannot take effect).
class DpdkEal {
 public:
  // `args` are EAL arguments without the program name, e.g.
  // {"--no-huge", "-m", "256", "--no-pci", "--vdev=net_memif0,role=client,socket=/tmp/s",
  //  "--file-prefix=w0"}. Throws DpdkError when the EAL fails to start.
  static std::shared_ptr<DpdkEal> initialize(const std::vector<std::string>& args);
  // The EAL if initialize() succeeded before in this process, else null.
  static std::shared_ptr<DpdkEal> current();

  const std::vector<std::string>& args() const { return args_; }

  // Names of all ports the EAL knows (probed vdevs, NICs, ring pairs).
  std::vector<std::string> port_names() const;

  // Creates two ports wired back to back through two rte_rings (what a
  // sends, b receives and vice versa): an in-process link for tests and
  // single-process demos. The ring PMD names them "net_ring_<name_a>" and
  // "net_ring_<name_b>"; those names are returned. Throws DpdkError.
  std::pair<std::string, std::string> create_ring_pair(const std::string& name_a, const std::string& name_b,
                                                       unsigned ring_size = 1024);

  // Gives the calling thread (one the EAL did not start: a progress thread,
  // a PSwitch thread) an lcore id, so that its mbuf allocations and frees
  // go through the mempools' per-lcore caches instead of the shared ring:
  // fewer atomic operations, and a freed buffer is reused while still in
  // the cache. Returns false (the thread works on, uncached) when every
  // lcore id is taken; true also for an EAL thread. unregister_thread()
  // hands the caches' mbufs back to their pools and frees the id; a thread
  // that registered calls it before it ends (EalThreadScope does both).
  static bool register_thread();
  static void unregister_thread();

  DpdkEal(const DpdkEal&) = delete;
  DpdkEal& operator=(const DpdkEal&) = delete;

 private:
  explicit DpdkEal(std::vector<std::string> args) : args_(std::move(args)) {}
  std::vector<std::string> args_;
};

// Registers the constructing thread with the EAL (DpdkEal::register_thread)
// and unregisters it on destruction, if it registered.
class EalThreadScope {
 public:
  EalThreadScope();
  ~EalThreadScope();
  EalThreadScope(const EalThreadScope&) = delete;
  EalThreadScope& operator=(const EalThreadScope&) = delete;
  bool cached() const { return cached_; }  // the thread has an lcore id

 private:
  bool cached_ = false;
  bool registered_here_ = false;
};

struct PortConfig {
  std::string name;  // device name (e.g. "net_memif0") or a decimal port id
  uint16_t rx_descriptors = 1024;
  uint16_t tx_descriptors = 1024;
  uint32_t mbufs = 2047;            // mempool size (a power of two minus one is best)
  uint32_t max_frame_bytes = 9216;  // every mbuf holds one frame this long in one segment
  bool promiscuous = true;          // PANAMA frames use made-up MACs in virtual set-ups
  unsigned link_wait_ms = 0;        // wait this long for link up in the constructor (0: don't)
  // Set up attach_frame (zero-copy send) where the device allows it: a
  // second pool of `mbufs` data-less mbufs for the attached payloads.
  bool attach_payloads = false;
};

struct PortCounters {
  uint64_t rx_packets = 0, rx_bytes = 0;
  uint64_t tx_packets = 0, tx_bytes = 0;
  uint64_t tx_full = 0;  // packets tx_burst could not queue (returned to the caller)
  uint64_t rx_missed = 0, rx_errors = 0, tx_errors = 0, rx_nombuf = 0;  // from the PMD
};

// One started port, one RX and one TX queue, its own mempool.
class DpdkPort {
 public:
  // Finds the port (by name, or by id when `name` is a number), creates the
  // mempool, configures and starts it. Throws DpdkError, listing the
  // available ports when the name is unknown.
  DpdkPort(std::shared_ptr<DpdkEal> eal, const PortConfig& config);
  ~DpdkPort();  // stops the port; the mempool is freed
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;

  uint16_t id() const { return port_id_; }
  const std::string& name() const { return name_; }
  std::array<uint8_t, 6> mac() const { return mac_; }
  uint32_t max_frame_bytes() const { return config_.max_frame_bytes; }
  rte_mempool* pool() const { return pool_; }
  // Whether tx_burst hands the mbufs themselves on (net_ring: to the ring's
  // reader; a PCI NIC: to its DMA) instead of copying them on this core
  // (memif, af_packet and other virtual devices copy inside tx_burst).
  bool tx_hands_over_mbufs() const { return tx_hands_over_; }
  // Whether attach_frame works: frames may carry a payload left in the
  // caller's memory (net_ring, whose reader is in this process; a NIC would
  // need that memory registered for DMA, which this class does not do).
  bool tx_can_attach() const { return attach_pool_ != nullptr; }

  bool link_up() const;
  // Polls the link state until up or `timeout_ms` passed; returns the state.
  bool wait_link_up(unsigned timeout_ms) const;

  // Hot-loop operations: no allocation besides mbufs from the pool.
  uint16_t rx_burst(rte_mbuf** pkts, uint16_t n);
  // Returns how many were queued; the caller still owns (and must free or
  // retry) pkts[sent..n).
  uint16_t tx_burst(rte_mbuf** pkts, uint16_t n);
  // Sends all, freeing and counting (tx_full) those the queue did not take.
  void tx_burst_or_drop(rte_mbuf** pkts, uint16_t n);
  // Allocates n mbufs at once; false (nothing allocated) if the pool is short.
  bool alloc_bulk(rte_mbuf** pkts, unsigned n);
  // Allocates an mbuf and reserves `len` bytes of data; null when the pool is
  // empty or len exceeds max_frame_bytes.
  rte_mbuf* alloc_frame(uint32_t len, uint8_t** data);
  // A two-segment frame: `header_len` bytes in an mbuf of the pool (written
  // by the caller at *header) chained to `payload_len` bytes left at
  // `payload`, attached as an external buffer (zero-copy send). When the last
  // reference to the frame is freed, on whatever thread, `release(payload,
  // opaque)` runs; until then the payload must stay valid and unchanged as
  // far as the reader cares. Null (nothing allocated, `release` not called)
  // when the port cannot attach (tx_can_attach), a pool is empty or the
  // frame would exceed max_frame_bytes.
  rte_mbuf* attach_frame(uint32_t header_len, uint8_t** header, const uint8_t* payload, uint32_t payload_len,
                         void (*release)(void* addr, void* opaque), void* opaque);

  // A contiguous view of a received frame: the mbuf data when it is one
  // segment, otherwise a copy in `scratch` (at least max_frame_bytes). Null
  // when the frame is longer than the scratch.
  static const uint8_t* frame_data(const rte_mbuf* m, uint8_t* scratch, uint32_t scratch_len, uint32_t* len);
  static void free(rte_mbuf* m);
  static void free_bulk(rte_mbuf** pkts, unsigned n);

  PortCounters counters() const;

 private:
  std::shared_ptr<DpdkEal> eal_;
  PortConfig config_;
  uint16_t port_id_ = 0;
  std::string name_;
  std::array<uint8_t, 6> mac_{};
  rte_mempool* pool_ = nullptr;
  rte_mempool* attach_pool_ = nullptr;  // net_ring: mbufs for attach_frame's payload segments
  bool tx_hands_over_ = false;
  bool started_ = false;
  uint64_t rx_packets_ = 0, rx_bytes_ = 0, tx_packets_ = 0, tx_bytes_ = 0, tx_full_ = 0;
};

}  // namespace panama::runtime
