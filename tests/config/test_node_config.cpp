// Node configuration files: good files parse to the expected values (with
// documented defaults), every kind of bad file gives an error naming the
// file, the JSON path and the problem, and to_json round-trips.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include "panama/config/node_config.hpp"

using namespace panama::config;
using nlohmann::json;

namespace {

const char* kGood = R"({
  "node": "leaf0",
  "engine": { "udp_port": 9700 },
  "entries": [
    { "index": 3, "job": 1, "tree": 0, "root": true, "fan_in": 2, "children": [0, 1, 5],
      "slot_base": 0, "slot_count": 256, "out_child_id": 3,
      "eth_src": "02:00:00:00:00:10", "eth_dst": "02:00:00:00:01:00",
      "ip_src": "10.0.0.10", "ip_dst": "10.0.1.1", "udp_src": 9601, "udp_dst": 9602,
      "ttl": 32, "dscp": 46 },
    { "job": 2, "tree": 7, "children": [63, 0, 4, 2],
      "slot_base": 256, "slot_count": 16,
      "eth_src": "0A:bB:cc:DD:ee:FF", "eth_dst": "ff:ff:ff:ff:ff:ff",
      "ip_src": "192.168.255.1", "ip_dst": "255.255.255.255" }
  ],
  "pswitch": { "ports": [ { "name": "p0" } ], "anything": 1.5 }
})";

// Runs `mutate` on the good document and expects parse to fail with a message
// containing the origin, `path` and `what`.
void expect_error(const std::function<void(json&)>& mutate, const std::string& path,
                  const std::string& what) {
  json doc = json::parse(kGood);
  mutate(doc);
  INFO("document: " << doc.dump());
  try {
    parse_node_config(doc, "bad.json");
    FAIL("no error for " << path);
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(msg.rfind("bad.json: ", 0) == 0);
    CHECK(msg.find(path + ": ") != std::string::npos);
    CHECK(msg.find(what) != std::string::npos);
  }
}

std::string temp_path(const std::string& name) {
  return "/tmp/panama_test_config_" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace

TEST_CASE("a complete node configuration parses to the values written") {
  const NodeConfig cfg = parse_node_config(json::parse(kGood), "good.json");
  CHECK(cfg.node == "leaf0");
  CHECK(cfg.engine.udp_port == 9700);
  REQUIRE(cfg.entries.size() == 2);
  const EntryConfig& e = cfg.entries[0];
  CHECK(e.index == 3);
  CHECK(e.job == 1);
  CHECK(e.tree == 0);
  CHECK(e.root);
  CHECK(e.fan_in == 2);
  CHECK(e.children == std::vector<uint8_t>{0, 1, 5});
  CHECK(e.child_mask() == 0x23);
  CHECK(e.slot_base == 0);
  CHECK(e.slot_count == 256);
  CHECK(e.out_child_id == 3);
  CHECK(e.eth_src == MacAddress{0x02, 0, 0, 0, 0, 0x10});
  CHECK(e.eth_dst == MacAddress{0x02, 0, 0, 0, 0x01, 0});
  CHECK(e.ip_src == 0x0A00000Au);
  CHECK(e.ip_dst == 0x0A000101u);
  CHECK(e.udp_src == 9601);
  CHECK(e.udp_dst == 9602);
  CHECK(e.ttl == 32);
  CHECK(e.dscp == 46);
  CHECK(cfg.pswitch == json::parse(R"({ "ports": [ { "name": "p0" } ], "anything": 1.5 })"));
}

TEST_CASE("omitted keys take the documented defaults") {
  const NodeConfig cfg = parse_node_config(json::parse(kGood), "good.json");
  const EntryConfig& e = cfg.entries[1];
  CHECK(e.index == 1);  // its position
  CHECK_FALSE(e.root);
  CHECK(e.fan_in == 4);  // number of children
  CHECK(e.child_mask() == ((uint64_t{1} << 63) | 0x15));
  CHECK(e.out_child_id == 0);
  CHECK(e.udp_src == 9700);  // the engine's udp_port
  CHECK(e.udp_dst == 9700);
  CHECK(e.ttl == 64);
  CHECK(e.dscp == 0);
  CHECK(e.eth_src == MacAddress{0x0A, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF});
  CHECK(e.ip_src == 0xC0A8FF01u);
  CHECK(e.ip_dst == 0xFFFFFFFFu);

  const NodeConfig minimal = parse_node_config(json::parse(R"({"node": "n", "entries": []})"), "min.json");
  CHECK(minimal.engine.udp_port == 9600);
  CHECK(minimal.entries.empty());
  CHECK(minimal.pswitch.is_null());
}

TEST_CASE("to_json writes every key and reads back to the same configuration") {
  const NodeConfig cfg = parse_node_config(json::parse(kGood), "good.json");
  const json out = to_json(cfg);
  CHECK(out["entries"][1]["index"] == 1);
  CHECK(out["entries"][1]["ttl"] == 64);
  CHECK(out["entries"][1]["eth_src"] == "0a:bb:cc:dd:ee:ff");
  CHECK(out["entries"][0]["ip_dst"] == "10.0.1.1");
  CHECK(out["pswitch"] == cfg.pswitch);
  const NodeConfig again = parse_node_config(out, "again.json");
  CHECK(to_json(again) == out);

  const std::string text = format_node_config(cfg);
  INFO(text);
  CHECK(text.find("\"children\": [0, 1, 5],") != std::string::npos);
  CHECK(json::parse(text) == out);

  const std::string path = temp_path("save.json");
  save_node_config(cfg, path);
  const NodeConfig loaded = load_node_config(path);
  CHECK(to_json(loaded) == out);
  std::remove(path.c_str());
}

TEST_CASE("every kind of bad configuration names the path and the problem") {
  // clang-format off
  expect_error([](json& d) { d.erase("node"); }, "node", "missing key");
  expect_error([](json& d) { d["node"] = 5; }, "node", "expected a string");
  expect_error([](json& d) { d["node"] = ""; }, "node", "must not be empty");
  expect_error([](json& d) { d["nodes"] = "x"; }, "nodes", "unknown key");
  expect_error([](json& d) { d["engine"]["udp_prot"] = 1; }, "engine.udp_prot", "unknown key");
  expect_error([](json& d) { d["engine"]["udp_port"] = 70000; }, "engine.udp_port", "out of range");
  expect_error([](json& d) { d["engine"]["udp_port"] = 0; }, "engine.udp_port", "port 0");
  expect_error([](json& d) { d["engine"] = 1; }, "engine", "expected an object");
  expect_error([](json& d) { d.erase("entries"); }, "entries", "missing key");
  expect_error([](json& d) { d["entries"] = json::object(); }, "entries", "expected an array");
  expect_error([](json& d) { d["entries"][1] = 7; }, "entries[1]", "expected an object");
  expect_error([](json& d) { d["entries"][1]["colour"] = "red"; }, "entries[1].colour", "unknown key");
  expect_error([](json& d) { d["entries"][1].erase("job"); }, "entries[1].job", "missing key");
  expect_error([](json& d) { d["entries"][0]["job"] = 65536; }, "entries[0].job", "out of range");
  expect_error([](json& d) { d["entries"][0]["job"] = -1; }, "entries[0].job", "out of range");
  expect_error([](json& d) { d["entries"][0]["job"] = 1.5; }, "entries[0].job", "wrong type: expected an integer");
  expect_error([](json& d) { d["entries"][0]["job"] = "1"; }, "entries[0].job", "wrong type: expected an integer");
  expect_error([](json& d) { d["entries"][0]["tree"] = 256; }, "entries[0].tree", "out of range");
  expect_error([](json& d) { d["entries"][0]["root"] = 1; }, "entries[0].root", "wrong type: expected true or false");
  expect_error([](json& d) { d["entries"][0]["eth_src"] = "02:00:00:00:00"; }, "entries[0].eth_src", "bad MAC");
  expect_error([](json& d) { d["entries"][0]["eth_dst"] = "02:00:00:00:00:g0"; }, "entries[0].eth_dst", "bad MAC");
  expect_error([](json& d) { d["entries"][0]["eth_dst"] = "02-00-00-00-00-00"; }, "entries[0].eth_dst", "bad MAC");
  expect_error([](json& d) { d["entries"][1]["ip_dst"] = "10.0.0.300"; }, "entries[1].ip_dst", "bad IPv4");
  expect_error([](json& d) { d["entries"][1]["ip_dst"] = "10.0.0"; }, "entries[1].ip_dst", "bad IPv4");
  expect_error([](json& d) { d["entries"][1]["ip_src"] = "10.0.0.1 "; }, "entries[1].ip_src", "bad IPv4");
  expect_error([](json& d) { d["entries"][1]["ip_src"] = "010.0.0.1"; }, "entries[1].ip_src", "bad IPv4");
  expect_error([](json& d) { d["entries"][1]["ip_src"] = 167772161; }, "entries[1].ip_src", "expected a string");
  expect_error([](json& d) { d["entries"][0]["children"] = json::array(); }, "entries[0].children", "at least one");
  expect_error([](json& d) { d["entries"][0]["children"] = 3; }, "entries[0].children", "expected an array");
  expect_error([](json& d) { d["entries"][0]["children"][2] = 64; }, "entries[0].children[2]", "out of range");
  expect_error([](json& d) { d["entries"][0]["children"][2] = 1; }, "entries[0].children[2]", "listed twice");
  expect_error([](json& d) { d["entries"][0]["fan_in"] = 4; }, "entries[0].fan_in", "more than the 3 allowed");
  expect_error([](json& d) { d["entries"][0]["fan_in"] = 0; }, "entries[0].fan_in", "out of range");
  expect_error([](json& d) { d["entries"][0]["slot_count"] = 0; }, "entries[0].slot_count", "out of range");
  expect_error([](json& d) { d["entries"][0]["slot_count"] = 65536; }, "entries[0].slot_count", "out of range");
  expect_error([](json& d) { d["entries"][0].erase("slot_base"); }, "entries[0].slot_base", "missing key");
  expect_error([](json& d) { d["entries"][0]["ttl"] = 0; }, "entries[0].ttl", "out of range");
  expect_error([](json& d) { d["entries"][0]["ttl"] = 256; }, "entries[0].ttl", "out of range");
  expect_error([](json& d) { d["entries"][0]["dscp"] = 64; }, "entries[0].dscp", "out of range");
  expect_error([](json& d) { d["entries"][0]["udp_dst"] = 0; }, "entries[0].udp_dst", "port 0");
  expect_error([](json& d) { d["entries"][0]["out_child_id"] = 65536; }, "entries[0].out_child_id", "out of range");
  expect_error(
      [](json& d) {
        d["entries"][0]["root"] = false;
        d["entries"][0]["out_child_id"] = 64;
      },
      "entries[0].out_child_id", "child id 64 is over 63");
  expect_error([](json& d) { d["entries"][1]["index"] = 3; }, "entries[1].index", "duplicate index 3");
  expect_error([](json& d) { d["entries"][1]["job"] = 1; d["entries"][1]["tree"] = 0; }, "entries[1]",
               "job 1 tree 0 is also configured by entries[0]");
  expect_error([](json& d) { d["entries"][1]["slot_base"] = 255; }, "entries[1].slot_base",
               "slots 255..270 overlap entries[0] (slots 0..255)");
  expect_error([](json& d) { d["pswitch"] = 3; }, "pswitch", "expected an object");
  // clang-format on
}

TEST_CASE("file errors name the file") {
  SECTION("missing file") {
    try {
      load_node_config("/nonexistent/panama.json");
      FAIL("no error");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()) == "/nonexistent/panama.json: cannot open: No such file or directory");
    }
  }
  SECTION("syntax error reports line and column") {
    const std::string path = temp_path("syntax.json");
    std::ofstream(path) << "{\n  \"node\": \"x\",\n  \"entries\": [,]\n}\n";
    try {
      load_node_config(path);
      FAIL("no error");
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.rfind(path + ": invalid JSON: ", 0) == 0);
      CHECK(msg.find("line 3") != std::string::npos);
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("address text conversions") {
  MacAddress m{};
  CHECK(parse_mac("00:1b:21:Ab:cD:ef", m));
  CHECK(m == MacAddress{0x00, 0x1B, 0x21, 0xAB, 0xCD, 0xEF});
  CHECK(format_mac(m) == "00:1b:21:ab:cd:ef");
  CHECK_FALSE(parse_mac("00:1b:21:ab:cd:ef:00", m));
  CHECK_FALSE(parse_mac("001b:21:ab:cd:ef:0", m));
  uint32_t a = 0;
  CHECK(parse_ipv4("0.0.0.0", a));
  CHECK(a == 0);
  CHECK(parse_ipv4("1.2.3.4", a));
  CHECK(a == 0x01020304u);
  CHECK(format_ipv4(0xC0A80001u) == "192.168.0.1");
  CHECK_FALSE(parse_ipv4("1.2.3.4.5", a));
  CHECK_FALSE(parse_ipv4("1..3.4", a));
  CHECK_FALSE(parse_ipv4("1.2.3.1000", a));
  CHECK_FALSE(parse_ipv4("", a));
}
