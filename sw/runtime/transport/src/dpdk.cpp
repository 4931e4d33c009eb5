// DPDK transport: EAL initialisation, ring pairs and DpdkPort.
#include "panama/runtime/dpdk.hpp"

#include "panama/runtime/eal_runtime_dir.hpp"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include <dirent.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace panama::runtime {
namespace {

// net_af_packet sends through a TX ring, and the kernel moves frames from
// it into the interface's qdisc only while the socket's send buffer has
// room (net.core.wmem_default, 212992 bytes: about 40 frames of 4 KiB); the
// rest wait in the ring for the PMD's next tx_burst. A sender that then
// waits for answers to them waits for its timeout (with tc shaping a veth:
// thousands of timeouts per run). The PMD has no option for it, so the
// port's packet sockets (found by interface index) get a send buffer that
// holds a whole ring of jumbo frames.
void raise_af_packet_send_buffers(int if_index) {
  constexpr int kBytes = 16 << 20;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    if (fd <= 2 || fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) continue;
    sockaddr_ll sll{};
    len = sizeof sll;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&sll), &len) != 0 || sll.sll_ifindex != if_index)
      continue;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &kBytes, sizeof kBytes) != 0)
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kBytes, sizeof kBytes);  // without CAP_NET_ADMIN: up to wmem_max
  }
  closedir(d);
}

std::string reason(int err) {
  return std::string(rte_strerror(err < 0 ? -err : err));
}

// Process-wide DPDK state: the EAL can be initialised once per process, and
// mempools stay alive until exit because mbufs of a stopped port may still sit
// in a peer's ring (freeing the pool would leave them dangling).
struct Global {
  std::mutex mu;
  std::shared_ptr<DpdkEal> eal;
  bool init_failed = false;
  std::string init_error;
  std::map<std::string, rte_mempool*> pools;         // by port name
  std::map<std::string, rte_mempool*> attach_pools;  // by port name: mbufs without data room
  std::set<uint16_t> ports_in_use;
  unsigned pool_serial = 0;
};

Global& global() {
  static Global g;
  return g;
}

bool parse_port_id(const std::string& s, uint16_t& id) {
  if (s.empty() || s.size() > 5) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v >= RTE_MAX_ETHPORTS) return false;
  id = static_cast<uint16_t>(v);
  return true;
}

// The --file-prefix value in EAL arguments ("" when absent).
std::string file_prefix_of(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("--file-prefix=", 0) == 0) return args[i].substr(14);
    if (args[i] == "--file-prefix" && i + 1 < args.size()) return args[i + 1];
  }
  return "";
}

// Writes every page of the pool's memory once. With hugepages the EAL's
// memory is populated when it is mapped; with --no-huge it is a memfd mapped
// page by page on first touch, and rte_pktmbuf_pool_create writes only the
// mbuf headers, so the first frames through each buffer would take page
// faults (one or two per 9 KiB buffer) inside the data path: in the virtual
// cluster that made the first allreduce take about twice as long as the
// next. Rewriting each page's first byte with itself keeps the contents.
void populate_pool_memory(rte_mempool* pool) {
  rte_mempool_mem_iter(
      pool,
      [](rte_mempool*, void*, rte_mempool_memhdr* hdr, unsigned) {
        const long page = sysconf(_SC_PAGESIZE);
        const size_t step = page > 0 ? static_cast<size_t>(page) : 4096;
        volatile uint8_t* base = static_cast<volatile uint8_t*>(hdr->addr);
        for (size_t off = 0; off < hdr->len; off += step) base[off] = base[off];
      },
      nullptr);
}

}  // namespace

// ------------------------------------------------------------------ DpdkEal

std::shared_ptr<DpdkEal> DpdkEal::initialize(const std::vector<std::string>& args) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.eal) {
    if (g.eal->args_ != args) {
      throw DpdkError(
          "DPDK EAL is already initialised in this process with other arguments; "
          "a process has one EAL (share the Runtime or pass the same EAL arguments)");
    }
    return g.eal;
  }
  if (g.init_failed) {
    throw DpdkError("DPDK EAL initialisation failed earlier in this process and cannot be retried: " +
                    g.init_error);
  }
  std::vector<std::string> argv_store;
  argv_store.push_back("panama");
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);
  // rte_eal_init's getopt parsing uses the global optind; reset it so an
  // earlier getopt user in the process does not make it skip arguments.
  optind = 1;
  // rte_eal_init pins the calling thread to the main lcore's CPU, and every
  // thread created afterwards (progress threads, the user's) would inherit
  // that single CPU. The runtime is a library, not the whole application:
  // give the caller its CPU set back.
  remove_stale_eal_runtime_dirs(eal_runtime_base_dir(), file_prefix_of(args));
  cpu_set_t before;
  const bool have_before = sched_getaffinity(0, sizeof before, &before) == 0;
  const int rc = rte_eal_init(static_cast<int>(argv_store.size()), argv.data());
  if (have_before) sched_setaffinity(0, sizeof before, &before);
  optind = 1;
  if (rc < 0) {
    g.init_failed = true;
    std::string all;
    for (const std::string& a : args) all += (all.empty() ? "" : " ") + a;
    g.init_error = reason(rte_errno) + " (EAL arguments: " + all + ")";
    throw DpdkError("DPDK EAL initialisation failed: " + g.init_error);
  }
  if (rte_eal_process_type() == RTE_PROC_PRIMARY) remove_eal_runtime_dir_at_exit(rte_eal_get_runtime_dir());
  g.eal = std::shared_ptr<DpdkEal>(new DpdkEal(args));
  return g.eal;
}

std::shared_ptr<DpdkEal> DpdkEal::current() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.eal;
}

bool DpdkEal::register_thread() {
  if (rte_lcore_id() != LCORE_ID_ANY) return true;
  return rte_thread_register() == 0;
}

void DpdkEal::unregister_thread() {
  const unsigned lcore = rte_lcore_id();
  if (lcore == LCORE_ID_ANY || lcore == rte_get_main_lcore()) return;
  {
    // mbufs in this lcore's caches would otherwise stay there until a later
    // thread got the same id.
    Global& g = global();
    std::lock_guard<std::mutex> lock(g.mu);
    for (const auto& [name, pool] : g.pools) {
      if (rte_mempool_cache* c = rte_mempool_default_cache(pool, lcore)) rte_mempool_cache_flush(c, pool);
    }
  }
  rte_thread_unregister();
}

EalThreadScope::EalThreadScope() {
  const bool had = rte_lcore_id() != LCORE_ID_ANY;
  cached_ = DpdkEal::register_thread();
  registered_here_ = cached_ && !had;
}

EalThreadScope::~EalThreadScope() {
  if (registered_here_) DpdkEal::unregister_thread();
}

std::vector<std::string> DpdkEal::port_names() const {
  std::vector<std::string> names;
  uint16_t p;
  RTE_ETH_FOREACH_DEV(p) {
    char n[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(p, n) == 0) names.emplace_back(n);
  }
  return names;
}

std::pair<std::string, std::string> DpdkEal::create_ring_pair(const std::string& name_a,
                                                              const std::string& name_b, unsigned ring_size) {
  std::lock_guard<std::mutex> lock(global().mu);
  const std::string port_a = "net_ring_" + name_a, port_b = "net_ring_" + name_b;
  uint16_t existing;
  if (name_a == name_b || rte_eth_dev_get_port_by_name(port_a.c_str(), &existing) == 0 ||
      rte_eth_dev_get_port_by_name(port_b.c_str(), &existing) == 0) {
    throw DpdkError("cannot create ring pair " + port_a + "/" + port_b + ": a port of that name exists");
  }
  // Ring names are limited to RTE_RING_NAMESIZE; keep them short and unique.
  static unsigned serial = 0;
  const std::string ab = "pnm_r" + std::to_string(serial) + "a";
  const std::string ba = "pnm_r" + std::to_string(serial) + "b";
  ++serial;
  rte_ring* r_ab = rte_ring_create(ab.c_str(), ring_size, static_cast<int>(rte_socket_id()),
                                   RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* r_ba = rte_ring_create(ba.c_str(), ring_size, static_cast<int>(rte_socket_id()),
                                   RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!r_ab || !r_ba) {
    const int err = rte_errno;
    if (r_ab) rte_ring_free(r_ab);
    if (r_ba) rte_ring_free(r_ba);
    throw DpdkError("cannot create rings for " + name_a + "/" + name_b + ": " + reason(err) +
                    " (ring size must be a power of two)");
  }
  // a: receives from b->a, sends on a->b; b the other way round.
  if (rte_eth_from_rings(name_a.c_str(), &r_ba, 1, &r_ab, 1, rte_socket_id()) < 0) {
    throw DpdkError("rte_eth_from_rings(" + name_a + ") failed: " + reason(rte_errno));
  }
  if (rte_eth_from_rings(name_b.c_str(), &r_ab, 1, &r_ba, 1, rte_socket_id()) < 0) {
    throw DpdkError("rte_eth_from_rings(" + name_b + ") failed: " + reason(rte_errno));
  }
  return {port_a, port_b};
}

// ----------------------------------------------------------------- DpdkPort

DpdkPort::DpdkPort(std::shared_ptr<DpdkEal> eal, const PortConfig& config)
    : eal_(std::move(eal)), config_(config) {
  if (!eal_) throw DpdkError("DpdkPort needs an initialised DPDK EAL");
  if (config.max_frame_bytes < 64 || config.max_frame_bytes > 65000) {
    throw DpdkError("port " + config.name + ": max_frame_bytes must be in [64, 65000]");
  }
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mu);

  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(config.name.c_str(), &id) != 0) {
    if (!parse_port_id(config.name, id) || !rte_eth_dev_is_valid_port(id)) {
      std::string avail;
      for (const std::string& n : eal_->port_names()) avail += (avail.empty() ? "" : ", ") + n;
      throw DpdkPortNotFound(
          "DPDK port \"" + config.name + "\" not found (available: " +
          (avail.empty() ? std::string("none; pass --vdev=... in the EAL arguments") : avail) + ")");
    }
  }
  if (g.ports_in_use.count(id))
    throw DpdkError("DPDK port \"" + config.name + "\" is already open in this process");
  port_id_ = id;
  char n[RTE_ETH_NAME_MAX_LEN];
  name_ = rte_eth_dev_get_name_by_port(id, n) == 0 ? std::string(n) : config.name;

  // net_af_xdp builds its AF_XDP umem on the port's mempool, and the kernel
  // takes umem chunks of at most a page (4 KiB) without hugepages: such a
  // port's mbufs hold frames of up to 3 KiB.
  if (rte_eth_dev_info pre{}; rte_eth_dev_info_get(id, &pre) == 0 && pre.driver_name &&
                              std::string(pre.driver_name) == "net_af_xdp") {
    config_.max_frame_bytes = std::min<uint32_t>(config_.max_frame_bytes, 3072);
  }

  // Mempools: reused when this port was opened before (see Global).
  const int socket_id = rte_eth_dev_socket_id(id) < 0 ? 0 : rte_eth_dev_socket_id(id);
  auto pool_for = [&](std::map<std::string, rte_mempool*>& pools, const char* what, uint16_t priv,
                      uint32_t room) {
    auto it = pools.find(name_);
    if (it != pools.end() && rte_pktmbuf_data_room_size(it->second) >= room &&
        it->second->size >= config.mbufs)
      return std::make_pair(it->second, false);
    const std::string pool_name = "pnm_mp" + std::to_string(g.pool_serial++);
    rte_mempool* mp = rte_pktmbuf_pool_create(pool_name.c_str(), config.mbufs, 256, priv,
                                              static_cast<uint16_t>(room), socket_id);
    if (!mp) {
      throw DpdkError(std::string("cannot create ") + what + " for port " + name_ + " (" +
                      std::to_string(config.mbufs) + " mbufs of " + std::to_string(room) +
                      " bytes): " + reason(rte_errno) + " (raise the EAL's -m memory)");
    }
    pools[name_] = mp;
    return std::make_pair(mp, true);
  };
  bool created = false;
  std::tie(pool_, created) = pool_for(g.pools, "mempool", 0, RTE_PKTMBUF_HEADROOM + config_.max_frame_bytes);
  if (created) populate_pool_memory(pool_);

  rte_eth_dev_info info;
  int rc = rte_eth_dev_info_get(id, &info);
  if (rc != 0) throw DpdkError("port " + name_ + ": rte_eth_dev_info_get failed: " + reason(rc));
  const rte_bus* bus = info.device ? rte_dev_bus(info.device) : nullptr;
  const std::string driver = info.driver_name ? info.driver_name : "";
  tx_hands_over_ = driver == "net_ring" || (bus && std::string(rte_bus_name(bus)) == "pci");
  if (config.attach_payloads && driver == "net_ring") {
    // Mbufs that carry no data of their own, each with the shared-info
    // block of the one buffer it is attached to in its private area.
    attach_pool_ = pool_for(g.attach_pools, "the attach mempool",
                            RTE_ALIGN(sizeof(rte_mbuf_ext_shared_info), RTE_MBUF_PRIV_ALIGN), 0)
                       .first;
  }
  rte_eth_conf conf{};
  if (config_.max_frame_bytes > RTE_ETHER_MAX_LEN && info.max_rx_pktlen >= config_.max_frame_bytes) {
    conf.rxmode.mtu = config_.max_frame_bytes - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
    if (conf.rxmode.mtu > info.max_mtu) conf.rxmode.mtu = info.max_mtu;
  }
  if ((rc = rte_eth_dev_configure(id, 1, 1, &conf)) != 0) {
    throw DpdkError("port " + name_ + ": rte_eth_dev_configure failed: " + reason(rc));
  }
  uint16_t nrx = config.rx_descriptors, ntx = config.tx_descriptors;
  rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntx);
  if ((rc = rte_eth_rx_queue_setup(id, 0, nrx, static_cast<unsigned>(socket_id), nullptr, pool_)) != 0) {
    throw DpdkError("port " + name_ + ": RX queue set-up failed: " + reason(rc));
  }
  if ((rc = rte_eth_tx_queue_setup(id, 0, ntx, static_cast<unsigned>(socket_id), nullptr)) != 0) {
    throw DpdkError("port " + name_ + ": TX queue set-up failed: " + reason(rc));
  }
  if ((rc = rte_eth_dev_start(id)) != 0) throw DpdkError("port " + name_ + ": start failed: " + reason(rc));
  started_ = true;
  if (driver == "net_af_packet" && info.if_index > 0)
    raise_af_packet_send_buffers(static_cast<int>(info.if_index));
  if (config.promiscuous) rte_eth_promiscuous_enable(id);  // not all PMDs support it; harmless then
  rte_ether_addr addr;
  if (rte_eth_macaddr_get(id, &addr) == 0) {
    for (int i = 0; i < 6; ++i) mac_[i] = addr.addr_bytes[i];
  }
  rte_eth_stats_reset(id);
  g.ports_in_use.insert(id);
  if (config.link_wait_ms) wait_link_up(config.link_wait_ms);
}

DpdkPort::~DpdkPort() {
  if (started_) rte_eth_dev_stop(port_id_);
  std::lock_guard<std::mutex> lock(global().mu);
  global().ports_in_use.erase(port_id_);
}

bool DpdkPort::link_up() const {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

bool DpdkPort::wait_link_up(unsigned timeout_ms) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!link_up()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

uint16_t DpdkPort::rx_burst(rte_mbuf** pkts, uint16_t n) {
  const uint16_t got = rte_eth_rx_burst(port_id_, 0, pkts, n);
  rx_packets_ += got;
  for (uint16_t i = 0; i < got; ++i) rx_bytes_ += pkts[i]->pkt_len;
  return got;
}

uint16_t DpdkPort::tx_burst(rte_mbuf** pkts, uint16_t n) {
  uint64_t bytes = 0;
  // Sum before sending: after tx_burst the PMD owns (and may free) the mbufs.
  for (uint16_t i = 0; i < n; ++i) bytes += pkts[i]->pkt_len;
  const uint16_t sent = rte_eth_tx_burst(port_id_, 0, pkts, n);
  for (uint16_t i = sent; i < n; ++i) bytes -= pkts[i]->pkt_len;
  tx_packets_ += sent;
  tx_bytes_ += bytes;
  return sent;
}

void DpdkPort::tx_burst_or_drop(rte_mbuf** pkts, uint16_t n) {
  const uint16_t sent = tx_burst(pkts, n);
  if (sent < n) {
    tx_full_ += n - sent;
    rte_pktmbuf_free_bulk(pkts + sent, n - sent);
  }
}

bool DpdkPort::alloc_bulk(rte_mbuf** pkts, unsigned n) {
  return rte_pktmbuf_alloc_bulk(pool_, pkts, n) == 0;
}

rte_mbuf* DpdkPort::alloc_frame(uint32_t len, uint8_t** data) {
  if (len > config_.max_frame_bytes) return nullptr;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return nullptr;
  char* d = rte_pktmbuf_append(m, static_cast<uint16_t>(len));
  if (!d) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  *data = reinterpret_cast<uint8_t*>(d);
  return m;
}

rte_mbuf* DpdkPort::attach_frame(uint32_t header_len, uint8_t** header, const uint8_t* payload,
                                 uint32_t payload_len, void (*release)(void* addr, void* opaque),
                                 void* opaque) {
  if (!attach_pool_ || payload_len == 0 || payload_len > UINT16_MAX ||
      header_len + payload_len > config_.max_frame_bytes)
    return nullptr;
  rte_mbuf* head = alloc_frame(header_len, header);
  if (!head) return nullptr;
  rte_mbuf* seg = rte_pktmbuf_alloc(attach_pool_);
  if (!seg) {
    rte_pktmbuf_free(head);
    return nullptr;
  }
  auto* shinfo = static_cast<rte_mbuf_ext_shared_info*>(rte_mbuf_to_priv(seg));
  shinfo->free_cb = release;
  shinfo->fcb_opaque = opaque;
  rte_mbuf_ext_refcnt_set(shinfo, 1);
  // The ring passes pointers; no device reads this memory by IOVA.
  rte_pktmbuf_attach_extbuf(seg, const_cast<uint8_t*>(payload), RTE_BAD_IOVA,
                            static_cast<uint16_t>(payload_len), shinfo);
  seg->data_len = static_cast<uint16_t>(payload_len);
  seg->pkt_len = payload_len;
  rte_pktmbuf_chain(head, seg);  // two segments: cannot exceed the segment limit
  return head;
}

const uint8_t* DpdkPort::frame_data(const rte_mbuf* m, uint8_t* scratch, uint32_t scratch_len,
                                    uint32_t* len) {
  *len = m->pkt_len;
  if (m->pkt_len > scratch_len && m->nb_segs > 1) return nullptr;
  return static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, m->pkt_len, scratch));
}

void DpdkPort::free(rte_mbuf* m) {
  rte_pktmbuf_free(m);
}
void DpdkPort::free_bulk(rte_mbuf** pkts, unsigned n) {
  rte_pktmbuf_free_bulk(pkts, n);
}

PortCounters DpdkPort::counters() const {
  PortCounters c;
  c.rx_packets = rx_packets_;
  c.rx_bytes = rx_bytes_;
  c.tx_packets = tx_packets_;
  c.tx_bytes = tx_bytes_;
  c.tx_full = tx_full_;
  rte_eth_stats s{};
  if (rte_eth_stats_get(port_id_, &s) == 0) {
    c.rx_missed = s.imissed;
    c.rx_errors = s.ierrors;
    c.tx_errors = s.oerrors;
    c.rx_nombuf = s.rx_nombuf;
  }
  return c;
}

}  // namespace panama::runtime
