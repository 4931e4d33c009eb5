// Loss soak: many small allreduces through the real components, in one
// process, under seeded loss, duplication and reordering.
//
// The fabric is what panama-cluster deploys (the controller plans it from
// the same built-in descriptions), run by the in-memory fabric
// (panama/fabric/fabric.hpp): every PSwitch is the engine model
// (DefaultEngine) programmed with apply_node_config plus the software
// PSwitch's SwitchCore; every worker is an unmodified AllreduceCore. Links
// are events in virtual time with a fixed delay. Impairment is the software
// PSwitch's FaultInjector on each PSwitch port, on both directions of its
// link, with the seeds panama-pswitch derives, so the faults are those of a
// virtual cluster with the same port_defaults.
//
// Every allreduce: all workers start it at once with tensors whose sum is
// exact in any order (cluster/test_data.hpp); it ends when no worker has it
// pending. It is completed when every worker got the reference sum bit for
// bit, wrong when a worker finished with other bits, failed when a worker
// failed it (retry budget) or nothing happened for a virtual minute. After a
// failure the fabric is rebuilt (fresh engines and cores), as a job restart.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "panama/cluster/test_data.hpp"
#include "panama/controller/controller.hpp"
#include "panama/fabric/deployment.hpp"
#include "panama/fabric/fabric.hpp"
#include "panama/runtime/allreduce_core.hpp"

using namespace panama;

namespace {

struct Options {
  uint64_t allreduces = 100000;
  std::string topology = "both";
  uint32_t workers_single = 4;
  uint32_t workers_two_tier = 8;
  uint32_t trees = 2;
  double loss = 0.01, dup = 0.01, reorder = 0.01;
  uint64_t seed = 1;
  std::vector<uint32_t> sizes = {1, 7, 64, 200, 333};
  uint32_t elems_per_packet = 64;
  uint64_t link_delay_ns = 2000;
  double progress_s = 10;
};

struct Totals {
  uint64_t completed = 0, wrong = 0, failed = 0, restarts = 0;
  uint64_t lost = 0, duplicated = 0, reordered = 0;
  uint64_t retransmissions = 0, duplicate_results = 0, engine_drops = 0, frames = 0;
  uint64_t virtual_ns = 0;
  std::string first_failure;
};

// The job's workers on a fabric of the deployment.
class Soak {
 public:
  Soak(const controller::Deployment& dep, const Options& o)
      : opt_(o), net_(fabric::topology_of(dep), options(o)) {
    data_.resize(net_.worker_count());
    ops_.resize(net_.worker_count());
  }

  // Runs allreduce number `iteration` of `n` floats on every worker.
  // Returns 0 completed, 1 wrong, 2 failed.
  int allreduce(uint32_t iteration, size_t n, std::string& why) {
    const uint32_t world = static_cast<uint32_t>(net_.worker_count());
    for (uint32_t r = 0; r < world; ++r) {
      data_[r].resize(n);
      cluster::fill_tensor(data_[r].data(), n, opt_.seed, iteration, r);
      ops_[r] = net_.worker(r).start(data_[r].data(), n, net_.now());
    }
    const uint64_t deadline = net_.now() + 60'000'000'000ull;
    for (;;) {
      bool pending = false;
      for (uint32_t r = 0; r < world; ++r)
        pending = pending || net_.worker(r).status(ops_[r]) == runtime::OpStatus::kPending;
      if (!pending) break;
      if (net_.now() > deadline) {
        why = fmt::format("allreduce {} made no progress for a virtual minute", iteration);
        return 2;
      }
      net_.step();
    }
    std::vector<float> ref(n);
    cluster::reference_sum(ref.data(), n, opt_.seed, iteration, world);
    int result = 0;
    for (uint32_t r = 0; r < world; ++r) {
      runtime::AllreduceCore& w = net_.worker(r);
      const runtime::OpStatus st = w.status(ops_[r]);
      if (st == runtime::OpStatus::kFailed) {
        if (why.empty()) why = fmt::format("rank {}: {}", r, w.op_error(ops_[r]));
        result = 2;
      } else if (result == 0 && cluster::count_mismatches(data_[r].data(), ref.data(), n, nullptr) != 0) {
        why = fmt::format("rank {}: allreduce {} of {} floats has wrong bits", r, iteration, n);
        result = 1;
      }
      w.release(ops_[r]);
    }
    return result;
  }

  void add_counters(Totals& t) const {
    const pswitch::FaultCounters f = net_.fault_counters();
    t.lost += f.lost;
    t.duplicated += f.duplicated;
    t.reordered += f.reordered;
    for (size_t s = 0; s < net_.switch_count(); ++s) t.engine_drops += net_.core(s).counters().engine_drops;
    for (size_t w = 0; w < net_.worker_count(); ++w) {
      const runtime::CommStats st = net_.worker(w).stats();
      t.retransmissions += st.retransmissions;
      t.duplicate_results += st.duplicate_results;
    }
    t.frames += net_.frames_delivered();
    t.virtual_ns += net_.now();
  }

 private:
  static fabric::Options options(const Options& o) {
    fabric::Options f;
    f.link_delay_ns = o.link_delay_ns;
    f.seed = o.seed;
    return f;
  }

  const Options& opt_;
  fabric::Fabric net_;
  std::vector<std::vector<float>> data_;
  std::vector<runtime::OpId> ops_;
};

Totals soak(const std::string& topology, const Options& o) {
  const bool two_tier = topology == "two-tier";
  const uint32_t workers = two_tier ? o.workers_two_tier : o.workers_single;
  nlohmann::json cj = two_tier ? controller::two_tier_cluster(workers, 2, 2, 10.0)
                               : controller::single_switch_cluster(workers, 10.0);
  cj["port_defaults"] = {{"loss", o.loss}, {"dup", o.dup}, {"reorder", o.reorder}, {"seed", o.seed}};
  const controller::ClusterDesc cluster = controller::parse_cluster(cj);
  controller::JobsDesc jobs;
  controller::JobDesc job;
  job.id = 1;
  job.trees = o.trees;
  for (uint32_t w = 0; w < workers; ++w) job.workers.push_back("w" + std::to_string(w));
  jobs.jobs.push_back(job);
  jobs.elems_per_packet = o.elems_per_packet;

  fmt::print(
      "{}: {} workers, {} trees, {} allreduces of {} floats in turn, {} floats per packet; "
      "per PSwitch port and direction: loss {}, duplication {}, reordering {}; seed {}\n",
      topology, workers, o.trees, o.allreduces, fmt::join(o.sizes, "/"), o.elems_per_packet, o.loss, o.dup,
      o.reorder, o.seed);
  std::fflush(stdout);

  Totals t;
  const controller::Deployment dep = controller::plan_deployment(cluster, jobs);
  auto run = std::make_unique<Soak>(dep, o);
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (uint64_t i = 0; i < o.allreduces; ++i) {
    std::string why;
    const int r = run->allreduce(static_cast<uint32_t>(i), o.sizes[i % o.sizes.size()], why);
    if (r == 0) ++t.completed;
    if (r == 1) ++t.wrong;
    if (r == 2) ++t.failed;
    if (r != 0) {
      if (t.first_failure.empty()) t.first_failure = fmt::format("allreduce {}: {}", i, why);
      fmt::print(stderr, "{}: allreduce {}: {}\n", topology, i, why);
    }
    if (r == 2) {  // the communicator is dead: restart the job on a fresh fabric
      run->add_counters(t);
      run = std::make_unique<Soak>(dep, o);
      ++t.restarts;
    }
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last).count() >= o.progress_s || i + 1 == o.allreduces) {
      last = now;
      fmt::print(stderr, "{}: {}/{} done: completed {} wrong {} failed {} ({:.0f} s)\n", topology, i + 1,
                 o.allreduces, t.completed, t.wrong, t.failed,
                 std::chrono::duration<double>(now - start).count());
    }
  }
  run->add_counters(t);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{}: completed {} wrong {} failed {} (restarts {})\n", topology, t.completed, t.wrong, t.failed,
             t.restarts);
  fmt::print(
      "{}: faults injected: {} lost, {} duplicated, {} reordered of {} frames delivered; "
      "{} retransmissions, {} duplicate results, {} engine drops\n",
      topology, t.lost, t.duplicated, t.reordered, t.frames, t.retransmissions, t.duplicate_results,
      t.engine_drops);
  fmt::print("{}: {:.1f} s wall, {:.0f} allreduces/s, {:.1f} s virtual time\n", topology, secs,
             static_cast<double>(o.allreduces) / secs, static_cast<double>(t.virtual_ns) * 1e-9);
  if (!t.first_failure.empty()) fmt::print("{}: first problem: {}\n", topology, t.first_failure);
  std::fflush(stdout);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "Loss soak: allreduces through AllreduceCore workers and engine-model PSwitches, in one "
      "process, under seeded loss, duplication and reordering. Prints completed / wrong / failed."};
  app.add_option("--allreduces", o.allreduces, "allreduces per topology")->capture_default_str();
  app.add_option("--topology", o.topology, "single, two-tier or both")
      ->check(CLI::IsMember({"single", "two-tier", "both"}))
      ->capture_default_str();
  app.add_option("--workers-single", o.workers_single, "workers on the single PSwitch")
      ->capture_default_str();
  app.add_option("--workers-two-tier", o.workers_two_tier, "workers on 2 leaves under 2 spines")
      ->capture_default_str();
  app.add_option("--trees", o.trees, "aggregation trees of the job")->capture_default_str();
  app.add_option("--loss", o.loss, "loss probability per PSwitch port and direction")->capture_default_str();
  app.add_option("--dup", o.dup, "duplication probability")->capture_default_str();
  app.add_option("--reorder", o.reorder, "reordering probability")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the faults and the tensors")->capture_default_str();
  app.add_option("--sizes", o.sizes, "allreduce sizes in floats, used in turn")->capture_default_str();
  app.add_option("--elems-per-packet", o.elems_per_packet, "floats per packet")->capture_default_str();
  app.add_option("--progress", o.progress_s, "seconds between progress lines (stderr)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (o.sizes.empty()) {
    fmt::print(stderr, "--sizes: at least one size is needed\n");
    return 2;
  }
  try {
    bool clean = true;
    for (const char* t : {"single", "two-tier"}) {
      if (o.topology != "both" && o.topology != t) continue;
      const Totals r = soak(t, o);
      clean = clean && r.wrong == 0 && r.failed == 0;
    }
    return clean ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "panama-bench-soak: {}\n", e.what());
    return 2;
  }
}
