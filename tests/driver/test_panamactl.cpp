// panamactl's argument handling and output formats, run in-process against
// the simulation backend (and XRT's no-op device for the card paths).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/support/test_xclbin.hpp"
#include "panama/config/node_config.hpp"
#include "panama/driver/cmac.hpp"
#include "panama/pcap/pcap_file.hpp"
#include "panamactl_cli.hpp"
#include "support/frames.hpp"
#include "support/temp_dir.hpp"

using namespace panama;
using panama::test::contribution;
using panama::test::make_frame;

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run ctl(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = driver::panamactl_main(args, out, err);
  UNSCOPED_INFO("panamactl exit " << code << "\nstdout:\n" << out.str() << "stderr:\n" << err.str());
  return Run{code, out.str(), err.str()};
}

std::string temp_dir() {
  return panama::test::temp_dir("panamactl-test");
}

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

void write_pcap(const std::string& path, const std::vector<std::vector<uint8_t>>& frames) {
  pcapio::write_frames(path, frames);
}

void write_test_xclbin(const std::string& path, driver::KernelFlavor flavor, const std::string& platform) {
  const auto image = driver::testing::build_xclbin(driver::testing::panama_xclbin_spec(flavor, platform));
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(image.data()), static_cast<std::streamsize>(image.size()));
}

size_t pcap_frames(const std::string& path) {
  return pcapio::read_frames(path).size();
}

}  // namespace

TEST_CASE("panamactl: usage errors exit 2 with a message", "[driver][panamactl]") {
  const Run help = ctl({"--help"});
  CHECK(help.code == 0);
  for (const char* cmd :
       {"list", "status", "program", "apply", "counters", "clear", "reset", "send", "link"}) {
    CHECK_THAT(help.out, Catch::Contains(cmd));
  }
  CHECK(ctl({}).code == 2);
  CHECK(ctl({"frobnicate"}).code == 2);
  const Run no_file = ctl({"program", "-d", "sim"});
  CHECK(no_file.code == 2);
  CHECK_THAT(no_file.err, Catch::Contains("xclbin"));
  CHECK(ctl({"program", "/no/such/file.xclbin"}).code == 2);
  CHECK(ctl({"counters", "-d", "sim", "--interval", "-1"}).code == 2);
  CHECK(ctl({"status", "--bogus"}).code == 2);
}

TEST_CASE("panamactl: device errors exit 1 with the reason", "[driver][panamactl]") {
  const std::string dir = temp_dir();
  ::setenv("PANAMA_LOCK_DIR", dir.c_str(), 1);
  const Run bad = ctl({"status", "-d", "pcie0"});
  CHECK(bad.code == 1);
  CHECK_THAT(bad.err, Catch::Contains("unknown device \"pcie0\""));
  // XRT's no-op device (set by CTest): opens, holds no PANAMA image.
  const Run card = ctl({"status", "-d", "xrt:0"});
  CHECK(card.code == 1);
  CHECK_THAT(card.err, Catch::Contains("not programmed"));
  const Run send = ctl({"send", "-d", "xrt:0", "/proc/version"});
  CHECK(send.code == 1);
  CHECK_THAT(send.err, Catch::Contains("simulation backend only"));
  write_test_xclbin(dir + "/t.xclbin", driver::KernelFlavor::kRtl, "xilinx_u280_gen3x16_xdma_1_202211_1");
  const Run program = ctl({"program", "-d", "xrt:0", dir + "/t.xclbin"});
  CHECK(program.code == 1);
  CHECK_THAT(program.err, Catch::Contains("Operation not permitted"));
}

TEST_CASE("panamactl: a simulated card from image to counters", "[driver][panamactl]") {
  const std::string dir = temp_dir();
  const std::vector<std::string> dev = {"-d", "sim:model", "--sim-state", dir + "/state"};
  auto with = [&dev](std::vector<std::string> args) {
    args.insert(args.end(), dev.begin(), dev.end());
    return ctl(args);
  };

  write_test_xclbin(dir + "/panama.xclbin", driver::KernelFlavor::kRtl, "xilinx_u55c");
  const Run program = with({"program", dir + "/panama.xclbin"});
  REQUIRE(program.code == 0);
  CHECK_THAT(program.out, Catch::Contains("xilinx_u55c"));

  // One entry, two children: two complete slots, one duplicate, one foreign frame.
  config::NodeConfig cfg;
  cfg.node = "ctl";
  config::EntryConfig e;
  e.job = 4;
  e.tree = 0;
  e.root = true;
  e.fan_in = 2;
  e.children = {0, 1};
  e.slot_count = 8;
  e.udp_src = e.udp_dst = wire::kDefaultUdpPort;
  cfg.entries.push_back(e);
  config::save_node_config(cfg, dir + "/node.json");
  const Run apply = with({"apply", dir + "/node.json"});
  REQUIRE(apply.code == 0);
  CHECK_THAT(apply.out, Catch::Contains("1 entries") && Catch::Contains("verified"));

  auto other = contribution(4, 0, 0, 0, 1);
  other.udp_dst = 53;
  write_pcap(
      dir + "/in.pcap",
      {make_frame(contribution(4, 0, 0, 0, 2), {1, 2}), make_frame(contribution(4, 0, 0, 0, 2), {1, 2}),
       make_frame(contribution(4, 0, 1, 0, 2), {3, 4}), make_frame(other, {9}),
       make_frame(contribution(4, 0, 1, 1, 1), {5}), make_frame(contribution(4, 0, 0, 1, 1), {6})});
  const Run send = with({"send", dir + "/in.pcap", "-o", dir + "/out.pcap"});
  REQUIRE(send.code == 0);
  CHECK_THAT(send.out, Catch::Contains("6 frames in, 3 frames out"));
  CHECK(pcap_frames(dir + "/out.pcap") == 3);

  const Run json = with({"counters", "--json", "-c", dir + "/node.json"});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["global"]["frames_in"] == 6);
  CHECK(j["global"]["passthrough"] == 1);
  CHECK(j["global"]["aggregated"] == 4);
  CHECK(j["global"]["emitted"] == 2);
  CHECK(j["global"]["duplicates"] == 1);
  REQUIRE(j["entries"].size() == 1);
  CHECK(j["entries"][0]["counters"]["emitted"] == 2);

  const Run table = with({"counters"});
  REQUIRE(table.code == 0);
  CHECK_THAT(table.out, Catch::Matches("(.|\n)*frames_in +6\n(.|\n)*"));

  const Run watch = with({"counters", "--watch", "--count", "3", "--interval", "0"});
  REQUIRE(watch.code == 0);
  CHECK(count_of(watch.out, "--- sim:model at ") == 3);
  const Run watch_json = with({"counters", "-w", "--json", "--count", "2", "--interval", "0.01"});
  REQUIRE(watch_json.code == 0);
  std::istringstream lines(watch_json.out);
  std::string line;
  int docs = 0;
  while (std::getline(lines, line)) {
    CHECK(nlohmann::json::parse(line)["global"]["emitted"] == 2);
    ++docs;
  }
  CHECK(docs == 2);

  const Run status = with({"status", "--json"});
  REQUIRE(status.code == 0);
  const auto s = nlohmann::json::parse(status.out);
  CHECK(s["enabled"] == true);
  CHECK(s["udp_port"] == wire::kDefaultUdpPort);
  CHECK(s["id"] == "0x504E4D41");
  CHECK(s["image"].get<std::string>().find("xilinx_u55c") != std::string::npos);

  REQUIRE(with({"disable"}).code == 0);
  CHECK_THAT(with({"status"}).out, Catch::Contains("disabled (pass-through)"));
  REQUIRE(with({"enable"}).code == 0);
  REQUIRE(with({"clear"}).code == 0);
  CHECK(nlohmann::json::parse(with({"counters", "--json"}).out)["global"]["frames_in"] == 0);
  REQUIRE(with({"reset"}).code == 0);
  const Run list = with({"list", "--json"});
  REQUIRE(list.code == 0);
  bool has_model = false;
  const auto devices = nlohmann::json::parse(list.out);
  for (const auto& d : devices["devices"]) has_model |= d["device"] == "sim:model";
  CHECK(has_model);
}

TEST_CASE("panamactl link: the simulated CMAC's status, RS-FEC, loopback and counters",
          "[driver][panamactl]") {
  const std::string dir = temp_dir();
  const std::vector<std::string> dev = {"-d", "sim:model", "--sim-state", dir + "/state"};
  auto with = [&dev](std::vector<std::string> args) {
    args.insert(args.end(), dev.begin(), dev.end());
    return ctl(args);
  };
  auto json = [&with](std::vector<std::string> args) {
    args.push_back("--json");
    const Run r = with(args);
    REQUIRE((r.code == 0 || r.code == 3));
    auto j = nlohmann::json::parse(r.out);
    CHECK(j["up"] == (r.code == 0));  // exit 0 exactly when the link is up
    return j;
  };

  // The simulated switch port uses RS-FEC, the CMAC starts with it off: no
  // lane locks, and the verdict says why.
  const Run first = with({"link"});
  CHECK(first.code == 3);
  CHECK_THAT(first.out, Catch::Contains("link         down") && Catch::Contains("block lock 0/20") &&
                            Catch::Contains("RS-FEC differs") && Catch::Contains("(here off)"));

  const Run on = with({"link", "--rsfec", "on"});
  CHECK(on.code == 0);
  CHECK_THAT(on.out,
             Catch::Contains("link up") && Catch::Contains("rs-fec       on (RSFEC_CONFIG_ENABLE 0x3"));
  auto j = json({"link"});
  CHECK(j["up"] == true);
  CHECK(j["rsfec"] == true);
  CHECK(j["block_lock_lanes"] == 20);
  CHECK(j["rx_status"] == "0x00000003");
  CHECK(j["loopback"] == false);

  // The far end turns RS-FEC off: down again; matching it brings it back.
  CHECK(json({"link", "--sim-peer-rsfec", "off"})["up"] == false);
  CHECK(json({"link", "--rsfec", "off"})["up"] == true);

  // Frames through the engine count in the MAC: received and sent.
  auto dns = contribution(4, 0, 0, 0, 1);
  dns.udp_dst = 53;  // not PANAMA: passes through
  write_pcap(dir + "/in.pcap", {make_frame(dns, {1}), make_frame(dns, {2}), make_frame(dns, {3}),
                                make_frame(contribution(9, 0, 0, 0, 2), {5, 6})});  // unknown job: dropped
  const Run send = with({"send", dir + "/in.pcap"});
  REQUIRE(send.code == 0);
  CHECK_THAT(send.out, Catch::Contains("4 frames in, 3 frames out"));
  j = json({"link"});
  CHECK(j["counters"]["rx_packets"] == 4);
  CHECK(j["counters"]["rx_good_packets"] == 4);
  CHECK(j["counters"]["tx_packets"] == 3);
  CHECK(j["counters"]["rx_bad_fcs"] == 0);

  // Cable pulled: no signal. The self-test loops the transceivers back and
  // passes without a cable, then restores normal operation.
  const Run pulled = with({"link", "--sim-cable", "unplugged"});
  CHECK(pulled.code == 3);
  CHECK_THAT(pulled.out, Catch::Contains("no PCS lane locks"));
  const Run self = with({"link", "--self-test"});
  CHECK(self.code == 0);
  CHECK_THAT(self.out, Catch::Contains("self-test    passed") && Catch::Contains("near-end loopback"));
  CHECK(json({"link"})["loopback"] == false);
  CHECK(json({"link"})["up"] == false);
  CHECK(json({"link", "--loopback", "on"})["up"] == true);
  CHECK(json({"link", "--loopback", "off", "--sim-cable", "connected"})["up"] == true);

  // The MACs' state survives an engine reset (the journal restarts).
  REQUIRE(with({"reset"}).code == 0);
  j = json({"link"});
  CHECK(j["up"] == true);
  CHECK(j["rsfec"] == false);
  CHECK(j["counters"]["rx_packets"] == 4);
  CHECK(j["counters"]["tx_packets"] == 3);

  // Cage 1 (the two-port build) is a MAC of its own; there is no cage 2.
  CHECK(json({"link", "--port", "1"})["up"] == false);  // RS-FEC off, far end on
  CHECK(with({"link", "--port", "2"}).code == 2);
  // Simulation-only options on a card, and bad values.
  CHECK(with({"link", "--rsfec", "maybe"}).code == 2);
  const Run card = ctl({"link", "-d", "xrt:0", "--sim-cable", "unplugged"});
  CHECK(card.code == 1);
}

TEST_CASE("panamactl link on XRT's no-op device names the CMAC register XRT refused", "[driver][panamactl]") {
  const std::string dir = temp_dir();
  ::setenv("PANAMA_LOCK_DIR", dir.c_str(), 1);
  const Run none = ctl({"link", "-d", "xrt:0"});
  CHECK(none.code == 1);
  CHECK_THAT(none.err, Catch::Contains("not programmed"));
}

TEST_CASE("panamactl: a malformed simulation state file is an error, not a silent default",
          "[driver][panamactl]") {
  const std::string dir = temp_dir();
  write_test_xclbin(dir + "/panama.xclbin", driver::KernelFlavor::kRtl, "xilinx_u280");
  const std::string state = dir + "/state";
  REQUIRE(ctl({"program", "-d", "sim:model", "--sim-state", state, dir + "/panama.xclbin"}).code == 0);
  std::string good;
  {
    std::ifstream in(state);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  REQUIRE(good.find("\nx ") != std::string::npos);
  const std::vector<std::string> bad_lines = {
      "x zz765ec-e9fb-4813-b63a-d59a442e70f5 xilinx_u280 panama_engine:panama_engine_1",   // not hex
      "x 8bc765ec-e9fb-4813-b63a xilinx_u280 panama_engine:panama_engine_1",               // short uuid
      "x 8bc765ec+e9fb-4813-b63a-d59a442e70f5 xilinx_u280 panama_engine:panama_engine_1",  // separator
      "x 8bc765ec-e9fb-4813-b63a-d59a442e70f5 xilinx_u280",                                // missing field
      "w 18 2580 junk",
      "w 18",
      "f 0a0b0",
      "f 0a0bzz",
      "m 7 90 1",
      "p 0 cable 2",
      "p 0 colour 1",
      "k 0 99 1 1",
      "q 1 2",
  };
  for (const std::string& bad : bad_lines) {
    INFO(bad);
    std::ofstream(state, std::ios::trunc) << good << bad << "\n";
    const Run r = ctl({"status", "-d", "sim:model", "--sim-state", state});
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("corrupt simulation state line") && Catch::Contains(state + ":"));
  }
  std::ofstream(state, std::ios::trunc) << good;
  CHECK(ctl({"status", "-d", "sim:model", "--sim-state", state}).code == 0);
}

TEST_CASE("docs/alveo.md's CMAC register table is the driver's", "[driver][panamactl]") {
  std::ifstream in(PANAMA_SOURCE_DIR "/docs/alveo.md");
  REQUIRE(in);
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| 0x", 0) == 0 && line.size() > 9 && line[8] == ' ') rows.push_back(line);
  }
  REQUIRE(rows.size() == driver::cmac::kRegisters.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = driver::cmac::kRegisters[i];
    char want[512];
    std::snprintf(want, sizeof(want), "| 0x%04X | %s | %s |", r.offset, r.name, r.meaning);
    CHECK(rows[i] == want);
  }
}
