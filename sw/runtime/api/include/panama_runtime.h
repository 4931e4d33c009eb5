/* The PANAMA allreduce API for C and other languages (FFI).
 *
 * Every function returns a panama_status; on an error, panama_last_error()
 * gives a message for the calling thread. Nothing aborts the process.
 *
 *   const char* eal[] = {"--no-huge", "-m", "256", "--no-pci", "--vdev=net_memif0,..."};
 *   panama_runtime* rt; panama_comm* comm;
 *   if (panama_runtime_create(eal, 5, &rt) != PANAMA_OK) puts(panama_last_error());
 *   panama_comm_create(rt, "worker0.json", NULL, &comm);   // device from the plan
 *   panama_allreduce(comm, data, n);
 *   panama_allreduce_typed(comm, bf16_data, n, PANAMA_BFLOAT16);  // uint16_t bf16_data[n]
 *   panama_comm_destroy(comm); panama_runtime_destroy(rt);
 */
#ifndef PANAMA_RUNTIME_H
#define PANAMA_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum panama_status {
  PANAMA_OK = 0,
  PANAMA_ERR_INVALID_ARGUMENT = 1, /* null pointer, bad count */
  PANAMA_ERR_BAD_PLAN = 2,         /* the job plan is malformed or missing */
  PANAMA_ERR_EAL = 3,              /* DPDK EAL initialisation failed */
  PANAMA_ERR_PORT_NOT_FOUND = 4,   /* no DPDK port of that name */
  PANAMA_ERR_PORT = 5,             /* the port could not be set up */
  PANAMA_ERR_JOB_FAILED = 6,       /* the allreduce cannot finish (retry budget), or was aborted */
  PANAMA_ERR_NOT_DONE = 7,         /* panama_request_wait_for timed out */
  PANAMA_ERR_INTERNAL = 8
} panama_status;

/* Element types of an allreduce: the wire's elem_type values (docs/protocol.md
 * section 7). 16-bit elements are little-endian uint16_t patterns; the engines
 * widen them to fp32, add in fp32 and round the sum once to the type. */
typedef enum panama_dtype {
  PANAMA_FLOAT32 = 1,                 /* IEEE-754 binary32 (float) */
  PANAMA_BFLOAT16 = 2,                /* bfloat16: the high 16 bits of a binary32 */
  PANAMA_FLOAT16 = 3,                 /* IEEE-754 binary16 */
  PANAMA_DTYPE_FORCE_INT = 0x7FFFFFFF /* not a type: keeps the enum int-sized */
} panama_dtype;

typedef struct panama_runtime panama_runtime;
typedef struct panama_comm panama_comm;
typedef struct panama_request panama_request;

/* Message of the calling thread's last error ("" if none). */
const char* panama_last_error(void);
const char* panama_status_name(panama_status s);

/* EAL arguments without the program name. */
panama_status panama_runtime_create(const char* const* eal_args, int num_args, panama_runtime** out);
void panama_runtime_destroy(panama_runtime* rt);

/* Communicator from a plan file or JSON text; device NULL or "" = the plan's "device". */
panama_status panama_comm_create(panama_runtime* rt, const char* plan_path, const char* device,
                                 panama_comm** out);
panama_status panama_comm_create_from_json(panama_runtime* rt, const char* plan_json, const char* device,
                                           panama_comm** out);
void panama_comm_destroy(panama_comm* comm);

/* In-place sum over the job's workers; blocks. */
panama_status panama_allreduce(panama_comm* comm, float* data, size_t count);
/* Starts an allreduce; data must stay valid until the request completes. */
panama_status panama_allreduce_async(panama_comm* comm, float* data, size_t count, panama_request** out);
/* The same for `count` elements of `dtype` at `data` (count x 4 bytes for
 * PANAMA_FLOAT32, count x 2 for PANAMA_BFLOAT16 / PANAMA_FLOAT16); the result
 * is written back in the same type. A dtype that is none of panama_dtype's
 * types returns PANAMA_ERR_INVALID_ARGUMENT. Every worker of the job must use
 * the same type for the same allreduce. */
panama_status panama_allreduce_typed(panama_comm* comm, void* data, size_t count, panama_dtype dtype);
panama_status panama_allreduce_typed_async(panama_comm* comm, void* data, size_t count, panama_dtype dtype,
                                           panama_request** out);
/* "fp32", "bf16", "fp16"; "unknown dtype" otherwise. */
const char* panama_dtype_name(panama_dtype dtype);
/* *done = 1 when finished; returns the op's error if it failed. */
panama_status panama_request_test(panama_request* req, int* done);
panama_status panama_request_wait(panama_request* req);
panama_status panama_request_wait_for(panama_request* req, uint32_t timeout_ms);
void panama_request_free(panama_request* req);

/* Bytes are payload bytes: elements x 4 (fp32) or x 2 (bf16, fp16). */
typedef struct panama_tree_stats {
  uint8_t tree_id;
  uint64_t bytes_issued, bytes_completed;
  uint64_t packets_sent, packets_received;
  uint64_t retransmissions, timeouts, results_ce;
  uint64_t duplicate_results, unexpected_results;
  double cwnd, alpha;
  uint16_t cwnd_cap;
} panama_tree_stats;

typedef struct panama_comm_stats {
  uint16_t job_id;
  uint64_t ops_started, ops_completed, ops_failed;
  uint64_t bytes_issued, bytes_completed;
  uint64_t packets_sent, packets_received;
  uint64_t retransmissions, timeouts, results_ce;
  uint64_t duplicate_results, unexpected_results, malformed_results;
  size_t num_trees;
} panama_comm_stats;

/* Fills *stats and up to max_trees entries of trees (may be NULL when max_trees is 0). */
panama_status panama_comm_stats_get(panama_comm* comm, panama_comm_stats* stats, panama_tree_stats* trees,
                                    size_t max_trees);

/* Pooled mode (docs/hybrid-allreduce.md): how this worker's groups went,
 * summed over the job's trees. All zero for a job with fixed shares. */
typedef struct panama_pool_stats {
  uint64_t groups;              /* groups issued */
  uint64_t claims_sent;         /* claim frames, repeats after an RTO included */
  uint64_t claim_timeouts;      /* claims sent again for want of an answer */
  uint64_t granted, denied;     /* the first answer heard per group */
  uint64_t expired;             /* granted groups a later "denied (expired)" moved to the ring */
  uint64_t in_network, on_ring; /* groups finished each way */
  uint64_t releases_sent;
  uint64_t released;     /* finished groups reported to the engines (cumulative counts, summed) */
  uint64_t confirmed;    /* of those, confirmed freed by the root (summed) */
  uint64_t release_asks; /* releases repeated for want of a confirmation */
  uint64_t ring_frames_sent, ring_retransmissions, ring_bytes_sent;
  uint64_t ring_frames_received, ring_duplicates, ring_malformed;
} panama_pool_stats;

panama_status panama_comm_pool_stats_get(panama_comm* comm, panama_pool_stats* stats);

/* Blocks until this worker owes its peers nothing more: every allreduce
 * finished and, in pooled mode, every ring frame acknowledged and the last
 * release sent. Call it before destroying the communicator after the last
 * allreduce: the frames that complete the other workers' last groups may
 * still be queued when this worker's own results are in. PANAMA_OK when
 * settled; PANAMA_ERR_NOT_DONE after timeout_ms (a peer that already left
 * never acknowledges a retransmission); PANAMA_ERR_JOB_FAILED when the
 * communicator has failed. */
panama_status panama_comm_settle(panama_comm* comm, uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* PANAMA_RUNTIME_H */
