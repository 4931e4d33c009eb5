// panama-pcap's command line and error handling, run as a subprocess: usage
// errors exit 2, run-time errors exit 1, every message names what is wrong,
// and no partial output is left behind.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "panama/wire.hpp"
#include "pcap/pcap_test_util.hpp"
#include "support/frames.hpp"

using namespace panama;
using namespace panama::test;

namespace {

const std::string kSamples = PANAMA_SAMPLES_DIR;
const std::string kBin = PANAMA_PCAP_BIN;
const std::string kConfig = kSamples + "/basic.json";
const std::string kInput = kSamples + "/basic.pcap";

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

RunResult pcap_tool(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kBin};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("usage errors exit 2 with a message") {
  RunResult r = pcap_tool({});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--config is required"));

  r = pcap_tool({"--config", kConfig, "--in", kInput});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--out is required"));

  r = pcap_tool({"--config", kConfig, "--in", kInput, "--out", "/tmp/x.pcap", "--frobnicate"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "--frobnicate"));

  r = pcap_tool({"--config", kConfig, "--in", kInput, "--out", "/tmp/x.pcap", "--engine", "fpga"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "unknown engine \"fpga\" (available: model"));

  r = pcap_tool({"--help"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "--engine"));
  CHECK(contains(r.out, "model"));
}

TEST_CASE("file and configuration errors exit 1 and name the problem") {
  const std::string out = temp_path("err_out.pcap");
  std::remove(out.c_str());

  SECTION("missing configuration") {
    const RunResult r = pcap_tool({"--config", "/nonexistent/node.json", "--in", kInput, "--out", out});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err,
                   "panama-pcap: error: /nonexistent/node.json: cannot open: No such file or directory"));
  }
  SECTION("bad configuration") {
    const std::string cfg = temp_path("bad.json");
    std::string text = read_file(kConfig);
    text.replace(text.find("\"10.0.1.1\""), 10, "\"10.0.1.\"");
    write_file(cfg, text);
    const RunResult r = pcap_tool({"--config", cfg, "--in", kInput, "--out", out});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, cfg + ": entries[2].ip_dst: bad IPv4 address \"10.0.1.\""));
    std::remove(cfg.c_str());
  }
  SECTION("configuration that does not fit the engine") {
    const std::string cfg = temp_path("big.json");
    std::string text = read_file(kConfig);
    text.replace(text.find("\"index\": 3"), 10, "\"index\": 99");
    write_file(cfg, text);
    const RunResult r = pcap_tool({"--config", cfg, "--in", kInput, "--out", out});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "index 99 is past the engine's 64 table entries"));
    std::remove(cfg.c_str());
  }
  SECTION("missing input") {
    const RunResult r = pcap_tool({"--config", kConfig, "--in", "/nonexistent/in.pcap", "--out", out});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "/nonexistent/in.pcap: cannot read as pcap"));
  }
  SECTION("input that is not a pcap") {
    const RunResult r = pcap_tool({"--config", kConfig, "--in", kConfig, "--out", out});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, kConfig + ": cannot read as pcap"));
  }
  SECTION("input that is not Ethernet") {
    const std::string raw = temp_path("raw.pcap");
    write_file(raw, make_pcap({PcapRecord{1, 0, 20, std::vector<uint8_t>(20, 0x45)}}, 101));
    const RunResult r = pcap_tool({"--config", kConfig, "--in", raw, "--out", out});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, raw + ": frames are RAW"));
    // The link type the file records (LINKTYPE_RAW), not libpcap's DLT_RAW.
    CHECK(contains(r.err, "link type 101)"));
    CHECK(contains(r.err, "Ethernet (link type 1) is needed"));
    std::remove(raw.c_str());
  }
  SECTION("unwritable output") {
    const RunResult r = pcap_tool({"--config", kConfig, "--in", kInput, "--out", "/nonexistent/out.pcap"});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "/nonexistent/out.pcap: cannot write"));
  }
  SECTION("output over the input") {
    const std::string in = temp_path("same.pcap");
    write_file(in, read_file(kInput));
    const RunResult r = pcap_tool({"--config", kConfig, "--in", in, "--out", in});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "is the input file"));
    CHECK(read_file(in) == read_file(kInput));
    std::remove(in.c_str());
  }
  CHECK_FALSE(exists(out));
}

TEST_CASE("damaged and unusual inputs are processed with warnings") {
  const std::string in = temp_path("odd_in.pcap");
  const std::string out = temp_path("odd_out.pcap");
  const wire::Header h1 = contribution(1, 0, 0, 0, 2);

  SECTION("a capture cut off mid-record") {
    const std::string whole = read_file(kInput);
    write_file(in, whole.substr(0, whole.size() - 10));
    const RunResult r = pcap_tool({"--config", kConfig, "--in", in, "--out", out, "--json"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.err, "warning: " + in + ": truncated dump file"));
    const PcapFile all = parse_pcap(whole);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["input"]["frames"] == all.records.size() - 1);
    CHECK(contains(r.err, "stopped after " + std::to_string(all.records.size() - 1) + " frames"));
  }
  SECTION("frames cut short by the snap length, an empty frame and a jumbo frame") {
    std::vector<uint8_t> f = make_frame(h1, {1, 2});
    const std::vector<uint8_t> cut(f.begin(), f.begin() + 40);
    std::vector<uint8_t> jumbo(9217, 0);  // over kMaxFrameBytes
    write_file(in, make_pcap({PcapRecord{5, 1, static_cast<uint32_t>(f.size()), cut}, PcapRecord{5, 2, 0, {}},
                              PcapRecord{5, 3, 9217, jumbo}}));
    const RunResult r = pcap_tool({"--config", kConfig, "--in", in, "--out", out, "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "1 input frames were cut short by the capture's snap length"));
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["input"]["snap_truncated"] == 1);
    CHECK(j["counters"]["global"]["drop_truncated"] == 1);
    CHECK(j["counters"]["global"]["drop_oversize"] == 1);
    CHECK(j["counters"]["global"]["passthrough"] == 1);  // the empty frame is not PANAMA
    CHECK(parse_pcap(read_file(out)).records.size() == 1);
  }
  SECTION("an empty capture") {
    write_file(in, make_pcap({}));
    const RunResult r = pcap_tool({"--config", kConfig, "--in", in, "--out", out});
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "0 frames in, 0 frames out"));
    const PcapFile o = parse_pcap(read_file(out));
    CHECK(o.records.empty());
    CHECK(o.linktype == 1);
  }
  SECTION("nanosecond timestamps are kept") {
    std::vector<PcapRecord> recs;
    for (uint16_t c = 0; c < 4; ++c) {
      recs.push_back(
          PcapRecord{7, 123456789u + c, 0, make_frame(contribution(1, 0, c, 0, 2), {f2u(1.5f), f2u(c)})});
      recs.back().orig_len = static_cast<uint32_t>(recs.back().data.size());
    }
    write_file(in, make_pcap(recs, 1, true));
    const RunResult r = pcap_tool({"--config", kConfig, "--in", in, "--out", out, "--quiet"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    const PcapFile o = parse_pcap(read_file(out));
    CHECK(o.magic == 0xA1B23C4Du);
    REQUIRE(o.records.size() == 1);
    CHECK(o.records[0].sec == 7);
    CHECK(o.records[0].frac == 123456792u);  // the fourth contribution completed the slot
    CHECK(payload_of(o.records[0].data) == std::vector<uint32_t>{f2u(6.0f), f2u(6.0f)});
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST_CASE("the table output and the summary line") {
  const std::string out = temp_path("table_out.pcap");
  const RunResult r = pcap_tool({"--config", kConfig, "--in", kInput, "--out", out});
  REQUIRE(r.exit_code == 0);
  const size_t frames = parse_pcap(read_file(kInput)).records.size();
  const size_t outputs = parse_pcap(read_file(out)).records.size();
  CHECK(contains(r.out, "node pswitch0 (engine model): " + std::to_string(frames) + " frames in, " +
                            std::to_string(outputs) + " frames out"));
  CHECK(contains(r.out, "  frames_in               " + std::to_string(frames) + "\n"));
  CHECK(contains(r.out, "e3 j2/t1"));
  CHECK(contains(r.err, "panama-pcap: processed " + std::to_string(frames) + " frames"));
  std::remove(out.c_str());
}

TEST_CASE("panama-sample-gen --dtype: 16-bit samples, halved payloads, the mixed sample's type mismatch") {
  const std::string gen = PANAMA_SAMPLE_GEN_BIN;
  size_t fp32_bytes = 0;
  for (const std::string dtype : {"fp32", "bf16", "fp16", "mixed"}) {
    INFO(dtype);
    const std::string in = temp_path("dtype_" + dtype + ".pcap");
    const std::string cfg = temp_path("dtype_" + dtype + ".json");
    const std::string out = temp_path("dtype_" + dtype + ".out.pcap");
    REQUIRE(run_program({gen, "--dtype", dtype, "--pcap", in, "--config", cfg}).exit_code == 0);
    const RunResult r = pcap_tool({"--config", cfg, "--in", in, "--out", out, "--json", "-q"});
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    const auto& g = j["counters"]["global"];
    // The same traffic in every type: the same frames summed and emitted.
    CHECK(g["emitted"] == 52);
    CHECK(g["drop_type_mismatch"] == (dtype == "mixed" ? 1 : 0));
    CHECK(g["drop_bad_elem_type"] == 0);
    // Each aggregate carries the type of its job's contributions.
    size_t payload = 0;
    for (const auto& rec : parse_pcap(read_file(out)).records) {
      const std::vector<uint8_t>& f = rec.data;
      wire::Header h{};
      const auto cls =
          wire::classify_frame(f.data(), static_cast<uint32_t>(f.size()), wire::kDefaultUdpPort, h);
      if (cls != wire::FrameClass::kOk && cls != wire::FrameClass::kResultDown) continue;
      if (h.job_id != 1 && h.job_id != 2) continue;  // the passing job-3 result
      const uint8_t want = dtype == "fp32"   ? 1
                           : dtype == "bf16" ? 2
                           : dtype == "fp16" ? 3
                                             : (h.job_id == 1 ? 2 : 3);
      CHECK(h.elem_type == want);
      payload += f.size() - wire::kPayloadOffset;
    }
    if (dtype == "fp32") fp32_bytes = payload;
    if (dtype == "bf16" || dtype == "fp16") CHECK(2 * payload == fp32_bytes);
    for (const auto& p : {in, cfg, out}) std::remove(p.c_str());
  }
}
