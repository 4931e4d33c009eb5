// libFuzzer target: the node configuration parser (sw/config).
//
// Input: the text of a configuration file. Invariants:
//  - text that is not JSON is rejected by the JSON parser, and a document
//    parse_node_config refuses is rejected with ConfigError whose message
//    reads "<origin>: <path>: <what>" (panama/config/json_reader.hpp): no
//    other exception escapes, nothing crashes;
//  - an accepted configuration passes validate_node_config, and the text
//    format_node_config writes for it reads back to the same configuration
//    (to_json of both are equal).
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_input.hpp"
#include "panama/config/node_config.hpp"

using nlohmann::json;
using panama::config::ConfigError;
using panama::config::NodeConfig;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json doc = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  NodeConfig cfg;
  try {
    cfg = panama::config::parse_node_config(doc, "fuzz.json");
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    PANAMA_FUZZ_CHECK(msg.rfind("fuzz.json: ", 0) == 0);
    PANAMA_FUZZ_CHECK(msg.find(": ", 11) != std::string::npos);  // a path, then what is wrong
    return 0;
  }
  panama::config::validate_node_config(cfg, "accepted");  // throws (and fails the run) if it does not hold
  const std::string text = panama::config::format_node_config(cfg);
  const json again = json::parse(text, nullptr, /*allow_exceptions=*/false);
  PANAMA_FUZZ_CHECK(!again.is_discarded());
  const NodeConfig cfg2 = panama::config::parse_node_config(again, "formatted");
  PANAMA_FUZZ_CHECK(panama::config::to_json(cfg2) == panama::config::to_json(cfg));
  return 0;
}
