// Reading, validating and writing node configuration files
// (docs/configuration.md). Every error names the origin, the JSON path and
// what is wrong, because the person reading it is fixing a file by hand: the
// reading is json_reader.hpp's, the checks of the whole file are here.
#include "panama/config/node_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace panama::config {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& path, const std::string& what) {
  JsonSource(origin).fail(path, what);
}

EntryConfig parse_entry(const JsonSource& src, const json& j, size_t position, uint16_t udp_port) {
  const std::string path = json_path("entries", position);
  const JsonObject r(
      src, j, path,
      {"index", "job", "tree", "root", "fan_in", "children", "slot_base", "slot_count", "out_child_id",
       "eth_src", "eth_dst", "ip_src", "ip_dst", "udp_src", "udp_dst", "ttl", "dscp"});
  EntryConfig e;
  e.index = static_cast<uint32_t>(r.uint("index", 0, 0xFFFFFFFFu, position));
  e.job = static_cast<uint16_t>(r.uint("job", 0, 0xFFFF));
  e.tree = static_cast<uint8_t>(r.uint("tree", 0, 0xFF));
  e.root = r.boolean("root", false);
  const json& children = r.array("children");
  for (size_t k = 0; k < children.size(); ++k) {
    // Range-checked here so the message points at the element.
    e.children.push_back(
        static_cast<uint8_t>(src.uint(children[k], json_path(r.path("children"), k), 0, kMaxChildId)));
  }
  e.fan_in = static_cast<uint32_t>(r.uint("fan_in", 0, 0xFFFFFFFFu, e.children.size()));
  e.slot_base = static_cast<uint32_t>(r.uint("slot_base", 0, 0xFFFFFFFFu));
  e.slot_count = static_cast<uint32_t>(r.uint("slot_count", 0, 0xFFFFFFFFu));
  e.out_child_id = static_cast<uint16_t>(r.uint("out_child_id", 0, 0xFFFF, 0));
  e.eth_src = r.mac("eth_src");
  e.eth_dst = r.mac("eth_dst");
  e.ip_src = r.ipv4("ip_src");
  e.ip_dst = r.ipv4("ip_dst");
  e.udp_src = static_cast<uint16_t>(r.uint("udp_src", 0, 0xFFFF, udp_port));
  e.udp_dst = static_cast<uint16_t>(r.uint("udp_dst", 0, 0xFFFF, udp_port));
  e.ttl = static_cast<uint8_t>(r.uint("ttl", 0, 0xFF, kDefaultTtl));
  e.dscp = static_cast<uint8_t>(r.uint("dscp", 0, 0xFF, 0));
  return e;
}

void validate_entry(const EntryConfig& e, const std::string& path, const std::string& origin) {
  if (e.children.empty()) fail(origin, path + ".children", "at least one child id is needed");
  std::set<uint32_t> seen;
  for (size_t k = 0; k < e.children.size(); ++k) {
    const std::string cpath = fmt::format("{}.children[{}]", path, k);
    if (e.children[k] > kMaxChildId) {
      fail(origin, cpath, fmt::format("child id {} is over {}", e.children[k], kMaxChildId));
    }
    if (!seen.insert(e.children[k]).second)
      fail(origin, cpath, fmt::format("child id {} is listed twice", e.children[k]));
  }
  // The parent admits child ids through a 64-bit mask: a higher id could
  // never contribute there (only a root, which emits result-down frames
  // that carry no child id, may leave it at any value).
  if (!e.root && e.out_child_id > kMaxChildId) {
    fail(origin, path + ".out_child_id",
         fmt::format("child id {} is over {} (the parent's child mask has 64 bits)", e.out_child_id,
                     kMaxChildId));
  }
  if (e.fan_in == 0 || e.fan_in > kMaxFanIn) {
    fail(origin, path + ".fan_in", fmt::format("out of range: {} is not in 1..{}", e.fan_in, kMaxFanIn));
  }
  if (e.fan_in > e.children.size()) {
    fail(origin, path + ".fan_in",
         fmt::format("fan_in {} is more than the {} allowed children", e.fan_in, e.children.size()));
  }
  if (e.slot_count == 0 || e.slot_count > 0xFFFF) {
    fail(origin, path + ".slot_count", fmt::format("out of range: {} is not in 1..65535", e.slot_count));
  }
  if (uint64_t{e.slot_base} + e.slot_count > 0xFFFFFFFFull) {
    fail(origin, path + ".slot_base", "slot_base + slot_count does not fit in 32 bits");
  }
  if (e.udp_src == 0) fail(origin, path + ".udp_src", "UDP port 0 is not allowed");
  if (e.udp_dst == 0) fail(origin, path + ".udp_dst", "UDP port 0 is not allowed");
  if (e.ttl == 0) fail(origin, path + ".ttl", "out of range: 0 is not in 1..255");
  if (e.dscp > 63) fail(origin, path + ".dscp", fmt::format("out of range: {} is not in 0..63", e.dscp));
}

}  // namespace

uint64_t EntryConfig::child_mask() const {
  uint64_t mask = 0;
  for (uint8_t c : children) {
    if (c <= kMaxChildId) mask |= uint64_t{1} << c;
  }
  return mask;
}

TableEntry EntryConfig::table_entry() const {
  TableEntry t;
  t.job = job;
  t.tree = tree;
  t.enable = true;
  t.root = root;
  t.fan_in = fan_in;
  t.child_mask = child_mask();
  t.slot_base = slot_base;
  t.slot_count = slot_count;
  t.out_child_id = out_child_id;
  t.eth_dst = eth_dst;
  t.eth_src = eth_src;
  t.ip_src = ip_src;
  t.ip_dst = ip_dst;
  t.udp_src = udp_src;
  t.udp_dst = udp_dst;
  t.ttl = ttl;
  t.dscp = dscp;
  return t;
}

void validate_node_config(const NodeConfig& cfg, const std::string& origin) {
  if (cfg.node.empty()) fail(origin, "node", "must not be empty");
  if (cfg.engine.udp_port == 0) fail(origin, "engine.udp_port", "UDP port 0 is not allowed");
  if (!cfg.pswitch.is_null() && !cfg.pswitch.is_object()) {
    JsonSource(origin).wrong_type(cfg.pswitch, "pswitch", "an object");
  }
  std::map<uint32_t, size_t> by_index;
  std::map<std::pair<uint16_t, uint8_t>, size_t> by_key;
  for (size_t i = 0; i < cfg.entries.size(); ++i) {
    const EntryConfig& e = cfg.entries[i];
    const std::string path = fmt::format("entries[{}]", i);
    validate_entry(e, path, origin);
    if (auto [it, fresh] = by_index.emplace(e.index, i); !fresh) {
      fail(origin, path + ".index",
           fmt::format("duplicate index {} (also entries[{}])", e.index, it->second));
    }
    if (auto [it, fresh] = by_key.emplace(std::make_pair(e.job, e.tree), i); !fresh) {
      fail(origin, path,
           fmt::format("job {} tree {} is also configured by entries[{}]", e.job, e.tree, it->second));
    }
    for (size_t o = 0; o < i; ++o) {
      const EntryConfig& p = cfg.entries[o];
      if (e.slot_base < p.slot_base + p.slot_count && p.slot_base < e.slot_base + e.slot_count) {
        fail(origin, path + ".slot_base",
             fmt::format("slots {}..{} overlap entries[{}] (slots {}..{})", e.slot_base,
                         e.slot_base + e.slot_count - 1, o, p.slot_base, p.slot_base + p.slot_count - 1));
      }
    }
  }
}

NodeConfig parse_node_config(const json& doc, const std::string& origin) {
  const JsonSource src(origin);
  const JsonObject top(src, doc, "", {"node", "engine", "entries", "pswitch"});
  NodeConfig cfg;
  cfg.node = top.string("node");
  if (top.has("engine")) {
    const JsonObject r = top.object("engine", {"udp_port"});
    cfg.engine.udp_port = static_cast<uint16_t>(r.uint("udp_port", 0, 0xFFFF, cfg.engine.udp_port));
  }
  const json& entries = top.array("entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    cfg.entries.push_back(parse_entry(src, entries[i], i, cfg.engine.udp_port));
  }
  if (const json* ps = top.find("pswitch")) cfg.pswitch = *ps;
  validate_node_config(cfg, origin);
  return cfg;
}

NodeConfig load_node_config(const std::string& path) {
  return parse_node_config(read_json_file(path), path);
}

json to_json(const NodeConfig& cfg) {
  json doc;
  doc["node"] = cfg.node;
  doc["engine"] = {{"udp_port", cfg.engine.udp_port}};
  json entries = json::array();
  for (const EntryConfig& e : cfg.entries) {
    json children = json::array();
    for (uint8_t c : e.children) children.push_back(c);
    entries.push_back({{"index", e.index},
                       {"job", e.job},
                       {"tree", e.tree},
                       {"root", e.root},
                       {"fan_in", e.fan_in},
                       {"children", children},
                       {"slot_base", e.slot_base},
                       {"slot_count", e.slot_count},
                       {"out_child_id", e.out_child_id},
                       {"eth_src", format_mac(e.eth_src)},
                       {"eth_dst", format_mac(e.eth_dst)},
                       {"ip_src", format_ipv4(e.ip_src)},
                       {"ip_dst", format_ipv4(e.ip_dst)},
                       {"udp_src", e.udp_src},
                       {"udp_dst", e.udp_dst},
                       {"ttl", e.ttl},
                       {"dscp", e.dscp}});
  }
  doc["entries"] = entries;
  if (!cfg.pswitch.is_null()) doc["pswitch"] = cfg.pswitch;
  return doc;
}

std::string format_node_config(const NodeConfig& cfg) {
  // Keys in the documented order, a few related keys per line: easier to read
  // and diff than one key per line in alphabetical order.
  const auto str = [](const std::string& v) { return json(v).dump(); };
  std::string out = "{\n";
  out += fmt::format("  \"node\": {},\n", str(cfg.node));
  out += fmt::format("  \"engine\": {{ \"udp_port\": {} }},\n", cfg.engine.udp_port);
  out += "  \"entries\": [";
  for (size_t i = 0; i < cfg.entries.size(); ++i) {
    const EntryConfig& e = cfg.entries[i];
    std::string children;
    for (uint8_t c : e.children) children += (children.empty() ? "" : ", ") + std::to_string(c);
    out += i == 0 ? "\n" : ",\n";
    out += fmt::format(
        "    {{ \"index\": {}, \"job\": {}, \"tree\": {}, \"root\": {}, \"fan_in\": {}, \"children\": [{}],\n"
        "      \"slot_base\": {}, \"slot_count\": {}, \"out_child_id\": {},\n"
        "      \"eth_src\": {}, \"eth_dst\": {},\n"
        "      \"ip_src\": {}, \"ip_dst\": {}, \"udp_src\": {}, \"udp_dst\": {},\n"
        "      \"ttl\": {}, \"dscp\": {} }}",
        e.index, e.job, e.tree, e.root, e.fan_in, children, e.slot_base, e.slot_count, e.out_child_id,
        str(format_mac(e.eth_src)), str(format_mac(e.eth_dst)), str(format_ipv4(e.ip_src)),
        str(format_ipv4(e.ip_dst)), e.udp_src, e.udp_dst, e.ttl, e.dscp);
  }
  out += cfg.entries.empty() ? "]" : "\n  ]";
  if (!cfg.pswitch.is_null()) {
    std::string ps = cfg.pswitch.dump(2);
    for (size_t pos = ps.find('\n'); pos != std::string::npos; pos = ps.find('\n', pos + 1))
      ps.insert(pos + 1, "  ");
    out += ",\n  \"pswitch\": " + ps;
  }
  out += "\n}\n";
  return out;
}

void save_node_config(const NodeConfig& cfg, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw ConfigError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  out << format_node_config(cfg);
  out.flush();
  if (!out) throw ConfigError(fmt::format("{}: write failed", path));
}

bool parse_mac(const std::string& text, MacAddress& out) {
  if (text.size() != 17) return false;
  for (size_t b = 0; b < 6; ++b) {
    uint32_t v = 0;
    for (size_t k = 0; k < 2; ++k) {
      const char c = text[3 * b + k];
      uint32_t d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        return false;
      }
      v = v * 16 + d;
    }
    if (b < 5 && text[3 * b + 2] != ':') return false;
    out[b] = static_cast<uint8_t>(v);
  }
  return true;
}

bool parse_ipv4(const std::string& text, uint32_t& out) {
  uint32_t addr = 0;
  size_t pos = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (pos >= text.size() || text[pos] != '.') return false;
      ++pos;
    }
    const size_t start = pos;
    uint32_t v = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && pos - start < 3) {
      v = v * 10 + static_cast<uint32_t>(text[pos] - '0');
      ++pos;
    }
    // No empty parts, no leading zeros (ambiguous: octal elsewhere), no values over 255.
    if (pos == start || v > 255 || (pos - start > 1 && text[start] == '0')) return false;
    addr = (addr << 8) | v;
  }
  if (pos != text.size()) return false;
  out = addr;
  return true;
}

std::string format_mac(const MacAddress& m) {
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5]);
}

std::string format_ipv4(uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xFF, (a >> 8) & 0xFF, a & 0xFF);
}

}  // namespace panama::config
