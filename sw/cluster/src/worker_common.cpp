// The parts every virtual-cluster worker shares (worker_common.hpp).
#include "panama/cluster/worker_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace panama::cluster {

void iteration_barrier(const std::string& plan_path, uint32_t job, uint32_t rank, uint32_t world,
                       uint32_t iteration, double timeout_s, const std::function<void()>& while_waiting) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(plan_path).parent_path();
  auto file_of = [&](uint32_t r) {
    return dir /
           ("barrier-j" + std::to_string(job) + "-i" + std::to_string(iteration) + "-r" + std::to_string(r));
  };
  std::ofstream(file_of(rank)).put('\n');
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (uint32_t r = 0; r < world; ++r) {
    std::error_code ec;
    while (!fs::exists(file_of(r), ec)) {
      if (std::chrono::steady_clock::now() > until)
        throw std::runtime_error("rank " + std::to_string(r) + " did not reach iteration " +
                                 std::to_string(iteration) + " within " + std::to_string(timeout_s) + " s");
      if (while_waiting) while_waiting();
      std::this_thread::sleep_for(std::chrono::microseconds(while_waiting ? 200 : 1000));
    }
  }
}

std::vector<std::string> node_eal_args(const std::vector<std::string>& vdevs, unsigned memory_mb,
                                       const std::string& prefix) {
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::string> a = {"--no-huge", "-m", std::to_string(memory_mb), "--no-pci", "--no-telemetry",
                                "--log-level=*:error", "--file-prefix=" + prefix,
                                // One lcore that may run on every CPU: the processes share the machine.
                                "--lcores=0@(0-" + std::to_string(cpus - 1) + ")"};
  for (const std::string& v : vdevs) a.push_back("--vdev=" + v);
  return a;
}

uint32_t port_mbufs(const std::vector<std::string>& vdevs) {
  for (const std::string& v : vdevs) {
    if (v.rfind("net_af_xdp", 0) == 0) return 4095;
  }
  return 2047;
}

void print_progress_line(uint32_t iteration, uint64_t bytes) {
  std::printf("P %u %llu\n", iteration, static_cast<unsigned long long>(bytes));
  std::fflush(stdout);
}

void print_report_line(const std::string& report_json) {
  std::printf("R %s\n", report_json.c_str());
  std::fflush(stdout);
}

}  // namespace panama::cluster
