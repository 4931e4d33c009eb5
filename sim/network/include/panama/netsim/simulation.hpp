// The cluster-scale network simulation: builds a leaf-spine or k-ary
// fat-tree fabric on ns-3,
// places PSwitches (switch + aggregation engine) at every switch, runs the
// training jobs and the background flows, and reports what happened.
//
// The protocol is the project's own: workers drive the unmodified
// AllreduceCore (sw/runtime/core), every PSwitch runs SwitchCore around the
// HLS engine model (hw/hls) on the real frame bytes, and the controller
// (sw/controller) computes trees, fan-ins, child ids and shares.
// docs/network-simulation.md is the user guide.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/netsim/options.hpp"

namespace panama::netsim {

// One background flow, as measured.
struct FlowRecord {
  uint32_t id = 0;
  uint32_t src = 0, dst = 0;  // host indices
  uint64_t bytes = 0;
  double start_us = 0;
  double fct_us = -1;     // -1: did not finish
  double ideal_us = 0;    // FCT alone on an empty network (ideal_fct_us)
  bool measured = false;  // started while every job was still training
  bool manual = false;    // given by --flow
};

// One gradient bucket's allreduce on one worker (every bucket of every iteration).
struct BucketRecord {
  uint32_t job = 0;  // the job's id
  uint32_t rank = 0, iteration = 0, bucket = 0;
  uint64_t elems = 0;
  uint64_t backward_ns = 0;  // when this iteration's backward started
  uint64_t ready_ns = 0;     // when the bucket's last gradient was ready
  uint64_t start_ns = 0;     // when its allreduce started (ready, and the bucket before it done)
  uint64_t end_ns = 0;       // when its allreduce completed on this worker
};

struct RunResult {
  nlohmann::json summary;  // everything, see docs/network-simulation.md ("Outputs")
  std::vector<FlowRecord> flows;
  // Per job, per iteration: [start_ms, end_ms] of the iteration over all workers.
  std::vector<std::vector<std::pair<double, double>>> iterations;
  std::vector<BucketRecord> buckets;  // by job, rank, then time
};

// Runs one simulation. Throws OptionError for invalid options and
// std::runtime_error when the deployment cannot be planned.
RunResult run_simulation(const Options& o);

// Ideal FCT of a flow of `bytes` between hosts in different racks (or the
// same rack) on an empty network: connection set-up (one round trip of
// header-only packets), the first full packet crossing every hop, the rest
// following at the slowest link's rate. TCP slow start is not part of it.
double ideal_fct_us(const Options& o, uint64_t bytes, bool same_rack);
// The same over a path with `fabric_links` switch-to-switch links (0 within
// a rack; leaf-spine 2; fat-tree 2 within a pod, 4 between pods).
double ideal_fct_path_us(const Options& o, uint64_t bytes, uint32_t fabric_links);

// Writes summary.json, flows.csv, iterations.csv and buckets.csv into o.out_dir.
void write_outputs(const Options& o, const RunResult& r);

}  // namespace panama::netsim
