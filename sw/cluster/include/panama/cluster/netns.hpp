// Network namespaces and veth links for `panama-cluster --nodes netns`
// (docs/cluster.md, "Namespaces and veths"): every node of a run in its own
// network namespace, neighbours joined by veth pairs shaped with tc, as
// hosts behind a switch are joined by cables.
//
// Naming: everything a run creates carries its tag "pnm<pid of the
// launcher>": namespace "pnm<pid>-<node>" (what `ip netns` lists), and the
// nodes' DPDK file prefixes (/var/run/dpdk/pnm<pid>-<node>). A veth pair is
// created straight into its two namespaces (never in the host's), the end
// in node a's namespace named after b and the other named after a: the
// PSwitch port "w0" is the interface "w0" in the PSwitch's namespace, and
// the worker's uplink is the interface "s0" in the worker's. A namespace
// takes its veths with it when it is deleted.
//
// Nothing is left behind: the launcher removes what it made; a Reaper, a
// process of its own that outlives the launcher, removes it when the
// launcher dies in any way (SIGKILL included); and remove_stale_runs()
// (`panama-cluster --cleanup`, also called at the start of every netns
// run) removes what runs whose launcher is gone left over.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace panama::cluster::netns {

// Where `ip netns` keeps the namespaces it names (bind mounts).
inline constexpr const char* kNetnsDir = "/var/run/netns";

// The tag of everything a run of launcher `pid` creates: "pnm<pid>".
std::string run_tag(pid_t pid);
// Namespace of `node` in run `tag`: "<tag>-<node>".
std::string namespace_name(const std::string& tag, const std::string& node);

// "" when this process can create a network namespace and a veth pair in
// it, else why not (not root, no `ip`, the kernel refuses).
std::string unavailable_reason();

// A command run to completion: exit status (or 128 + signal, -1 when it
// could not start) and its stdout and stderr together.
struct CommandResult {
  int status = -1;
  std::string output;
};
CommandResult run_command(const std::vector<std::string>& argv);
// The same; throws std::runtime_error naming the command and its output
// when it does not exit with 0.
void run_or_throw(const std::vector<std::string>& argv);

// What the kernel's tc offers for the links (probed in a scratch
// namespace): tbf shapes the rate; netem adds delay; an ECN-marking qdisc
// (RED with ecn, or fq_codel with ce_threshold) marks CE in the kernel's
// queue as a switch would.
struct KernelQdiscs {
  bool tbf = false;
  bool netem = false;
  std::string ecn;      // "red", "fq_codel" or "" (none works)
  std::string missing;  // what was tried and refused, for the start-up line
};
KernelQdiscs probe_qdiscs(const std::string& tag);

// How one direction of a link is shaped (tc on the sending end's veth).
struct LinkShape {
  double rate_gbps = 0;  // tbf rate (0: unshaped)
  double delay_ms = 0;   // netem delay in front of it (0: none)
  uint64_t queue_bytes = 4u << 20;
  uint32_t overhead_bytes = 24;  // preamble, gap and FCS per frame, as the PSwitch counts
  // The bucket: at least two jumbo frames and 100 us at the rate; more lets
  // a burst of a sender's window pass without a qdisc timer per frame.
  uint64_t burst_bytes = 0;
  std::string ecn_qdisc;     // "red" / "fq_codel": marking child of the tbf; "": a byte FIFO
  uint64_t ecn_k_bytes = 0;  // its threshold
};

// The tc commands (without "tc -n <ns>") that shape `iface` with `shape`;
// empty for an unshaped link. Exposed for tests and docs.
std::vector<std::vector<std::string>> shape_commands(const std::string& iface, const LinkShape& shape);

// The namespaces and links of one run.
class Fabric {
 public:
  explicit Fabric(std::string tag);
  ~Fabric();  // remove()
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  const std::string& tag() const { return tag_; }
  // Creates node `name`'s namespace, IPv6 off in it (no router
  // solicitations or MLD reports: only the run's own frames cross the links).
  void add_node(const std::string& name);
  // A veth pair between nodes a and b (interface "b" in a's namespace, "a"
  // in b's), MTU `mtu`, both ends up; a's end (what a sends) shaped by
  // `a_to_b`, b's by `b_to_a`.
  void add_link(const std::string& a, const std::string& b, const LinkShape& a_to_b, const LinkShape& b_to_a,
                unsigned mtu = 9000);
  std::string ns(const std::string& node) const { return namespace_name(tag_, node); }
  // The interfaces of `node` (its neighbours' names).
  std::vector<std::string> interfaces(const std::string& node) const;
  // Takes every interface of `node` down: its links' other ends lose carrier.
  void set_links_down(const std::string& node);
  // Joins every interface of `node` in one Linux bridge (a plain switch).
  void add_bridge(const std::string& node);
  // Gives `iface` of `node` an IPv4 address ("10.200.0.1/16").
  void add_address(const std::string& node, const std::string& iface, const std::string& cidr);
  // Kills whatever still runs in the namespaces and deletes them (their
  // veths with them). Idempotent.
  void remove();
  // ip and tc commands run so far (for the start-up line).
  unsigned commands() const { return commands_; }

 private:
  void run(const std::vector<std::string>& argv);
  std::string tag_;
  std::vector<std::string> nodes_;
  std::vector<std::pair<std::string, std::string>> links_;
  unsigned commands_ = 0;
  bool removed_ = false;
};

// Deletes namespace `name` (as `ip netns delete` does, after SIGKILL to
// every process in it). False when there was none.
bool delete_namespace(const std::string& name);

// Everything run `tag` made: its namespaces (processes in them killed) and
// its nodes' DPDK runtime folders; also `run_dir` when not empty. Returns
// what it removed. Never throws.
std::vector<std::string> remove_run(const std::string& tag, const std::string& run_dir = "");

// The tags of runs whose launcher is no longer running (a namespace
// "pnm<pid>-..." whose pid is gone, or is now another program).
std::vector<std::string> stale_runs();
// remove_run for every stale run, plus the DPDK folders of dead PANAMA
// processes; returns what it removed.
std::vector<std::string> remove_stale_runs();

// A process that outlives the launcher and removes run `tag` once the
// launcher is gone: it waits for the end of a pipe whose other end only the
// launcher holds, so it learns of the launcher's end however it comes
// (SIGKILL included), and then removes the run's namespaces (killing what
// still runs in them) and DPDK folders, and `run_dir` unless the launcher
// released it first (release(): it cleaned up and decided about its run
// directory itself). Its own session, so a signal to the launcher's process
// group does not reach it.
class Reaper {
 public:
  Reaper(const std::string& tag, const std::string& run_dir);
  ~Reaper();  // release()
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  // The launcher has cleaned up: the reaper checks once more and exits.
  void release();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace panama::cluster::netns
