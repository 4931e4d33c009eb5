// The software PSwitch with a pool over real DPDK ports (net_ring pairs):
// the controller's single-switch configuration with its one tree made
// pooled. The PSwitch commits only the fixed entries, the workers claim a
// group, the switch commits a claim entry for it, and the group's sums come
// back exact with their own sequences; the counters report the pool.
#include <catch2/catch.hpp>

#include <rte_mbuf.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../runtime/eal_args.hpp"
#include "panama/claim.hpp"
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
constexpr uint16_t kElems = 256;
constexpr uint32_t kG = 4;

std::vector<uint8_t> frame_bytes(rte_mbuf* m) {
  const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
  return {d, d + rte_pktmbuf_data_len(m)};
}

void send(DpdkPort& port, const std::vector<uint8_t>& f) {
  uint8_t* d = nullptr;
  rte_mbuf* m = port.alloc_frame(static_cast<uint32_t>(f.size()), &d);
  REQUIRE(m != nullptr);
  std::copy(f.begin(), f.end(), d);
  REQUIRE(port.tx_burst(&m, 1) == 1);
}

}  // namespace

TEST_CASE("a pooled tree through the software PSwitch", "[dpdk][pool]") {
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
  REQUIRE(node.entries.size() == 1);
  REQUIRE(node.entries[0].index < 8);
  // The lease is far longer than the test: no wall-clock time decides anything.
  node.pswitch["pool"] = {{"base", 0},
                          {"size", 64},
                          {"lease_ns", 100'000'000'000ull},
                          {"table_base", 8},
                          {"table_count", 8},
                          {"trees", {{{"job", 5}, {"tree", 0}, {"group_size", kG}, {"claim_cap", 8}}}}};
  std::vector<std::string> sw_dev;
  std::vector<std::unique_ptr<DpdkPort>> workers;
  for (uint32_t p = 0; p < kWorkers; ++p) {
    const auto names = eal->create_ring_pair("pl_s" + std::to_string(p), "pl_w" + std::to_string(p));
    sw_dev.push_back(names.first);
    workers.push_back(std::make_unique<DpdkPort>(eal, PortConfig{names.second}));
  }
  pswitch::SoftwarePswitch sw(node, eal, sw_dev);
  const std::vector<uint32_t>& children = sw.settings().trees[0].children;
  REQUIRE(children.size() == kWorkers);

  std::vector<std::vector<std::vector<uint8_t>>> got(kWorkers);
  auto run_until = [&](size_t want) {
    for (int round = 0; round < 2000000; ++round) {
      sw.poll(pswitch::SoftwarePswitch::now_ns());
      bool all = true;
      for (uint32_t p = 0; p < kWorkers; ++p) {
        rte_mbuf* rx[32];
        const uint16_t n = workers[p]->rx_burst(rx, 32);
        for (uint16_t i = 0; i < n; ++i) got[p].push_back(frame_bytes(rx[i]));
        DpdkPort::free_bulk(rx, n);
        all &= got[p].size() >= want;
      }
      if (all) return;
    }
  };

  // Group 1 (sequences 4..7): every worker claims it and hears it granted.
  for (uint32_t c = 0; c < kWorkers; ++c) {
    std::vector<uint8_t> f(claim::kFrameBytes);
    REQUIRE(claim::build_claim(f.data(), claim::kFrameBytes,
                               contribution(5, 0, static_cast<uint16_t>(c), 0, 1), 5, 0,
                               static_cast<uint16_t>(c), 1, false) == claim::kFrameBytes);
    send(*workers[children[c]], f);
  }
  run_until(1);
  for (uint32_t p = 0; p < kWorkers; ++p) {
    REQUIRE(got[p].size() == 1);
    wire::Header h;
    claim::Frame cf;
    REQUIRE(claim::parse_frame(got[p][0].data(), static_cast<uint32_t>(got[p][0].size()),
                               wire::kDefaultUdpPort, h, cf) == claim::Class::kClaimResult);
    CHECK(cf.seq == 1);
    CHECK(cf.answer == claim::Answer::kGranted);
    got[p].clear();
  }

  // Its four chunks: small integers, exact sums.
  for (uint32_t c = 0; c < kWorkers; ++c) {
    for (uint32_t s = kG; s < 2 * kG; ++s) {
      std::vector<uint32_t> pl(kElems);
      for (uint32_t k = 0; k < kElems; ++k) pl[k] = f2u(static_cast<float>((s + 1) * (c + 1) + k));
      send(*workers[children[c]], make_frame(contribution(5, 0, static_cast<uint16_t>(c), s, kElems), pl));
    }
  }
  run_until(kG);
  for (uint32_t p = 0; p < kWorkers; ++p) {
    REQUIRE(got[p].size() == kG);
    for (uint32_t i = 0; i < kG; ++i) {
      const std::vector<uint8_t>& f = got[p][i];
      REQUIRE(f[wire::kPanamaType] == static_cast<uint8_t>(wire::PacketType::kResultDown));
      CHECK(wire::load_be16(f.data() + wire::kPanamaJobId) == 5);
      const uint32_t s = wire::load_be32(f.data() + wire::kPanamaSeq);
      CHECK(s == kG + i);
      CHECK(wire::load_be16(f.data() + wire::kPanamaCwndCap) == 8);  // the claim cap
      const std::vector<uint32_t> pl = payload_of(f);
      REQUIRE(pl.size() == kElems);
      bool exact = true;
      for (uint32_t k = 0; k < kElems; ++k) {
        float want = 0;
        for (uint32_t c = 0; c < kWorkers; ++c) want += static_cast<float>((s + 1) * (c + 1) + k);
        exact &= pl[k] == f2u(want);
      }
      CHECK(exact);
    }
  }
  const nlohmann::json c = sw.counters_json();
  REQUIRE(c.contains("pool"));
  CHECK(c["pool"]["entry_commits"] == 1);
  CHECK(c["pool"]["granted"] == 1);
  CHECK(c["pool"]["emissions"] == kG);
  CHECK(c["pool"]["slots_held"] == kG);
  CHECK(c["pool"]["free_slots"] == 64 - kG);
  CHECK(c["trees"][0]["pool"]["mapped"] == kG * kWorkers);
  CHECK(c["switch"]["engine_drops"] == 0);
  CHECK(sw.counters_table().find("pool:") != std::string::npos);
}
