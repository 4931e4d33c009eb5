// The `panama` torch.distributed backend (docs/pytorch.md): a process group
// whose SUM/AVG allreduce of float32, bfloat16 and float16 tensors runs
// through a PANAMA communicator, and which hands every other collective to a
// Gloo process group made from the same store (created by the Python side and
// passed in), or refuses it with a panama error when Gloo cannot run it.
//
// One class template for both shapes torch has had:
//  - PanamaGroup<c10d::ProcessGroup>: torch 1.x (Debian's 1.13), where a
//    plugin's creator returns a ProcessGroup;
//  - PanamaGroup<c10d::Backend>: torch 2.x, where it returns a c10d::Backend
//    that torch wraps in a ProcessGroup registered for cpu and cuda (which
//    gives the group a name, so functional collectives find it). On 1.13 this
//    instantiation is compiled (1.13 has the class) but not used.
//
// Threads (none of them runs user callbacks except the executor's):
//  - the caller's: checks, issues runtime allreduces (or queues them for the
//    stager), returns a Work at once;
//  - stager: staged collectives (CUDA tensors; CPU tensors when forced):
//    copies each chunk into a pool buffer and issues it, in issue order;
//  - completion: waits for the runtime allreduces in issue order, divides
//    for AVG, copies back, marks the Work done and hands its Future's
//    completion to the executor;
//  - executor (callback_executor.hpp): completes Futures, where callbacks run;
//    grows when a callback blocks on another collective;
//  - monitor: publishes this rank's progress in the store, waits for late
//    ranks up to the group's timeout, tells a late rank from a dead tree and
//    fails the group with a message that names the ranks that did not
//    contribute.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "callback_executor.hpp"
#include "panama/runtime/runtime.hpp"
#include "stage_engine.hpp"
#include "staging_pool.hpp"

#if PANAMA_TORCH_CUDA
#include "cuda_stage_engine.hpp"
#endif

namespace panama::torch_backend {

using c10::intrusive_ptr;
using c10d::Work;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the Python side resolved from options and environment variables.
struct BackendConfig {
  std::string plan_path;
  std::vector<std::string> eal_args;
  std::string device;  // empty: the plan's device
  unsigned link_wait_ms = 10000;
  milliseconds timeout{30 * 60 * 1000};  // the process group's timeout
  bool stage_cpu = false;                // CPU tensors through the staged pipeline (tests)
  size_t stage_chunk_bytes = 4 << 20;
  size_t stage_buffers = 4;
  // How long a chunk of an allreduce with no result yet waits before its
  // first retransmission (the ranks' skew; Communicator::set_skew_allowance).
  milliseconds skew_allowance{200};
};

// Every PANAMA communicator of the process uses the one Runtime (one DPDK
// EAL per process), kept from the first group to interpreter exit
// (release_shared_runtime), so that re-creating a group reuses the open port.
struct RuntimeHolder {
  std::mutex mu;
  std::shared_ptr<runtime::Runtime> rt;
  // Where each job's sequences continue (job id << 16 | udp port): set when a
  // group ends cleanly; "failed" when it did not (the engines' slots can no
  // longer be trusted to match).
  std::map<uint32_t, std::string> resume;
};

inline RuntimeHolder& holder() {
  static RuntimeHolder h;
  return h;
}

inline std::shared_ptr<runtime::Runtime> shared_runtime(const std::vector<std::string>& eal_args,
                                                        unsigned link_wait_ms) {
  RuntimeHolder& h = holder();
  std::lock_guard<std::mutex> lk(h.mu);
  if (h.rt) {
    if (h.rt->eal()->args() != eal_args) {
      throw std::runtime_error(
          "panama: this process already runs the PANAMA runtime with other EAL arguments");
    }
    return h.rt;
  }
  runtime::RuntimeOptions ro;
  ro.port.link_wait_ms = link_wait_ms;
  h.rt = std::shared_ptr<runtime::Runtime>(runtime::Runtime::create(eal_args, ro));
  return h.rt;
}

// At interpreter exit, after every group was shut down.
inline void release_shared_runtime() {
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard<std::mutex> lk(holder().mu);
    rt.swap(holder().rt);
  }
  rt.reset();
}

// Loads the plan (PlanError names the bad key) and checks that it is for
// this rank of a job of this size.
inline runtime::Plan load_checked_plan(const std::string& path, int rank, int size) {
  runtime::Plan plan = runtime::load_plan(path);
  if (plan.rank != static_cast<uint32_t>(rank) || plan.world_size != static_cast<uint32_t>(size)) {
    throw std::invalid_argument("panama: the plan " + path + " is for rank " + std::to_string(plan.rank) +
                                " of " + std::to_string(plan.world_size) +
                                ", but this process group is rank " + std::to_string(rank) + " of " +
                                std::to_string(size));
  }
  return plan;
}

inline std::string first_line(const std::exception& e) {
  std::string s;
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) {
    s = ce->what_without_backtrace();
  } else {
    s = e.what();
  }
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

inline const char* reduce_op_name(const c10d::ReduceOp& op) {
  static const char* names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"};
  const unsigned i = static_cast<unsigned>(op.op_);
  return i < 9 ? names[i] : "unknown";
}

inline std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// The wire type of a tensor that can go through PANAMA.
inline bool wire_type_of(at::ScalarType t, wire::ElemType& out) {
  switch (t) {
    case at::kFloat:
      out = wire::ElemType::kFloat32;
      return true;
    case at::kBFloat16:
      out = wire::ElemType::kBfloat16;
      return true;
    case at::kHalf:
      out = wire::ElemType::kFloat16;
      return true;
    default:
      return false;
  }
}

// One PANAMA collective (one Work): direct (the runtime reduces the tensor's
// memory in place) or staged (in chunks through pool buffers).
struct OpState;

// The Work of one PANAMA collective. Marked done by the completion thread;
// its Future is completed by the executor; wait() rethrows the error.
class PanamaWork : public Work {
 public:
  PanamaWork(int rank, const at::Tensor& user, std::vector<c10::Device> devices)
      : Work(rank, c10d::OpType::ALLREDUCE, "panama:all_reduce", std::vector<at::Tensor>{user}),
        user_(user),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                         std::move(devices))) {}

  bool isCompleted() override {
    std::lock_guard<std::mutex> lk(mutex_);
    return completed_;
  }
  bool isSuccess() const override {
    std::lock_guard<std::mutex> lk(mutex_);
    return completed_ && !exception_;
  }
  std::vector<at::Tensor> result() override { return {user_}; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  bool wait(milliseconds timeout) override {
    {
      std::unique_lock<std::mutex> lk(mutex_);
      if (timeout.count() == 0 /* kNoTimeout */) {
        cv_.wait(lk, [&] { return completed_; });
      } else if (!cv_.wait_for(lk, timeout, [&] { return completed_; })) {
        throw std::runtime_error("panama: all_reduce did not complete within " +
                                 std::to_string(timeout.count()) +
                                 " ms (Work.wait timeout; the allreduce goes on)");
      }
      if (exception_) std::rethrow_exception(exception_);
    }
    if (on_wait_) on_wait_();
    return true;
  }
  void synchronize() override {
    if (on_wait_) on_wait_();
  }

  // Completion thread: the result is in the caller's tensor (or enqueued to
  // be, for a device tensor), or the collective failed.
  void mark_done(std::exception_ptr error, std::function<void()> on_wait) {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      on_wait_ = std::move(on_wait);
      completed_ = true;
      exception_ = error;
    }
    cv_.notify_all();
  }

  // Executor: completes the Future, running its callbacks here.
  void complete_future() {
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> lk(mutex_);
      e = exception_;
    }
    if (e) {
      future_->setError(e);
    } else {
      future_->markCompleted(c10::IValue(std::vector<at::Tensor>{user_}));
    }
  }

 private:
  at::Tensor user_;
  intrusive_ptr<c10::ivalue::Future> future_;
  std::function<void()> on_wait_;
};

// A Gloo SUM allreduce followed by the division AVG needs (Gloo has no AVG).
class DividedWork : public Work {
 public:
  DividedWork(int rank, std::vector<at::Tensor> tensors, intrusive_ptr<Work> inner, int divisor)
      : Work(rank, c10d::OpType::ALLREDUCE, "panama:all_reduce_avg_on_gloo", tensors), tensors_(tensors) {
    auto type = c10::ListType::create(c10::TensorType::get());
    future_ = inner->getFuture()->then(
        [tensors, divisor](c10::ivalue::Future& f) {
          if (f.hasError()) f.value();  // rethrows
          for (const at::Tensor& t : tensors) const_cast<at::Tensor&>(t).div_(divisor);
          return c10::IValue(tensors);
        },
        type);
  }
  bool isCompleted() override { return future_->completed(); }
  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
  std::vector<at::Tensor> result() override { return tensors_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  bool wait(milliseconds timeout) override {
    if (timeout.count() == 0 /* kNoTimeout */) {
      future_->wait();
    } else {
      const auto until = Clock::now() + timeout;
      while (!future_->completed()) {
        if (Clock::now() >= until) throw std::runtime_error("panama: all_reduce (AVG on Gloo) timed out");
        std::this_thread::sleep_for(milliseconds(1));
      }
    }
    if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
    return true;
  }

 private:
  std::vector<at::Tensor> tensors_;
  intrusive_ptr<c10::ivalue::Future> future_;
};

struct OpState {
  uint64_t index = 0;  // allreduce #index of this group (1-based), the same on every rank
  intrusive_ptr<PanamaWork> work;
  StagedTensor tensor;  // user and contiguous buffer (direct ops too)
  wire::ElemType type = wire::ElemType::kFloat32;
  size_t count = 0;
  bool average = false;
  StageEngine* engine = nullptr;  // null: direct
  ChunkPlan chunks;               // staged
  size_t chunks_done = 0;         // completion thread only
  std::exception_ptr error;       // completion thread only
};

// One runtime allreduce: a direct op, or one chunk of a staged op.
struct Piece {
  std::shared_ptr<OpState> op;
  runtime::AllreduceHandle handle;
  size_t chunk = 0;
  StageBuffer* buf = nullptr;
  std::string error;  // set: failed before it could be issued
};

template <class Base>
class PanamaGroup : public Base {
 public:
  PanamaGroup(int rank, int size, intrusive_ptr<Base> gloo, intrusive_ptr<c10d::Store> store,
              const BackendConfig& cfg)
      : Base(rank, size), gloo_(std::move(gloo)), store_(std::move(store)), config_(cfg) {
    if (!gloo_)
      throw std::invalid_argument("panama: a Gloo process group for the delegated collectives is needed");
    const runtime::Plan plan = load_checked_plan(cfg.plan_path, rank, size);
    job_key_ = (uint32_t{plan.job_id} << 16) | plan.udp_port;
    job_id_ = plan.job_id;
    elems_per_packet_ = plan.elems_per_packet;
    retry_budget_ = plan.congestion.retry_budget;
    const uint64_t budget_ms = uint64_t{plan.congestion.rto_max_us} * plan.congestion.retry_budget / 1000;
    // No result at all for this long means the job cannot finish: every chunk
    // would have used up its retry budget even at the largest RTO.
    silence_limit_ =
        milliseconds(uint64_t{plan.congestion.rto_max_us} * (plan.congestion.retry_budget + 1) / 1000 + 1);
    // The monitor looks at a stuck allreduce well before the runtime's retry
    // budget could fail it (retry_budget x rto_max of silence at the least).
    check_after_ = milliseconds(std::clamp<uint64_t>(budget_ms / 4, 20, 1000));
    period_ = milliseconds(std::clamp<uint64_t>(budget_ms / 8, 10, 250));
    const std::vector<uint32_t> first = agree_on_sequences();
    runtime_ = shared_runtime(cfg.eal_args, cfg.link_wait_ms);
    comm_ = runtime_->communicator(plan, cfg.device, first);
    device_ = comm_->device();
    comm_->set_skew_allowance(std::chrono::duration_cast<std::chrono::microseconds>(cfg.skew_allowance));
    if (!runtime_->link_up(comm_->device())) {
      const std::string dev = comm_->device();
      comm_.reset();
      throw std::runtime_error("panama: DPDK port " + dev + " is not up after " +
                               std::to_string(cfg.link_wait_ms) +
                               " ms (is the PSwitch running? see PANAMA_LINK_WAIT_MS)");
    }
    cpu_stage_ = make_pipeline(std::make_unique<CpuStageEngine>());
#if PANAMA_TORCH_CUDA
    cuda_stage_ = make_pipeline(std::make_unique<CudaStageEngine>());
#endif
    completion_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "panama-complete");
      complete_loop();
    });
    stager_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "panama-stager");
      stage_loop();
    });
    monitor_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "panama-monitor");
      monitor_loop();
    });
  }

  ~PanamaGroup() override {
    shutdown();
  }

  const std::string getBackendName() const override {
    return "panama";
  }

  // ------------------------------------------------------------- allreduce

  intrusive_ptr<Work> allreduce(std::vector<at::Tensor>& tensors,
                                const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override {
    wire::ElemType type = wire::ElemType::kFloat32;
    const std::string why = not_through_panama(tensors, opts, type);
    if (!why.empty()) return delegated_allreduce(tensors, opts, why);
    at::Tensor& t = tensors[0];
    auto op = std::make_shared<OpState>();
    op->type = type;
    op->average = opts.reduceOp == c10d::ReduceOp::AVG;
    op->tensor.user = t;
    op->tensor.buffer = t.is_contiguous() ? t : t.contiguous();
    op->count = static_cast<size_t>(t.numel());
    std::vector<c10::Device> devices;
    if (t.device().is_cuda()) devices.push_back(t.device());
    op->work = c10::make_intrusive<PanamaWork>(this->getRank(), t, devices);
    Pipeline* stage = pipeline_for(t);
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!op->tensor.buffer.is_same(t)) ++noncontiguous_copies_;
    }
    if (op->count == 0) {  // nothing to send, on every rank alike
      op->work->mark_done(nullptr, {});
      op->work->complete_future();
      return op->work;
    }
    if (stage) {
      op->engine = stage->engine.get();
      op->chunks = plan_chunks(op->count, t.element_size(), stage->pool.chunk_bytes(), elems_per_packet_);
      op->engine->begin(op->tensor);  // the caller's thread: ordered after its stream
    }
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) throw std::runtime_error("panama: the process group was shut down (destroy_process_group)");
    op->index = ++issued_;
    ++allreduces_;
    ++by_type_[wire::elem_type_name(static_cast<uint8_t>(type))];
    if (stage) {
      ++staged_ops_;
      staged_chunks_ += op->chunks.chunks;
    }
    if (!stage && stage_queue_.empty() && !stager_busy_) {
      issue_direct_locked(op);
    } else {
      stage_queue_.push_back(op);  // after staged ones still being issued: the issue order is every rank's
      stage_cv_.notify_one();
    }
    return op->work;
  }

  // ----------------------------------------------- delegated and refused

  intrusive_ptr<Work> broadcast(std::vector<at::Tensor>& t,
                                const c10d::BroadcastOptions& o = c10d::BroadcastOptions()) override {
    auto v = raw_views(t);
    return delegate("broadcast", [&] { return gloo_->broadcast(v, o); });
  }
  intrusive_ptr<Work> allreduce_coalesced(
      std::vector<at::Tensor>& t,
      const c10d::AllreduceCoalescedOptions& o = c10d::AllreduceCoalescedOptions()) override {
    check_reducible("allreduce_coalesced", t, o.reduceOp);
    return delegate("allreduce_coalesced", [&] { return gloo_->allreduce_coalesced(t, o); });
  }
  intrusive_ptr<Work> reduce(std::vector<at::Tensor>& t,
                             const c10d::ReduceOptions& o = c10d::ReduceOptions()) override {
    check_reducible("reduce", t, o.reduceOp);
    return delegate("reduce", [&] { return gloo_->reduce(t, o); });
  }
  intrusive_ptr<Work> allgather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                                const c10d::AllgatherOptions& o = c10d::AllgatherOptions()) override {
    auto vo = raw_views(out);
    auto vi = raw_views(in);
    return delegate("allgather", [&] { return gloo_->allgather(vo, vi, o); });
  }
  // Into one tensor: Gloo of torch 1.13 has no _allgather_base, so it runs as
  // Gloo's allgather into the output's per-rank views.
  intrusive_ptr<Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                      const c10d::AllgatherOptions& o = c10d::AllgatherOptions()) override {
    if (!out.is_contiguous() || out.numel() != in.numel() * this->getSize()) {
      throw std::invalid_argument("panama: _allgather_base needs a contiguous output of world size x " +
                                  std::to_string(in.numel()) + " elements, got " +
                                  std::to_string(out.numel()));
    }
    std::vector<std::vector<at::Tensor>> outs(1);
    at::Tensor flat = raw_view(out).view(-1);
    for (int r = 0; r < this->getSize(); ++r) {
      outs[0].push_back(flat.narrow(0, r * in.numel(), in.numel()).view(in.sizes()));
    }
    std::vector<at::Tensor> ins{raw_view(in)};
    return delegate("_allgather_base (as allgather)", [&] { return gloo_->allgather(outs, ins, o); });
  }
  intrusive_ptr<Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
      const c10d::AllgatherOptions& o = c10d::AllgatherOptions()) override {
    auto vo = raw_views(out);
    auto vi = raw_views(in);
    return delegate("allgather_coalesced", [&] { return gloo_->allgather_coalesced(vo, vi, o); });
  }
  intrusive_ptr<Work> gather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                             const c10d::GatherOptions& o = c10d::GatherOptions()) override {
    auto vo = raw_views(out);
    auto vi = raw_views(in);
    return delegate("gather", [&] { return gloo_->gather(vo, vi, o); });
  }
  intrusive_ptr<Work> scatter(std::vector<at::Tensor>& out, std::vector<std::vector<at::Tensor>>& in,
                              const c10d::ScatterOptions& o = c10d::ScatterOptions()) override {
    auto vo = raw_views(out);
    auto vi = raw_views(in);
    return delegate("scatter", [&] { return gloo_->scatter(vo, vi, o); });
  }
  intrusive_ptr<Work> reduce_scatter(
      std::vector<at::Tensor>& out, std::vector<std::vector<at::Tensor>>& in,
      const c10d::ReduceScatterOptions& o = c10d::ReduceScatterOptions()) override {
    check_reducible("reduce_scatter", out, o.reduceOp);
    return delegate("reduce_scatter", [&] { return gloo_->reduce_scatter(out, in, o); });
  }
  intrusive_ptr<Work> _reduce_scatter_base(
      at::Tensor& out, at::Tensor& in,
      const c10d::ReduceScatterOptions& o = c10d::ReduceScatterOptions()) override {
    return delegate("_reduce_scatter_base", [&] { return gloo_->_reduce_scatter_base(out, in, o); });
  }
  intrusive_ptr<Work> alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& out_splits,
                                    std::vector<int64_t>& in_splits,
                                    const c10d::AllToAllOptions& o = c10d::AllToAllOptions()) override {
    at::Tensor vo = raw_view(out), vi = raw_view(in);
    return delegate("alltoall_base", [&] { return gloo_->alltoall_base(vo, vi, out_splits, in_splits, o); });
  }
  intrusive_ptr<Work> alltoall(std::vector<at::Tensor>& out, std::vector<at::Tensor>& in,
                               const c10d::AllToAllOptions& o = c10d::AllToAllOptions()) override {
    return delegate("alltoall", [&] { return gloo_->alltoall(out, in, o); });
  }
  void monitoredBarrier(const c10d::BarrierOptions& o, bool wait_all_ranks = false) override {
    delegate("monitored_barrier", [&] {
      gloo_->monitoredBarrier(o, wait_all_ranks);
      return intrusive_ptr<Work>();
    });
  }
  void setSequenceNumberForGroup() override {
    gloo_->setSequenceNumberForGroup();
  }
  uint64_t getSequenceNumberForGroup() override {
    return gloo_->getSequenceNumberForGroup();
  }
  intrusive_ptr<Work> send(std::vector<at::Tensor>& t, int dst, int tag) override {
    auto v = raw_views(t);
    return delegate("send", [&] { return gloo_->send(v, dst, tag); });
  }
  intrusive_ptr<Work> recv(std::vector<at::Tensor>& t, int src, int tag) override {
    auto v = raw_views(t);
    return delegate("recv", [&] { return gloo_->recv(v, src, tag); });
  }
  intrusive_ptr<Work> recvAnysource(std::vector<at::Tensor>& t, int tag) override {
    auto v = raw_views(t);
    return delegate("recv", [&] { return gloo_->recvAnysource(v, tag); });
  }
  intrusive_ptr<Work> barrier(const c10d::BarrierOptions& o = c10d::BarrierOptions()) override {
    return delegate("barrier", [&] { return gloo_->barrier(o); });
  }

  // -------------------------------------------------------- statistics

  struct Snapshot {
    runtime::CommStats comm;
    std::map<std::string, uint64_t> delegated, refused, by_type;
    uint64_t allreduces = 0, copies = 0, staged_ops = 0, staged_chunks = 0, late_waits = 0;
    std::string failure;
    std::vector<int> late_ranks;
    StagingPoolStats cpu_pool, cuda_pool;
    bool cuda = false;
    size_t callback_threads = 0;
  };

  Snapshot snapshot() const {
    Snapshot s;
    {
      std::lock_guard<std::mutex> lk(mu_);
      s.comm = comm_ ? comm_->stats() : closed_stats_;
      s.failure = failure_;
      s.delegated = delegated_;
      s.refused = refused_;
      s.by_type = by_type_;
      s.copies = noncontiguous_copies_;
      s.allreduces = allreduces_;
      s.staged_ops = staged_ops_;
      s.staged_chunks = staged_chunks_;
      s.late_waits = late_waits_;
      s.late_ranks = late_ranks_;
    }
    if (cpu_stage_) s.cpu_pool = cpu_stage_->pool.stats();
    if (cuda_stage_) s.cuda_pool = cuda_stage_->pool.stats();
    s.cuda = cuda_stage_ != nullptr;
    s.callback_threads = executor_.threads_started();
    return s;
  }

  std::string device_name() const {
    return device_;
  }
  uint16_t job_id() const {
    return job_id_;
  }

  // The same allreduce straight through the C++ Communicator (blocking; no
  // Work, no threads of the backend): what scripts/bench-torch.sh compares
  // the backend against. Only while no backend allreduce is in flight.
  void allreduce_direct(at::Tensor t) {
    wire::ElemType type = wire::ElemType::kFloat32;
    if (!t.device().is_cpu() || !wire_type_of(t.scalar_type(), type) || !t.is_contiguous()) {
      throw std::invalid_argument(
          "panama: allreduce_direct needs a contiguous float32/bfloat16/float16 CPU tensor");
    }
    runtime::Communicator* comm = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!comm_)
        throw std::runtime_error(failure_.empty() ? "panama: the process group was shut down" : failure_);
      if (!pending_.empty() || !stage_queue_.empty() || stager_busy_)
        throw std::runtime_error("panama: allreduce_direct while backend allreduces are in flight");
      comm = comm_.get();
      ++issued_;
    }
    comm->allreduce(t.data_ptr(), static_cast<size_t>(t.numel()), type);
  }

  // Fails what is in flight ("the process group was shut down"), stops every
  // thread, and records where the job's sequences continue (or that they
  // cannot). Idempotent; destroy_process_group calls it.
  void shutdown() {
    std::unique_ptr<runtime::Communicator> comm;
    bool idle = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (shut_down_) return;
      shut_down_ = true;
      stop_ = true;
      // A group that ends with nothing in flight leaves the job's sequences
      // where the next group of this job continues.
      std::string resume = "failed";
      if (comm_ && pending_.empty() && stage_queue_.empty() && !stager_busy_) {
        idle = true;
        try {
          std::ostringstream os;
          for (uint32_t s : comm_->next_sequences()) os << s << ' ';
          resume = os.str();
        } catch (const std::exception&) {
        }
      }
      std::lock_guard<std::mutex> hk(holder().mu);
      holder().resume[job_key_] = resume;
      comm = std::move(comm_);
      if (comm) closed_stats_ = comm->stats();
    }
    stage_cv_.notify_all();
    cv_.notify_all();
    monitor_cv_.notify_all();
    if (cpu_stage_) cpu_stage_->pool.close();
    if (cuda_stage_) cuda_stage_->pool.close();
    // Nothing in flight: what the other ranks still need from this one (a
    // pooled job's last ring frames, acknowledgements, its last release)
    // goes out first (Communicator::settle).
    if (comm && idle) comm->settle(std::chrono::seconds(2));
    comm.reset();  // unfinished allreduces fail, so the completion thread gets through its queue
    if (stager_.joinable()) stager_.join();
    if (completion_.joinable()) completion_.join();
    if (monitor_.joinable()) monitor_.join();
    executor_.stop();
    gloo_.reset();   // its connections and its reference to the store
    store_.reset();  // re-initialisation makes a new store on the same port
    runtime_.reset();
  }

 private:
  struct Pipeline {
    std::unique_ptr<StageEngine> engine;
    StagingPool<StageBuffer> pool;
    explicit Pipeline(std::unique_ptr<StageEngine> e, size_t chunk_bytes, size_t buffers)
        : engine(std::move(e)),
          pool(
              chunk_bytes, buffers, [eng = engine.get()](size_t bytes) { return eng->allocate(bytes); },
              [eng = engine.get()](StageBuffer& b) { eng->reusable(b); }) {}
  };

  std::unique_ptr<Pipeline> make_pipeline(std::unique_ptr<StageEngine> e) {
    return std::make_unique<Pipeline>(std::move(e), config_.stage_chunk_bytes, config_.stage_buffers);
  }

  Pipeline* pipeline_for(const at::Tensor& t) {
    if (t.device().is_cuda()) return cuda_stage_.get();
    return config_.stage_cpu ? cpu_stage_.get() : nullptr;
  }

  // Why this allreduce cannot go through PANAMA ("" when it can).
  std::string not_through_panama(const std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& o,
                                 wire::ElemType& type) const {
    if (tensors.size() != 1) return std::to_string(tensors.size()) + " tensors in one call";
    const at::Tensor& t = tensors[0];
    if (t.is_sparse()) return "sparse tensor";
    if (!t.device().is_cpu() && !(t.device().is_cuda() && cuda_stage_))
      return "tensor on " + t.device().str();
    if (!wire_type_of(t.scalar_type(), type)) return std::string("dtype ") + c10::toString(t.scalar_type());
    if (o.reduceOp != c10d::ReduceOp::SUM && o.reduceOp != c10d::ReduceOp::AVG) {
      return std::string("op ") + reduce_op_name(o.reduceOp);
    }
    return {};
  }

  // Not through PANAMA: Gloo, with AVG of float64 made a SUM and divided
  // (Gloo has no AVG); what Gloo refuses is refused with a panama error.
  intrusive_ptr<Work> delegated_allreduce(std::vector<at::Tensor>& tensors,
                                          const c10d::AllreduceOptions& opts, const std::string& why) {
    const bool avg = opts.reduceOp == c10d::ReduceOp::AVG;
    bool floating = !tensors.empty();
    for (const at::Tensor& t : tensors)
      floating = floating && at::isFloatingType(t.scalar_type()) && !t.is_sparse();
    if (avg && floating) {
      c10d::AllreduceOptions sum = opts;
      sum.reduceOp = c10d::ReduceOp::SUM;
      const std::string kind =
          "allreduce (" + why + (why.rfind("op ", 0) == 0 ? "" : ", AVG") + " as SUM, divided)";
      check_reducible(kind, tensors);
      return delegate(kind, [&] {
        intrusive_ptr<Work> inner = gloo_->allreduce(tensors, sum);
        return intrusive_ptr<Work>(
            c10::make_intrusive<DividedWork>(this->getRank(), tensors, inner, this->getSize()));
      });
    }
    std::string kind = "allreduce (" + why;
    if (why.rfind("op ", 0) != 0 && opts.reduceOp != c10d::ReduceOp::SUM)
      kind += ", op " + std::string(reduce_op_name(opts.reduceOp));
    kind += ")";
    check_reducible(kind, tensors, opts.reduceOp);
    return delegate(kind, [&] { return gloo_->allreduce(tensors, opts); });
  }

  // Calls the Gloo group. What Gloo cannot run (it throws at once: an
  // operation or dtype it lacks) is refused with a panama error naming the
  // call; what it runs is counted and warned about once per kind.
  template <class F>
  intrusive_ptr<Work> delegate(const std::string& kind, F&& f) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!gloo_) throw std::runtime_error("panama: the process group was shut down (destroy_process_group)");
    }
    intrusive_ptr<Work> w;
    try {
      w = f();
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        ++refused_[kind];
      }
      throw std::runtime_error(
          "panama: " + kind +
          " is not supported by the panama backend: it does not go through PANAMA, and the "
          "internal Gloo process group it would be delegated to cannot run it (Gloo: " +
          first_line(e) + "); docs/pytorch.md lists what is supported");
    }
    note_delegated(kind);
    return w;
  }

  // The dtypes the internal Gloo group handles (torch 1.13's
  // ProcessGroupGloo: float, double, half, int8, uint8, int32, int64; no
  // bfloat16, bool or int16: "Invalid scalar type", raised at wait()).
  static bool gloo_has(at::ScalarType t) {
    switch (t) {
      case at::kFloat:
      case at::kDouble:
      case at::kHalf:
      case at::kChar:
      case at::kByte:
      case at::kInt:
      case at::kLong:
        return true;
      default:
        return false;
    }
  }
  // Collectives that only move bytes move a tensor of a dtype Gloo lacks
  // (bfloat16, bool, int16, complex64) as one of its size that Gloo has: the
  // same bits.
  static at::Tensor raw_view(const at::Tensor& t) {
    if (t.is_sparse() || gloo_has(t.scalar_type())) return t;
    switch (t.element_size()) {
      case 1:
        return t.view(at::kByte);
      case 2:
        return t.view(at::kHalf);
      case 4:
        return t.view(at::kInt);
      case 8:
        return t.view(at::kLong);
      default:
        return t;
    }
  }
  // A reduction Gloo cannot run (Gloo has no AVG; a dtype it lacks, which it
  // would report only at wait()) is refused at once.
  void check_reducible(const std::string& kind, const std::vector<at::Tensor>& tensors,
                       const c10d::ReduceOp& op = c10d::ReduceOp::SUM) {
    if (op == c10d::ReduceOp::AVG) {
      refuse(kind,
             "with AVG is not supported: it does not go through PANAMA (only SUM and AVG allreduce of "
             "float32, bfloat16 and float16 does, and AVG allreduce of other floating types runs as a Gloo "
             "SUM divided by the world size), and the internal Gloo process group has no AVG");
    }
    for (const at::Tensor& t : tensors) {
      if (t.is_sparse() || gloo_has(t.scalar_type())) continue;
      refuse(kind,
             std::string("of ") + c10::toString(t.scalar_type()) +
                 " tensors is not supported: it does not go through PANAMA (only SUM and AVG allreduce of "
                 "float32, bfloat16 and float16 does), and the internal Gloo process group it would be "
                 "delegated to has no " +
                 c10::toString(t.scalar_type()));
    }
  }

  [[noreturn]] void refuse(const std::string& kind, const std::string& why) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      ++refused_[kind];
    }
    throw std::runtime_error("panama: " + kind + " " + why + " (docs/pytorch.md lists what is supported)");
  }
  static std::vector<at::Tensor> raw_views(const std::vector<at::Tensor>& v) {
    std::vector<at::Tensor> out;
    out.reserve(v.size());
    for (const at::Tensor& t : v) out.push_back(raw_view(t));
    return out;
  }
  static std::vector<std::vector<at::Tensor>> raw_views(const std::vector<std::vector<at::Tensor>>& v) {
    std::vector<std::vector<at::Tensor>> out;
    for (const auto& inner : v) out.push_back(raw_views(inner));
    return out;
  }

  void note_delegated(const std::string& what) {
    bool first = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      first = delegated_[what]++ == 0;
    }
    if (first && warn_) warn_(what);
  }

 public:
  // How a first delegation of a kind is reported (the module sets a Python warning).
  std::function<void(const std::string&)> warn_;

 private:
  // -------------------------------------------------------------- issuing

  void issue_direct_locked(const std::shared_ptr<OpState>& op) {
    Piece p;
    p.op = op;
    if (!comm_) {
      p.error = failure_.empty() ? "panama: the process group was shut down" : failure_;
    } else {
      p.handle = comm_->allreduce_async(op->tensor.buffer.data_ptr(), op->count, op->type);
    }
    push_piece_locked(std::move(p));
  }

  void push_piece_locked(Piece p) {
    if (pending_.empty() && head_index_ == 0) head_since_ = Clock::now();
    pending_.push_back(std::move(p));
    cv_.notify_all();
  }

  // Staged collectives (and direct ones queued behind them), in issue order.
  void stage_loop() {
    for (;;) {
      std::shared_ptr<OpState> op;
      {
        std::unique_lock<std::mutex> lk(mu_);
        stage_cv_.wait(lk, [&] { return stop_ || !stage_queue_.empty(); });
        if (stage_queue_.empty()) return;
        op = stage_queue_.front();
        stage_queue_.pop_front();
        stager_busy_ = true;
        if (!op->engine) {
          issue_direct_locked(op);
          stager_busy_ = !stage_queue_.empty();
          continue;
        }
      }
      Pipeline* pl = op->engine == cpu_stage_->engine.get() ? cpu_stage_.get() : cuda_stage_.get();
      for (size_t c = 0; c < op->chunks.chunks; ++c) {
        const size_t first = c * op->chunks.chunk_elems;
        const size_t n = op->chunks.elems_of(c, op->count);
        Piece p;
        p.op = op;
        p.chunk = c;
        try {
          p.buf = pl->pool.acquire();
          op->engine->copy_out(op->tensor, first, n, *p.buf);
        } catch (const std::exception& e) {
          p.error = "panama: staging chunk " + std::to_string(c) + " failed: " + first_line(e);
        }
        std::lock_guard<std::mutex> lk(mu_);
        if (p.error.empty() && !comm_)
          p.error = failure_.empty() ? "panama: the process group was shut down" : failure_;
        if (p.error.empty()) p.handle = comm_->allreduce_async(p.buf->data(), n, op->type);
        push_piece_locked(std::move(p));
      }
      std::lock_guard<std::mutex> lk(mu_);
      stager_busy_ = false;
      cv_.notify_all();  // the completion thread may be waiting for the stager to finish (shutdown)
    }
  }

  // ----------------------------------------------------------- completion

  void complete_loop() {
    for (;;) {
      Piece p;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return (stop_ && stage_queue_.empty() && !stager_busy_) || !pending_.empty(); });
        if (pending_.empty()) return;
        p = std::move(pending_.front());
        pending_.pop_front();
        head_index_ = p.op->index;
      }
      std::exception_ptr error;
      if (!p.error.empty()) {
        error = std::make_exception_ptr(std::runtime_error(p.error));
      } else {
        try {
          while (!p.handle.wait_for(milliseconds(200))) {
          }
        } catch (const std::exception& e) {
          error = std::make_exception_ptr(std::runtime_error(failure_message(e)));
        }
        p.handle = runtime::AllreduceHandle();  // forget the op's record
      }
      finish_piece(p, error);
      std::lock_guard<std::mutex> lk(mu_);
      head_index_ = 0;
      if (!pending_.empty()) head_since_ = Clock::now();
    }
  }

  std::string failure_message(const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu_);
    if (!failure_.empty()) return failure_;
    std::string m = std::string("panama: ") + e.what();
    if (!store_error_.empty()) m += "; the job's store is unreachable (" + store_error_ + ")";
    return m;
  }

  void finish_piece(Piece& p, std::exception_ptr error) {
    OpState& op = *p.op;
    if (error && !op.error) op.error = error;
    const double divisor = static_cast<double>(this->getSize());
    if (!op.engine) {  // direct
      if (!op.error) {
        try {
          if (op.average) op.tensor.buffer.div_(divisor);
          if (!op.tensor.buffer.is_same(op.tensor.user)) op.tensor.user.copy_(op.tensor.buffer);
        } catch (const std::exception& e) {
          op.error = std::make_exception_ptr(std::runtime_error("panama: " + first_line(e)));
        }
      }
      complete_op(p.op);
      return;
    }
    if (p.buf) {
      if (!error) {
        try {
          const size_t n = op.chunks.elems_of(p.chunk, op.count);
          if (op.average) p.buf->view(op.tensor.buffer.scalar_type(), n).div_(divisor);
          op.engine->copy_in(op.tensor, p.chunk * op.chunks.chunk_elems, n, *p.buf);
        } catch (const std::exception& e) {
          if (!op.error) op.error = std::make_exception_ptr(std::runtime_error("panama: " + first_line(e)));
        }
      }
      Pipeline* pl = op.engine == cpu_stage_->engine.get() ? cpu_stage_.get() : cuda_stage_.get();
      pl->pool.release(p.buf);
      p.buf = nullptr;
    }
    if (++op.chunks_done == op.chunks.chunks) {
      if (!op.error) {
        try {
          op.engine->finish(op.tensor);
        } catch (const std::exception& e) {
          op.error = std::make_exception_ptr(std::runtime_error("panama: " + first_line(e)));
        }
      }
      complete_op(p.op);
    }
  }

  void complete_op(const std::shared_ptr<OpState>& op) {
    std::function<void()> on_wait;
    if (op->engine) on_wait = [op] { op->engine->on_wait(op->tensor); };
    op->work->mark_done(op->error, on_wait);
    executor_.post([op] {
      auto run = [&] { op->work->complete_future(); };
      if (op->engine) {
        op->engine->complete(op->tensor, run);
      } else {
        run();
      }
    });
  }

  // ------------------------------------------- late ranks and dead trees

  // Where this rank's sequences of the job continue, agreed with every rank
  // through the store (the engines remember the sequences a job used). Every
  // rank compares the same values, so a disagreement raises on every rank.
  std::vector<uint32_t> agree_on_sequences() {
    std::string mine = "fresh";
    {
      std::lock_guard<std::mutex> lk(holder().mu);
      auto it = holder().resume.find(job_key_);
      if (it != holder().resume.end()) mine = it->second;
    }
    const int n = this->getSize();
    std::vector<std::string> keys;
    for (int r = 0; r < n; ++r) keys.push_back("panama/resume/" + std::to_string(r));
    store_->set(keys[static_cast<size_t>(this->getRank())], std::vector<uint8_t>(mine.begin(), mine.end()));
    store_->wait(keys, config_.timeout);
    std::vector<std::string> all;
    bool same = true;
    for (int r = 0; r < n; ++r) {
      const std::vector<uint8_t> v = store_->get(keys[static_cast<size_t>(r)]);
      all.emplace_back(v.begin(), v.end());
      same = same && all.back() == all.front();
    }
    auto describe = [](const std::string& s) {
      if (s == "fresh") return std::string("no earlier group of the job in this process");
      if (s == "failed") return std::string("its earlier group did not end cleanly");
      return "continues at sequences " + s;
    };
    if (!same || all.front() == "failed") {
      // Every rank raises. The store lives in one of the ranks (rank 0 under
      // env://), whose script may exit as soon as it has raised: every rank
      // waits until all have read the values, so none is left reading from a
      // store that is gone ("Connection reset by peer" instead of this reason).
      try {
        store_->add("panama/resume_read", 1);
        const auto until = Clock::now() + config_.timeout;
        while (store_->add("panama/resume_read", 0) < n && Clock::now() < until)
          std::this_thread::sleep_for(milliseconds(5));
      } catch (const std::exception&) {
        // The store's host has already raised and gone: this rank has its values.
      }
      std::string m = "panama: cannot create a PANAMA process group for job " + std::to_string(job_id_) +
                      ": the engines remember the sequences the job used, and the ranks cannot continue them "
                      "consistently (";
      for (int r = 0; r < n; ++r)
        m += (r ? "; rank " : "rank ") + std::to_string(r) + ": " + describe(all[r]);
      m += "). Destroy every PANAMA process group on every rank with nothing in flight before creating a new "
           "one, or restart the job (panama-torchrun)";
      throw std::runtime_error(m);
    }
    std::vector<uint32_t> first;
    if (all.front() != "fresh") {
      std::istringstream is(all.front());
      uint32_t s;
      while (is >> s) first.push_back(s);
    }
    return first;
  }

  bool monitor_wait(milliseconds d) {
    std::unique_lock<std::mutex> lk(mu_);
    return monitor_cv_.wait_for(lk, d, [&] { return stop_; });
  }

  // Publishes this rank's progress; when the oldest allreduce has waited
  // longer than check_after_, finds out which ranks have not issued it.
  void monitor_loop() {
    const std::string me = std::to_string(this->getRank());
    uint64_t published = 0;
    unsigned tick = 0;
    uint64_t last_packets = 0;
    Clock::time_point last_packet_change = Clock::now();
    while (!monitor_wait(period_)) {
      uint64_t issued, head;
      Clock::time_point since;
      uint64_t packets = 0;
      {
        std::lock_guard<std::mutex> lk(mu_);
        issued = issued_;
        head = head_index_ ? head_index_ : pending_.empty() ? 0 : pending_.front().op->index;
        since = head_since_;
        if (comm_) packets = comm_->stats().packets_received;
      }
      try {
        if (issued != published) {
          store_->add("panama/issued/" + me, static_cast<int64_t>(issued - published));
          published = issued;
        }
        if (tick++ % 4 == 0) store_->add("panama/beat/" + me, 1);
      } catch (const std::exception& e) {
        note_store_error(e);
      }
      const auto now = Clock::now();
      if (packets != last_packets || head == 0) {
        last_packets = packets;
        last_packet_change = now;
      }
      if (head == 0 || now - since < check_after_) continue;
      check_peers(head, since, now - last_packet_change);
    }
  }

  void note_store_error(const std::exception& e) {
    std::lock_guard<std::mutex> lk(mu_);
    store_error_ = first_line(e);
  }

  void check_peers(uint64_t head, Clock::time_point since, Clock::duration silent) {
    const int n = this->getSize();
    std::vector<int64_t> issued(static_cast<size_t>(n)), beat(static_cast<size_t>(n));
    int64_t failed = 0;
    try {
      failed = store_->add("panama/failed", 0);
      for (int r = 0; r < n; ++r) {
        issued[r] = store_->add("panama/issued/" + std::to_string(r), 0);
        beat[r] = store_->add("panama/beat/" + std::to_string(r), 0);
      }
    } catch (const std::exception& e) {
      // Cannot tell: the runtime's retry budget decides.
      note_store_error(e);
      set_deferral(Clock::time_point{}, {});
      return;
    }
    const auto now = Clock::now();
    if (failed > 0) {
      std::string why;
      for (int r = 0; r < n && why.empty(); ++r) {
        const std::string key = "panama/failed/" + std::to_string(r);
        try {
          if (r != this->getRank() && store_->check({key})) {
            const std::vector<uint8_t> v = store_->get(key);
            why = "rank " + std::to_string(r) + " gave up: " + std::string(v.begin(), v.end());
          }
        } catch (const std::exception&) {
        }
      }
      if (!why.empty()) {
        fail_group("panama: allreduce #" + std::to_string(head) + " cannot complete: " + why);
        return;
      }
    }
    // Heartbeats: a rank whose count stopped moving is gone.
    if (beat_seen_.size() != static_cast<size_t>(n)) {
      beat_seen_.assign(static_cast<size_t>(n), -1);
      beat_changed_.assign(static_cast<size_t>(n), now);
    }
    for (int r = 0; r < n; ++r) {
      if (beat[r] != beat_seen_[r]) {
        beat_seen_[r] = beat[r];
        beat_changed_[r] = now;
      }
    }
    std::vector<int> late;
    for (int r = 0; r < n; ++r) {
      if (issued[r] < static_cast<int64_t>(head)) late.push_back(r);
    }
    if (!late.empty() || head != checked_head_) {
      checked_head_ = head;
      peers_in_since_ = now;  // silence counts only from when every rank is known to have issued it
    }
    if (late.empty()) {
      // Every rank has issued it: not a late peer. The runtime's retry budget
      // decides (a dead tree fails within it); and no result at all for longer
      // than the budget allows closes the communicator (the transmit path of
      // a port whose peer is gone may take no frames, so no retransmission is
      // even counted).
      set_deferral(Clock::time_point{}, {});
      silent = std::min<Clock::duration>(silent, now - peers_in_since_);
      if (silent > silence_limit_) close_for_silence(silent);
      return;
    }
    const auto deadline = since + config_.timeout;
    const milliseconds dead_after(std::max<int64_t>(10000, 8 * period_.count()));
    std::string who;
    bool gone = false;
    for (int r : late) {
      const auto quiet = std::chrono::duration_cast<milliseconds>(now - beat_changed_[r]);
      const bool dead = quiet > dead_after;
      gone = gone || dead;
      who += (who.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " has issued " +
             std::to_string(issued[r]) +
             (dead ? ", and its process shows no sign of life for " + std::to_string(quiet.count() / 1000) +
                         " s (gone?)"
                   : ", and is alive");
    }
    const auto waited = std::chrono::duration_cast<milliseconds>(now - since).count();
    if (now >= deadline || gone) {
      fail_group("panama: allreduce #" + std::to_string(head) + " did not complete: rank" +
                 (late.size() > 1 ? "s " : " ") + ranks_text(late) + (late.size() > 1 ? " have" : " has") +
                 " not contributed (not issued it) after " + std::to_string(waited) + " ms" +
                 (now >= deadline
                      ? ", the process group's timeout of " + std::to_string(config_.timeout.count()) + " ms"
                      : "") +
                 " (" + who + "; the others have issued " + std::to_string(head) +
                 "); the network is not at fault. Give init_process_group a longer timeout for ranks that "
                 "are late on purpose");
      return;
    }
    // The runtime's own failure stays deferred a while past the deadline:
    // this monitor, which checks every period_, is what reports a timeout
    // with its reason (the late ranks), not the retry budget expiring in the
    // moment between the deadline and the next check (a loaded machine can
    // delay that check by several periods).
    set_deferral(deadline + 8 * period_ + milliseconds(1000), late);
  }

  void set_deferral(Clock::time_point until, const std::vector<int>& late) {
    std::lock_guard<std::mutex> lk(mu_);
    if (late != late_ranks_ && !late.empty()) ++late_waits_;
    late_ranks_ = late;
    if (comm_) comm_->defer_failure_until(until);
  }

  void close_for_silence(Clock::duration silent) {
    std::string dev;
    bool up = true;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!comm_) return;
      dev = comm_->device();
      try {
        up = runtime_->link_up(dev);
      } catch (const std::exception&) {
      }
    }
    fail_group("panama: allreduce failed: no result from the network for " +
               std::to_string(std::chrono::duration_cast<milliseconds>(silent).count()) +
               " ms, longer than the retry budget (" + std::to_string(retry_budget_) +
               " retransmissions) allows, although every rank has issued the allreduce; port " + dev +
               " link is " + (up ? "up" : "down") + " (is the PSwitch gone?)");
  }

  // Final for the group: fails what is in flight and every later allreduce
  // with `why`, and tells the other ranks (the store's "failed" keys).
  void fail_group(const std::string& why) {
    std::unique_ptr<runtime::Communicator> comm;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!comm_ || !failure_.empty()) return;
      failure_ = why;
      closed_stats_ = comm_->stats();
      comm = std::move(comm_);
    }
    comm.reset();  // fails what is in flight
    try {
      const std::string key = "panama/failed/" + std::to_string(this->getRank());
      store_->set(key, std::vector<uint8_t>(why.begin(), why.end()));
      store_->add("panama/failed", 1);
    } catch (const std::exception& e) {
      note_store_error(e);
    }
  }

  // ----------------------------------------------------------------- state

  intrusive_ptr<Base> gloo_;
  intrusive_ptr<c10d::Store> store_;
  BackendConfig config_;
  uint32_t job_key_ = 0;
  uint16_t job_id_ = 0;
  uint32_t elems_per_packet_ = 0;
  uint32_t retry_budget_ = 0;
  milliseconds silence_limit_{0}, check_after_{1000}, period_{250};
  std::shared_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<runtime::Communicator> comm_;
  std::string device_;
  std::unique_ptr<Pipeline> cpu_stage_, cuda_stage_;

  mutable std::mutex mu_;
  std::condition_variable cv_, stage_cv_, monitor_cv_;
  std::deque<Piece> pending_;                         // issued runtime allreduces, in issue order
  std::deque<std::shared_ptr<OpState>> stage_queue_;  // for the stager, in issue order
  bool stager_busy_ = false;
  bool stop_ = false, shut_down_ = false;
  uint64_t issued_ = 0;      // allreduces issued (the index of the last)
  uint64_t head_index_ = 0;  // the one the completion thread waits for
  Clock::time_point head_since_{};
  std::thread completion_, stager_, monitor_;
  CallbackExecutor executor_;

  std::map<std::string, uint64_t> delegated_, refused_, by_type_;
  uint64_t noncontiguous_copies_ = 0, allreduces_ = 0, staged_ops_ = 0, staged_chunks_ = 0, late_waits_ = 0;
  std::vector<int> late_ranks_;
  std::string failure_;      // set when the group failed for good
  std::string store_error_;  // the last store error the monitor saw
  runtime::CommStats closed_stats_;
  // Monitor thread only.
  std::vector<int64_t> beat_seen_;
  std::vector<Clock::time_point> beat_changed_;
  uint64_t checked_head_ = 0;
  Clock::time_point peers_in_since_{};
};

}  // namespace panama::torch_backend
