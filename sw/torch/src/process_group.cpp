// The `panama` torch.distributed backend (docs/pytorch.md): a c10d
// ProcessGroup whose float32 SUM/AVG allreduce runs through a PANAMA
// communicator, and which hands every other collective to a Gloo process
// group made from the same store (created by the Python side and passed in).
//
// One translation unit on purpose: the torch headers make each one slow and
// memory-hungry to compile.
#include <Python.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "panama/runtime/runtime.hpp"

namespace panama::torch_backend {

namespace py = pybind11;
using c10::intrusive_ptr;
using c10d::Work;

// What the Python side resolved from options and environment variables.
struct BackendConfig {
  std::string plan_path;
  std::vector<std::string> eal_args;
  std::string device;  // empty: the plan's device
  unsigned link_wait_ms = 10000;
};

// One process has one DPDK EAL, hence one Runtime shared by every PANAMA
// process group the process creates (kept while one of them lives).
std::shared_ptr<runtime::Runtime> shared_runtime(const std::vector<std::string>& eal_args,
                                                 unsigned link_wait_ms) {
  static std::mutex mu;
  static std::weak_ptr<runtime::Runtime> current;
  std::lock_guard<std::mutex> lk(mu);
  if (auto rt = current.lock()) {
    if (rt->eal()->args() != eal_args) {
      throw std::runtime_error(
          "panama: this process already runs the PANAMA runtime with other EAL arguments");
    }
    return rt;
  }
  runtime::RuntimeOptions ro;
  ro.port.link_wait_ms = link_wait_ms;
  std::shared_ptr<runtime::Runtime> rt = runtime::Runtime::create(eal_args, ro);
  current = rt;
  return rt;
}

// Loads the plan (PlanError names the bad key) and checks that it is for
// this rank of a job of this size.
runtime::Plan load_checked_plan(const std::string& path, int rank, int size) {
  runtime::Plan plan = runtime::load_plan(path);
  if (plan.rank != static_cast<uint32_t>(rank) || plan.world_size != static_cast<uint32_t>(size)) {
    throw std::invalid_argument("panama: the plan " + path + " is for rank " + std::to_string(plan.rank) +
                                " of " + std::to_string(plan.world_size) +
                                ", but this process group is rank " + std::to_string(rank) + " of " +
                                std::to_string(size));
  }
  return plan;
}

// The Work of one PANAMA allreduce. Completed by the process group's
// completion thread; wait() rethrows the runtime's error.
class PanamaWork : public Work {
 public:
  PanamaWork(int rank, at::Tensor user, at::Tensor buffer)
      : Work(rank, c10d::OpType::ALLREDUCE, "panama:all_reduce", std::vector<at::Tensor>{user}),
        user_(std::move(user)),
        buffer_(std::move(buffer)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

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

  bool wait(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lk(mutex_);
    if (timeout == kNoTimeout) {
      cv_.wait(lk, [&] { return completed_; });
    } else if (!cv_.wait_for(lk, timeout, [&] { return completed_; })) {
      throw std::runtime_error("panama: all_reduce did not complete within " +
                               std::to_string(timeout.count()) + " ms");
    }
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  const at::Tensor& user() const { return user_; }
  at::Tensor& buffer() { return buffer_; }

  // Called once, from the completion thread.
  void complete(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      completed_ = true;
      exception_ = error;
    }
    cv_.notify_all();
    // Future callbacks (DDP's bucket copy-back) run here, outside the lock.
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(std::vector<at::Tensor>{user_}));
    }
  }

 private:
  at::Tensor user_;    // the caller's tensor
  at::Tensor buffer_;  // what the communicator reduces: user_ itself, or a contiguous copy
  intrusive_ptr<c10::ivalue::Future> future_;
};

class ProcessGroupPanama : public c10d::ProcessGroup {
 public:
  ProcessGroupPanama(int rank, int size, intrusive_ptr<c10d::ProcessGroup> gloo, const BackendConfig& cfg)
      : c10d::ProcessGroup(rank, size), gloo_(std::move(gloo)), config_(cfg) {
    if (!gloo_)
      throw std::invalid_argument("panama: a Gloo process group for the delegated collectives is needed");
    const runtime::Plan plan = load_checked_plan(cfg.plan_path, rank, size);
    // No result at all for this long means the job cannot finish: every chunk
    // would have used up its retry budget even at the largest RTO.
    silence_limit_ = std::chrono::milliseconds(
        uint64_t{plan.congestion.rto_max_us} * (plan.congestion.retry_budget + 1) / 1000 + 1);
    retry_budget_ = plan.congestion.retry_budget;
    runtime_ = shared_runtime(cfg.eal_args, cfg.link_wait_ms);
    comm_ = runtime_->communicator(plan, cfg.device);
    device_ = comm_->device();
    if (!runtime_->link_up(comm_->device())) {
      const std::string dev = comm_->device();
      comm_.reset();
      throw std::runtime_error("panama: DPDK port " + dev + " is not up after " +
                               std::to_string(cfg.link_wait_ms) +
                               " ms (is the PSwitch running? see PANAMA_LINK_WAIT_MS)");
    }
    completion_ = std::thread([this] { complete_loop(); });
  }

  ~ProcessGroupPanama() override { shutdown(); }

  const std::string getBackendName() const override { return "panama"; }

  intrusive_ptr<Work> allreduce(std::vector<at::Tensor>& tensors,
                                const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override {
    const std::string why = unsupported_reason(tensors, opts);
    if (!why.empty()) {
      note_delegated("allreduce (" + why + ")");
      return gloo_->allreduce(tensors, opts);
    }
    at::Tensor& t = tensors[0];
    at::Tensor buffer = t;
    if (!t.is_contiguous()) {
      buffer = t.contiguous();
      std::lock_guard<std::mutex> lk(mu_);
      ++noncontiguous_copies_;
    }
    auto work = c10::make_intrusive<PanamaWork>(rank_, t, buffer);
    const bool average = opts.reduceOp == c10d::ReduceOp::AVG;
    if (buffer.numel() == 0) {
      work->complete(nullptr);
      return work;
    }
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) throw std::runtime_error("panama: the process group was shut down");
    if (!comm_) {
      work->complete(std::make_exception_ptr(std::runtime_error(failure_)));
      return work;
    }
    // Issued under the lock so that the completion queue has the issue order.
    runtime::AllreduceHandle h =
        comm_->allreduce_async(buffer.data_ptr<float>(), static_cast<size_t>(buffer.numel()));
    pending_.push_back(Pending{work, std::move(h), average});
    ++allreduces_;
    cv_.notify_all();
    return work;
  }

  // Everything else goes to Gloo.
  intrusive_ptr<Work> broadcast(std::vector<at::Tensor>& t,
                                const c10d::BroadcastOptions& o = c10d::BroadcastOptions()) override {
    note_delegated("broadcast");
    return gloo_->broadcast(t, o);
  }
  intrusive_ptr<Work> allreduce_coalesced(
      std::vector<at::Tensor>& t,
      const c10d::AllreduceCoalescedOptions& o = c10d::AllreduceCoalescedOptions()) override {
    note_delegated("allreduce_coalesced");
    return gloo_->allreduce_coalesced(t, o);
  }
  intrusive_ptr<Work> reduce(std::vector<at::Tensor>& t,
                             const c10d::ReduceOptions& o = c10d::ReduceOptions()) override {
    note_delegated("reduce");
    return gloo_->reduce(t, o);
  }
  intrusive_ptr<Work> allgather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                                const c10d::AllgatherOptions& o = c10d::AllgatherOptions()) override {
    note_delegated("allgather");
    return gloo_->allgather(out, in, o);
  }
  intrusive_ptr<Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                      const c10d::AllgatherOptions& o = c10d::AllgatherOptions()) override {
    note_delegated("_allgather_base");
    return gloo_->_allgather_base(out, in, o);
  }
  intrusive_ptr<Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
      const c10d::AllgatherOptions& o = c10d::AllgatherOptions()) override {
    note_delegated("allgather_coalesced");
    return gloo_->allgather_coalesced(out, in, o);
  }
  intrusive_ptr<Work> gather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                             const c10d::GatherOptions& o = c10d::GatherOptions()) override {
    note_delegated("gather");
    return gloo_->gather(out, in, o);
  }
  intrusive_ptr<Work> scatter(std::vector<at::Tensor>& out, std::vector<std::vector<at::Tensor>>& in,
                              const c10d::ScatterOptions& o = c10d::ScatterOptions()) override {
    note_delegated("scatter");
    return gloo_->scatter(out, in, o);
  }
  intrusive_ptr<Work> reduce_scatter(
      std::vector<at::Tensor>& out, std::vector<std::vector<at::Tensor>>& in,
      const c10d::ReduceScatterOptions& o = c10d::ReduceScatterOptions()) override {
    note_delegated("reduce_scatter");
    return gloo_->reduce_scatter(out, in, o);
  }
  intrusive_ptr<Work> _reduce_scatter_base(
      at::Tensor& out, at::Tensor& in,
      const c10d::ReduceScatterOptions& o = c10d::ReduceScatterOptions()) override {
    note_delegated("_reduce_scatter_base");
    return gloo_->_reduce_scatter_base(out, in, o);
  }
  intrusive_ptr<Work> alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& out_splits,
                                    std::vector<int64_t>& in_splits,
                                    const c10d::AllToAllOptions& o = c10d::AllToAllOptions()) override {
    note_delegated("alltoall_base");
    return gloo_->alltoall_base(out, in, out_splits, in_splits, o);
  }
  intrusive_ptr<Work> alltoall(std::vector<at::Tensor>& out, std::vector<at::Tensor>& in,
                               const c10d::AllToAllOptions& o = c10d::AllToAllOptions()) override {
    note_delegated("alltoall");
    return gloo_->alltoall(out, in, o);
  }
  void monitoredBarrier(const c10d::BarrierOptions& o, bool wait_all_ranks = false) override {
    note_delegated("monitored_barrier");
    gloo_->monitoredBarrier(o, wait_all_ranks);
  }
  void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }
  intrusive_ptr<Work> send(std::vector<at::Tensor>& t, int dst, int tag) override {
    note_delegated("send");
    return gloo_->send(t, dst, tag);
  }
  intrusive_ptr<Work> recv(std::vector<at::Tensor>& t, int src, int tag) override {
    note_delegated("recv");
    return gloo_->recv(t, src, tag);
  }
  intrusive_ptr<Work> recvAnysource(std::vector<at::Tensor>& t, int tag) override {
    note_delegated("recv");
    return gloo_->recvAnysource(t, tag);
  }
  intrusive_ptr<Work> barrier(const c10d::BarrierOptions& o = c10d::BarrierOptions()) override {
    note_delegated("barrier");
    return gloo_->barrier(o);
  }

  // Statistics (docs/pytorch.md, "Statistics").
  py::dict stats() const {
    runtime::CommStats s;
    std::map<std::string, uint64_t> delegated;
    uint64_t copies = 0, allreduces = 0;
    std::string failure;
    {
      std::lock_guard<std::mutex> lk(mu_);
      s = comm_ ? comm_->stats() : closed_stats_;
      failure = failure_;
      delegated = delegated_;
      copies = noncontiguous_copies_;
      allreduces = allreduces_;
    }
    py::dict d;
    d["job"] = s.job_id;
    d["rank"] = rank_;
    d["world_size"] = size_;
    d["device"] = device_name();
    d["allreduces"] = allreduces;
    d["ops_completed"] = s.ops_completed;
    d["ops_failed"] = s.ops_failed;
    d["bytes_issued"] = s.bytes_issued;
    d["bytes_completed"] = s.bytes_completed;
    d["packets_sent"] = s.packets_sent;
    d["packets_received"] = s.packets_received;
    d["retransmissions"] = s.retransmissions;
    d["timeouts"] = s.timeouts;
    d["results_ce"] = s.results_ce;
    d["duplicate_results"] = s.duplicate_results;
    d["noncontiguous_copies"] = copies;
    d["failure"] = failure;
    py::list trees;
    for (const runtime::TreeStats& t : s.trees) {
      py::dict td;
      td["tree"] = t.tree_id;
      td["bytes_issued"] = t.bytes_issued;
      td["bytes_completed"] = t.bytes_completed;
      td["packets_sent"] = t.packets_sent;
      td["packets_received"] = t.packets_received;
      td["retransmissions"] = t.retransmissions;
      td["timeouts"] = t.timeouts;
      td["results_ce"] = t.results_ce;
      td["cwnd"] = t.cwnd;
      td["alpha"] = t.alpha;
      td["cwnd_cap"] = t.cwnd_cap;
      td["cwnd_reductions"] = t.cwnd_reductions;
      td["srtt_us"] = t.srtt_us;
      trees.append(td);
    }
    d["trees"] = trees;
    py::dict dd;
    uint64_t total = 0;
    for (const auto& [name, n] : delegated) {
      dd[py::str(name)] = n;
      total += n;
    }
    d["delegated"] = dd;
    d["delegated_total"] = total;
    return d;
  }

  std::string device_name() const { return device_; }

  // The same allreduce straight through the C++ Communicator (blocking; no
  // Work, no completion thread): what scripts/bench-torch.sh compares the
  // backend against. Only while no backend allreduce is in flight.
  void allreduce_direct(at::Tensor t) {
    if (!t.device().is_cpu() || t.scalar_type() != at::kFloat || !t.is_contiguous()) {
      throw std::invalid_argument("panama: allreduce_direct needs a contiguous float32 CPU tensor");
    }
    runtime::Communicator* comm = nullptr;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (!comm_)
        throw std::runtime_error(failure_.empty() ? "panama: the process group was shut down" : failure_);
      if (!pending_.empty())
        throw std::runtime_error("panama: allreduce_direct while backend allreduces are in flight");
      comm = comm_.get();
    }
    comm->allreduce(t.data_ptr<float>(), static_cast<size_t>(t.numel()));
  }

  // Fails what is in flight ("the process group was shut down") and stops the
  // completion thread. Idempotent.
  void shutdown() {
    std::unique_ptr<runtime::Communicator> comm;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stop_ && !completion_.joinable()) return;
      stop_ = true;
      comm = std::move(comm_);
    }
    cv_.notify_all();
    comm.reset();  // unfinished allreduces fail, so the completion thread gets through its queue
    if (completion_.joinable()) completion_.join();
    runtime_.reset();
  }

 private:
  struct Pending {
    intrusive_ptr<PanamaWork> work;
    runtime::AllreduceHandle handle;
    bool average = false;
  };

  // Why this allreduce cannot go through PANAMA ("" when it can).
  std::string unsupported_reason(const std::vector<at::Tensor>& tensors,
                                 const c10d::AllreduceOptions& o) const {
    if (tensors.size() != 1) return std::to_string(tensors.size()) + " tensors in one call";
    const at::Tensor& t = tensors[0];
    if (t.is_sparse()) return "sparse tensor";
    if (!t.device().is_cpu()) return "tensor on " + t.device().str();
    if (t.scalar_type() != at::kFloat) return std::string("dtype ") + c10::toString(t.scalar_type());
    if (o.reduceOp != c10d::ReduceOp::SUM && o.reduceOp != c10d::ReduceOp::AVG) {
      static const char* names[] = {"SUM",  "AVG", "PRODUCT", "MIN",       "MAX",
                                    "BAND", "BOR", "BXOR",    "PREMUL_SUM"};
      const unsigned op = static_cast<unsigned>(o.reduceOp.op_);
      return std::string("op ") + (op < 9 ? names[op] : "unknown");
    }
    return {};
  }

  // Counts a delegated call and warns the first time each kind happens.
  void note_delegated(const std::string& what) {
    bool first = false;
    {
      std::lock_guard<std::mutex> lk(mu_);
      first = delegated_[what]++ == 0;
    }
    if (!first) return;
    const std::string msg = "panama: " + what +
                            " runs on the internal Gloo process group (only float32 CPU "
                            "SUM/AVG allreduce goes through PANAMA); this warning is shown once per kind";
    // Called with or without the GIL (DDP calls from autograd threads).
    py::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) != 0) PyErr_Clear();
  }

  // Waits for the allreduces in issue order and completes their Work. Also a
  // watchdog: when the job gets no result at all for longer than the retry
  // budget allows at the largest RTO (e.g. the PSwitch is gone and the
  // transmit path is stuck, so no retransmission is even sent), the
  // communicator is closed and every allreduce fails with the reason.
  void complete_loop() {
    uint64_t last_results = 0;
    auto last_change = std::chrono::steady_clock::now();
    for (;;) {
      Pending p;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || !pending_.empty(); });
        if (pending_.empty()) return;  // stop_ and drained
        p = std::move(pending_.front());
        pending_.pop_front();
      }
      last_change = std::chrono::steady_clock::now();  // this op's silence starts now
      std::exception_ptr error;
      try {
        while (!p.handle.wait_for(std::chrono::milliseconds(100))) {
          std::lock_guard<std::mutex> lk(mu_);
          if (!comm_) break;  // closed: the handle fails at once
          const uint64_t results = comm_->stats().packets_received;
          const auto now = std::chrono::steady_clock::now();
          if (results != last_results) {
            last_results = results;
            last_change = now;
          } else if (now - last_change > silence_limit_) {
            close_locked(silence_limit_);
          }
        }
        p.handle.wait();  // throws the runtime's reason when it failed
        at::Tensor& buf = p.work->buffer();
        if (p.average) buf.div_(static_cast<double>(size_));
        if (!buf.is_same(p.work->user())) const_cast<at::Tensor&>(p.work->user()).copy_(buf);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lk(mu_);
        error = std::make_exception_ptr(
            std::runtime_error(failure_.empty() ? std::string("panama: ") + e.what() : failure_));
      }
      p.handle = runtime::AllreduceHandle();  // forget the op's record
      p.work->complete(error);
    }
  }

  // Fails every pending and later allreduce with a reason naming the silence.
  void close_locked(std::chrono::milliseconds silence) {
    const std::string dev = comm_->device();
    bool up = true;
    try {
      up = runtime_->link_up(dev);
    } catch (const std::exception&) {
    }
    failure_ = "panama: allreduce failed: no result from the network for " + std::to_string(silence.count()) +
               " ms, longer than the retry budget (" + std::to_string(retry_budget_) +
               " retransmissions) allows; port " + dev + " link is " + (up ? "up" : "down") +
               " (is the PSwitch gone?)";
    closed_stats_ = comm_->stats();
    comm_.reset();  // fails what is in flight
  }

  intrusive_ptr<c10d::ProcessGroup> gloo_;
  BackendConfig config_;
  std::shared_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<runtime::Communicator> comm_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;
  bool stop_ = false;
  std::thread completion_;
  std::map<std::string, uint64_t> delegated_;
  uint64_t noncontiguous_copies_ = 0;
  uint64_t allreduces_ = 0;
  std::chrono::milliseconds silence_limit_{0};
  uint32_t retry_budget_ = 0;
  std::string failure_;  // set when the watchdog closed the communicator
  runtime::CommStats closed_stats_;
  std::string device_;
};

}  // namespace panama::torch_backend

PYBIND11_MODULE(_panama_torch, m) {
  namespace py = pybind11;
  using panama::torch_backend::BackendConfig;
  using panama::torch_backend::ProcessGroupPanama;
  m.doc() = "PANAMA torch.distributed backend (C++ part); use the panama_torch package";
  py::module_::import("torch.distributed");  // registers c10d.ProcessGroup, our base class

  // Errors of the runtime reach Python as RuntimeError / ValueError with their message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const panama::runtime::PlanError& e) {
      PyErr_SetString(PyExc_ValueError, (std::string("panama: bad plan: ") + e.what()).c_str());
    }
  });

  m.def(
      "check_plan",
      [](const std::string& path, int rank, int size) {
        panama::torch_backend::load_checked_plan(path, rank, size);
      },
      py::arg("plan"), py::arg("rank"), py::arg("size"),
      "Raises ValueError when the plan file is malformed or not for this rank and size.");

  py::class_<ProcessGroupPanama, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupPanama>>(
      m, "ProcessGroupPanama")
      .def(py::init([](int rank, int size, c10::intrusive_ptr<c10d::ProcessGroup> gloo, std::string plan_path,
                       std::vector<std::string> eal_args, std::string device, unsigned link_wait_ms) {
             BackendConfig c{std::move(plan_path), std::move(eal_args), std::move(device), link_wait_ms};
             return c10::make_intrusive<ProcessGroupPanama>(rank, size, std::move(gloo), c);
           }),
           py::arg("rank"), py::arg("size"), py::arg("gloo"), py::arg("plan"), py::arg("eal_args"),
           py::arg("device") = "", py::arg("link_wait_ms") = 10000, py::call_guard<py::gil_scoped_release>())
      .def("stats", &ProcessGroupPanama::stats)
      .def("_allreduce_direct", &ProcessGroupPanama::allreduce_direct, py::arg("tensor"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("device", &ProcessGroupPanama::device_name)
      .def("shutdown", &ProcessGroupPanama::shutdown, py::call_guard<py::gil_scoped_release>());
}
