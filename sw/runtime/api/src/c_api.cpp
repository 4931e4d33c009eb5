// The C API (panama_runtime.h) over the C++ API: exceptions become status
// codes plus a per-thread message.
#include "panama_runtime.h"

#include <new>
#include <string>

#include "panama/runtime/runtime.hpp"

using namespace panama::runtime;

struct panama_runtime {
  std::unique_ptr<Runtime> rt;
};
struct panama_comm {
  std::unique_ptr<Communicator> comm;
};
struct panama_request {
  AllreduceHandle handle;
};

namespace {

thread_local std::string g_last_error;

panama_status fail(panama_status s, const std::string& msg) {
  g_last_error = msg;
  return s;
}

// Runs `f`, mapping each exception type to its status.
template <class F>
panama_status guarded(F&& f) {
  try {
    g_last_error.clear();
    return f();
  } catch (const PlanError& e) {
    return fail(PANAMA_ERR_BAD_PLAN, e.what());
  } catch (const DpdkPortNotFound& e) {
    return fail(PANAMA_ERR_PORT_NOT_FOUND, e.what());
  } catch (const DpdkError& e) {
    const std::string m = e.what();
    return fail(m.find("EAL") != std::string::npos ? PANAMA_ERR_EAL : PANAMA_ERR_PORT, m);
  } catch (const RuntimeError& e) {
    return fail(PANAMA_ERR_JOB_FAILED, e.what());
  } catch (const std::bad_alloc&) {
    return fail(PANAMA_ERR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(PANAMA_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(PANAMA_ERR_INTERNAL, "unknown error");
  }
}

// The wire type of a C dtype, false for a value that is none (read as an
// int: a C caller may pass any value of the enum's size).
bool elem_type_of(panama_dtype dtype, panama::wire::ElemType* out) {
  switch (static_cast<int>(dtype)) {
    case PANAMA_FLOAT32:
      *out = panama::wire::ElemType::kFloat32;
      return true;
    case PANAMA_BFLOAT16:
      *out = panama::wire::ElemType::kBfloat16;
      return true;
    case PANAMA_FLOAT16:
      *out = panama::wire::ElemType::kFloat16;
      return true;
    default:
      return false;
  }
}

panama_status bad_dtype(const char* fn, panama_dtype dtype) {
  return fail(PANAMA_ERR_INVALID_ARGUMENT, std::string(fn) + ": dtype " +
                                               std::to_string(static_cast<int>(dtype)) +
                                               " is none of PANAMA_FLOAT32 (1), PANAMA_BFLOAT16 (2) and "
                                               "PANAMA_FLOAT16 (3)");
}

panama_status comm_create(panama_runtime* rt, const Plan& plan, const char* device, panama_comm** out) {
  auto c = std::make_unique<panama_comm>();
  c->comm = rt->rt->communicator(plan, device ? device : "");
  *out = c.release();
  return PANAMA_OK;
}

}  // namespace

extern "C" {

const char* panama_last_error(void) {
  return g_last_error.c_str();
}

const char* panama_status_name(panama_status s) {
  switch (s) {
    case PANAMA_OK:
      return "ok";
    case PANAMA_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case PANAMA_ERR_BAD_PLAN:
      return "bad plan";
    case PANAMA_ERR_EAL:
      return "EAL failure";
    case PANAMA_ERR_PORT_NOT_FOUND:
      return "port not found";
    case PANAMA_ERR_PORT:
      return "port failure";
    case PANAMA_ERR_JOB_FAILED:
      return "job failed";
    case PANAMA_ERR_NOT_DONE:
      return "not done";
    case PANAMA_ERR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

panama_status panama_runtime_create(const char* const* eal_args, int num_args, panama_runtime** out) {
  if (!out || num_args < 0 || (num_args > 0 && !eal_args)) {
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_runtime_create: null output or bad argument vector");
  }
  *out = nullptr;
  return guarded([&] {
    std::vector<std::string> args;
    for (int i = 0; i < num_args; ++i) {
      if (!eal_args[i])
        return fail(PANAMA_ERR_INVALID_ARGUMENT, "EAL argument " + std::to_string(i) + " is null");
      args.emplace_back(eal_args[i]);
    }
    auto r = std::make_unique<panama_runtime>();
    r->rt = Runtime::create(args);
    *out = r.release();
    return PANAMA_OK;
  });
}

void panama_runtime_destroy(panama_runtime* rt) {
  delete rt;
}

panama_status panama_comm_create(panama_runtime* rt, const char* plan_path, const char* device,
                                 panama_comm** out) {
  if (!rt || !plan_path || !out)
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_comm_create: null argument");
  *out = nullptr;
  return guarded([&] { return comm_create(rt, load_plan(plan_path), device, out); });
}

panama_status panama_comm_create_from_json(panama_runtime* rt, const char* plan_json, const char* device,
                                           panama_comm** out) {
  if (!rt || !plan_json || !out) {
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_comm_create_from_json: null argument");
  }
  *out = nullptr;
  return guarded([&] { return comm_create(rt, parse_plan(plan_json), device, out); });
}

void panama_comm_destroy(panama_comm* comm) {
  delete comm;
}

panama_status panama_allreduce(panama_comm* comm, float* data, size_t count) {
  if (!comm || (!data && count > 0))
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_allreduce: null argument");
  return guarded([&] {
    comm->comm->allreduce(data, count);
    return PANAMA_OK;
  });
}

panama_status panama_allreduce_async(panama_comm* comm, float* data, size_t count, panama_request** out) {
  if (!comm || !out || (!data && count > 0)) {
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_allreduce_async: null argument");
  }
  *out = nullptr;
  return guarded([&] {
    auto r = std::make_unique<panama_request>();
    r->handle = comm->comm->allreduce_async(data, count);
    *out = r.release();
    return PANAMA_OK;
  });
}

panama_status panama_allreduce_typed(panama_comm* comm, void* data, size_t count, panama_dtype dtype) {
  if (!comm || (!data && count > 0))
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_allreduce_typed: null argument");
  panama::wire::ElemType type;
  if (!elem_type_of(dtype, &type)) return bad_dtype("panama_allreduce_typed", dtype);
  return guarded([&] {
    comm->comm->allreduce(data, count, type);
    return PANAMA_OK;
  });
}

panama_status panama_allreduce_typed_async(panama_comm* comm, void* data, size_t count, panama_dtype dtype,
                                           panama_request** out) {
  if (!comm || !out || (!data && count > 0)) {
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_allreduce_typed_async: null argument");
  }
  *out = nullptr;
  panama::wire::ElemType type;
  if (!elem_type_of(dtype, &type)) return bad_dtype("panama_allreduce_typed_async", dtype);
  return guarded([&] {
    auto r = std::make_unique<panama_request>();
    r->handle = comm->comm->allreduce_async(data, count, type);
    *out = r.release();
    return PANAMA_OK;
  });
}

const char* panama_dtype_name(panama_dtype dtype) {
  // PANAMA_FLOAT32/BFLOAT16/FLOAT16 are the wire's element type codes.
  const int code = static_cast<int>(dtype);
  const char* name =
      code >= 0 && code <= 255 ? panama::wire::elem_type_name(static_cast<uint8_t>(code)) : nullptr;
  return name ? name : "unknown dtype";
}

panama_status panama_request_test(panama_request* req, int* done) {
  if (!req || !done) return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_request_test: null argument");
  return guarded([&] {
    *done = req->handle.test() ? 1 : 0;
    if (*done && req->handle.status() == OpStatus::kFailed) {
      return fail(PANAMA_ERR_JOB_FAILED, "allreduce failed: " + req->handle.error());
    }
    return PANAMA_OK;
  });
}

panama_status panama_request_wait(panama_request* req) {
  if (!req) return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_request_wait: null request");
  return guarded([&] {
    req->handle.wait();
    return PANAMA_OK;
  });
}

panama_status panama_request_wait_for(panama_request* req, uint32_t timeout_ms) {
  if (!req) return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_request_wait_for: null request");
  return guarded([&] {
    if (!req->handle.wait_for(std::chrono::milliseconds(timeout_ms))) {
      return fail(PANAMA_ERR_NOT_DONE, "allreduce not finished after " + std::to_string(timeout_ms) + " ms");
    }
    return PANAMA_OK;
  });
}

void panama_request_free(panama_request* req) {
  delete req;
}

panama_status panama_comm_stats_get(panama_comm* comm, panama_comm_stats* stats, panama_tree_stats* trees,
                                    size_t max_trees) {
  if (!comm || !stats || (max_trees > 0 && !trees)) {
    return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_comm_stats_get: null argument");
  }
  return guarded([&] {
    const CommStats s = comm->comm->stats();
    *stats = panama_comm_stats{};
    stats->job_id = s.job_id;
    stats->ops_started = s.ops_started;
    stats->ops_completed = s.ops_completed;
    stats->ops_failed = s.ops_failed;
    stats->bytes_issued = s.bytes_issued;
    stats->bytes_completed = s.bytes_completed;
    stats->packets_sent = s.packets_sent;
    stats->packets_received = s.packets_received;
    stats->retransmissions = s.retransmissions;
    stats->timeouts = s.timeouts;
    stats->results_ce = s.results_ce;
    stats->duplicate_results = s.duplicate_results;
    stats->unexpected_results = s.unexpected_results;
    stats->malformed_results = s.malformed_results;
    stats->num_trees = s.trees.size();
    for (size_t i = 0; i < s.trees.size() && i < max_trees; ++i) {
      const TreeStats& t = s.trees[i];
      panama_tree_stats& o = trees[i];
      o = panama_tree_stats{};
      o.tree_id = t.tree_id;
      o.bytes_issued = t.bytes_issued;
      o.bytes_completed = t.bytes_completed;
      o.packets_sent = t.packets_sent;
      o.packets_received = t.packets_received;
      o.retransmissions = t.retransmissions;
      o.timeouts = t.timeouts;
      o.results_ce = t.results_ce;
      o.duplicate_results = t.duplicate_results;
      o.unexpected_results = t.unexpected_results;
      o.cwnd = t.cwnd;
      o.alpha = t.alpha;
      o.cwnd_cap = t.cwnd_cap;
    }
    return PANAMA_OK;
  });
}

panama_status panama_comm_pool_stats_get(panama_comm* comm, panama_pool_stats* stats) {
  if (!comm || !stats) return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_comm_pool_stats_get: null argument");
  return guarded([&] {
    const PoolStats p = comm->comm->stats().pool;
    *stats = panama_pool_stats{};
    stats->groups = p.groups;
    stats->claims_sent = p.claims_sent;
    stats->claim_timeouts = p.claim_timeouts;
    stats->granted = p.granted;
    stats->denied = p.denied;
    stats->expired = p.expired;
    stats->in_network = p.in_network;
    stats->on_ring = p.on_ring;
    stats->releases_sent = p.releases_sent;
    stats->released = p.released;
    stats->confirmed = p.confirmed;
    stats->release_asks = p.release_asks;
    stats->ring_frames_sent = p.ring_frames_sent;
    stats->ring_retransmissions = p.ring_retransmissions;
    stats->ring_bytes_sent = p.ring_bytes_sent;
    stats->ring_frames_received = p.ring_frames_received;
    stats->ring_duplicates = p.ring_duplicates;
    stats->ring_malformed = p.ring_malformed;
    return PANAMA_OK;
  });
}

panama_status panama_comm_settle(panama_comm* comm, uint32_t timeout_ms) {
  if (!comm) return fail(PANAMA_ERR_INVALID_ARGUMENT, "panama_comm_settle: null communicator");
  return guarded([&] {
    if (comm->comm->settle(std::chrono::milliseconds(timeout_ms))) return PANAMA_OK;
    if (comm->comm->stats().ops_failed > 0) {
      return fail(PANAMA_ERR_JOB_FAILED, "panama_comm_settle: the communicator has failed");
    }
    return fail(PANAMA_ERR_NOT_DONE, "panama_comm_settle: the peers still miss frames of this worker after " +
                                         std::to_string(timeout_ms) + " ms");
  });
}

}  // extern "C"
