// The netns launcher of ClusterRun (--nodes netns): the process launcher's
// PSwitch and worker processes, each in a network namespace of its own,
// neighbours joined by veth pairs shaped with tc, every port a DPDK PMD
// over its kernel interface (net_af_packet, or net_af_xdp). With
// --baseline gloo the same namespaces and veths carry Gloo
// (torch.distributed) ranks over TCP, a Linux bridge in each PSwitch's
// namespace. docs/cluster.md, "Namespaces and veths"; netns.hpp.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "panama/cluster/netns.hpp"
#include "panama/pswitch/settings.hpp"
#include "process_launcher.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;

// Port `index` of a node over interface `iface`: the DPDK device
// arguments and the port's name. af_packet: ring frames of 9216 bytes (the
// largest frame the port's mbufs take, 9184 bytes of it data), four to a
// 36 KiB block, 512 frames each way, through the interface's qdisc (the
// shaping); af_xdp: one queue, frames up to 3 KiB.
std::string port_name(const std::string& pmd, size_t index) {
  return (pmd == "af_xdp" ? "net_af_xdp" : "net_af_packet") + std::to_string(index);
}

std::string port_vdev(const std::string& pmd, size_t index, const std::string& iface) {
  if (pmd == "af_xdp") return port_name(pmd, index) + ",iface=" + iface + ",start_queue=0,queue_count=1";
  return port_name(pmd, index) + ",iface=" + iface +
         ",blocksz=36864,framesz=9216,framecnt=512,qdisc_bypass=0";
}

// The PSwitch of each uplink of worker `w`, in uplink order: the controller
// names each memif socket "<switch>-<host>.sock".
std::vector<std::string> uplink_switches(const controller::WorkerOutput& w) {
  std::vector<std::string> out;
  const std::vector<std::string> vdevs = w.vdevs.empty() ? std::vector<std::string>{w.vdev} : w.vdevs;
  const std::string suffix = "-" + w.host + ".sock";
  for (const std::string& v : vdevs) {
    const size_t at = v.find("socket=");
    std::string sock = at == std::string::npos ? "" : v.substr(at + 7, v.find(',', at) - (at + 7));
    sock = std::filesystem::path(sock).filename().string();
    if (sock.size() <= suffix.size() || sock.compare(sock.size() - suffix.size(), suffix.size(), suffix) != 0)
      throw std::runtime_error("cannot tell the PSwitch of " + w.host + "'s uplink from '" + v + "'");
    out.push_back(sock.substr(0, sock.size() - suffix.size()));
  }
  return out;
}

// The largest frame a port of `pmd` carries (veth MTU 9000 and the ring
// frames above; af_xdp: the transport's 3 KiB mbufs, its umem chunks being
// at most a page).
uint32_t max_frame_bytes(const std::string& pmd) {
  return pmd == "af_xdp" ? 3072 : 9000;
}

// The Gloo rank script installed beside panama-cluster.
std::string gloo_script(const std::string& self) {
  return (std::filesystem::path(self).parent_path() / "panama-gloo-rank.py").string();
}

// How much faster than the link the shapers that are not the link's
// bottleneck run when only the PSwitches mark CE (no ECN qdisc here).
constexpr double kHeadroom = 1.05;
constexpr double kHeadroomBurstS = 2e-3;

class NetnsLauncher final : public ProcessLauncher {
 public:
  explicit NetnsLauncher(std::string self) : ProcessLauncher(std::move(self)) {}
  ~NetnsLauncher() override { clean_up(); }

  std::string description() const override { return description_; }
  std::string summary_title() const override {
    return gloo_ ? " (Gloo, network namespaces)" : " (network namespaces)";
  }

  void check(const PlannedRun&, ClusterOptions& opt) override {
    if (const std::string why = netns::unavailable_reason(); !why.empty())
      throw SetupError("--nodes netns: cannot create network namespaces here: " + why);
    pmd_ = opt.pmd;
    gloo_ = opt.gloo_baseline;
    const uint32_t frame = 64 + opt.elems_per_packet * wire::elem_bytes(static_cast<uint8_t>(opt.dtype));
    if (!gloo_ && frame > max_frame_bytes(pmd_)) {
      throw SetupError("--nodes netns --pmd " + pmd_ + ": frames of " + std::to_string(frame) +
                       " bytes (--elems-per-packet " + std::to_string(opt.elems_per_packet) +
                       ") exceed the " + std::to_string(max_frame_bytes(pmd_)) + " bytes a port carries");
    }
    if (gloo_) {
      if (opt.dual_homed || (opt.topology == "two-tier" && opt.spines > 1)) {
        throw SetupError(
            "--baseline gloo needs a loop-free fabric (a Linux bridge per PSwitch): --topology single or "
            "two-tier:Lx1");
      }
      if (!std::filesystem::exists(gloo_script(self_)))
        throw SetupError("--baseline gloo: " + gloo_script(self_) +
                         " is missing (built with panama-cluster)");
      // The first Python that has torch.distributed: $PANAMA_PYTHON, else
      // python3 on the PATH, else the system's.
      const char* py = std::getenv("PANAMA_PYTHON");
      std::vector<std::string> candidates =
          py && *py ? std::vector<std::string>{py} : std::vector<std::string>{"python3", "/usr/bin/python3"};
      python_.clear();
      for (const std::string& c : candidates) {
        if (netns::run_command({c, "-c", "import torch.distributed"}).status == 0) {
          python_ = c;
          break;
        }
      }
      if (python_.empty()) {
        throw SetupError("--baseline gloo needs PyTorch: no Python with torch.distributed among " +
                         candidates.front() + (candidates.size() > 1 ? ", " + candidates.back() : "") +
                         " (set PANAMA_PYTHON)");
      }
    }
    qdiscs_ = netns::probe_qdiscs(netns::run_tag(getpid()));
    if (opt.link_gbps > 0 && !qdiscs_.tbf)
      throw SetupError("--nodes netns: this kernel's tc has no tbf qdisc");
    if (opt.link_delay_ms > 0 && !qdiscs_.netem) {
      throw SetupError(
          "--link-delay: this kernel's tc has no netem qdisc (CONFIG_NET_SCH_NETEM), so no delay "
          "can be added to the veths");
    }
    if (opt.link_ecn == "kernel" && qdiscs_.ecn.empty()) {
      throw SetupError("--link-ecn kernel: this kernel's tc has no ECN-marking qdisc (tried " +
                       qdiscs_.missing + "); --link-ecn pswitch keeps the PSwitches' marking");
    }
    kernel_ecn_ =
        opt.link_ecn != "pswitch" && !qdiscs_.ecn.empty() && opt.link_gbps > 0 && opt.ecn_k_bytes > 0;
    std::string rate = "unshaped";
    if (opt.link_gbps > 0) {
      char r[160];
      std::snprintf(r, sizeof r, "%.3g Gbit/s: %s", opt.link_gbps,
                    kernel_ecn_ ? "tc tbf on every end"
                    : gloo_     ? "tc tbf on the bridges' ends, 5% faster on the hosts'"
                                : "the PSwitches' pacing, tc tbf 5% faster on every end");
      rate = r;
      if (opt.link_delay_ms > 0) rate += " + netem " + std::to_string(opt.link_delay_ms) + " ms";
    }
    description_ = std::string("a process per node, each in network namespace ") + netns::run_tag(getpid()) +
                   "-<node>, links veth pairs (" + rate + "), " +
                   (gloo_ ? "Gloo over TCP through a Linux bridge per PSwitch"
                          : "ports " + port_name(pmd_, 0).substr(0, port_name(pmd_, 0).size() - 1));
    if (!gloo_ && pmd_ == "af_xdp" && opt.link_gbps > 0)
      description_ += " (whose sends bypass the qdiscs: only the PSwitches' pacing holds the rate)";
    if (!gloo_ && opt.link_gbps > 0) {
      description_ += kernel_ecn_
                          ? "; CE marked by the kernel's queues (tc " + qdiscs_.ecn + " at --ecn-k)"
                          : (qdiscs_.ecn.empty()
                                 ? "; CE marked by the PSwitches (this kernel has no ECN-marking qdisc: " +
                                       qdiscs_.missing + " missing)"
                                 : "; CE marked by the PSwitches (--link-ecn pswitch)");
    }
  }

  void start(const PlannedRun& run, const ClusterOptions& opt, std::vector<WorkerStatus>& workers) override {
    nodes_ = std::make_unique<NodeSet>(run.run_dir);  // signal handlers first
    const std::vector<std::string> stale = netns::remove_stale_runs();
    if (!stale.empty()) {
      std::fprintf(stderr, "panama-cluster: removed what earlier runs left behind:");
      for (const std::string& s : stale) std::fprintf(stderr, " %s;", s.c_str());
      std::fprintf(stderr, "\n");
    }
    const std::string tag = netns::run_tag(getpid());
    reaper_ = std::make_unique<netns::Reaper>(tag, run.own_run_dir ? run.run_dir : "");
    fabric_ = std::make_unique<netns::Fabric>(tag);
    dep_ = run.dep;
    const auto t0 = std::chrono::steady_clock::now();

    // Namespaces: every PSwitch, every worker host.
    std::map<std::string, std::string> ns_of;
    for (const auto& s : dep_.switches) ns_of[s.node.node] = fabric_->ns(s.node.node);
    for (const auto& w : dep_.workers) ns_of[w.host] = fabric_->ns(w.host);
    for (const auto& [node, ns] : ns_of) fabric_->add_node(node);
    // Links: one veth pair per PSwitch port (a leaf-spine link appears at both ends).
    std::set<std::pair<std::string, std::string>> done;
    size_t links = 0;
    for (const auto& s : dep_.switches) {
      for (const auto& p : s.settings.ports) {
        const auto key = std::minmax(s.node.node, p.name);
        if (!done.insert(key).second) continue;
        netns::LinkShape shape;
        shape.rate_gbps = p.rate_gbps;
        shape.delay_ms = opt.link_delay_ms;
        shape.queue_bytes = opt.queue_bytes;
        if (kernel_ecn_) {
          shape.ecn_qdisc = qdiscs_.ecn;
          shape.ecn_k_bytes = opt.ecn_k_bytes;
        }
        // Both directions at the link's rate. Native XDP on a veth needs both
        // ends' MTU within a page.
        // Where the kernel marks, every end is the link: its exact rate, a
        // marking queue. Where only the PSwitches mark, the link's rate is
        // held where a switch holds it, at the switch's egress (the
        // PSwitch's pacing; Gloo: the bridge port's tbf), and the other
        // shapers run kHeadroom faster, so that no queue nothing can mark
        // builds up in front of the PSwitch (docs/cluster.md, "ECN").
        const bool to_switch =
            std::any_of(dep_.switches.begin(), dep_.switches.end(),
                        [&](const controller::SwitchOutput& o) { return o.node.node == p.name; });
        // Those faster shapers take a burst of 2 ms at the rate: a window
        // sent at once passes without a qdisc timer per frame (which on
        // this VM halved what 4 workers moved at 1 Gbit/s).
        netns::LinkShape headroom = shape;
        headroom.rate_gbps *= kHeadroom;
        headroom.burst_bytes = static_cast<uint64_t>(shape.rate_gbps * 1e9 / 8 * kHeadroomBurstS);
        netns::LinkShape switch_end = shape, other_end = shape;
        if (!kernel_ecn_ && !gloo_) {
          switch_end = other_end = headroom;
        } else if (!kernel_ecn_ && !to_switch) {
          other_end = headroom;  // Gloo: a host's end; a bridge's end is the link
        }
        fabric_->add_link(s.node.node, p.name, switch_end, other_end, pmd_ == "af_xdp" ? 3500 : 9000);
        ++links;
      }
    }
    if (gloo_) {
      for (const auto& s : dep_.switches) fabric_->add_bridge(s.node.node);
      for (size_t i = 0; i < dep_.workers.size(); ++i)
        fabric_->add_address(dep_.workers[i].host, uplink_switches(dep_.workers[i]).at(0),
                             gloo_address(i) + "/16");
    } else {
      rewrite_ports(opt);
      controller::write_deployment(dep_, run.run_dir);
    }
    std::fprintf(stderr, "  netns: %zu namespaces, %zu veth pairs, %u ip/tc commands in %.2f s\n",
                 ns_of.size(), links, fabric_->commands(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    nodes_->set_namespaces(ns_of);
    if (gloo_) {
      start_gloo(run, opt, workers);
    } else {
      start_nodes(dep_, run.run_dir, opt, workers);
    }
  }

  std::string fail_switch(const std::string& name, FailMode how) override {
    if (how != FailMode::kLinkDown) return ProcessLauncher::fail_switch(name, how);
    if (!fabric_ || fabric_->interfaces(name).empty()) return {};
    try {
      fabric_->set_links_down(name);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "panama-cluster: %s\n", e.what());
      return {};
    }
    return "links of PSwitch " + name + " taken down (ip link set down in namespace " + fabric_->ns(name) +
           ")";
  }

  void stop(bool finished, std::vector<WorkerStatus>& workers) override {
    ProcessLauncher::stop(finished, workers);
    clean_up();
  }

  std::vector<json> switch_counters(const PlannedRun& run) override {
    if (gloo_) return {};
    return ProcessLauncher::switch_counters(run);
  }

 private:
  static std::string gloo_address(size_t i) {
    return "10.200." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
  }

  // Every port over its veth: the PSwitches' ports (and, where the kernel
  // marks, no pacing or marking of their own: the tc qdisc is the link),
  // the workers' uplinks and the plans' device names.
  void rewrite_ports(const ClusterOptions& opt) {
    (void)opt;
    for (auto& s : dep_.switches) {
      auto& ports = s.settings.ports;
      for (size_t p = 0; p < ports.size(); ++p) {
        ports[p].vdev = port_vdev(pmd_, p, ports[p].name);
        if (kernel_ecn_) {
          ports[p].rate_gbps = 0;
          ports[p].ecn_k_bytes = 0;
        }
      }
      s.node.pswitch = pswitch::settings_to_json(s.settings);
    }
    for (auto& w : dep_.workers) {
      const std::vector<std::string> ups = uplink_switches(w);
      w.vdevs.clear();
      for (size_t u = 0; u < ups.size(); ++u) w.vdevs.push_back(port_vdev(pmd_, u, ups[u]));
      w.vdev = w.vdevs.at(0);
      w.plan.device = port_name(pmd_, 0);
      if (ups.size() > 1) w.plan.devices = {port_name(pmd_, 0), port_name(pmd_, 1)};
    }
  }

  // One Gloo rank per worker, in the worker's namespace, over its uplink.
  void start_gloo(const PlannedRun& run, const ClusterOptions& opt, std::vector<WorkerStatus>& workers) {
    const std::string store = run.run_dir + "/gloo-store";
    for (size_t i = 0; i < dep_.workers.size(); ++i) {
      const auto& w = dep_.workers[i];
      const std::string iface = uplink_switches(w).at(0);
      NodeSpec spec;
      spec.name = w.host;
      spec.exe = python_;
      spec.capture_stdout = true;
      spec.args = {gloo_script(self_),
                   "--rank",
                   std::to_string(w.plan.rank),
                   "--world",
                   std::to_string(w.plan.world_size),
                   "--store",
                   store,
                   "--elems",
                   std::to_string(opt.elems),
                   "--iterations",
                   std::to_string(opt.iterations),
                   "--seed",
                   std::to_string(opt.seed)};
      spec.env = {"GLOO_SOCKET_IFNAME=" + iface, "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1"};
      add_worker(nodes_->start(spec), w, workers);
    }
  }

  void clean_up() {
    if (fabric_) fabric_->remove();
    if (reaper_) reaper_->release();
  }

  std::string description_ = "a process per node in its own network namespace";
  std::string pmd_ = "af_packet";
  std::string python_ = "python3";
  bool gloo_ = false;
  bool kernel_ecn_ = false;
  netns::KernelQdiscs qdiscs_;
  controller::Deployment dep_;
  std::unique_ptr<netns::Reaper> reaper_;
  std::unique_ptr<netns::Fabric> fabric_;
};

}  // namespace

std::unique_ptr<NodeLauncher> make_netns_launcher(const std::string& self_exe) {
  return std::make_unique<NetnsLauncher>(self_exe);
}

int cleanup_command() {
  const std::vector<std::string> removed = netns::remove_stale_runs();
  for (const std::string& r : removed) std::printf("removed %s\n", r.c_str());
  std::printf(
      "panama-cluster --cleanup: %zu item(s) removed; network namespaces of running launchers left alone\n",
      removed.size());
  return 0;
}

}  // namespace panama::cluster
