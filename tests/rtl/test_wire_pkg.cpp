// The SystemVerilog wire-format package (hw/rtl/panama_wire_pkg.sv) against
// the one definition, include/panama/wire.hpp: every localparam is parsed
// from the .sv source and compared with the C++ constant it mirrors.
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "panama/wire.hpp"

namespace {

std::map<std::string, int64_t> parse_localparams(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  // Values are plain decimals, 'h hex literals, or expressions of earlier names.
  const std::regex re(R"(localparam\s+int\s+([A-Z0-9_]+)\s*=\s*([^;]+);)");
  std::map<std::string, int64_t> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    std::string expr = (*it)[2];
    // Evaluate a sum/product/quotient of terms left to right (enough for this package).
    std::regex tok(R"(\s*([A-Z0-9_]+|'h[0-9A-Fa-f]+|\d+)\s*([-+*/]?))");
    int64_t acc = 0;
    char op = '+';
    for (auto t = std::sregex_iterator(expr.begin(), expr.end(), tok); t != std::sregex_iterator(); ++t) {
      const std::string term = (*t)[1];
      int64_t v;
      if (term.rfind("'h", 0) == 0) {
        v = std::stoll(term.substr(2), nullptr, 16);
      } else if (std::isdigit(static_cast<unsigned char>(term[0]))) {
        v = std::stoll(term);
      } else {
        REQUIRE(out.count(term) == 1);
        v = out[term];
      }
      switch (op) {
        case '+':
          acc += v;
          break;
        case '-':
          acc -= v;
          break;
        case '*':
          acc *= v;
          break;
        case '/':
          acc /= v;
          break;
      }
      const std::string next = (*t)[2];
      op = next.empty() ? '+' : next[0];
    }
    out[name] = acc;
  }
  return out;
}

}  // namespace

TEST_CASE("SystemVerilog wire package mirrors wire.hpp", "[rtl][wire]") {
  using namespace panama::wire;
  const auto sv = parse_localparams(std::string(PANAMA_RTL_DIR) + "/panama_wire_pkg.sv");
  const std::map<std::string, int64_t> want = {
      {"VERSION", kVersion},
      {"DEFAULT_UDP_PORT", kDefaultUdpPort},
      {"ETHERTYPE_IPV4", kEtherTypeIpv4},
      {"IP_PROTO_UDP", kIpProtoUdp},
      {"TYPE_AGGREGATE_UP", static_cast<int>(PacketType::kAggregateUp)},
      {"TYPE_RESULT_DOWN", static_cast<int>(PacketType::kResultDown)},
      {"TYPE_RETRANSMISSION", static_cast<int>(PacketType::kRetransmission)},
      {"ELEM_TYPE_FLOAT32", static_cast<int>(ElemType::kFloat32)},
      {"ECN_NOT_ECT", kEcnNotEct},
      {"ECN_ECT1", kEcnEct1},
      {"ECN_ECT0", kEcnEct0},
      {"ECN_CE", kEcnCe},
      {"ETH_DST", kEthDst},
      {"ETH_SRC", kEthSrc},
      {"ETH_TYPE", kEthType},
      {"ETH_HEADER_BYTES", kEthHeaderBytes},
      {"IP_OFFSET", kIpOffset},
      {"IP_VER_IHL", kIpVerIhl},
      {"IP_TOS", kIpTos},
      {"IP_TOTAL_LEN", kIpTotalLen},
      {"IP_ID", kIpId},
      {"IP_FLAGS_FRAG", kIpFlagsFrag},
      {"IP_TTL", kIpTtl},
      {"IP_PROTO", kIpProto},
      {"IP_CHECKSUM", kIpChecksum},
      {"IP_SRC", kIpSrc},
      {"IP_DST", kIpDst},
      {"IP_HEADER_BYTES", kIpHeaderBytes},
      {"UDP_OFFSET", kUdpOffset},
      {"UDP_SRC_PORT", kUdpSrcPort},
      {"UDP_DST_PORT", kUdpDstPort},
      {"UDP_LENGTH", kUdpLength},
      {"UDP_CHECKSUM", kUdpChecksum},
      {"UDP_HEADER_BYTES", kUdpHeaderBytes},
      {"PANAMA_OFFSET", kPanamaOffset},
      {"PANAMA_VERSION", kPanamaVersion},
      {"PANAMA_TYPE", kPanamaType},
      {"PANAMA_JOB_ID", kPanamaJobId},
      {"PANAMA_TREE_ID", kPanamaTreeId},
      {"PANAMA_ELEM_TYPE", kPanamaElemType},
      {"PANAMA_CHILD_ID", kPanamaChildId},
      {"PANAMA_SEQ", kPanamaSeq},
      {"PANAMA_CWND_CAP", kPanamaCwndCap},
      {"PANAMA_ELEM_COUNT", kPanamaElemCount},
      {"PANAMA_PAD", kPanamaPad},
      {"PANAMA_FIELD_BYTES", kPanamaFieldBytes},
      {"PANAMA_PAD_BYTES", kPanamaPadBytes},
      {"PANAMA_HEADER_BYTES", kPanamaHeaderBytes},
      {"PAYLOAD_OFFSET", kPayloadOffset},
      {"ELEM_BYTES", kElemBytes},
      {"BEAT_BYTES", kBeatBytes},
      {"LANES", kLanes},
      {"MAX_FRAME_BYTES", kMaxFrameBytes},
      {"MAX_ELEMS_PER_FRAME", kMaxElemsPerFrame},
      {"MIN_PANAMA_FRAME_BYTES", kMinPanamaFrameBytes},
      {"MAX_FRAME_BEATS", kMaxFrameBytes / kBeatBytes},
      {"IP_FIXED_BYTES", ip_total_length(0)},
      {"UDP_FIXED_BYTES", udp_length(0)},
  };
  for (const auto& [name, value] : want) {
    INFO("localparam " << name);
    REQUIRE(sv.count(name) == 1);
    CHECK(sv.at(name) == value);
  }
  // Every constant of the package is checked, so none can drift unseen.
  for (const auto& [name, value] : sv) {
    INFO("localparam " << name << " has no wire.hpp counterpart in this test");
    CHECK(want.count(name) == 1);
  }
  CHECK(sv.size() == want.size());
}
