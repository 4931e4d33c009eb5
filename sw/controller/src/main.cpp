// panama-controller: cluster + job description in, node configs and job plans out.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "panama/config/json_reader.hpp"
#include "panama/controller/controller.hpp"

int main(int argc, char** argv) {
  CLI::App app{"panama-controller: computes aggregation trees, PSwitch tables and worker plans"};
  std::string cluster_path, jobs_path, out_dir, run_dir;
  app.add_option("--cluster", cluster_path, "cluster description JSON (hosts, pswitches, links)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--jobs", jobs_path, "job description JSON (jobs: workers, trees, weights)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--out", out_dir, "output directory for node configs and plans")->required();
  app.add_option("--run-dir", run_dir,
                 "directory of the virtual links' sockets (overrides the cluster's run_dir)");
  CLI11_PARSE(app, argc, argv);

  try {
    using panama::config::read_json_file;
    using panama::config::throw_as;
    using panama::controller::ControllerError;
    panama::controller::ClusterDesc cluster = panama::controller::parse_cluster(
        read_json_file(cluster_path, &throw_as<ControllerError>), cluster_path);
    if (!run_dir.empty()) cluster.run_dir = run_dir;
    const panama::controller::JobsDesc jobs =
        panama::controller::parse_jobs(read_json_file(jobs_path, &throw_as<ControllerError>), jobs_path);
    const auto d = panama::controller::plan_deployment(cluster, jobs);
    panama::controller::write_deployment(d, out_dir);
    for (const auto& t : d.trees) {
      std::printf("job %u tree %u: root %s\n", t.job, t.tree, t.root.c_str());
    }
    std::printf("wrote %zu PSwitch configs and %zu worker plans to %s (see deployment.json)\n",
                d.switches.size(), d.workers.size(), out_dir.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "panama-controller: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
