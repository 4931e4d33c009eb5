// Options of the cluster-scale network simulation (panama-netsim) and their
// validation, the model table of the training jobs, and the flow-size
// distribution of the background traffic. No ns-3 here: the command line is
// parsed and checked before any simulator object exists.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace panama::netsim {

// A bad option or input file; the message names the option and the problem.
class OptionError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Elements an engine slot of the simulated accelerators holds (any type):
// the card's default build, 144 words of 16 lanes (docs/rtl.md), so one
// slot takes a jumbo frame's fp32 payload.
constexpr uint32_t kEngineSlotElems = 2304;
// Bytes of a PANAMA packet before its elements, from the IPv4 header on
// (IPv4 20, UDP 8, PANAMA header 22).
constexpr uint32_t kPanamaIpHeaderBytes = 50;

// How the jobs' gradients are reduced.
enum class Scheme {
  kPanama,        // in-network aggregation over T trees, PANAMA congestion control
  kSingleTree,    // in-network aggregation over one tree per job (no multi-tree load balancing)
  kFixedWindow,   // in-network aggregation, window fixed at the engines' share (no congestion control)
  kRing,          // host ring allreduce over DCTCP TCP, segmented and pipelined
  kHierarchical,  // host rings: reduce-scatter in each rack, the shards allreduced across racks, all-gather
};
// Schemes whose hosts reduce (rings over TCP) rather than the network.
inline bool host_reduces(Scheme s) {
  return s == Scheme::kRing || s == Scheme::kHierarchical;
}
Scheme parse_scheme(const std::string& name);  // throws OptionError
const char* scheme_name(Scheme s);

// The fabric's shape.
enum class Topology {
  kLeafSpine,  // --racks leaves of --hosts-per-rack hosts, --spines spines linked to every leaf
  kFatTree,    // k-ary fat-tree: k pods of k/2 edge + k/2 aggregation switches, (k/2)^2 cores, k/2 hosts per
               // edge
};
Topology parse_topology(const std::string& name);  // throws OptionError
const char* topology_name(Topology t);

// One row of the model table: gradient bytes exchanged per iteration and
// compute time per iteration on one GPU (approximate figures, docs/network-simulation.md).
struct ModelSpec {
  std::string name;
  double gradient_mb;  // fp32 gradients, 1e6 bytes
  double compute_ms;
};
const std::vector<ModelSpec>& model_table();
const ModelSpec& find_model(const std::string& name);  // throws OptionError listing the names

// A measured workload: one model at one training precision on one GPU, its
// forward and backward times and when each parameter's gradient is ready
// during backward (sim/network/data/README.md). The V100-class table
// becomes such a workload with no forward, a backward of the whole compute
// time and one gradient ready at its end (compute, then allreduce).
struct GradReady {
  double ms = 0;     // after backward started
  double bytes = 0;  // of the fp32 gradient
};
struct Workload {
  std::string model, precision, setup;
  double fwd_ms = 0, bwd_ms = 0;
  double grad_bytes = 0;         // fp32, all parameters
  std::vector<GradReady> ready;  // in order of readiness, summing to grad_bytes
};
struct WorkloadTable {
  std::string source;  // "v100" or the file's path
  std::vector<Workload> rows;
};
// "v100": the built-in table; "h100": the bundled measurements; else a file
// in the measurements' format. Throws OptionError naming file and field.
WorkloadTable load_workloads(const std::string& which);
const Workload& find_workload(const WorkloadTable& t, const std::string& model,
                              const std::string& precision);  // throws OptionError listing what there is
std::string default_workload_path();                          // the bundled H100 measurements

// A DDP gradient bucket of one iteration: filled in order of readiness, sent
// (allreduced) once its last gradient is ready and the bucket before it is
// done. Times are offsets from the start of backward, scaled.
struct Bucket {
  uint64_t ready_ns = 0;
  uint64_t elem_begin = 0, elems = 0;
};
// Buckets of `elems` elements from a workload: the first holds up to
// first_cap_bytes of fp32 gradient, the others up to cap_bytes (a bucket
// closes at the gradient that reaches its cap, as DDP's do); cap_bytes 0:
// one bucket, ready at the end of backward (no overlap). Times and bytes
// are multiplied by `scale`; every bucket has at least one element.
std::vector<Bucket> make_buckets(const Workload& w, uint64_t elems, double scale, double first_cap_bytes,
                                 double cap_bytes);

// A background flow given explicitly (tests, --flow): host indices, bytes, start time.
struct ManualFlow {
  uint32_t src = 0, dst = 0;
  uint64_t bytes = 0;
  double start_us = 0;
};

struct Options {
  // ---- topology: leaf-spine, `racks` leaves with `hosts_per_rack` hosts each, `spines` spines;
  // or a k-ary fat-tree (a "rack" is then an edge switch and its k/2 hosts)
  Topology topology = Topology::kLeafSpine;
  uint32_t k = 4;  // fat-tree arity (even)
  uint32_t racks = 4;
  uint32_t hosts_per_rack = 4;
  uint32_t spines = 2;
  double host_gbps = 10.0;     // host <-> leaf links
  double fabric_gbps = 10.0;   // switch <-> switch links (leaf-spine; edge-aggregation and aggregation-core)
  double link_delay_us = 1.0;  // propagation delay of every link
  // MTU of every link (IP bytes, 1500..9000). Gradient traffic uses it:
  // PANAMA packets up to --elems-per-packet that fit, the ring's TCP
  // segments of mtu - 52 bytes. Background flows send segments of
  // background_mtu - 52 (the other tenants need not use jumbo frames).
  uint32_t mtu = 1500;
  uint32_t background_mtu = 1500;
  uint32_t gradient_mss() const { return mtu - 52; }
  uint32_t background_mss() const { return background_mtu - 52; }
  // ---- switch output queues (every port, hosts' NICs too)
  uint32_t buffer_kb = 1024;  // per-port buffer; tail drop beyond (unless lossless)
  uint32_t ecn_k_kb = 100;    // CE marking threshold K on the instantaneous queue
  // Lossless operation: PFC-style pause. Each switch accounts the bytes it
  // holds per ingress port and class (0: TCP, 1: PANAMA aggregation); at
  // XOFF it pauses that class on the upstream transmitter, at XON it resumes
  // it (both after the link's propagation delay). Output queues do not drop;
  // a packet beyond XOFF + headroom is dropped and counted (none expected).
  bool lossless = false;
  uint32_t pfc_xoff_kb = 64;
  uint32_t pfc_xon_kb = 32;
  uint32_t pfc_headroom_kb = 0;  // 0: 2 x link delay x rate + 4 full-size packets, per port
  // ---- the accelerator beside each switch
  double engine_gbps = 100.0;
  double engine_latency_us = 1.0;
  uint32_t packet_memory = 512;  // slots per engine, shared among (job, tree) entries
  uint32_t elems_per_packet = 256;
  // Gradient element type of every job: "fp32", "bf16" or "fp16". A model's
  // gradient has as many elements in any type; 16-bit jobs send half the
  // bytes (PANAMA packets of elems_per_packet elements are half as long, the
  // ring moves half the bytes) and are verified against the rounding rules
  // of docs/protocol.md section 7.
  std::string dtype = "fp32";
  // ---- scheme and jobs
  Scheme scheme = Scheme::kPanama;
  uint32_t trees = 4;  // per job for panama / fixed-window (single-tree: 1)
  std::string tree_shape =
      "spine";  // PANAMA schemes: the controller's tree shape, "spine" or "chain" (CINA's)
  // PANAMA schemes: priority levels by GPU intensity (the controller's
  // "priorities", docs/controller.md): level l's packets carry DSCP 8 (L - l)
  // and every output queue serves the PANAMA packets of a higher level
  // first. 0: off.
  uint32_t priorities = 0;
  // PANAMA schemes, spine trees: pooled mode (the controller's "Pooled
  // jobs", docs/hybrid-allreduce.md). pool_slots > 0 gives every PSwitch
  // that serves a pooled job a pool of that many engine slots, claimed a
  // group of pool_group sequences at a time; a group the pool denies is
  // reduced by a ring over the job's hosts. 0: fixed shares only.
  uint32_t pool_slots = 0;
  std::vector<uint32_t> pooled_jobs;  // job ids 1..jobs; empty: every job
  uint32_t pool_group = 0;            // G; 0: the controller's default
  uint64_t pool_lease_us = 0;         // 0: the controller's default
  double pool_overcommit = 1.0;       // claim caps x this, at most the pool
  bool pool_ring_cc = false;          // DCTCP on the ring of denied groups (PooledPlan::ring_congestion)
  bool job_pooled(uint32_t id) const {
    if (pool_slots == 0) return false;
    if (pooled_jobs.empty()) return true;
    for (uint32_t j : pooled_jobs)
      if (j == id) return true;
    return false;
  }
  uint32_t jobs = 2;
  uint32_t workers_per_job = 4;
  std::vector<std::string> models = {"resnet50"};  // job j trains models[j % size]
  // A job mix (--jobs-file): per job its worker count (empty: every job has
  // workers_per_job). Loading the file sets jobs, models and this.
  std::vector<uint32_t> job_workers;
  std::string jobs_file;
  uint32_t workers_of(uint32_t job) const { return job_workers.empty() ? workers_per_job : job_workers[job]; }
  // Where the models' compute comes from: "v100" (the built-in table:
  // compute, then one allreduce of the whole gradient), "h100" (the bundled
  // measurements: forward, then backward with the gradients' measured ready
  // times, DDP buckets allreduced as they fill, overlapped with the rest of
  // backward; the next forward waits for the last bucket) or a file in the
  // measurements' format.
  std::string workload = "v100";
  std::string precision = "bf16";  // measured workloads: the training precision's timeline (fp32 or bf16)
  double bucket_mib = 25;  // measured workloads: DDP's bucket cap (its first bucket: 1 MiB); 0: one bucket
  double scale = 0.005;    // gradient bytes, compute times and bucket caps are all multiplied by this
  uint32_t iterations = 3;
  // GPUs per host (CINA's model of a server, for every scheme): each bucket
  // is reduced to the host's master GPU by a ring over the intra-host link
  // (2(G-1)/G of its bytes at intra_host_gbps) before the allreduce, and the
  // result goes back to the other GPUs the same way after it. 1: none.
  uint32_t gpus_per_host = 1;
  double intra_host_gbps = 3600;  // H100 NVLink: 900 GB/s both ways, 450 GB/s each way
  bool verify = true;             // check every PANAMA allreduce bit for bit
  uint32_t ring_segment_kb = 64;  // ring pipelining granularity
  // Where a job's workers go: "spread" (rack-interleaved: a job takes one
  // host per rack before a second in any), "packed" (a job fills a rack
  // before the next) or "random" (seeded from --seed). Ranks follow the
  // placement; PANAMA's trees follow it (each leaf aggregates its rack's
  // workers).
  std::string placement = "spread";
  // The ring's order: "flat" (rank order) or "rack" (ranks grouped by rack,
  // so the ring crosses the fabric once per rack the job spans, as NCCL
  // orders its rings by topology).
  std::string ring_order = "flat";
  // The ring's transport (background flows keep DCTCP with ECN): congestion
  // control "dctcp", "cubic" or "newreno"; ECN negotiated or not; socket
  // send and receive buffers.
  std::string ring_tcp = "dctcp";
  bool ring_ecn = true;
  uint32_t ring_sockbuf_kb = 256;
  // TCP connections per ring neighbour (NCCL's channels): the byte stream
  // to the next worker is striped over them in ring_segment_kb stripes.
  uint32_t ring_channels = 1;
  // ---- background traffic
  double load = 0.0;     // offered load of background flows, fraction of the hosts' capacity
  std::string cdf_path;  // flow-size CDF (empty: the bundled web-search distribution)
  // Measurement window: background flows arrive during it and jobs start no
  // iteration after it. 0: until the first job completes --iterations
  // (required > 0 when there are background flows but no jobs).
  double duration_ms = 0;
  std::vector<ManualFlow> flows;  // explicit flows in addition to the Poisson ones
  // With --duration-ms 0: the window also stays open (and the jobs keep
  // iterating past --iterations) until at least this many short background
  // flows (under 100 KB) have started in it, so that their p99 rests on
  // enough samples. 0: off.
  uint32_t min_short_flows = 0;
  // ---- run
  uint64_t seed = 1;
  double max_time_ms = 10000;   // hard stop (simulated time)
  double queue_sample_us = 10;  // queue-length sampling period (0: no sampling)
  std::string out_dir;          // where summary.json, flows.csv, iterations.csv go ("" = nowhere)
  bool progress = false;        // progress lines on stderr

  // Racks (leaves / edge switches) and hosts per rack of the chosen topology.
  uint32_t num_racks() const { return topology == Topology::kFatTree ? k * (k / 2) : racks; }
  uint32_t rack_size() const { return topology == Topology::kFatTree ? k / 2 : hosts_per_rack; }
  uint32_t hosts() const { return num_racks() * rack_size(); }
};

// Reads a job mix: {"jobs": [{"model": M, "workers": W, "count": C}, ...]}
// (count 1 if absent) into o.jobs, o.models and o.job_workers. Throws
// OptionError naming the file and the entry.
void load_jobs_file(const std::string& path, Options& o);

// Checks every option and their combinations; throws OptionError naming the option.
void validate(const Options& o);

// Parses a command line (argv[0] is the program name). Returns false when
// the caller should exit with `exit_code` (help printed, or a parse error
// already reported on stderr); throws OptionError for invalid values.
bool parse_command_line(int argc, const char* const* argv, Options& o, int& exit_code);

// Flow-size distribution: points (bytes, cumulative probability), probability
// rising to 1, sampled by linear interpolation between points.
struct SizeCdf {
  std::vector<double> bytes;
  std::vector<double> prob;
  double mean() const;
  double sample(double u) const;  // u uniform in [0, 1)
};
SizeCdf load_size_cdf(const std::string& path);  // throws OptionError with file and line
std::string default_cdf_path();

}  // namespace panama::netsim
