// The JSON object reader (panama/config/json_reader.hpp): the exact wording
// of its four kinds of error, paths, fallbacks, the reader's own exception
// type, and whole-file errors.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>

#include "panama/config/json_reader.hpp"

using namespace panama::config;
using Catch::Matchers::Equals;
using nlohmann::json;

namespace {

struct OtherError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json kDoc = json::parse(R"({
  "name": "x", "count": 3, "rate": 2.5, "on": true, "mac": "02:00:00:00:00:10", "ip": "10.0.0.1",
  "list": [1, 2, 300], "inner": {"a": 1}, "jobs": [{"id": 1, "trees": 0}]
})");

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("json reader: values by key, with and without fallbacks") {
  const JsonSource src("doc.json");
  const JsonObject o(src, kDoc, "",
                     {"name", "count", "rate", "on", "mac", "ip", "list", "inner", "jobs", "extra"});
  CHECK(o.string("name") == "x");
  CHECK(o.uint("count", 0, 10) == 3);
  CHECK(o.number("rate", 0, 10) == 2.5);
  CHECK(o.number("count", 0, 10) == 3.0);  // an integer is a number
  CHECK(o.boolean("on"));
  CHECK(o.mac("mac") == panama::MacBytes{0x02, 0, 0, 0, 0, 0x10});
  CHECK(o.ipv4("ip") == 0x0A000001u);
  CHECK(o.array("list", true).size() == 3);
  CHECK(o.object("inner", {"a"}).uint("a", 0, 1) == 1);
  CHECK_FALSE(o.has("extra"));
  CHECK(o.find("extra") == nullptr);
  CHECK(o.uint("extra", 0, 10, 7) == 7);
  CHECK(o.string("extra", "dflt") == "dflt");
  CHECK(o.boolean("extra", false) == false);
  CHECK(o.number("extra", 0, 1, 0.5) == 0.5);
  CHECK(o.ipv4("extra", 5u) == 5u);
  CHECK(o.path("count") == "count");
  CHECK(json_path("jobs", 1) == "jobs[1]");
  CHECK(json_path(json_path("jobs", 1), "trees") == "jobs[1].trees");
}

TEST_CASE("json reader: the four kinds of error, word for word") {
  const JsonSource src("doc.json");
  // unknown key: every key the object allows, in the order given
  // (keys in JSON order: "inner" is the first one not allowed)
  CHECK_THAT(error_of([&] {
               JsonObject(src, kDoc, "", {"name", "count"});
             }),
             Equals("doc.json: inner: unknown key (known keys here: name, count)"));
  const JsonObject top(src, kDoc, "",
                       {"name", "count", "rate", "on", "mac", "ip", "list", "inner", "jobs", "gone"});
  const JsonObject job(src, kDoc["jobs"][0], json_path("jobs", 0), {"id", "trees", "workers"});
  CHECK_THAT(error_of([&] { JsonObject(src, kDoc["jobs"][0], "jobs[0]", {"id"}); }),
             Equals("doc.json: jobs[0].trees: unknown key (known keys here: id)"));
  // missing key
  CHECK_THAT(error_of([&] { job.uint("workers", 0, 1); }), Equals("doc.json: jobs[0].workers: missing key"));
  CHECK_THAT(error_of([&] { top.require("gone"); }), Equals("doc.json: gone: missing key"));
  // wrong type
  CHECK_THAT(error_of([&] { top.uint("name", 1, 255); }),
             Equals("doc.json: name: wrong type: expected an integer in 1..255, got \"x\" (string)"));
  CHECK_THAT(error_of([&] { top.uint("rate", 1, 255); }),
             Equals("doc.json: rate: wrong type: expected an integer in 1..255, got 2.5 (number)"));
  CHECK_THAT(error_of([&] { top.number("on", 0, 1); }),
             Equals("doc.json: on: wrong type: expected a number in 0..1, got true (boolean)"));
  CHECK_THAT(error_of([&] { top.boolean("count"); }),
             Equals("doc.json: count: wrong type: expected true or false, got 3 (number)"));
  CHECK_THAT(error_of([&] { top.string("list"); }),
             Equals("doc.json: list: wrong type: expected a string, got [1,2,300] (array)"));
  CHECK_THAT(error_of([&] { top.array("inner"); }),
             Equals("doc.json: inner: wrong type: expected an array, got {\"a\":1} (object)"));
  CHECK_THAT(error_of([&] { top.object("list", {}); }),
             Equals("doc.json: list: wrong type: expected an object, got [1,2,300] (array)"));
  CHECK_THAT(error_of([&] { JsonObject(src, json::array(), "", {}); }),
             Equals("doc.json: (top level): wrong type: expected an object, got [] (array)"));
  // out of range
  CHECK_THAT(error_of([&] { job.uint("trees", 1, 255); }),
             Equals("doc.json: jobs[0].trees: out of range: 0 is not in 1..255"));
  CHECK_THAT(error_of([&] { src.uint(kDoc["list"][2], json_path("list", 2), 0, 63); }),
             Equals("doc.json: list[2]: out of range: 300 is not in 0..63"));
  CHECK_THAT(error_of([&] { src.uint(json(-1), "n", 0, 63); }),
             Equals("doc.json: n: out of range: -1 is not in 0..63"));
  CHECK_THAT(error_of([&] { top.number("rate", 0, 1); }),
             Equals("doc.json: rate: out of range: 2.5 is not in 0..1"));
  CHECK_THAT(error_of([&] { src.number(json(-0.5), "r", 0); }),
             Equals("doc.json: r: out of range: -0.5 is not >= 0"));
  CHECK_THAT(error_of([&] { src.number(json(std::numeric_limits<double>::infinity()), "r", 0); }),
             Catch::StartsWith("doc.json: r: out of range: "));
  // the reader's own checks, and values that are not addresses
  CHECK_THAT(error_of([&] { job.fail("trees", "at most 127 with backup_trees"); }),
             Equals("doc.json: jobs[0].trees: at most 127 with backup_trees"));
  CHECK_THAT(
      error_of([&] { src.mac(json("02:00"), "mac"); }),
      Equals("doc.json: mac: bad MAC address \"02:00\" (expected six hex bytes like 02:00:00:00:00:10)"));
  CHECK_THAT(error_of([&] { src.ipv4(json("10.0.0.256"), "ip"); }),
             Equals("doc.json: ip: bad IPv4 address \"10.0.0.256\" (expected dotted decimal like 10.0.0.1)"));
  CHECK_THAT(error_of([&] { src.array(json::array(), "hosts", true); }),
             Equals("doc.json: hosts: empty array (at least one element is required)"));
  // long values are cut for the message
  CHECK_THAT(error_of([&] { src.uint(json(std::string(100, 'a')), "s", 0, 1); }),
             Equals("doc.json: s: wrong type: expected an integer in 0..1, got \"" + std::string(36, 'a') +
                    "... (string)"));
}

TEST_CASE("json reader: each reader throws its own exception type") {
  const JsonSource src("plan.json", &throw_as<OtherError>);
  const JsonObject o(src, kDoc, "", {"name", "count", "rate", "on", "mac", "ip", "list", "inner", "jobs"});
  try {
    o.uint("count", 5, 9);
    FAIL("no error");
  } catch (const OtherError& e) {
    CHECK_THAT(std::string(e.what()), Equals("plan.json: count: out of range: 3 is not in 5..9"));
  }
  CHECK_THROWS_AS(JsonObject(src, kDoc, "", {"name"}), OtherError);
}

TEST_CASE("json reader: reading a key that was not declared is a programming error") {
  const JsonSource src("doc.json");
  const JsonObject o(src, kDoc["inner"], "inner", {"a"});
  CHECK_THROWS_AS(o.find("b"), std::logic_error);
}

TEST_CASE("json reader: whole files") {
  const std::string path = "/tmp/panama_test_json_reader_" + std::to_string(::getpid()) + ".json";
  CHECK_THAT(error_of([&] { read_json_file("/nonexistent/x.json"); }),
             Equals("/nonexistent/x.json: cannot open: No such file or directory"));
  std::ofstream(path) << "{\n  \"a\": [1,\n}\n";
  const std::string bad = error_of([&] { read_json_file(path); });
  CHECK_THAT(bad, Catch::StartsWith(path + ": invalid JSON: parse error at line 3"));
  std::ofstream(path) << "{\"a\": 1}";
  CHECK(read_json_file(path) == json{{"a", 1}});
  std::remove(path.c_str());
  CHECK_THAT(error_of([&] { parse_json_text("[", JsonSource("text")); }),
             Catch::StartsWith("text: invalid JSON: "));
}
