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
      {"ELEM_TYPE_BFLOAT16", static_cast<int>(ElemType::kBfloat16)},
      {"ELEM_TYPE_FLOAT16", static_cast<int>(ElemType::kFloat16)},
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

namespace {

struct SvField {
  std::string name;
  std::string type;  // "" for logic vectors, else a struct type name
  int bits = 0;
};

// typedef struct packed { ... } name_t; blocks of the package, fields in
// declaration order (the first field is the most significant).
std::map<std::string, std::vector<SvField>> parse_structs(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const std::regex block(R"(typedef\s+struct\s+packed\s*\{([^}]*)\}\s*([a-z0-9_]+)\s*;)");
  const std::regex vec(R"(logic\s*(?:\[(\d+):0\])?\s*([a-z0-9_]+)\s*;)");
  const std::regex sub(R"(^\s*([a-z0-9_]+_t)\s+([a-z0-9_]+)\s*;)");
  std::map<std::string, std::vector<SvField>> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), block); it != std::sregex_iterator(); ++it) {
    std::vector<SvField> fields;
    std::stringstream body((*it)[1].str());
    std::string line;
    while (std::getline(body, line)) {
      std::smatch m;
      if (std::regex_search(line, m, vec)) {
        fields.push_back({m[2], "", m[1].matched ? std::stoi(m[1]) + 1 : 1});
      } else if (std::regex_search(line, m, sub)) {
        fields.push_back({m[2], m[1], 0});
      }
    }
    out[(*it)[2]] = fields;
  }
  return out;
}

int struct_bits(const std::map<std::string, std::vector<SvField>>& s, const std::string& type) {
  int n = 0;
  for (const auto& f : s.at(type)) n += f.type.empty() ? f.bits : struct_bits(s, f.type);
  return n;
}

// Bit offset from the top of `type` and width of every leaf field, by path.
void layout(const std::map<std::string, std::vector<SvField>>& s, const std::string& type,
            const std::string& prefix, int start, std::map<std::string, std::pair<int, int>>* out) {
  for (const auto& f : s.at(type)) {
    const int w = f.type.empty() ? f.bits : struct_bits(s, f.type);
    if (f.type.empty()) {
      (*out)[prefix + f.name] = {start, w};
    } else {
      layout(s, f.type, prefix + f.name + ".", start, out);
    }
    start += w;
  }
}

}  // namespace

TEST_CASE("SystemVerilog header structs put every field at its wire.hpp offset", "[rtl][wire]") {
  using namespace panama::wire;
  const auto structs = parse_structs(std::string(PANAMA_RTL_DIR) + "/panama_wire_pkg.sv");
  REQUIRE(structs.count("frame_header_t") == 1);
  // The struct is exactly the first beat: wire byte k sits at bits 511-8k.. of it.
  REQUIRE(struct_bits(structs, "frame_header_t") == 8 * static_cast<int>(kBeatBytes));
  std::map<std::string, std::pair<int, int>> fields;
  layout(structs, "frame_header_t", "", 0, &fields);
  // {byte offset, bytes} of each field in wire.hpp; sub-byte fields in bits.
  const std::map<std::string, std::pair<int, int>> want_bits = {
      {"eth.dst", {8 * kEthDst, 48}},
      {"eth.src", {8 * kEthSrc, 48}},
      {"eth.ethertype", {8 * kEthType, 16}},
      {"ip.ver_ihl", {8 * kIpVerIhl, 8}},
      {"ip.dscp", {8 * kIpTos, 6}},
      {"ip.ecn", {8 * kIpTos + 6, 2}},
      {"ip.total_len", {8 * kIpTotalLen, 16}},
      {"ip.id", {8 * kIpId, 16}},
      {"ip.flags_frag", {8 * kIpFlagsFrag, 16}},
      {"ip.ttl", {8 * kIpTtl, 8}},
      {"ip.proto", {8 * kIpProto, 8}},
      {"ip.checksum", {8 * kIpChecksum, 16}},
      {"ip.src", {8 * kIpSrc, 32}},
      {"ip.dst", {8 * kIpDst, 32}},
      {"udp.src_port", {8 * kUdpSrcPort, 16}},
      {"udp.dst_port", {8 * kUdpDstPort, 16}},
      {"udp.length", {8 * kUdpLength, 16}},
      {"udp.checksum", {8 * kUdpChecksum, 16}},
      {"panama.version", {8 * kPanamaVersion, 8}},
      {"panama.pkt_type", {8 * kPanamaType, 8}},
      {"panama.job_id", {8 * kPanamaJobId, 16}},
      {"panama.tree_id", {8 * kPanamaTreeId, 8}},
      {"panama.elem_type", {8 * kPanamaElemType, 8}},
      {"panama.child_id", {8 * kPanamaChildId, 16}},
      {"panama.seq", {8 * kPanamaSeq, 32}},
      {"panama.cwnd_cap", {8 * kPanamaCwndCap, 16}},
      {"panama.elem_count", {8 * kPanamaElemCount, 16}},
      {"panama.pad", {8 * kPanamaPad, 8 * kPanamaPadBytes}},
  };
  for (const auto& [path, want] : want_bits) {
    INFO("field " << path);
    REQUIRE(fields.count(path) == 1);
    CHECK(fields.at(path) == want);
  }
  CHECK(fields.size() == want_bits.size());
}
