// The Python module of the `panama` torch.distributed backend
// (docs/pytorch.md): binds PanamaGroup (panama_backend.hpp) in the shape the
// torch found at build time takes:
//  - torch 1.x: a c10d::ProcessGroup subclass (the plugin's creator returns
//    it and torch uses it as the group);
//  - torch 2.x: a c10d::Backend subclass (the creator returns it; torch wraps
//    it in a ProcessGroup registered for cpu and cuda, which has a name, so
//    functional collectives work).
// On 1.x the Backend shape is compiled too (explicit instantiation below) so
// that it keeps compiling against the Backend class 1.13 already has; it is
// not bound or used there.
//
// One translation unit on purpose: the torch headers make each one slow and
// memory-hungry to compile.
#include <Python.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/version.h>

#include "panama_backend.hpp"

namespace panama::torch_backend {

#if TORCH_VERSION_MAJOR >= 2
using BaseShape = c10d::Backend;
constexpr const char* kShape = "c10d::Backend";
#else
using BaseShape = c10d::ProcessGroup;
constexpr const char* kShape = "c10d::ProcessGroup";
// Compile check of the 2.x shape against 1.13's c10d::Backend (not bound).
template class PanamaGroup<c10d::Backend>;
#endif

using Group = PanamaGroup<BaseShape>;

py::dict pool_dict(const StagingPoolStats& p) {
  py::dict d;
  d["chunk_bytes"] = p.chunk_bytes;
  d["max_buffers"] = p.max_buffers;
  d["allocated"] = p.allocated;
  d["in_use"] = p.in_use;
  d["max_in_use"] = p.max_in_use;
  d["acquired"] = p.acquired;
  d["waited"] = p.waited;
  return d;
}

template <class M>
py::dict map_dict(const M& m, uint64_t* total = nullptr) {
  py::dict d;
  for (const auto& [k, v] : m) {
    d[py::str(k)] = v;
    if (total) *total += v;
  }
  return d;
}

py::dict stats_dict(const Group& g) {
  Group::Snapshot s;
  {
    // The backend's locks are never held while a thread waits for the GIL,
    // and this thread does not hold the GIL while it waits for them.
    py::gil_scoped_release released;
    s = g.snapshot();
  }
  py::dict d;
  d["job"] = s.comm.job_id;
  d["rank"] = g.getRank();
  d["world_size"] = g.getSize();
  d["device"] = g.device_name();
  d["allreduces"] = s.allreduces;
  d["allreduces_by_dtype"] = map_dict(s.by_type);
  d["ops_completed"] = s.comm.ops_completed;
  d["ops_failed"] = s.comm.ops_failed;
  d["bytes_issued"] = s.comm.bytes_issued;
  d["bytes_completed"] = s.comm.bytes_completed;
  d["bytes_sent"] = s.comm.bytes_sent;
  d["packets_sent"] = s.comm.packets_sent;
  d["packets_received"] = s.comm.packets_received;
  d["retransmissions"] = s.comm.retransmissions;
  d["timeouts"] = s.comm.timeouts;
  d["results_ce"] = s.comm.results_ce;
  d["duplicate_results"] = s.comm.duplicate_results;
  d["noncontiguous_copies"] = s.copies;
  d["staged_ops"] = s.staged_ops;
  d["staged_chunks"] = s.staged_chunks;
  d["staging_cpu"] = pool_dict(s.cpu_pool);
  d["staging_cuda"] = s.cuda ? py::object(pool_dict(s.cuda_pool)) : py::object(py::none());
  d["callback_threads"] = s.callback_threads;
  d["late_waits"] = s.late_waits;
  d["late_ranks"] = s.late_ranks;
  d["failure"] = s.failure;
  py::list trees;
  for (const runtime::TreeStats& t : s.comm.trees) {
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
    td["rto_us"] = t.rto_us;
    td["next_seq"] = t.next_seq;
    trees.append(td);
  }
  d["trees"] = trees;
  uint64_t total = 0, refused = 0;
  d["delegated"] = map_dict(s.delegated, &total);
  d["delegated_total"] = total;
  d["refused"] = map_dict(s.refused, &refused);
  d["refused_total"] = refused;
  return d;
}

}  // namespace panama::torch_backend

PYBIND11_MODULE(_panama_torch, m) {
  namespace py = pybind11;
  using namespace panama::torch_backend;
  m.doc() = "PANAMA torch.distributed backend (C++ part); use the panama_torch package";
  py::module_::import("torch.distributed");  // registers the c10d classes, our base class among them

  // Errors of the runtime reach Python as RuntimeError / ValueError with their message.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const panama::runtime::PlanError& e) {
      PyErr_SetString(PyExc_ValueError, (std::string("panama: bad plan: ") + e.what()).c_str());
    }
  });

  m.attr("TORCH_SHAPE") = kShape;
  m.attr("CUDA") = bool(PANAMA_TORCH_CUDA);
  m.def(
      "check_plan", [](const std::string& path, int rank, int size) { load_checked_plan(path, rank, size); },
      py::arg("plan"), py::arg("rank"), py::arg("size"),
      "Raises ValueError when the plan file is malformed or not for this rank and size.");
  m.def("_release_runtime", &release_shared_runtime, py::call_guard<py::gil_scoped_release>(),
        "Stops the process's PANAMA runtime (interpreter exit, after every group was shut down).");

  py::class_<Group, BaseShape, c10::intrusive_ptr<Group>>(m, "ProcessGroupPanama")
      .def(py::init([](int rank, int size, c10::intrusive_ptr<BaseShape> gloo,
                       c10::intrusive_ptr<c10d::Store> store, std::string plan_path,
                       std::vector<std::string> eal_args, std::string device, unsigned link_wait_ms,
                       double timeout_s, bool stage_cpu, size_t stage_chunk_bytes, size_t stage_buffers,
                       double skew_allowance_ms) {
             BackendConfig c;
             c.plan_path = std::move(plan_path);
             c.eal_args = std::move(eal_args);
             c.device = std::move(device);
             c.link_wait_ms = link_wait_ms;
             c.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
             c.stage_cpu = stage_cpu;
             c.stage_chunk_bytes = stage_chunk_bytes;
             c.stage_buffers = stage_buffers;
             c.skew_allowance = std::chrono::milliseconds(static_cast<int64_t>(skew_allowance_ms));
             auto g = c10::make_intrusive<Group>(rank, size, std::move(gloo), std::move(store), c);
             g->warn_ = [](const std::string& what) {
               const std::string msg =
                   "panama: " + what +
                   " runs on the internal Gloo process group (only float32, bfloat16 and "
                   "float16 SUM/AVG allreduce goes through PANAMA); this warning is shown "
                   "once per kind";
               // Called with or without the GIL (DDP calls from autograd threads).
               py::gil_scoped_acquire gil;
               if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) != 0) PyErr_Clear();
             };
             return g;
           }),
           py::arg("rank"), py::arg("size"), py::arg("gloo"), py::arg("store"), py::arg("plan"),
           py::arg("eal_args"), py::arg("device") = "", py::arg("link_wait_ms") = 10000,
           py::arg("timeout_s") = 1800.0, py::arg("stage_cpu") = false,
           py::arg("stage_chunk_bytes") = size_t{4} << 20, py::arg("stage_buffers") = size_t{4},
           py::arg("skew_allowance_ms") = 200.0, py::call_guard<py::gil_scoped_release>())
      .def("stats", [](const Group& g) { return stats_dict(g); })
      .def("_allreduce_direct", &Group::allreduce_direct, py::arg("tensor"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("device", &Group::device_name)
      .def_property_readonly("job_id", &Group::job_id)
      .def("shutdown", &Group::shutdown, py::call_guard<py::gil_scoped_release>());
}
