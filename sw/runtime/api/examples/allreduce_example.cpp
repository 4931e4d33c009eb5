// panama-allreduce-example: one worker of a PANAMA job.
//
// Every rank fills its buffer with small integers derived from (rank, i), so
// each rank can compute the exact expected sum over all ranks locally and
// check the result bit for bit. Prints per-iteration progress and the
// communicator's per-tree statistics at the end. Exit code 0 = all correct.
// --dtype bf16|fp16 runs 16-bit allreduces (Communicator::allreduce(void*,
// count, type)): the integers are then -1, 0 or 1, so every sum of up to 256
// ranks is exact in the type as well.
//
//   panama-allreduce-example --plan worker0.json
//       --eal "--no-huge -m 256 --no-pci --file-prefix=w0 --vdev=net_memif0,role=client,socket=/tmp/p.sock"
//   panama-allreduce-example --loopback --trees 2      # self-contained: in-process engine
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "panama/elem16.hpp"
#include "panama/runtime/loopback_switch.hpp"
#include "panama/runtime/runtime.hpp"

using namespace panama::runtime;

namespace {

float value(uint32_t rank, uint32_t iter, size_t i, bool small) {
  const uint64_t h = rank * 7919 + iter * 104729 + i * 31;
  return static_cast<float>(small ? static_cast<int>(h % 3) - 1 : static_cast<int>(h % 2001) - 1000);
}

// The bits of `v` in `type` (little-endian in `out`); exact for the values used here.
void store(uint8_t* out, float v, panama::wire::ElemType type) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (type == panama::wire::ElemType::kFloat32) {
    std::memcpy(out, &bits, 4);
    return;
  }
  const uint16_t h =
      type == panama::wire::ElemType::kBfloat16 ? panama::fp32_to_bf16(bits) : panama::fp32_to_fp16(bits);
  std::memcpy(out, &h, 2);
}

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"PANAMA allreduce example worker"};
  std::string plan_path, eal = "--no-huge -m 512 --no-pci --no-telemetry", device;
  size_t elements = 1 << 20;
  unsigned iterations = 5, trees = 2;
  bool loopback = false;
  std::string dtype = "fp32";
  app.add_option("--plan", plan_path, "job plan of this worker (JSON, docs/runtime.md)");
  app.add_option("--eal", eal, "DPDK EAL arguments (one string)")->capture_default_str();
  app.add_option("--device", device, "DPDK port (default: the plan's \"device\")");
  app.add_option("--dtype", dtype, "element type: fp32, bf16 or fp16")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  app.add_option("--elements", elements, "elements per allreduce")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1} << 30));
  app.add_option("--iterations", iterations, "allreduces to run")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1000000u));
  app.add_flag("--loopback", loopback, "no network: a ring pair and an in-process engine, world size 1");
  app.add_option("--trees", trees, "trees in --loopback mode")
      ->capture_default_str()
      ->check(CLI::Range(1u, 16u));
  CLI11_PARSE(app, argc, argv);
  if (plan_path.empty() && !loopback) {
    std::fprintf(stderr, "error: give --plan FILE, or --loopback\n");
    return 2;
  }

  const panama::wire::ElemType type = std::map<std::string, panama::wire::ElemType>{
      {"fp32", panama::wire::ElemType::kFloat32},
      {"bf16", panama::wire::ElemType::kBfloat16},
      {"fp16",
       panama::wire::ElemType::kFloat16}}.at(dtype);
  const size_t eb = panama::wire::elem_bytes(static_cast<uint8_t>(type));
  const bool small = type != panama::wire::ElemType::kFloat32;
  try {
    auto eal_obj = DpdkEal::initialize(split(eal));
    std::unique_ptr<LoopbackSwitch> sw;
    Plan plan;
    if (loopback) {
      const auto names = eal_obj->create_ring_pair("example_worker", "example_switch");
      LoopbackSwitchConfig sc;
      sc.ports = {names.second};
      plan.job_id = 1;
      plan.local_mac = {0x02, 0, 0, 0, 1, 0};
      plan.local_ip = 0x0A000101;  // 10.0.1.1
      for (unsigned t = 0; t < trees; ++t) {
        TreePlan tp;
        tp.tree_id = static_cast<uint8_t>(t);
        tp.dst_mac = {0x02, 0, 0, 0, 0, 0xFE};
        tp.dst_ip = 0x0A0000FE;  // 10.0.0.254
        plan.trees.push_back(tp);
        sc.entries.push_back({1, static_cast<uint8_t>(t), 1, 0x1, 64});
      }
      device = names.first;
      sw = std::make_unique<LoopbackSwitch>(eal_obj, sc);
    } else {
      plan = load_plan(plan_path);
    }
    auto rt = Runtime::create(eal_obj);
    auto comm = rt->communicator(plan, device);
    std::printf(
        "job %u rank %u/%u on %s: %zu %s elements x %u iterations, %zu tree(s), %u elements per packet\n",
        plan.job_id, plan.rank, plan.world_size, comm->device().c_str(), elements, dtype.c_str(), iterations,
        plan.trees.size(), plan.elems_per_packet);

    std::vector<uint8_t> buf(elements * eb);
    size_t wrong_total = 0;
    for (unsigned it = 0; it < iterations; ++it) {
      for (size_t i = 0; i < elements; ++i) store(&buf[i * eb], value(plan.rank, it, i, small), type);
      const auto t0 = std::chrono::steady_clock::now();
      comm->allreduce(buf.data(), elements, type);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      size_t wrong = 0;
      uint8_t expect_bits[4];
      for (size_t i = 0; i < elements; ++i) {
        float expect = 0;
        for (uint32_t r = 0; r < plan.world_size; ++r) expect += value(r, it, i, small);
        store(expect_bits, expect, type);
        wrong += std::memcmp(&buf[i * eb], expect_bits, eb) != 0;
      }
      wrong_total += wrong;
      std::printf("iteration %u: %.3f s, %.2f Gbit/s of tensor, %zu wrong elements\n", it, s,
                  s > 0 ? 8.0 * static_cast<double>(eb * elements) / s / 1e9 : 0.0, wrong);
    }
    const CommStats st = comm->stats();
    std::printf("sent %llu packets, received %llu results, %llu retransmissions, %llu duplicates, %llu CE\n",
                static_cast<unsigned long long>(st.packets_sent),
                static_cast<unsigned long long>(st.packets_received),
                static_cast<unsigned long long>(st.retransmissions),
                static_cast<unsigned long long>(st.duplicate_results),
                static_cast<unsigned long long>(st.results_ce));
    for (const TreeStats& t : st.trees) {
      std::printf("  tree %u: cwnd %.2f cap %u alpha %.4f srtt %.1f us rto %.1f us, %llu timeouts\n",
                  t.tree_id, t.cwnd, t.cwnd_cap, t.alpha, t.srtt_us, t.rto_us,
                  static_cast<unsigned long long>(t.timeouts));
    }
    std::printf("%s\n", wrong_total == 0 ? "all results correct" : "RESULTS WRONG");
    return wrong_total == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
