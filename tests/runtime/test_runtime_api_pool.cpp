// The C API on a pooled job (docs/hybrid-allreduce.md): two workers through
// the software PSwitch over net_ring pairs, planned by the controller with a
// pool that holds one group at a time. Whether a given group is granted or
// reduced on the ring depends on timing, so the test asserts what holds
// either way: exact sums (two workers: a + b, commutative, whichever path),
// every group finished exactly once and the same way on both workers, the
// first group granted (its claim finds the pool empty), every group
// released and the pool free again once both workers have settled.
#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "eal_args.hpp"
#include "panama/controller/controller.hpp"
#include "panama/pswitch/software_pswitch.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/plan_file.hpp"
#include "panama_runtime.h"
#include "support/frames.hpp"

using namespace panama;
using panama::test::f2u;

namespace {

constexpr uint32_t kElems = 256;  // per packet
constexpr uint32_t kGroup = 4;    // sequences per group

uint64_t seed_from_env() {
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

}  // namespace

TEST_CASE("api: a pooled job through the software PSwitch; pool statistics and settle in the C API",
          "[dpdk][pool]") {
  const uint64_t seed = seed_from_env();
  INFO("PANAMA_TEST_SEED=" << seed);
  auto eal = runtime::DpdkEal::initialize(test::test_eal_args());

  const nlohmann::json cluster = controller::single_switch_cluster(2, 10.0);
  // A pool of one group; the lease is far longer than the test, so no
  // wall-clock time decides anything.
  const nlohmann::json jobs = {
      {"pool", {{"slots", kGroup}, {"lease_us", 60'000'000}}},
      {"jobs", {{{"id", 9}, {"workers", {"w0", "w1"}}, {"memory", "pooled"}, {"group", kGroup}}}},
      {"elems_per_packet", kElems}};
  const controller::Deployment dep =
      controller::plan_deployment(controller::parse_cluster(cluster), controller::parse_jobs(jobs));
  REQUIRE(dep.switches.size() == 1);
  REQUIRE(dep.workers.size() == 2);
  const controller::SwitchOutput& so = dep.switches[0];
  REQUIRE(so.settings.pool);

  // One net_ring pair per switch port; the worker end goes to the host the port is named after.
  std::vector<std::string> sw_dev(so.settings.ports.size());
  std::vector<std::string> host_dev(2);
  for (size_t p = 0; p < so.settings.ports.size(); ++p) {
    const auto names = eal->create_ring_pair("cp_s" + std::to_string(p), "cp_w" + std::to_string(p));
    sw_dev[p] = names.first;
    for (size_t w = 0; w < 2; ++w)
      if (dep.workers[w].host == so.settings.ports[p].name) host_dev[w] = names.second;
  }
  REQUIRE_FALSE(host_dev[0].empty());
  REQUIRE_FALSE(host_dev[1].empty());
  pswitch::SoftwarePswitch sw(so.node, eal, sw_dev);
  std::atomic<bool> stop{false};
  std::thread switch_thread([&] {
    const runtime::EalThreadScope lcore;
    while (!stop.load()) sw.poll(pswitch::SoftwarePswitch::now_ns());
  });

  const std::vector<std::string> args = test::test_eal_args();
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  panama_runtime* rt = nullptr;
  REQUIRE(panama_runtime_create(argv.data(), static_cast<int>(argv.size()), &rt) == PANAMA_OK);
  panama_comm* comm[2] = {nullptr, nullptr};
  for (int w = 0; w < 2; ++w) {
    const std::string plan = runtime::plan_to_json(dep.workers[w].plan);
    REQUIRE(panama_comm_create_from_json(rt, plan.c_str(), host_dev[w].c_str(), &comm[w]) == PANAMA_OK);
  }

  // Three allreduces of 10, 3 and 1 groups (the last one short).
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
  const size_t sizes[] = {10 * kGroup * kElems, 3 * kGroup * kElems - 100, 7};
  uint64_t groups = 0;
  for (const size_t n : sizes) {
    INFO(n << " elements");
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = u(rng);
      b[i] = u(rng);
    }
    std::vector<float> x = a, y = b;
    panama_request* r = nullptr;
    REQUIRE(panama_allreduce_async(comm[0], x.data(), n, &r) == PANAMA_OK);
    REQUIRE(panama_allreduce(comm[1], y.data(), n) == PANAMA_OK);
    REQUIRE(panama_request_wait_for(r, 30000) == PANAMA_OK);
    panama_request_free(r);
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += f2u(x[i]) != f2u(a[i] + b[i]) || f2u(y[i]) != f2u(x[i]);
    CHECK(wrong == 0);
    groups += (n + kGroup * kElems - 1) / (kGroup * kElems);
  }

  for (int w = 0; w < 2; ++w) CHECK(panama_comm_settle(comm[w], 30000) == PANAMA_OK);
  panama_pool_stats st[2];
  for (int w = 0; w < 2; ++w) {
    INFO("worker " << w);
    REQUIRE(panama_comm_pool_stats_get(comm[w], &st[w]) == PANAMA_OK);
    CHECK(st[w].groups == groups);
    CHECK(st[w].granted + st[w].denied == groups);
    CHECK(st[w].granted >= 1);  // the first claim finds the pool empty
    CHECK(st[w].in_network + st[w].on_ring == groups);
    CHECK(st[w].in_network >= 1);
    CHECK(st[w].claims_sent >= groups);
    CHECK(st[w].released == groups);
    CHECK(st[w].confirmed == groups);  // settled: the root confirmed the last release
    CHECK(st[w].releases_sent >= 1);
    CHECK(st[w].ring_malformed == 0);
    // Ring frames go one way round a ring of two: what one sends, the other receives.
    CHECK((st[w].on_ring == 0) == (st[w].ring_frames_sent == 0));
  }
  CHECK(st[0].in_network == st[1].in_network);
  CHECK(st[0].on_ring == st[1].on_ring);

  // Every group released at the engine, the pool free again. Settled
  // workers have sent their last release; the switch handles what is still
  // in its rings (drain) before its counters are read.
  stop = true;
  switch_thread.join();
  sw.drain(20'000'000, 5'000'000'000);
  const nlohmann::json c = sw.counters_json();
  INFO(c.dump());
  REQUIRE(c.contains("pool"));
  CHECK(c["pool"]["free_slots"] == kGroup);

  // Argument errors.
  CHECK(panama_comm_pool_stats_get(comm[0], nullptr) == PANAMA_ERR_INVALID_ARGUMENT);
  CHECK(panama_comm_pool_stats_get(nullptr, &st[0]) == PANAMA_ERR_INVALID_ARGUMENT);
  CHECK(panama_comm_settle(nullptr, 10) == PANAMA_ERR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(panama_last_error()), Catch::Contains("panama_comm_settle"));
  for (auto* c : comm) panama_comm_destroy(c);
  panama_runtime_destroy(rt);
}
