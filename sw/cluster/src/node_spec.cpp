// The node-spec file of a cluster run's child processes (node_spec.hpp).
#include "panama/cluster/node_spec.hpp"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "panama/cluster/ring_baseline.hpp"
#include "panama/cluster/test_data.hpp"
#include "panama/cluster/worker.hpp"
#include "panama/config/node_config.hpp"
#include "panama/pswitch/pswitch_process.hpp"

namespace panama::cluster {

namespace {

using nlohmann::json;

const char* role_name(NodeSpecFile::Role r) {
  switch (r) {
    case NodeSpecFile::Role::kPswitch:
      return "pswitch";
    case NodeSpecFile::Role::kWorker:
      return "worker";
    case NodeSpecFile::Role::kRingWorker:
      return "ring-worker";
  }
  return "?";
}

// Reads the keys of one JSON object, each exactly once, and names the file
// and the key in every error.
class Reader {
 public:
  Reader(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {
    if (!obj_.is_object()) throw std::runtime_error(where_ + ": not a JSON object");
  }
  const json& at(const std::string& key, json::value_t type) {
    auto it = obj_.find(key);
    if (it == obj_.end()) throw std::runtime_error(where_ + ": missing key '" + key + "'");
    const bool number = type == json::value_t::number_unsigned;
    if (number ? !it->is_number_unsigned() : it->type() != type)
      throw std::runtime_error(where_ + ": key '" + key + "' has the wrong type");
    seen_.insert(key);
    return *it;
  }
  std::string str(const std::string& key) { return at(key, json::value_t::string).get<std::string>(); }
  uint64_t num(const std::string& key) { return at(key, json::value_t::number_unsigned).get<uint64_t>(); }
  uint32_t num32(const std::string& key) {
    const uint64_t v = num(key);
    if (v > UINT32_MAX) throw std::runtime_error(where_ + ": key '" + key + "' is out of range");
    return static_cast<uint32_t>(v);
  }
  std::array<uint8_t, 6> mac(const std::string& key) {
    config::MacAddress m{};
    if (!config::parse_mac(str(key), m))
      throw std::runtime_error(where_ + ": key '" + key + "' is not a MAC");
    return m;
  }
  // Every key of the object was read: anything else is a mistake.
  void done() const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (!seen_.count(it.key())) throw std::runtime_error(where_ + ": unknown key '" + it.key() + "'");
    }
  }

 private:
  const json& obj_;
  std::string where_;
  std::set<std::string> seen_;
};

}  // namespace

std::string node_spec_path(const std::string& run_dir, const std::string& name) {
  return run_dir + "/nodes/" + name + ".json";
}

void write_node_spec(const std::string& path, const NodeSpecFile& s) {
  json j = {{"role", role_name(s.role)},
            {"name", s.name},
            {"dpdk_prefix", s.dpdk_prefix},
            {"poll",
             {{"name", s.poll.name},
              {"spin_polls", s.poll.spin_polls},
              {"spin_us", s.poll.spin_us},
              {"max_sleep_us", s.poll.max_sleep_us}}}};
  if (s.role == NodeSpecFile::Role::kPswitch) {
    j["config"] = s.config_path;
    j["stats"] = s.stats_path;
  } else {
    const WorkerOptions& w = s.worker;
    j["plan"] = w.plan_path;
    j["vdevs"] = w.vdevs;
    j["seed"] = w.seed;
    j["elems"] = w.elems;
    j["iterations"] = w.iterations;
    j["streaming_copy_bytes"] = w.streaming_copy_bytes;
    if (s.role == NodeSpecFile::Role::kWorker) {
      j["dtype"] = dtype_name(w.dtype);
      j["leaf_of_rank"] = w.leaf_of_rank;
    }
    if (s.role == NodeSpecFile::Role::kRingWorker) {
      j["ring_channels"] = w.ring_channels;
      j["left"] = config::format_mac(s.peers.left);
      j["right"] = config::format_mac(s.peers.right);
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write the node-spec file " + path);
}

NodeSpecFile read_node_spec(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open the node-spec file '" + path + "'");
  json j;
  try {
    j = json::parse(f);
  } catch (const json::exception& e) {
    throw std::runtime_error(path + ": not JSON (" + std::string(e.what()) + ")");
  }
  NodeSpecFile s;
  Reader r(j, path);
  const std::string role = r.str("role");
  if (role == "pswitch") {
    s.role = NodeSpecFile::Role::kPswitch;
  } else if (role == "worker") {
    s.role = NodeSpecFile::Role::kWorker;
  } else if (role == "ring-worker") {
    s.role = NodeSpecFile::Role::kRingWorker;
  } else {
    throw std::runtime_error(path + ": key 'role' is '" + role + "' (pswitch, worker or ring-worker)");
  }
  s.name = r.str("name");
  s.dpdk_prefix = r.str("dpdk_prefix");
  {
    Reader p(r.at("poll", json::value_t::object), path + ", key 'poll'");
    s.poll.name = p.str("name");
    s.poll.spin_polls = p.num32("spin_polls");
    s.poll.spin_us = p.num32("spin_us");
    s.poll.max_sleep_us = p.num32("max_sleep_us");
    p.done();
  }
  if (s.role == NodeSpecFile::Role::kPswitch) {
    s.config_path = r.str("config");
    s.stats_path = r.str("stats");
  } else {
    WorkerOptions& w = s.worker;
    w.plan_path = r.str("plan");
    for (const json& v : r.at("vdevs", json::value_t::array)) {
      if (!v.is_string()) throw std::runtime_error(path + ": key 'vdevs' must list strings");
      w.vdevs.push_back(v.get<std::string>());
    }
    w.seed = r.num("seed");
    w.elems = r.num("elems");
    w.iterations = r.num32("iterations");
    w.streaming_copy_bytes = r.num("streaming_copy_bytes");
    w.file_prefix = s.dpdk_prefix;
    w.idle = s.poll;
    if (s.role == NodeSpecFile::Role::kWorker) {
      const std::string dtype = r.str("dtype");
      if (!parse_dtype(dtype, w.dtype))
        throw std::runtime_error(path + ": key 'dtype' is '" + dtype + "' (fp32, bf16 or fp16)");
      for (const json& v : r.at("leaf_of_rank", json::value_t::array)) {
        if (!v.is_number_unsigned() || v.get<uint64_t>() > 255)
          throw std::runtime_error(path + ": key 'leaf_of_rank' must list PSwitch indices (0..255)");
        w.leaf_of_rank.push_back(v.get<uint32_t>());
      }
    }
    if (s.role == NodeSpecFile::Role::kRingWorker) {
      w.ring_channels = r.num32("ring_channels");
      s.peers.left = r.mac("left");
      s.peers.right = r.mac("right");
    }
  }
  r.done();
  return s;
}

bool is_node_child(int argc, char** argv) {
  return argc >= 2 && std::strcmp(argv[1], "--node") == 0;
}

namespace {

std::atomic<bool> g_pswitch_stop{false};
void on_pswitch_term(int) {
  g_pswitch_stop.store(true);
}

}  // namespace

int run_node_child(int argc, char** argv) {
  NodeSpecFile s;
  try {
    if (argc != 3) throw std::runtime_error("--node takes one node-spec file and nothing else");
    s = read_node_spec(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "%s --node: %s\n(--node <file> starts a child process of a cluster run from its node-spec "
                 "file; did you mean --nodes?)\n",
                 argv[0], e.what());
    return 2;
  }
  switch (s.role) {
    case NodeSpecFile::Role::kPswitch: {
      std::signal(SIGINT, SIG_IGN);  // the parent sends SIGTERM when it is time
      std::signal(SIGTERM, on_pswitch_term);
      pswitch::PswitchProcessOptions o;
      o.config_path = s.config_path;
      o.stats_path = s.stats_path;
      o.extra_eal = {"--log-level=*:error"};
      o.file_prefix = s.dpdk_prefix;
      o.idle = s.poll;
      return pswitch::run_pswitch_process(o, g_pswitch_stop);
    }
    case NodeSpecFile::Role::kWorker:
      run_worker(s.worker);
    case NodeSpecFile::Role::kRingWorker:
      run_ring_worker(s.worker, s.peers);
  }
  return 2;
}

}  // namespace panama::cluster
