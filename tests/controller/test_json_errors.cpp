// The four readers of JSON input (node configs, job plans, the "pswitch"
// section, the controller's cluster and job descriptions) read with one
// JSON object reader: an unknown key, a missing key, a wrong type and a
// value out of range read the same in all of them, "<origin>: <path>:
// <what>" (panama/config/json_reader.hpp).
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "panama/config/node_config.hpp"
#include "panama/controller/controller.hpp"
#include "panama/pswitch/settings.hpp"
#include "panama/runtime/plan_file.hpp"

using namespace panama;
using nlohmann::json;

namespace {

const json kNodeConfig = json::parse(R"({"node": "leaf0", "entries": [
  {"job": 1, "tree": 0, "root": true, "children": [0, 1], "slot_base": 0, "slot_count": 8,
   "eth_src": "02:00:00:00:00:10", "eth_dst": "01:00:5e:00:01:00", "ip_src": "10.0.0.10", "ip_dst": "239.0.1.0"}]})");
const json kPlan = json::parse(R"({"job_id": 1, "rank": 0, "world_size": 2,
  "local_mac": "02:00:00:00:01:01", "local_ip": "10.0.1.2",
  "trees": [{"tree_id": 0, "child_id": 0, "dst_mac": "02:00:00:00:00:fe", "dst_ip": "10.0.0.254"}]})");
const json kSection = json::parse(R"({"ports": [{"name": "a"}, {"name": "b"}],
  "trees": [{"job": 1, "tree": 0, "children": ["a", "b"]}]})");
const json kJobs =
    json::parse(R"({"jobs": [{"id": 1, "workers": ["w0", "w1"]}, {"id": 2, "workers": ["w2"]}]})");
const json kCluster = controller::single_switch_cluster(3, 10.0);

// Every reader, as a function of its document; each names `input.json`.
struct Reader {
  const char* name;
  json doc;
  std::function<void(const json&)> read;
};

std::vector<Reader> readers() {
  return {
      {"node config", kNodeConfig, [](const json& d) { config::parse_node_config(d, "input.json"); }},
      {"plan", kPlan, [](const json& d) { runtime::parse_plan(d.dump(), "input.json"); }},
      {"pswitch section", kSection, [](const json& d) { pswitch::settings_from_json(d, "input.json"); }},
      {"cluster", kCluster, [](const json& d) { controller::parse_cluster(d, "input.json"); }},
      {"jobs", kJobs, [](const json& d) { controller::parse_jobs(d, "input.json"); }},
  };
}

// The message of whatever the reader throws (each has its own type).
std::string error_of(const Reader& r, const json& doc) {
  try {
    r.read(doc);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

// The pswitch section sits at "pswitch" in its node config: paths start there.
std::string prefix(const Reader& r) {
  return std::string(r.name) == "pswitch section" ? "pswitch." : "";
}

// A nested object of each document (its path, and where it is), to put a bad key in.
std::pair<std::string, json::json_pointer> nested(const Reader& r) {
  const std::string n = r.name;
  if (n == "node config") return {"entries[0]", json::json_pointer("/entries/0")};
  if (n == "plan") return {"trees[0]", json::json_pointer("/trees/0")};
  if (n == "pswitch section") return {"pswitch.trees[0]", json::json_pointer("/trees/0")};
  if (n == "cluster") return {"links[1]", json::json_pointer("/links/1")};
  return {"jobs[1]", json::json_pointer("/jobs/1")};
}

}  // namespace

TEST_CASE("every JSON reader reports an unknown key in the same format") {
  for (const Reader& r : readers()) {
    INFO(r.name);
    REQUIRE(error_of(r, r.doc) == "<no error>");
    json top = r.doc;
    top["bogus_key"] = 1;
    CHECK_THAT(error_of(r, top),
               Catch::Matches("input\\.json: " + prefix(r) +
                              "bogus_key: unknown key \\(known keys here: [a-z_]+(, [a-z_]+)*\\)"));
    json deep = r.doc;
    const auto [path, at] = nested(r);
    deep[at]["bogus_key"] = true;
    std::string escaped;
    for (char c : path)
      escaped += (c == '[' || c == ']' || c == '.') ? std::string("\\") + c : std::string(1, c);
    CHECK_THAT(error_of(r, deep),
               Catch::Matches("input\\.json: " + escaped +
                              "\\.bogus_key: unknown key \\(known keys here: [a-z_]+(, [a-z_]+)*\\)"));
  }
}

TEST_CASE("every JSON reader words a missing key, a wrong type and an out-of-range value the same") {
  struct Case {
    const char* reader;
    std::function<void(json&)> mutate;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"node config", [](json& d) { d["entries"][0].erase("job"); },
       "input.json: entries[0].job: missing key"},
      {"plan", [](json& d) { d.erase("rank"); }, "input.json: rank: missing key"},
      {"pswitch section", [](json& d) { d["trees"][0].erase("job"); },
       "input.json: pswitch.trees[0].job: missing key"},
      {"cluster", [](json& d) { d.erase("links"); }, "input.json: links: missing key"},
      {"jobs", [](json& d) { d["jobs"][1].erase("id"); }, "input.json: jobs[1].id: missing key"},

      {"node config", [](json& d) { d["entries"][0]["job"] = "1"; },
       "input.json: entries[0].job: wrong type: expected an integer in 0..65535, got \"1\" (string)"},
      {"plan", [](json& d) { d["trees"][0]["child_id"] = "0"; },
       "input.json: trees[0].child_id: wrong type: expected an integer in 0..63, got \"0\" (string)"},
      {"pswitch section", [](json& d) { d["ports"][1]["rate_gbps"] = "fast"; },
       "input.json: pswitch.ports[1].rate_gbps: wrong type: expected a number >= 0, got \"fast\" (string)"},
      {"cluster", [](json& d) { d["engine_ecn_k_bytes"] = "1M"; },
       "input.json: engine_ecn_k_bytes: wrong type: expected an integer in 0..1099511627776, got \"1M\" "
       "(string)"},
      {"jobs", [](json& d) { d["jobs"][1]["trees"] = 2.0; },
       "input.json: jobs[1].trees: wrong type: expected an integer in 1..255, got 2.0 (number)"},

      {"node config", [](json& d) { d["entries"][0]["children"][1] = 64; },
       "input.json: entries[0].children[1]: out of range: 64 is not in 0..63"},
      {"plan", [](json& d) { d["trees"][0]["child_id"] = 64; },
       "input.json: trees[0].child_id: out of range: 64 is not in 0..63"},
      {"pswitch section", [](json& d) { d["ports"][1]["loss"] = 1.5; },
       "input.json: pswitch.ports[1].loss: out of range: 1.5 is not in 0..1"},
      {"cluster", [](json& d) { d["table_entries"] = 300; },
       "input.json: table_entries: out of range: 300 is not in 1..256"},
      {"jobs", [](json& d) { d["jobs"][1]["trees"] = 0; },
       "input.json: jobs[1].trees: out of range: 0 is not in 1..255"},
  };
  const std::vector<Reader> all = readers();
  for (const Case& c : cases) {
    for (const Reader& r : all) {
      if (c.reader != std::string(r.name)) continue;
      INFO(r.name);
      json doc = r.doc;
      c.mutate(doc);
      CHECK_THAT(error_of(r, doc), Catch::Equals(c.message));
    }
  }
}
