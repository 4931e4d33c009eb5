// The software PSwitch over real DPDK ports (net_ring pairs): a result is
// replicated to the tree's child ports by sharing one reference-counted
// mbuf, and a port whose queue marks CE gets a copy of its own, so the mark
// never reaches the other children's frames.
#include <catch2/catch.hpp>

#include <rte_mbuf.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../runtime/eal_args.hpp"
#include "panama/controller/controller.hpp"
#include "panama/pswitch/software_pswitch.hpp"
#include "panama/runtime/dpdk.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::test;
using panama::runtime::DpdkEal;
using panama::runtime::DpdkPort;
using panama::runtime::PortConfig;

namespace {

constexpr uint32_t kWorkers = 4;
constexpr uint16_t kElems = 1024;  // 4 KiB payload per frame
constexpr uint32_t kSlots = 24;    // results in one burst (within the tree's share)

std::vector<uint8_t> frame_bytes(rte_mbuf* m) {
  const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
  return {d, d + rte_pktmbuf_data_len(m)};
}

}  // namespace

TEST_CASE("replicated results share one mbuf; a marking port's copy is its own", "[dpdk]") {
  auto eal = DpdkEal::initialize(test_eal_args());
  nlohmann::json cluster = controller::single_switch_cluster(kWorkers, 10.0);
  cluster["packet_memory"] = 64;
  nlohmann::json ws = nlohmann::json::array();
  for (uint32_t i = 0; i < kWorkers; ++i) ws.push_back("w" + std::to_string(i));
  const nlohmann::json jobs = {{"jobs", nlohmann::json::array({{{"id", 5}, {"workers", ws}, {"trees", 1}}})},
                               {"elems_per_packet", kElems}};
  const controller::Deployment dep =
      controller::plan_deployment(controller::parse_cluster(cluster), controller::parse_jobs(jobs));
  REQUIRE(dep.switches.size() == 1);
  config::NodeConfig node = dep.switches[0].node;
  // Port 0: a slow link with a low K, so its queue grows past K while the
  // burst of results arrives; the other ports are unlimited and never mark.
  // No CE from the engine's own queue (the whole burst arrives at once).
  node.pswitch["engine_ecn_k_bytes"] = 1u << 30;
  nlohmann::json& ports = node.pswitch["ports"];
  REQUIRE(ports.size() == kWorkers);
  for (uint32_t p = 0; p < kWorkers; ++p) {
    ports[p]["rate_gbps"] = p == 0 ? 1.0 : 0.0;
    ports[p]["ecn_k_bytes"] = p == 0 ? 16384 : 1u << 30;
  }
  std::vector<std::string> sw_dev;
  std::vector<std::unique_ptr<DpdkPort>> workers;
  for (uint32_t p = 0; p < kWorkers; ++p) {
    const auto names = eal->create_ring_pair("mc_s" + std::to_string(p), "mc_w" + std::to_string(p));
    sw_dev.push_back(names.first);
    workers.push_back(std::make_unique<DpdkPort>(eal, PortConfig{names.second}));
  }
  pswitch::SoftwarePswitch sw(node, eal, sw_dev);
  REQUIRE(sw.settings().trees.size() == 1);
  const std::vector<uint32_t>& children = sw.settings().trees[0].children;
  REQUIRE(children.size() == kWorkers);

  // Every worker contributes kSlots chunks; chunk s of worker c holds
  // (s + 1) * (c + 1) + k / 1024 in element k: small integers, exact sums.
  for (uint32_t c = 0; c < kWorkers; ++c) {
    // The port bound to child c.
    const uint32_t port = children[c];
    std::vector<rte_mbuf*> burst;
    for (uint32_t s = 0; s < kSlots; ++s) {
      std::vector<uint32_t> pl(kElems);
      for (uint32_t k = 0; k < kElems; ++k) pl[k] = f2u(static_cast<float>((s + 1) * (c + 1)) + k / 1024.0f);
      const auto f = make_frame(contribution(5, 0, static_cast<uint16_t>(c), s, kElems), pl);
      uint8_t* d = nullptr;
      rte_mbuf* m = workers[port]->alloc_frame(static_cast<uint32_t>(f.size()), &d);
      REQUIRE(m != nullptr);
      std::copy(f.begin(), f.end(), d);
      burst.push_back(m);
    }
    REQUIRE(workers[port]->tx_burst(burst.data(), static_cast<uint16_t>(burst.size())) == burst.size());
  }
  // Run the switch until every port has received every result (port 0
  // paces 24 x 4.2 KB at 1 Gbit/s: about 0.8 ms of virtual link time).
  std::vector<std::vector<std::vector<uint8_t>>> got(kWorkers);
  std::vector<uint16_t> refcnt_seen;
  for (int round = 0; round < 2000000; ++round) {
    sw.poll(pswitch::SoftwarePswitch::now_ns());
    bool all = true;
    for (uint32_t p = 0; p < kWorkers; ++p) {
      rte_mbuf* rx[32];
      const uint16_t n = workers[p]->rx_burst(rx, 32);
      for (uint16_t i = 0; i < n; ++i) {
        refcnt_seen.push_back(rte_mbuf_refcnt_read(rx[i]));
        got[p].push_back(frame_bytes(rx[i]));
      }
      DpdkPort::free_bulk(rx, n);
      all &= got[p].size() >= kSlots;
    }
    if (all) break;
  }
  for (uint32_t p = 0; p < kWorkers; ++p) REQUIRE(got[p].size() == kSlots);

  uint32_t marked0 = 0;
  for (uint32_t p = 0; p < kWorkers; ++p) {
    for (uint32_t s = 0; s < kSlots; ++s) {
      const std::vector<uint8_t>& f = got[p][s];
      REQUIRE(f[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown));
      CHECK(wire::load_be32(f.data() + wire::kPanamaSeq) == s);
      const std::vector<uint32_t> pl = payload_of(f);
      REQUIRE(pl.size() == kElems);
      bool exact = true;
      for (uint32_t k = 0; k < kElems; ++k) {
        float want = 0;
        for (uint32_t c = 0; c < kWorkers; ++c) want += static_cast<float>((s + 1) * (c + 1)) + k / 1024.0f;
        exact &= pl[k] == f2u(want);
      }
      CHECK(exact);
      CHECK(wire::ipv4_header_checksum(f.data() + wire::kIpOffset) == 0);
      const uint8_t ecn = f[wire::kIpTos] & 3;
      if (p == 0) {
        marked0 += ecn == wire::kEcnCe;
      } else {
        CHECK(ecn != wire::kEcnCe);  // port 0's marks stay on port 0's copies
      }
    }
  }
  // The queue of port 0 went over K during the burst: some of its results
  // were marked, and those were copies of their own.
  CHECK(marked0 > 0);
  CHECK(marked0 < kSlots);
  const nlohmann::json c = sw.counters_json();
  const uint64_t shared = c["switch"]["shared_copies"].get<uint64_t>();
  // Per result, the unmarked children share one mbuf: 3 references that are
  // not copies when port 0 did not mark, 2 when it did.
  CHECK(shared == (kSlots - marked0) * (kWorkers - 1) + marked0 * (kWorkers - 2));
  // Shared mbufs reached the receivers with more than one reference.
  CHECK(std::count_if(refcnt_seen.begin(), refcnt_seen.end(), [](uint16_t r) { return r > 1; }) > 0);
}
