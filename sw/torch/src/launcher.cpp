// panama-torchrun: runs a training command once per rank on the virtual
// cluster (docs/pytorch.md, "Launching"), in the spirit of torchrun.
//
//   panama-torchrun --workers 4 -- /usr/bin/python3 examples/torch/train_mlp.py
//
// It plans the job and brings up the software PSwitch(es) and memif links
// with the same steps as panama-cluster (orchestration.hpp), starts the
// command per rank with RANK, WORLD_SIZE, MASTER_ADDR/PORT and the PANAMA_*
// variables the `panama` backend reads, prefixes every output line with the
// rank, and stops everything on Ctrl-C or when a rank fails, leaving no
// process and no DPDK runtime directory behind.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/cluster_cli.hpp"
#include "panama/cluster/node_spec.hpp"
#include "panama/cluster/orchestration.hpp"
#include "panama/cluster/worker_common.hpp"

using namespace panama::cluster;

namespace {

// A TCP port that was free a moment ago, for the rendezvous store.
int free_tcp_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "unknown status";
}

}  // namespace

int main(int argc, char** argv) {
  // Its PSwitches are its children: `panama-torchrun --node <spec file>`.
  if (is_node_child(argc, argv)) return run_node_child(argc, argv);

  ClusterOptions opt;
  opt.elems_per_packet = 1024;
  std::vector<std::string> command;
  int master_port = 0;
  bool prefix = true;
  std::string python_path = PANAMA_TORCH_PYTHONPATH;
  CLI::App app{
      "panama-torchrun: run a command once per rank on a PANAMA virtual cluster (software PSwitches, memif "
      "links); the ranks use torch.distributed's \"panama\" backend"};
  add_cluster_options(app, opt);
  app.add_option("--master-port", master_port, "TCP port of the rendezvous store (default: a free one)")
      ->group(kRunGroup);
  app.add_flag("!--no-prefix", prefix, "do not prefix output lines with the rank")->group(kRunGroup);
  app.add_option("--pythonpath", python_path, "where the panama_torch package is (prepended to PYTHONPATH)")
      ->capture_default_str()
      ->group(kRunGroup);
  app.add_option("command", command, "the command each rank runs (after --)")->required();
  if (const int rc = parse_cluster_command_line(app, argc, argv); rc >= 0) return rc;
  if (const std::string bad = check_cluster_options(app, opt); !bad.empty()) {
    std::fprintf(stderr, "panama-torchrun: %s\n", bad.c_str());
    return 2;
  }
  if (opt.jobs != 1) {
    std::fprintf(stderr, "panama-torchrun: runs one job (--jobs 1)\n");
    return 2;
  }
  const std::string self = self_exe();
  if (self.empty()) {
    std::fprintf(stderr, "panama-torchrun: cannot find its own executable (/proc/self/exe)\n");
    return 1;
  }

  // 1. plan
  PlannedRun run;
  if (const int rc = plan_run_or_report(opt, run, "panama-torchrun"); rc != 0) return rc;
  if (master_port == 0) master_port = free_tcp_port();
  std::fprintf(stderr,
               "panama-torchrun: %zu rank(s), %s topology, %zu PSwitch(es), %u tree(s), links %.3g Gbit/s, "
               "run directory %s\n",
               run.dep.workers.size(), opt.topology.c_str(), run.dep.switches.size(), opt.trees,
               opt.link_gbps, run.run_dir.c_str());

  // 2. bring up the PSwitches; 3. start the ranks
  NodeSet nodes(run.run_dir);
  std::map<std::string, uint32_t> rank_of;
  int rc = 0;
  try {
    // Processes sharing the machine with the ranks: the balanced preset.
    nodes.start_switches(run.dep, self, idle_policy(opt));
    std::string pswitch_pids;
    for (const Node& n : nodes.nodes()) {
      if (n.is_switch)
        pswitch_pids += (pswitch_pids.empty() ? "" : ",") + n.name + "=" + std::to_string(n.pid);
    }
    const char* old_pp = std::getenv("PYTHONPATH");
    const std::string pp = python_path + (old_pp && *old_pp ? std::string(":") + old_pp : std::string());
    for (const auto& w : run.dep.workers) {
      NodeSpec spec;
      spec.name = w.host;
      spec.exe = command[0];
      spec.args.assign(command.begin() + 1, command.end());
      spec.capture_stdout = spec.capture_stderr = true;
      spec.own_process_group = true;
      spec.dpdk_prefix = nodes.dpdk_prefix(w.host);
      const std::string n = std::to_string(w.plan.world_size), r = std::to_string(w.plan.rank);
      spec.env = {"RANK=" + r,
                  "LOCAL_RANK=" + r,
                  "WORLD_SIZE=" + n,
                  "LOCAL_WORLD_SIZE=" + n,
                  "MASTER_ADDR=127.0.0.1",
                  "MASTER_PORT=" + std::to_string(master_port),
                  "PANAMA_PLAN=" + run.run_dir + "/" + w.host + ".plan.json",
                  "PANAMA_EAL_ARGS=" +
                      join(node_eal_args(w.vdevs.empty() ? std::vector<std::string>{w.vdev} : w.vdevs, 512,
                                         spec.dpdk_prefix)),
                  "PANAMA_RUN_DIR=" + run.run_dir,
                  "PANAMA_PSWITCH_PIDS=" + pswitch_pids,
                  "PYTHONPATH=" + pp,
                  "PYTHONUNBUFFERED=1"};
      // One intra-op thread per rank unless the user chose (as torchrun does): several ranks share
      // the machine's cores, and OpenMP threads spinning after each parallel region keep the
      // runtime's progress threads and the PSwitch off the CPU (docs/pytorch.md, "Retransmissions").
      if (!std::getenv("OMP_NUM_THREADS")) spec.env.push_back("OMP_NUM_THREADS=1");
      rank_of[w.host] = w.plan.rank;
      nodes.start(spec);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-torchrun: %s\n", e.what());
    rc = 1;
  }

  // 4. supervise: forward output, stop on Ctrl-C or when a rank fails.
  bool interrupted = false, switch_reported = false;
  int failed_rank = -1, failed_status = 0;
  while (rc == 0) {
    nodes.poll(100, [&](Node& n, const std::string& line, bool is_stderr) {
      FILE* out = is_stderr ? stderr : stdout;
      if (prefix) {
        std::fprintf(out, "[rank %u] %s\n", rank_of[n.name], line.c_str());
      } else {
        std::fprintf(out, "%s\n", line.c_str());
      }
      std::fflush(out);
    });
    if (const Node* s = nodes.exited_switch(); s && !switch_reported) {
      // The ranks notice by themselves: their allreduces fail after the retry budget.
      switch_reported = true;
      std::fprintf(stderr, "panama-torchrun: PSwitch %s exited (%s); allreduces through it will fail\n",
                   s->name.c_str(), describe_status(s->status).c_str());
    }
    for (const Node& n : nodes.nodes()) {
      if (!n.is_switch && n.exited && failed_rank < 0 &&
          !(WIFEXITED(n.status) && WEXITSTATUS(n.status) == 0)) {
        failed_rank = static_cast<int>(rank_of[n.name]);
        failed_status = n.status;
      }
    }
    if (failed_rank >= 0) {
      std::fprintf(stderr, "panama-torchrun: rank %d failed (%s), stopping the others\n", failed_rank,
                   describe_status(failed_status).c_str());
      break;
    }
    if (!nodes.non_switch_running()) break;
    if (nodes.signalled()) {
      interrupted = true;
      std::fprintf(stderr, "panama-torchrun: interrupted, stopping every process\n");
      break;
    }
  }

  // 6. tear down; 5. collect (exit statuses)
  nodes.tear_down(5.0, 5.0);
  for (const Node& n : nodes.nodes()) {
    if (n.is_switch) continue;
    if (!(WIFEXITED(n.status) && WEXITSTATUS(n.status) == 0) && rc == 0 && failed_rank < 0 && !interrupted) {
      failed_rank = static_cast<int>(rank_of[n.name]);
      failed_status = n.status;
    }
  }
  const bool ok = rc == 0 && !interrupted && failed_rank < 0;
  finish_run_dir(run, ok || interrupted, "panama-torchrun");
  if (interrupted) return 130;
  if (rc != 0) return rc;
  if (failed_rank >= 0) return WIFEXITED(failed_status) ? WEXITSTATUS(failed_status) : 1;
  return 0;
}
