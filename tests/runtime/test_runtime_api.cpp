// End to end through DPDK: workers' Runtimes on net_ring ports, a real
// engine (LoopbackSwitch) as the root of every tree, several communicators
// per port, several allreduces in flight, loss, and the error paths. With two
// workers a result is a single fp32 addition a + b (commutative), so the
// expected bits are computed here exactly, for arbitrary floats; for bf16 and
// fp16 that sum rounded once to the type. The C API's typed calls too.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "eal_args.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/regmap.hpp"
#include "panama/runtime/loopback_switch.hpp"
#include "panama/runtime/runtime.hpp"
#include "panama_runtime.h"
#include "support/frames.hpp"
#include "wire/seeded_rng.hpp"

using namespace panama;
using namespace panama::runtime;
using panama::test::f2u;

namespace {

std::shared_ptr<DpdkEal> eal() {
  return DpdkEal::initialize(panama::test::test_eal_args());
}

uint64_t seed_from_env() {
  if (const char* s = std::getenv("PANAMA_TEST_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

Plan worker_plan(uint16_t job, uint32_t rank, uint32_t trees, uint32_t elems) {
  Plan p;
  p.job_id = job;
  p.rank = rank;
  p.world_size = 2;
  p.local_mac = {0x02, 0, 0, 0, 1, static_cast<uint8_t>(rank)};
  p.local_ip = 0x0A000100u + rank;
  p.elems_per_packet = elems;
  for (uint32_t t = 0; t < trees; ++t) {
    TreePlan tp;
    tp.tree_id = static_cast<uint8_t>(t);
    tp.child_id = static_cast<uint16_t>(rank);
    tp.dst_mac = {0x02, 0, 0, 0, 0, 0xFE};
    tp.dst_ip = 0x0A0000FEu;
    tp.initial_cwnd_cap = 8;
    p.trees.push_back(tp);
  }
  p.congestion.rto_initial_us = 20000;  // the shared CI machine can be slow; don't retransmit eagerly
  p.congestion.rto_min_us = 5000;
  return p;
}

// Two workers (each its own Runtime and port) and a switch port for each.
struct TwoWorkers {
  std::string w[2], s[2];
  explicit TwoWorkers(const std::string& tag) {
    for (int i = 0; i < 2; ++i) {
      auto names = eal()->create_ring_pair(tag + "w" + std::to_string(i), tag + "s" + std::to_string(i));
      w[i] = names.first;
      s[i] = names.second;
    }
  }
};

std::vector<float> random_floats(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

size_t mismatches(const std::vector<float>& got, const std::vector<float>& a, const std::vector<float>& b) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += f2u(got[i]) != f2u(a[i] + b[i]);
  return bad;
}

}  // namespace

TEST_CASE("api: two workers, two jobs sharing each port, blocking and async allreduces through DPDK") {
  const uint64_t seed = seed_from_env();
  std::cout << "test_runtime_api: seed " << seed << " (PANAMA_TEST_SEED to reproduce)\n";
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  TwoWorkers net("a");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0], net.s[1]};
  for (uint8_t t = 0; t < 3; ++t) sc.entries.push_back({1, t, 2, 0x3, 16});  // job 1: 3 trees
  sc.entries.push_back({2, 0, 2, 0x3, 8});                                   // job 2: 1 tree
  LoopbackSwitch sw(eal(), sc);

  auto rt0 = Runtime::create(eal());
  auto rt1 = Runtime::create(eal());
  std::unique_ptr<Communicator> job1[2] = {rt0->communicator(worker_plan(1, 0, 3, 256), net.w[0]),
                                           rt1->communicator(worker_plan(1, 1, 3, 256), net.w[1])};
  std::unique_ptr<Communicator> job2[2] = {rt0->communicator(worker_plan(2, 0, 1, 100), net.w[0]),
                                           rt1->communicator(worker_plan(2, 1, 1, 100), net.w[1])};

  // Job 1: blocking allreduces of several sizes, each worker in its own thread.
  const std::vector<size_t> sizes = {1, 255, 256, 257, 10000, 65536};
  std::vector<std::vector<float>> in[2], out[2];
  for (size_t n : sizes) {
    for (int w = 0; w < 2; ++w) {
      in[w].push_back(random_floats(rng, n));
      out[w].push_back(in[w].back());
    }
  }
  // Job 2 at the same time: three asynchronous allreduces in flight per worker.
  std::vector<float> a2[2][3], b2[2][3];
  for (int w = 0; w < 2; ++w) {
    for (int k = 0; k < 3; ++k) {
      a2[w][k] = random_floats(rng, 3000 + 1000 * k);
      b2[w][k] = a2[w][k];
    }
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      AllreduceHandle h[3];
      for (int k = 0; k < 3; ++k) h[k] = job2[w]->allreduce_async(b2[w][k].data(), b2[w][k].size());
      for (auto& v : out[w]) job1[w]->allreduce(v.data(), v.size());
      for (auto& x : h) x.wait();
    });
  }
  for (auto& t : threads) t.join();

  for (int w = 0; w < 2; ++w) {
    for (size_t i = 0; i < sizes.size(); ++i) CHECK(mismatches(out[w][i], in[0][i], in[1][i]) == 0);
    for (int k = 0; k < 3; ++k) CHECK(mismatches(b2[w][k], a2[0][k], a2[1][k]) == 0);
    const CommStats st = job1[w]->stats();
    size_t total = 0, chunks = 0;
    for (size_t n : sizes) {
      total += n;
      chunks += (n + 255) / 256;
    }
    CHECK(st.bytes_issued == 4 * total);
    CHECK(st.bytes_completed == 4 * total);
    CHECK(st.ops_completed == sizes.size());
    CHECK(st.packets_sent >= chunks);
    REQUIRE(st.trees.size() == 3);
    for (const TreeStats& t : st.trees) {
      CHECK(t.cwnd >= 1);
      CHECK(t.cwnd <= t.cwnd_cap);
      CHECK(t.cwnd_cap == 16);  // the switch's share for job 1
    }
    CHECK(job2[w]->stats().trees[0].cwnd_cap == 8);
  }
  CHECK(sw.global_counter(regmap::kGcDropSeqWindow) == 0);
  CHECK(sw.global_counter(regmap::kGcDropUnknownEntry) == 0);
}

TEST_CASE("api: results are exact under 5% frame loss at the switch (retransmissions through DPDK)") {
  const uint64_t seed = seed_from_env();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  TwoWorkers net("b");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0], net.s[1]};
  sc.entries.push_back({5, 0, 2, 0x3, 16});
  sc.entries.push_back({5, 1, 2, 0x3, 16});
  sc.rx_loss = 0.05;
  sc.seed = seed;
  LoopbackSwitch sw(eal(), sc);
  auto rt0 = Runtime::create(eal());
  auto rt1 = Runtime::create(eal());
  Plan p0 = worker_plan(5, 0, 2, 256), p1 = worker_plan(5, 1, 2, 256);
  for (Plan* p : {&p0, &p1}) {
    p->congestion.rto_initial_us = 2000;
    p->congestion.rto_min_us = 2000;
    p->congestion.rto_max_us = 50000;
  }
  auto c0 = rt0->communicator(p0, net.w[0]);
  auto c1 = rt1->communicator(p1, net.w[1]);
  const auto a = random_floats(rng, 20000), b = random_floats(rng, 20000);
  auto x = a, y = b;
  auto h0 = c0->allreduce_async(x.data(), x.size());
  auto h1 = c1->allreduce_async(y.data(), y.size());
  h0.wait();
  h1.wait();
  CHECK(mismatches(x, a, b) == 0);
  CHECK(mismatches(y, a, b) == 0);
  CHECK(sw.frames_lost() > 0);
  CHECK(c0->stats().retransmissions + c1->stats().retransmissions > 0);
}

TEST_CASE("api: a job the switch does not know fails after the retry budget instead of hanging") {
  TwoWorkers net("c");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0]};
  LoopbackSwitch sw(eal(), sc);  // no entries: every contribution is dropped
  auto rt = Runtime::create(eal());
  Plan p = worker_plan(9, 0, 1, 64);
  p.congestion.rto_initial_us = 1000;
  p.congestion.rto_min_us = 1000;
  p.congestion.rto_max_us = 4000;
  p.congestion.retry_budget = 4;
  auto c = rt->communicator(p, net.w[0]);
  std::vector<float> v(100, 1.0f);
  // The chunk fails once it has used the budget (4 retransmissions) and the
  // tree has been silent for budget x rto_max; more retransmissions may fall
  // in that time on a loaded machine, never fewer.
  std::string err;
  try {
    c->allreduce(v.data(), v.size());
  } catch (const std::exception& e) {
    err = e.what();
  }
  CHECK_THAT(err,
             Catch::Contains("got no result after") && Catch::Contains("retransmissions (retry_budget)"));
  const size_t at = err.find("got no result after ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoul(err.substr(at + std::string("got no result after ").size())) >= 4);
  CHECK(c->stats().ops_failed == 1);
  CHECK(sw.global_counter(regmap::kGcDropUnknownEntry) >= 5);
  CHECK_THROWS_WITH(c->allreduce(v.data(), v.size()), Catch::Contains("allreduce failed"));
}

TEST_CASE("api: configuration errors are reported clearly") {
  TwoWorkers net("d");
  auto rt = Runtime::create(eal());
  CHECK_THROWS_AS(rt->communicator(worker_plan(1, 0, 1, 64), "net_nosuch9"), DpdkPortNotFound);
  CHECK_THROWS_WITH(rt->communicator(worker_plan(1, 0, 1, 64)), Catch::Contains("no DPDK port given"));
  Plan bad = worker_plan(1, 0, 1, 64);
  bad.rank = 5;
  CHECK_THROWS_AS(rt->communicator(bad, net.w[0]), PlanError);
  auto c = rt->communicator(worker_plan(3, 0, 1, 64), net.w[0]);
  CHECK_THROWS_WITH(rt->communicator(worker_plan(3, 1, 1, 64), net.w[0]),
                    Catch::Contains("already has a communicator"));
  RuntimeOptions small;
  small.port.max_frame_bytes = 1500;
  auto rt2 = Runtime::create(eal(), small);
  CHECK_THROWS_WITH(rt2->communicator(worker_plan(4, 0, 1, 1024), net.w[1]),
                    Catch::Contains("more than port"));
}

TEST_CASE("api: without a progress thread, wait() drives progress") {
  TwoWorkers net("e");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0]};
  sc.entries.push_back({6, 0, 1, 0x1, 32});  // single-child tree: the result is the contribution
  LoopbackSwitch sw(eal(), sc);
  RuntimeOptions o;
  o.progress_thread = false;
  auto rt = Runtime::create(eal(), o);
  Plan p = worker_plan(6, 0, 1, 300);
  p.world_size = 1;
  auto c = rt->communicator(p, net.w[0]);
  std::vector<float> v(5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.25f - 7.0f;
  const auto orig = v;
  auto h = c->allreduce_async(v.data(), v.size());
  h.wait();
  size_t bad = 0;
  for (size_t i = 0; i < v.size(); ++i) bad += f2u(v[i]) != f2u(orig[i]);
  CHECK(bad == 0);
  CHECK(c->stats().bytes_completed == 4 * v.size());
  CHECK(sw.global_counter(regmap::kGcEmitted) == (5000 + 299) / 300);
}

TEST_CASE("api: results already received are read before any timer is checked") {
  // Without a progress thread nothing is read while the test sleeps: the
  // switch answers a whole window of 64 chunks meanwhile, and the RTO passes.
  // The next pass must read every waiting result (not just one burst of 32)
  // before it looks at the timers: none of those chunks is late.
  TwoWorkers net("r");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0]};
  sc.entries.push_back({8, 0, 1, 0x1, 64});
  LoopbackSwitch sw(eal(), sc);
  RuntimeOptions o;
  o.progress_thread = false;
  auto rt = Runtime::create(eal(), o);
  Plan p = worker_plan(8, 0, 1, 64);
  p.world_size = 1;
  p.trees[0].initial_cwnd_cap = 64;
  p.congestion.initial_cwnd = 64;
  p.congestion.rto_initial_us = 2000;
  p.congestion.rto_min_us = 2000;
  auto c = rt->communicator(p, net.w[0]);
  std::vector<float> v(64 * 64, 1.5f);
  auto h = c->allreduce_async(v.data(), v.size());
  CHECK_FALSE(h.test());  // one pass: the whole window goes out
  for (int i = 0; i < 200 && sw.global_counter(regmap::kGcEmitted) < 64; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(sw.global_counter(regmap::kGcEmitted) == 64);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // well past the RTO
  h.wait();
  CHECK(c->stats().timeouts == 0);
  CHECK(c->stats().retransmissions == 0);
  CHECK(sw.global_counter(regmap::kGcEmitted) == 64);
}

TEST_CASE("api: the C API runs allreduces (float and typed) and reports errors with codes and messages") {
  TwoWorkers net("f");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0], net.s[1]};
  sc.entries.push_back({11, 0, 2, 0x3, 16});
  LoopbackSwitch sw(eal(), sc);
  const std::vector<std::string> args = panama::test::test_eal_args();
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  panama_runtime* rt = nullptr;
  REQUIRE(panama_runtime_create(argv.data(), static_cast<int>(argv.size()), &rt) == PANAMA_OK);

  panama_comm* bad = nullptr;
  CHECK(panama_comm_create_from_json(rt, "{\"job_id\": 1}", net.w[0].c_str(), &bad) == PANAMA_ERR_BAD_PLAN);
  CHECK_THAT(std::string(panama_last_error()), Catch::Contains("rank: missing"));
  CHECK(panama_comm_create(rt, "/nonexistent.json", nullptr, &bad) == PANAMA_ERR_BAD_PLAN);
  CHECK(bad == nullptr);
  const std::string p0 = plan_to_json(worker_plan(11, 0, 1, 256));
  const std::string p1 = plan_to_json(worker_plan(11, 1, 1, 256));
  CHECK(panama_comm_create_from_json(rt, p0.c_str(), "net_nosuch3", &bad) == PANAMA_ERR_PORT_NOT_FOUND);
  CHECK_THAT(std::string(panama_last_error()), Catch::Contains("net_nosuch3"));
  CHECK(panama_allreduce(nullptr, nullptr, 1) == PANAMA_ERR_INVALID_ARGUMENT);

  panama_comm *c0 = nullptr, *c1 = nullptr;
  REQUIRE(panama_comm_create_from_json(rt, p0.c_str(), net.w[0].c_str(), &c0) == PANAMA_OK);
  REQUIRE(panama_comm_create_from_json(rt, p1.c_str(), net.w[1].c_str(), &c1) == PANAMA_OK);
  std::vector<float> a(1000), b(1000);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.5f;
  }
  panama_request* r0 = nullptr;
  REQUIRE(panama_allreduce_async(c0, a.data(), a.size(), &r0) == PANAMA_OK);
  REQUIRE(panama_allreduce(c1, b.data(), b.size()) == PANAMA_OK);
  CHECK(panama_request_wait_for(r0, 10000) == PANAMA_OK);
  int done = 0;
  CHECK(panama_request_test(r0, &done) == PANAMA_OK);
  CHECK(done == 1);
  panama_request_free(r0);
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i] == static_cast<float>(i) + 2.5f);
    REQUIRE(b[i] == a[i]);
  }
  panama_comm_stats st;
  panama_tree_stats ts[4];
  REQUIRE(panama_comm_stats_get(c0, &st, ts, 4) == PANAMA_OK);
  CHECK(st.job_id == 11);
  CHECK(st.num_trees == 1);
  CHECK(st.bytes_completed == 4000);
  CHECK(ts[0].cwnd_cap == 16);
  CHECK(std::string(panama_status_name(PANAMA_ERR_JOB_FAILED)) == "job failed");

  // Typed allreduces (panama_allreduce_typed, panama_allreduce_typed_async):
  // bf16: 1 + 2^-8 is a tie that stays 1 (even); (1 + 2^-7) + 2^-8 goes up to 1 + 2^-6.
  // fp16: 1 + 2^-11 and (1 + 2^-10) + 2^-11 likewise.
  const struct {
    panama_dtype dtype;
    uint16_t a, b, want;
  } cases[] = {{PANAMA_BFLOAT16, 0x3F80, 0x3B80, 0x3F80},
               {PANAMA_BFLOAT16, 0x3F81, 0x3B80, 0x3F82},
               {PANAMA_FLOAT16, 0x3C00, 0x1000, 0x3C00},
               {PANAMA_FLOAT16, 0x3C01, 0x1000, 0x3C02}};
  uint64_t bytes = st.bytes_completed;  // the float allreduce's
  for (const auto& c : cases) {
    INFO(panama_dtype_name(c.dtype) << " " << c.a << " + " << c.b);
    std::vector<uint16_t> x(700, c.a), y(700, c.b);
    panama_request* r = nullptr;
    REQUIRE(panama_allreduce_typed_async(c0, x.data(), x.size(), c.dtype, &r) == PANAMA_OK);
    REQUIRE(panama_allreduce_typed(c1, y.data(), y.size(), c.dtype) == PANAMA_OK);
    CHECK(panama_request_wait_for(r, 10000) == PANAMA_OK);
    panama_request_free(r);
    CHECK(x == std::vector<uint16_t>(700, c.want));
    CHECK(y == x);
    bytes += 2 * 700;
  }
  // fp32 through the typed call is the float call.
  std::vector<float> f(300, 1.5f), g(300, 2.0f);
  panama_request* r = nullptr;
  REQUIRE(panama_allreduce_typed_async(c0, f.data(), f.size(), PANAMA_FLOAT32, &r) == PANAMA_OK);
  REQUIRE(panama_allreduce(c1, g.data(), g.size()) == PANAMA_OK);
  CHECK(panama_request_wait(r) == PANAMA_OK);
  panama_request_free(r);
  CHECK(f == std::vector<float>(300, 3.5f));
  bytes += 4 * 300;
  REQUIRE(panama_comm_stats_get(c0, &st, nullptr, 0) == PANAMA_OK);
  CHECK(st.bytes_completed == bytes);

  // A dtype that is none: an error status and a message, nothing sent.
  std::vector<uint16_t> v(10, 0x3F80);
  CHECK(panama_allreduce_typed(c0, v.data(), v.size(), static_cast<panama_dtype>(4)) ==
        PANAMA_ERR_INVALID_ARGUMENT);
  CHECK_THAT(std::string(panama_last_error()),
             Catch::Contains("dtype 4") && Catch::Contains("PANAMA_BFLOAT16"));
  CHECK(panama_allreduce_typed_async(c0, v.data(), v.size(), static_cast<panama_dtype>(0), &r) ==
        PANAMA_ERR_INVALID_ARGUMENT);
  CHECK(r == nullptr);
  CHECK_THAT(std::string(panama_last_error()), Catch::Contains("panama_allreduce_typed_async: dtype 0"));
  CHECK(panama_allreduce_typed(c0, nullptr, 3, PANAMA_FLOAT16) == PANAMA_ERR_INVALID_ARGUMENT);
  CHECK(v == std::vector<uint16_t>(10, 0x3F80));
  CHECK(std::string(panama_dtype_name(PANAMA_BFLOAT16)) == "bf16");
  CHECK(std::string(panama_dtype_name(static_cast<panama_dtype>(9))) == "unknown dtype");
  panama_comm_stats after;
  REQUIRE(panama_comm_stats_get(c0, &after, nullptr, 0) == PANAMA_OK);
  CHECK(after.packets_sent == st.packets_sent);
  CHECK(after.ops_started == st.ops_started);
  // Nothing owed to the peer; a job with fixed shares has no pool statistics.
  CHECK(panama_comm_settle(c0, 10000) == PANAMA_OK);
  panama_pool_stats ps;
  ps.groups = 99;
  REQUIRE(panama_comm_pool_stats_get(c0, &ps) == PANAMA_OK);
  CHECK(ps.groups == 0);
  CHECK(ps.claims_sent == 0);
  panama_comm_destroy(c0);
  panama_comm_destroy(c1);
  panama_runtime_destroy(rt);
}

// 16-bit allreduces through DPDK and the loopback engine: two workers, so a
// result is round(fp32(a) + fp32(b)) (commutative), computed here with the
// independent rounding of panama/cluster/test_data.hpp, for random patterns
// of every class; the bytes are counted in the type.
TEST_CASE("api: bf16 and fp16 allreduces, blocking and async, are bit-exact in their type") {
  const uint64_t seed = panama::test::test_seed("api elem16");
  std::mt19937_64 rng(seed);
  TwoWorkers net("h");
  LoopbackSwitchConfig sc;
  sc.ports = {net.s[0], net.s[1]};
  sc.entries.push_back({12, 0, 2, 0x3, 16});
  sc.entries.push_back({12, 1, 2, 0x3, 16});
  LoopbackSwitch sw(eal(), sc);
  auto rt0 = Runtime::create(eal());
  auto rt1 = Runtime::create(eal());
  auto c0 = rt0->communicator(worker_plan(12, 0, 2, 256), net.w[0]);
  auto c1 = rt1->communicator(worker_plan(12, 1, 2, 256), net.w[1]);
  size_t bytes = 0;
  for (wire::ElemType t : {wire::ElemType::kBfloat16, wire::ElemType::kFloat16}) {
    INFO(cluster::dtype_name(t));
    const size_t n = 5000 + rng() % 3000;
    std::vector<uint16_t> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = static_cast<uint16_t>(rng());
      b[i] = static_cast<uint16_t>(rng());
    }
    auto x = a, y = b;
    auto h = c0->allreduce_async(x.data(), n, t);
    c1->allreduce(y.data(), n, t);
    h.wait();
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      const float sum =
          static_cast<float>(cluster::value16(a[i], t)) + static_cast<float>(cluster::value16(b[i], t));
      const uint16_t want = cluster::round16(sum, t);
      wrong += x[i] != want || y[i] != want;
    }
    CHECK(wrong == 0);
    bytes += 2 * n;
  }
  CHECK(c0->stats().bytes_completed == bytes);
  CHECK(c1->stats().bytes_issued == bytes);
  std::vector<uint16_t> v(4);
  CHECK_THROWS_WITH(c0->allreduce(v.data(), v.size(), static_cast<wire::ElemType>(0)),
                    Catch::Contains("element type 0"));
  CHECK(sw.global_counter(regmap::kGcDropBadElemType) == 0);
  CHECK(sw.global_counter(regmap::kGcDropTypeMismatch) == 0);
}
