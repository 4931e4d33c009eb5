// Option values of the cluster programs: sizes, the topology, faults, ECN
// thresholds, failure injection and the polling preset (cluster.hpp,
// cluster_cli.hpp).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>

#include "panama/cluster/cluster.hpp"
#include "panama/cluster/cluster_cli.hpp"

namespace panama::cluster {

namespace {

// A probability in [0, 0.5].
double parse_probability(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double p = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(p >= 0.0 && p <= 0.5))
    throw std::invalid_argument(what + " '" + text + "' is not a probability from 0 to 0.5");
  return p;
}

uint32_t parse_count(const std::string& text, const std::string& what, uint32_t lo, uint32_t hi) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo || v > hi)
    throw std::invalid_argument(what + " '" + text + "' is not a number from " + std::to_string(lo) + " to " +
                                std::to_string(hi));
  return static_cast<uint32_t>(v);
}

}  // namespace

uint64_t parse_size(const std::string& text) {
  const std::string hint =
      "not a size: '" + text + "' (e.g. 64MiB, 4096, 1.5GiB; units B, KiB, MiB, GiB, KB, MB, GB)";
  // Digits, an optional fraction, a unit; parsed exactly, every step checked for overflow.
  size_t i = 0;
  uint64_t whole = 0;
  bool any_digit = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    any_digit = true;
    if (__builtin_mul_overflow(whole, 10u, &whole) ||
        __builtin_add_overflow(whole, static_cast<uint64_t>(text[i] - '0'), &whole)) {
      throw std::invalid_argument("size '" + text + "' is too large (more than 2^64 bytes)");
    }
  }
  std::string fraction;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) fraction += text[i];
    any_digit = any_digit || !fraction.empty();
  }
  if (!any_digit) throw std::invalid_argument(hint);
  std::string unit = text.substr(i);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char ch) { return std::tolower(ch); });
  static const std::map<std::string, uint64_t> units = {
      {"", 1},           {"b", 1},          {"k", 1024},           {"kb", 1000},       {"kib", 1024},
      {"m", 1u << 20},   {"mb", 1000000},   {"mib", 1u << 20},     {"g", 1u << 30},    {"gb", 1000000000},
      {"gib", 1u << 30}, {"t", 1ull << 40}, {"tb", 1000000000000}, {"tib", 1ull << 40}};
  auto it = units.find(unit);
  if (it == units.end()) throw std::invalid_argument(hint);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(whole, it->second, &bytes)) {
    throw std::invalid_argument("size '" + text + "' is too large (more than 2^64 bytes)");
  }
  // The fraction, rounded to the nearest byte: at most 19 digits keep the product in range.
  if (!fraction.empty()) {
    const std::string f = fraction.substr(0, 18);
    uint64_t num = 0, den = 1;
    for (char ch : f) {
      num = num * 10 + static_cast<uint64_t>(ch - '0');
      den *= 10;
    }
    const unsigned __int128 part = (static_cast<unsigned __int128>(num) * it->second + den / 2) / den;
    if (part > UINT64_MAX - bytes) throw std::invalid_argument("size '" + text + "' is too large");
    bytes += static_cast<uint64_t>(part);
  }
  return bytes;
}

uint64_t worker_memory_bytes(uint64_t elems, uint32_t elem_bytes, uint32_t workers_per_job, uint32_t jobs) {
  const unsigned __int128 need =
      static_cast<unsigned __int128>(elems) * elem_bytes * 2u * workers_per_job * std::max<uint32_t>(jobs, 1);
  return need > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(need);
}

uint64_t mem_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (f >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

runtime::IdlePolicy idle_policy(const ClusterOptions& o) {
  if (!o.poll.empty()) return runtime::IdlePolicy::parse(o.poll);
  // Threads and namespaces: a few loops hand frames to each other on as many
  // CPUs (docs/cluster.md, "Idle back-off"); processes over memif: more loops than CPUs.
  return o.in_process || o.netns ? runtime::IdlePolicy::handoff() : runtime::IdlePolicy::balanced();
}

void parse_topology(const std::string& text, ClusterOptions& opt) {
  const size_t colon = text.find(':');
  const std::string kind = text.substr(0, colon);
  if (kind == "single") {
    if (colon != std::string::npos) throw std::invalid_argument("single takes no size (one PSwitch)");
    opt.topology = "single";
    opt.dual_homed = false;
    return;
  }
  if (kind != "two-tier" && kind != "dual-homed")
    throw std::invalid_argument("'" + text +
                                "': single, two-tier[:LEAVESxSPINES] or dual-homed[:LEAVESxSPINES]");
  opt.topology = "two-tier";
  opt.dual_homed = kind == "dual-homed";
  opt.leaves = opt.spines = 2;
  if (colon != std::string::npos) {
    const std::string size = text.substr(colon + 1);
    const size_t x = size.find('x');
    if (x == std::string::npos) throw std::invalid_argument("'" + size + "' is not LEAVESxSPINES, e.g. 4x2");
    opt.leaves = parse_count(size.substr(0, x), "leaves", 1, 16);
    opt.spines = parse_count(size.substr(x + 1), "spines", 1, 16);
  }
  if (opt.dual_homed && opt.leaves % 2 != 0)
    throw std::invalid_argument("dual-homed needs an even number of leaves (two planes)");
}

void parse_faults(const std::string& text, ClusterOptions& opt) {
  if (text.find('=') == std::string::npos) {
    opt.loss = opt.dup = opt.reorder = parse_probability(text, "fault probability");
    return;
  }
  opt.loss = opt.dup = opt.reorder = 0;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (key == "loss") {
      opt.loss = parse_probability(value, key);
    } else if (key == "dup") {
      opt.dup = parse_probability(value, key);
    } else if (key == "reorder") {
      opt.reorder = parse_probability(value, key);
    } else {
      throw std::invalid_argument("'" + item + "': expected loss=P, dup=P or reorder=P");
    }
    at = comma + 1;
  }
}

void parse_ecn_k(const std::string& text, ClusterOptions& opt) {
  const size_t comma = text.find(',');
  opt.ecn_k_bytes = parse_size(text.substr(0, comma));
  opt.engine_ecn_k_bytes = comma == std::string::npos ? opt.ecn_k_bytes : parse_size(text.substr(comma + 1));
}

void parse_fail_switch(const std::string& text, ClusterOptions& opt) {
  std::string rest = text;
  opt.fail_signal = "STOP";
  opt.fail_at = 0.3;
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    const std::string f = rest.substr(at + 1);
    char* end = nullptr;
    opt.fail_at = std::strtod(f.c_str(), &end);
    if (f.empty() || *end != '\0' || !(opt.fail_at >= 0.0 && opt.fail_at <= 1.0))
      throw std::invalid_argument("'@" + f + "': the fraction of the run's bytes done, from 0 to 1");
    rest = rest.substr(0, at);
  }
  if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    opt.fail_signal = rest.substr(colon + 1);
    if (opt.fail_signal != "STOP" && opt.fail_signal != "KILL" && opt.fail_signal != "DOWN")
      throw std::invalid_argument("':" + opt.fail_signal +
                                  "': STOP (freeze it), KILL (for good) or DOWN (its links, --nodes netns)");
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) throw std::invalid_argument("'" + text + "' names no PSwitch");
  opt.fail_switch = rest;
}

}  // namespace panama::cluster
