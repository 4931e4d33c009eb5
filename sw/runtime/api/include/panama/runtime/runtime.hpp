// The PANAMA allreduce API (C++).
//
//   auto rt = panama::runtime::Runtime::create({"--no-huge", "-m", "256", "--no-pci",
//                                               "--vdev=net_memif0,role=client,socket=/tmp/s"});
//   auto comm = rt->communicator(panama::runtime::load_plan("worker0.json"));
//   comm->allreduce(grad.data(), grad.size());               // blocking, in place
//   auto h = comm->allreduce_async(other.data(), other.size());
//   ...; h.wait();                                            // or h.test()
//   comm->allreduce(bf16_grad, n, panama::wire::ElemType::kBfloat16);  // 16-bit, in place
//
// A Runtime owns the process's DPDK EAL (shared), the ports it opened and a
// progress engine: a background thread that polls every port in bursts,
// hands result frames to the communicator of their job, and lets each
// communicator's protocol core send what its windows allow. Several
// communicators (jobs) can share a port; each has several allreduces in
// flight. Errors are exceptions (RuntimeError, PlanError, DpdkError) with a
// message saying what went wrong; nothing aborts the process, and a job that
// cannot finish fails after its retry budget instead of hanging.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "panama/runtime/allreduce_core.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/idle_backoff.hpp"
#include "panama/runtime/plan_file.hpp"

namespace panama::runtime {

class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RuntimeOptions {
  // Poll in a background thread (default). Without it, progress happens only
  // inside wait()/test()/allreduce() calls.
  bool progress_thread = true;
  // How the progress thread waits when a pass finds nothing to do
  // (IdlePolicy, idle_backoff.hpp). balanced: after 32 empty passes it sleeps
  // 1, 2, 4 .. up to 50 us until a pass finds work, so an idle worker does
  // not burn a core; busy: busy-poll like a DPDK example (a dedicated core,
  // a NIC); handoff: keep polling for 2 ms first, for a progress thread that
  // has a CPU to itself while allreduces run.
  IdlePolicy idle = IdlePolicy::balanced();
  // Allreduces of at least this many bytes copy results into the user's
  // buffer, and payloads into frames that another core or a device reads
  // (FrameOut::read_elsewhere), with streaming (non-temporal) stores, which
  // skip reading each destination line first (payload_copy.hpp). That pays
  // when the line is no longer cached, i.e. when the bytes in flight of all
  // workers sharing a cache exceed it (the virtual cluster turns it on); a
  // worker whose in-flight chunks stay cached is faster with ordinary
  // copies (docs/runtime.md has both measurements). 0: never (default).
  size_t streaming_copy_bytes = 0;
  // Zero-copy send: on a port that can attach payloads (net_ring, whose
  // reader is in this process: DpdkPort::tx_can_attach), frames carry their
  // 64 header bytes in an mbuf chained to the chunk left in the user's
  // buffer, so the worker does not copy payloads into frames. An allreduce
  // then finishes only once the reader has released every such frame
  // (AllreduceCore::set_zero_copy_send). Other ports copy as before. Off by
  // default; the virtual cluster's threads mode turns it on.
  bool zero_copy_send = false;
  PortConfig port;  // template for the ports opened (name filled per port)
};

struct RuntimeCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_results = 0;      // result-down frames handed to a communicator
  uint64_t rx_unknown_job = 0;  // result-down frames of a job with no communicator here
  uint64_t rx_other = 0;        // anything else received (dropped)
  uint64_t rx_oversize = 0;     // frames longer than the port's max frame (dropped)
  uint64_t tx_frames = 0;
  uint64_t tx_busy = 0;  // times the TX queue was full (frames kept and retried)
};

namespace detail {
struct Shared;
struct CommState;
}  // namespace detail

// Completion handle of an asynchronous allreduce.
// Move-only; destroying it forgets the allreduce's record (the allreduce
// itself goes on if unfinished; its buffer must stay valid until it ends).
class AllreduceHandle {
 public:
  AllreduceHandle() = default;
  ~AllreduceHandle();
  AllreduceHandle(AllreduceHandle&& o) noexcept : comm_(std::move(o.comm_)), id_(o.id_) {}
  AllreduceHandle& operator=(AllreduceHandle&& o) noexcept;
  AllreduceHandle(const AllreduceHandle&) = delete;
  AllreduceHandle& operator=(const AllreduceHandle&) = delete;
  // True when finished (successfully or not); drives progress if there is no thread.
  bool test();
  // Blocks until finished; throws RuntimeError with the reason if it failed.
  void wait();
  // Like wait() but gives up after `timeout`; returns false then (the op goes on).
  bool wait_for(std::chrono::milliseconds timeout);
  OpStatus status() const;
  std::string error() const;
  bool valid() const { return comm_ != nullptr; }

 private:
  friend class Communicator;
  AllreduceHandle(std::shared_ptr<detail::CommState> c, OpId id) : comm_(std::move(c)), id_(id) {}
  std::shared_ptr<detail::CommState> comm_;
  OpId id_ = 0;
};

class Communicator {
 public:
  ~Communicator();  // unfinished allreduces fail with "communicator destroyed"
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // In-place allreduce (sum) of `count` floats; blocks until done. Throws
  // RuntimeError when the job fails (e.g. retry budget exhausted).
  void allreduce(float* data, size_t count);
  // Starts an allreduce and returns at once; `data` must stay valid and
  // untouched until the handle reports completion. Every worker of the job
  // must issue the same sizes in the same order.
  AllreduceHandle allreduce_async(float* data, size_t count);
  // The same for `count` elements of `type` at `data` (count x
  // wire::elem_bytes(type) bytes, little-endian: a torch.bfloat16 or
  // torch.float16 tensor's storage as it is). The engines widen 16-bit
  // elements to fp32, add in fp32 and round the sum once to the type
  // (docs/protocol.md §7); the result arrives in the type and is copied
  // into `data` as it is, never converted on the host. Packets hold
  // elems_per_packet elements whatever the type, so a 16-bit allreduce
  // moves half the bytes of an fp32 one. Every worker must use the same
  // type for the same allreduce. Throws RuntimeError for a type that is
  // none of ElemType, and as above.
  void allreduce(void* data, size_t count, wire::ElemType type);
  AllreduceHandle allreduce_async(void* data, size_t count, wire::ElemType type);

  CommStats stats() const;
  const Plan& plan() const;
  const std::string& device() const;

  // Per tree (plan order), the sequence the next chunk would use: what a
  // later communicator of the same job continues from (Runtime::communicator
  // with first_sequences). Throws RuntimeError while allreduces are
  // unfinished, after the communicator failed or after a tree failover.
  std::vector<uint32_t> next_sequences() const;
  // Until `until`, a chunk that has used its retry budget (or reached
  // failover_after) is retransmitted at rto_max instead of failing the job
  // (or failing its tree over): for a caller that knows a worker of the job
  // has not issued the allreduce yet (a late peer, not a dead tree) and
  // enforces its own deadline. A default time_point ends the deferral.
  void defer_failure_until(std::chrono::steady_clock::time_point until);
  // A chunk of an allreduce that has had no result yet is not retransmitted
  // before `allowance` after it was sent: the time the other workers may
  // take to issue the same allreduce (AllreduceCore::set_skew_allowance_ns).
  // 0 (the default) turns it off.
  void set_skew_allowance(std::chrono::microseconds allowance);
  // Blocks until this worker owes its peers nothing more (AllreduceCore::
  // pending_ops() is 0): every allreduce finished, and in pooled mode every
  // ring frame acknowledged and the acknowledgements and the last release
  // sent. A worker about to exit after its last allreduce calls it: the
  // frames that complete the other workers' last groups may still be queued
  // when its own results are in. Returns false after `timeout` (a peer that
  // already left never acknowledges a retransmission; its data had arrived)
  // or once the communicator has failed.
  bool settle(std::chrono::milliseconds timeout);

 private:
  friend class Runtime;
  explicit Communicator(std::shared_ptr<detail::CommState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::CommState> state_;
};

class Runtime {
 public:
  // Initialises the EAL with `eal_args` (or joins it when this process already
  // did with the same arguments). Throws DpdkError.
  static std::unique_ptr<Runtime> create(const std::vector<std::string>& eal_args,
                                         RuntimeOptions options = {});
  static std::unique_ptr<Runtime> create(std::shared_ptr<DpdkEal> eal, RuntimeOptions options = {});
  ~Runtime();  // stops the progress thread; live communicators fail their pending ops
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // A communicator for `plan` on DPDK port `device` (plan.device when empty).
  // The port is opened on first use and shared. Throws PlanError (bad plan),
  // DpdkPortNotFound / DpdkError (port), RuntimeError (job already has a
  // communicator on that port, no device named).
  std::unique_ptr<Communicator> communicator(const Plan& plan, const std::string& device = "");
  // The same, continuing the job where an earlier communicator of it
  // stopped: tree i starts at first_sequences[i] (that communicator's
  // next_sequences()), which every worker of the job must agree on. The
  // engines' slots remember the sequences a job used, so a new communicator
  // of a job that already ran must not start again at 0 (docs/protocol.md
  // §5). Throws RuntimeError for a vector that does not fit the plan.
  std::unique_ptr<Communicator> communicator(const Plan& plan, const std::string& device,
                                             const std::vector<uint32_t>& first_sequences);

  std::shared_ptr<DpdkEal> eal() const;
  RuntimeCounters counters() const;
  PortCounters port_counters(const std::string& device) const;
  // Whether the link of an open port is up now (RuntimeError if not open).
  bool link_up(const std::string& device) const;

 private:
  explicit Runtime(std::shared_ptr<detail::Shared> s) : shared_(std::move(s)) {}
  std::shared_ptr<detail::Shared> shared_;
};

}  // namespace panama::runtime
