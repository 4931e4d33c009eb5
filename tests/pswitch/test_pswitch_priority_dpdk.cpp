// The software PSwitch over real DPDK ports (net_ring pairs) with priority
// levels: "priority_dscp" reaches its output queues, a frame of the top
// level overtakes the backlog of other traffic at a paced port, and the
// counters report each band. The PSwitch is polled with an explicit clock,
// so what the paced link lets out is exact.
#include <catch2/catch.hpp>

#include <rte_mbuf.h>

#include <memory>
#include <string>
#include <vector>

#include "../runtime/eal_args.hpp"
#include "panama/pswitch/software_pswitch.hpp"
#include "panama/runtime/dpdk.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::test;
using nlohmann::json;
using panama::runtime::DpdkEal;
using panama::runtime::DpdkPort;
using panama::runtime::PortConfig;

namespace {

constexpr uint32_t kLen = 1000;  // 1024 bytes on the wire

// A 1000-byte PANAMA frame of a job no tree here serves, to the MAC routed to
// port "out": ordinary traffic for the switch. Its seq tells it apart.
std::vector<uint8_t> frame(uint8_t dscp, uint32_t seq) {
  wire::Header h = contribution(9, 0, 0, seq, static_cast<uint16_t>((kLen - wire::kPayloadOffset) / 4));
  h.dscp = dscp;
  return make_frame(h, std::vector<uint32_t>(h.elem_count, 0));
}

struct Received {
  uint8_t dscp;
  uint32_t seq;
  bool operator==(const Received& o) const { return dscp == o.dscp && seq == o.seq; }
};

std::ostream& operator<<(std::ostream& os, const Received& r) {
  return os << "dscp " << unsigned(r.dscp) << " seq " << r.seq;
}

// Runs one PSwitch ("in" unlimited, "out" at 1 Gbit/s): 32 frames of DSCP 0
// arrive and are switched at t0 (the idle link's 18480 bytes of credit let 18
// out, 14 wait), then 16 of DSCP 46 at t0, then the link is given time for
// everything. Returns the order "out" sent them in and the counters.
struct Run {
  std::vector<Received> got;
  json counters;
  std::string table;
};

Run run(const std::shared_ptr<DpdkEal>& eal, const std::string& tag, const json& priority_dscp) {
  config::NodeConfig node;
  node.node = "s" + tag;
  node.pswitch = {
      {"name", node.node},
      {"ports",
       {{{"name", "in"}, {"rate_gbps", 0}}, {{"name", "out"}, {"rate_gbps", 1.0}, {"ecn_k_bytes", 0}}}},
      {"mac_table", {{{"mac", "02:00:00:00:00:fe"}, {"port", "out"}}}}};
  if (!priority_dscp.is_null()) node.pswitch["priority_dscp"] = priority_dscp;
  const auto in = eal->create_ring_pair("pq_in_s" + tag, "pq_in_h" + tag);
  const auto out = eal->create_ring_pair("pq_out_s" + tag, "pq_out_h" + tag);
  DpdkPort sender(eal, PortConfig{in.second});
  DpdkPort receiver(eal, PortConfig{out.second});
  pswitch::SoftwarePswitch sw(node, eal, {in.first, out.first});

  auto send = [&](uint8_t dscp, uint32_t first, uint32_t n) {
    std::vector<rte_mbuf*> burst;
    for (uint32_t i = 0; i < n; ++i) {
      const std::vector<uint8_t> f = frame(dscp, first + i);
      uint8_t* d = nullptr;
      rte_mbuf* m = sender.alloc_frame(kLen, &d);
      REQUIRE(m != nullptr);
      std::copy(f.begin(), f.end(), d);
      burst.push_back(m);
    }
    REQUIRE(sender.tx_burst(burst.data(), static_cast<uint16_t>(n)) == n);
  };
  std::vector<Received> got;
  auto receive = [&] {
    rte_mbuf* rx[64];
    const uint16_t n = receiver.rx_burst(rx, 64);
    for (uint16_t i = 0; i < n; ++i) {
      const auto* d = rte_pktmbuf_mtod(rx[i], const uint8_t*);
      got.push_back(
          Received{static_cast<uint8_t>(d[wire::kIpTos] >> 2), wire::load_be32(d + wire::kPanamaSeq)});
    }
    DpdkPort::free_bulk(rx, n);
  };
  const uint64_t t0 = 1'000'000;
  send(0, 0, 32);
  sw.poll(t0);
  receive();
  send(46, 100, 16);
  sw.poll(t0);
  receive();
  // One second later the link has credit for all 30 waiting frames.
  for (int i = 0; i < 4 && got.size() < 48; ++i) {
    sw.poll(t0 + 1'000'000'000ull);
    receive();
  }
  return {got, sw.counters_json(), sw.counters_table()};
}

}  // namespace

TEST_CASE("software PSwitch: the top level overtakes the backlog at a paced port; counters per band",
          "[dpdk][priority]") {
  auto eal = DpdkEal::initialize(test_eal_args());
  std::vector<Received> first18, low_rest, high;
  for (uint32_t s = 0; s < 18; ++s) first18.push_back({0, s});
  for (uint32_t s = 18; s < 32; ++s) low_rest.push_back({0, s});
  for (uint32_t s = 100; s < 116; ++s) high.push_back({46, s});

  // With a level for DSCP 46: those frames go before the 14 waiting ones.
  const Run r = run(eal, "p", json::array({46}));
  const std::vector<Received>& got = r.got;
  const json& c = r.counters;
  std::vector<Received> want = first18;
  want.insert(want.end(), high.begin(), high.end());
  want.insert(want.end(), low_rest.begin(), low_rest.end());
  CHECK(got == want);
  const json& out = c["ports"][1];
  REQUIRE(out["name"] == "out");
  REQUIRE(out.contains("bands"));
  REQUIRE(out["bands"].size() == 2);
  const json& top = out["bands"][0];  // highest first
  const json& other = out["bands"][1];
  CHECK(top["band"] == 1);
  CHECK(top["level"] == 0);
  CHECK(top["dscp"] == 46);
  CHECK(top["enqueued"] == 16);
  CHECK(top["dequeued"] == 16);
  CHECK(top["bytes_out"] == 16 * kLen);
  CHECK(top["max_queue_bytes"] == 16 * kLen);
  CHECK(other["band"] == 0);
  CHECK_FALSE(other.contains("dscp"));
  CHECK(other["enqueued"] == 32);
  CHECK(other["dequeued"] == 32);
  CHECK(other["max_queue_bytes"] == 32 * kLen);
  CHECK(other["tail_drops"] == 0);
  CHECK(out["tx_frames"] == 48);
  // The engine queue serves the levels too, and counts them.
  REQUIRE(c["engine_queue"].contains("bands"));
  CHECK(c["engine_queue"]["bands"][0]["enqueued"] == 16);
  CHECK(c["engine_queue"]["bands"][1]["enqueued"] == 32);
  INFO(r.table);
  CHECK_THAT(r.table, Catch::Contains("  out: L0 (dscp 46) 16/0/0 other 32/0/0\n"));
  CHECK_THAT(r.table, Catch::Contains("  engine queue: L0 (dscp 46) 16/0/0 other 32/0/0\n"));

  // Without levels the same frames leave in arrival order, and the
  // counters have no bands.
  const Run f = run(eal, "f", json());
  const std::vector<Received>& fifo = f.got;
  const json& c2 = f.counters;
  want = first18;
  want.insert(want.end(), low_rest.begin(), low_rest.end());
  want.insert(want.end(), high.begin(), high.end());
  CHECK(fifo == want);
  CHECK_FALSE(c2["ports"][1].contains("bands"));
  CHECK_FALSE(c2["engine_queue"].contains("bands"));
  CHECK_THAT(f.table, !Catch::Contains("priority bands"));
}
