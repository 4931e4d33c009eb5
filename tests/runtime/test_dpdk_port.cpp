// DPDK transport on real virtual devices: a net_ring pair carries frames
// byte for byte both ways; bad port names and EAL misuse give clear errors.
#include <rte_dev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/mman.h>

#include <unistd.h>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>

#include "eal_args.hpp"
#include "panama/runtime/dpdk.hpp"
#include "panama/runtime/idle_backoff.hpp"

using namespace panama::runtime;

namespace {

std::shared_ptr<DpdkEal> eal() {
  return DpdkEal::initialize(panama::test::test_eal_args());
}

// Receives up to `want` frames, polling a bounded number of times (the
// devices here deliver what was sent to them at once; the bound only keeps a
// lost frame from hanging the test).
std::vector<std::vector<uint8_t>> receive(DpdkPort& port, size_t want) {
  std::vector<std::vector<uint8_t>> out;
  std::vector<uint8_t> scratch(port.max_frame_bytes());
  for (int poll = 0; out.size() < want && poll < 100000; ++poll) {
    if (poll > 0) std::this_thread::yield();
    rte_mbuf* b[32];
    const uint16_t n = port.rx_burst(b, 32);
    for (uint16_t i = 0; i < n; ++i) {
      uint32_t len = 0;
      const uint8_t* d =
          DpdkPort::frame_data(b[i], scratch.data(), static_cast<uint32_t>(scratch.size()), &len);
      REQUIRE(d != nullptr);
      out.emplace_back(d, d + len);
    }
    DpdkPort::free_bulk(b, n);
  }
  return out;
}

}  // namespace

TEST_CASE("dpdk: EAL initialises without hugepages, repeated initialize returns the same EAL") {
  auto a = eal();
  REQUIRE(a);
  CHECK(DpdkEal::initialize(panama::test::test_eal_args()) == a);
  CHECK(DpdkEal::current() == a);
  std::vector<std::string> other = panama::test::test_eal_args();
  other.push_back("--vdev=net_null0");
  CHECK_THROWS_WITH(DpdkEal::initialize(other), Catch::Contains("already initialised"));
}

TEST_CASE("dpdk: ring pair carries frames both ways byte for byte, up to jumbo size") {
  auto e = eal();
  const auto names = e->create_ring_pair("pt_a", "pt_b");
  CHECK(names.first == "net_ring_pt_a");
  DpdkPort a(e, PortConfig{names.first});
  // A ring hands the mbuf itself to the reader (FrameOut::read_elsewhere).
  CHECK(a.tx_hands_over_mbufs());
  DpdkPort b(e, PortConfig{names.second});
  CHECK(a.name() == "net_ring_pt_a");
  CHECK(a.wait_link_up(1000));

  const std::vector<uint32_t> sizes = {60, 64, 1088, 4160, 9216};
  for (DpdkPort* from : {&a, &b}) {
    DpdkPort* to = from == &a ? &b : &a;
    std::vector<rte_mbuf*> sent;
    for (size_t i = 0; i < sizes.size(); ++i) {
      uint8_t* d = nullptr;
      rte_mbuf* m = from->alloc_frame(sizes[i], &d);
      REQUIRE(m != nullptr);
      for (uint32_t k = 0; k < sizes[i]; ++k) d[k] = static_cast<uint8_t>(k * 7 + i);
      sent.push_back(m);
    }
    REQUIRE(from->tx_burst(sent.data(), static_cast<uint16_t>(sent.size())) == sent.size());
    auto got = receive(*to, sizes.size());
    REQUIRE(got.size() == sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      REQUIRE(got[i].size() == sizes[i]);
      bool same = true;
      for (uint32_t k = 0; k < sizes[i]; ++k) same &= got[i][k] == static_cast<uint8_t>(k * 7 + i);
      CHECK(same);
    }
  }
  uint8_t* d = nullptr;
  CHECK(a.alloc_frame(9217, &d) == nullptr);  // longer than max_frame_bytes
  CHECK(a.counters().tx_packets == sizes.size());
  CHECK(b.counters().rx_packets == sizes.size());
  CHECK(b.counters().rx_bytes == 60 + 64 + 1088 + 4160 + 9216);
}

TEST_CASE("dpdk: unknown port names the available ones; a port cannot be opened twice") {
  auto e = eal();
  e->create_ring_pair("pt_c", "pt_d");
  CHECK_THROWS_WITH(DpdkPort(e, PortConfig{"net_nosuch0"}),
                    Catch::Contains("\"net_nosuch0\" not found") && Catch::Contains("net_ring_pt_c"));
  DpdkPort c(e, PortConfig{"net_ring_pt_c"});
  CHECK_THROWS_WITH(DpdkPort(e, PortConfig{"net_ring_pt_c"}), Catch::Contains("already open"));
  CHECK_THROWS_WITH(e->create_ring_pair("pt_c", "pt_x"), Catch::Contains("exists"));
}

TEST_CASE("dpdk: a virtual device that copies frames in tx_burst does not hand its mbufs over") {
  auto e = eal();
  // net_null frees what it is given, like a PMD that copies and frees; only
  // net_ring and PCI NICs pass the mbuf itself on.
  REQUIRE(rte_dev_probe("net_null_pt_k") == 0);
  DpdkPort n(e, PortConfig{"net_null_pt_k"});
  CHECK_FALSE(n.tx_hands_over_mbufs());
}

TEST_CASE("dpdk: a port can be reopened after it was closed") {
  auto e = eal();
  e->create_ring_pair("pt_e", "pt_f");
  { DpdkPort x(e, PortConfig{"net_ring_pt_e"}); }
  DpdkPort again(e, PortConfig{"net_ring_pt_e"});
  DpdkPort f(e, PortConfig{"net_ring_pt_f"});
  uint8_t* d = nullptr;
  rte_mbuf* m = again.alloc_frame(100, &d);
  REQUIRE(m);
  std::memset(d, 0xAB, 100);
  REQUIRE(again.tx_burst(&m, 1) == 1);
  auto got = receive(f, 1);
  REQUIRE(got.size() == 1);
  CHECK(got[0][99] == 0xAB);
}

TEST_CASE(
    "dpdk: a new port's mempool memory is resident before the first frame (no page faults in the data "
    "path)") {
  auto e = eal();
  e->create_ring_pair("pt_g", "pt_h");
  PortConfig pc{"net_ring_pt_g"};
  pc.mbufs = 511;
  DpdkPort g(e, pc);
  const long page = sysconf(_SC_PAGESIZE);
  REQUIRE(page > 0);
  size_t pages = 0, resident = 0;
  struct Acc {
    long page;
    size_t* pages;
    size_t* resident;
  } acc{page, &pages, &resident};
  // The EAL's --no-huge memory is a memfd: mincore() says which of its pages
  // exist. Without populating, only the pages holding mbuf headers would.
  rte_mempool_mem_iter(
      g.pool(),
      [](rte_mempool*, void* arg, rte_mempool_memhdr* hdr, unsigned) {
        auto* a = static_cast<Acc*>(arg);
        const uintptr_t first = reinterpret_cast<uintptr_t>(hdr->addr) & ~uintptr_t(a->page - 1);
        const uintptr_t end = reinterpret_cast<uintptr_t>(hdr->addr) + hdr->len;
        const size_t n = (end - first + a->page - 1) / a->page;
        std::vector<unsigned char> v(n);
        REQUIRE(mincore(reinterpret_cast<void*>(first), end - first, v.data()) == 0);
        *a->pages += n;
        for (unsigned char c : v) *a->resident += c & 1;
      },
      &acc);
  // 511 buffers of 9 KiB and more: well over a thousand pages.
  CHECK(pages > 1000);
  CHECK(resident == pages);
}

TEST_CASE("dpdk: EalThreadScope gives a thread an lcore id and hands its cached mbufs back at the end") {
  auto e = eal();
  e->create_ring_pair("pt_i", "pt_j");
  PortConfig pc{"net_ring_pt_i"};
  pc.mbufs = 1023;
  DpdkPort port(e, pc);
  rte_mempool* pool = port.pool();
  REQUIRE(rte_mempool_avail_count(pool) == 1023);
  unsigned lcore_inside = LCORE_ID_ANY, lcore_after = 0;
  unsigned in_cache = 0;
  bool cached = false;
  std::thread t([&] {
    lcore_after = rte_lcore_id();  // a plain thread has none
    {
      const EalThreadScope scope;
      cached = scope.cached();
      lcore_inside = rte_lcore_id();
      // Allocate and free a batch: the frees land in this lcore's cache.
      std::vector<rte_mbuf*> m(64);
      REQUIRE(port.alloc_bulk(m.data(), 64));
      DpdkPort::free_bulk(m.data(), 64);
      const rte_mempool_cache* c = rte_mempool_default_cache(pool, rte_lcore_id());
      in_cache = c ? c->len : 0;
    }
    // The scope ended: the id is released.
    CHECK(rte_lcore_id() == LCORE_ID_ANY);
  });
  t.join();
  CHECK(lcore_after == LCORE_ID_ANY);
  CHECK(cached);
  CHECK(lcore_inside != LCORE_ID_ANY);
  CHECK(lcore_inside != rte_get_main_lcore());
  CHECK(in_cache > 0);  // the cache was in use
  // None left behind in the ended thread's cache (where no later thread
  // without that id could reach them); every mbuf is free.
  REQUIRE(lcore_inside < RTE_MAX_LCORE);
  CHECK(rte_mempool_default_cache(pool, lcore_inside)->len == 0);
  CHECK(rte_mempool_avail_count(pool) == 1023);
}

TEST_CASE("IdleBackoff: spins, then sleeps with a doubling bound, and spins again after work") {
  using panama::runtime::IdleBackoff;
  IdleBackoff b({4, 1, 8});
  for (int i = 0; i < 4; ++i) CHECK_FALSE(b.idle());  // spinning: the CPU is kept
  CHECK(b.idle());                                    // then it sleeps
  CHECK(b.sleeps() == 1);
  for (int i = 0; i < 5; ++i) CHECK(b.idle());  // 2, 4, 8, 8, 8 us
  CHECK(b.sleeps() == 6);
  CHECK_FALSE(b.after_poll(3));  // work: back to spinning
  for (int i = 0; i < 4; ++i) CHECK_FALSE(b.after_poll(0));
  CHECK(b.after_poll(0));
  CHECK(b.sleeps() == 7);

  IdleBackoff busy({2, 1, 0});  // max 0: never sleeps, yields after the spin
  CHECK_FALSE(busy.idle());
  CHECK_FALSE(busy.idle());
  CHECK(busy.idle());
  CHECK(busy.sleeps() == 0);

  // A spin time: past the spin count it yields (gives the CPU up, no sleep)
  // until idle that long. An hour is never reached here; a microsecond is
  // over by the time of the check after a sleep-free yield or two.
  IdleBackoff patient({2, 1, 8, 3600u * 1000000u});
  for (int i = 0; i < 2; ++i) CHECK_FALSE(patient.idle());
  for (int i = 0; i < 1000; ++i) REQUIRE(patient.idle());  // yielded
  CHECK(patient.sleeps() == 0);
  IdleBackoff brief({0, 1, 8, 1});
  for (int i = 0; i < 100000 && brief.sleeps() == 0; ++i) brief.idle();
  CHECK(brief.sleeps() == 1);
  CHECK(brief.idle());  // still idle: the sleeps go on, doubling
  CHECK(brief.sleeps() == 2);
  CHECK_FALSE(brief.after_poll(1));  // work: the next idle period spins (yields) first again
  CHECK(brief.idle());
  CHECK(brief.sleeps() == 2);
}

TEST_CASE("dpdk: attach_frame sends a payload from the caller's memory and reports its release") {
  auto e = eal();
  e->create_ring_pair("pt_za", "pt_zb");
  PortConfig pc{"net_ring_pt_za"};
  pc.mbufs = 511;
  pc.attach_payloads = true;
  DpdkPort a(e, pc);
  DpdkPort b(e, PortConfig{"net_ring_pt_zb"});
  REQUIRE(a.tx_can_attach());
  CHECK_FALSE(b.tx_can_attach());  // not asked for

  std::vector<uint8_t> payload(4096);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7 + 3);
  struct Released {
    int calls = 0;
    void* addr = nullptr;
  } released;
  auto on_release = [](void* addr, void* opaque) {
    auto* r = static_cast<Released*>(opaque);
    ++r->calls;
    r->addr = addr;
  };
  uint8_t* head = nullptr;
  rte_mbuf* m = a.attach_frame(64, &head, payload.data(), 4096, on_release, &released);
  REQUIRE(m != nullptr);
  for (int i = 0; i < 64; ++i) head[i] = static_cast<uint8_t>(0xA0 + i);
  CHECK(m->nb_segs == 2);
  CHECK(m->pkt_len == 64 + 4096);
  REQUIRE(a.tx_burst(&m, 1) == 1);

  rte_mbuf* r[4];
  uint16_t n = 0;
  for (int poll = 0; n == 0 && poll < 100000; ++poll) n = b.rx_burst(r, 4);
  REQUIRE(n == 1);
  // The receiver gets the frame as sent: the header segment, then the
  // caller's memory itself, not a copy of it.
  REQUIRE(r[0]->nb_segs == 2);
  CHECK(rte_pktmbuf_data_len(r[0]) == 64);
  CHECK(rte_pktmbuf_mtod(r[0], uint8_t*)[5] == 0xA5);
  CHECK(rte_pktmbuf_mtod(r[0]->next, const uint8_t*) == payload.data());
  CHECK(rte_pktmbuf_data_len(r[0]->next) == 4096);
  std::vector<uint8_t> scratch(b.max_frame_bytes());
  uint32_t len = 0;
  const uint8_t* d = DpdkPort::frame_data(r[0], scratch.data(), static_cast<uint32_t>(scratch.size()), &len);
  REQUIRE(len == 64 + 4096);
  CHECK(std::memcmp(d + 64, payload.data(), 4096) == 0);
  CHECK(released.calls == 0);  // still referenced by the received frame
  DpdkPort::free(r[0]);
  CHECK(released.calls == 1);
  CHECK(released.addr == payload.data());

  // Refused, with nothing allocated and no release: a port not set up for
  // it, an empty payload, a frame longer than the port's maximum.
  uint8_t* h2 = nullptr;
  CHECK(b.attach_frame(64, &h2, payload.data(), 4096, on_release, &released) == nullptr);
  CHECK(a.attach_frame(64, &h2, payload.data(), 0, on_release, &released) == nullptr);
  std::vector<uint8_t> big(a.max_frame_bytes());
  CHECK(a.attach_frame(64, &h2, big.data(), static_cast<uint32_t>(big.size()), on_release, &released) ==
        nullptr);
  CHECK(released.calls == 1);
}
