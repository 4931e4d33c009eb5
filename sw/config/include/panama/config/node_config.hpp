// The node configuration: one JSON file per node (engine, software PSwitch or
// card) that describes its engine's table. The controller writes it
// (to_json); panama-pcap, the software PSwitch and the card driver read it
// (load_node_config) and program the engine with apply_node_config
// (panama/engine/apply_config.hpp, in sw/control). docs/configuration.md documents every key.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/config/json_reader.hpp"  // ConfigError
#include "panama/table_entry.hpp"
#include "panama/wire.hpp"

namespace panama::config {

using MacAddress = MacBytes;

constexpr uint16_t kDefaultTtl = 64;
constexpr uint32_t kMaxChildId = 63;  // child ids index a 64-bit mask
constexpr uint32_t kMaxFanIn = 64;

// One (job, tree) entry of the engine table.
struct EntryConfig {
  uint32_t index = 0;  // table entry (ENTRY_INDEX)
  uint16_t job = 0;
  uint8_t tree = 0;
  bool root = false;              // emit result-down instead of aggregate-up
  uint32_t fan_in = 0;            // contributions that complete a slot
  std::vector<uint8_t> children;  // allowed child ids, 0..63, distinct
  uint32_t slot_base = 0;
  uint32_t slot_count = 0;  // the entry's share Q of the packet memory
  uint16_t out_child_id = 0;
  MacAddress eth_src{};
  MacAddress eth_dst{};
  uint32_t ip_src = 0;  // host order
  uint32_t ip_dst = 0;
  uint16_t udp_src = 0;
  uint16_t udp_dst = 0;
  uint8_t ttl = kDefaultTtl;
  uint8_t dscp = 0;

  uint64_t child_mask() const;
  // The entry as the engine's staged registers hold it (enabled).
  TableEntry table_entry() const;
};

struct EngineSection {
  uint16_t udp_port = wire::kDefaultUdpPort;
};

struct NodeConfig {
  std::string node;
  EngineSection engine;
  std::vector<EntryConfig> entries;
  // The software PSwitch's own section, passed through untouched (null when
  // the file has none).
  nlohmann::json pswitch;
};

// Reads and validates a node configuration file. Throws ConfigError.
NodeConfig load_node_config(const std::string& path);

// Validates a parsed JSON document; `origin` (usually the file name) starts
// every error message. Throws ConfigError.
NodeConfig parse_node_config(const nlohmann::json& doc, const std::string& origin);

// Checks what one file alone can tell (field ranges, distinct indices, no two
// entries with the same (job, tree) or overlapping slot ranges). Called by
// parse_node_config; the controller calls it on configurations it builds.
void validate_node_config(const NodeConfig& cfg, const std::string& origin);

// Every key written explicitly, so the file reads the same to every consumer.
nlohmann::json to_json(const NodeConfig& cfg);

// The file text for `cfg`: the keys of to_json in the documented order,
// a few related keys per line.
std::string format_node_config(const NodeConfig& cfg);

// Writes format_node_config(cfg) to `path`. Throws ConfigError.
void save_node_config(const NodeConfig& cfg, const std::string& path);

// "02:00:00:00:00:10" and "10.0.0.1" <-> binary; parse_* return false on bad text.
bool parse_mac(const std::string& text, MacAddress& out);
bool parse_ipv4(const std::string& text, uint32_t& out);
std::string format_mac(const MacAddress& mac);
std::string format_ipv4(uint32_t addr);

}  // namespace panama::config
