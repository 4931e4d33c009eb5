// The JSON object reader (json_reader.hpp): one wording of every error.
#include "panama/config/json_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "panama/config/node_config.hpp"

namespace panama::config {

using nlohmann::json;

namespace {

// "in 0..1", or ">= 0" without an upper bound.
std::string range_text(double lo, double hi) {
  return std::isinf(hi) ? fmt::format(">= {}", lo) : fmt::format("in {}..{}", lo, hi);
}

// "invalid JSON: parse error at line 3, column 5: ..." from nlohmann's
// "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
std::string invalid_json(const json::parse_error& e) {
  const std::string what = e.what();
  const auto pos = what.find("] ");
  return "invalid JSON: " + (pos == std::string::npos ? what : what.substr(pos + 2));
}

}  // namespace

std::string json_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string json_path(const std::string& parent, size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string describe_json(const json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} ({})", text, v.type_name());
}

// ------------------------------------------------------------------ JsonSource

JsonSource::JsonSource(std::string origin, JsonThrower thrower)
    : origin_(std::move(origin)), thrower_(thrower) {}

void JsonSource::fail(const std::string& path, const std::string& what) const {
  fail_file(fmt::format("{}: {}", path.empty() ? "(top level)" : path, what));
}

void JsonSource::fail_file(const std::string& what) const {
  const std::string message = fmt::format("{}: {}", origin_, what);
  thrower_(message);
  throw ConfigError(message);  // a thrower that returned
}

void JsonSource::wrong_type(const json& v, const std::string& path, const std::string& expected) const {
  fail(path, fmt::format("wrong type: expected {}, got {}", expected, describe_json(v)));
}

uint64_t JsonSource::uint(const json& v, const std::string& path, uint64_t lo, uint64_t hi) const {
  if (!v.is_number_integer()) wrong_type(v, path, fmt::format("an integer in {}..{}", lo, hi));
  // Non-negative values built in code are signed integers, parsed ones unsigned.
  const bool negative = !v.is_number_unsigned() && v.get<int64_t>() < 0;
  if (negative || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi) {
    fail(path, fmt::format("out of range: {} is not in {}..{}", v.dump(), lo, hi));
  }
  return v.get<uint64_t>();
}

double JsonSource::number(const json& v, const std::string& path, double lo, double hi) const {
  if (!v.is_number()) wrong_type(v, path, "a number " + range_text(lo, hi));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    fail(path, fmt::format("out of range: {} is not {}", v.dump(), range_text(lo, hi)));
  }
  return x;
}

bool JsonSource::boolean(const json& v, const std::string& path) const {
  if (!v.is_boolean()) wrong_type(v, path, "true or false");
  return v.get<bool>();
}

std::string JsonSource::string(const json& v, const std::string& path) const {
  if (!v.is_string()) wrong_type(v, path, "a string");
  return v.get<std::string>();
}

MacBytes JsonSource::mac(const json& v, const std::string& path) const {
  const std::string text = string(v, path);
  MacBytes m{};
  if (!parse_mac(text, m)) {
    fail(path, fmt::format("bad MAC address \"{}\" (expected six hex bytes like 02:00:00:00:00:10)", text));
  }
  return m;
}

uint32_t JsonSource::ipv4(const json& v, const std::string& path) const {
  const std::string text = string(v, path);
  uint32_t a = 0;
  if (!parse_ipv4(text, a)) {
    fail(path, fmt::format("bad IPv4 address \"{}\" (expected dotted decimal like 10.0.0.1)", text));
  }
  return a;
}

const json& JsonSource::array(const json& v, const std::string& path, bool non_empty) const {
  if (!v.is_array()) wrong_type(v, path, non_empty ? "a non-empty array" : "an array");
  if (non_empty && v.empty()) fail(path, "empty array (at least one element is required)");
  return v;
}

// ------------------------------------------------------------------ JsonObject

JsonObject::JsonObject(const JsonSource& src, const json& value, std::string path,
                       std::initializer_list<const char*> keys)
    : src_(src), obj_(value), path_(std::move(path)), keys_(keys.begin(), keys.end()) {
  if (!obj_.is_object()) src_.wrong_type(obj_, path_, "an object");
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (std::find(keys_.begin(), keys_.end(), it.key()) != keys_.end()) continue;
    std::string known;
    for (const std::string& k : keys_) known += (known.empty() ? "" : ", ") + k;
    src_.fail(json_path(path_, it.key()), fmt::format("unknown key (known keys here: {})", known));
  }
}

void JsonObject::check_declared(const char* key) const {
  if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) {
    throw std::logic_error(fmt::format("JsonObject at '{}': key '{}' read but not declared", path_, key));
  }
}

bool JsonObject::has(const char* key) const {
  return find(key) != nullptr;
}

const json* JsonObject::find(const char* key) const {
  check_declared(key);
  auto it = obj_.find(key);
  return it == obj_.end() ? nullptr : &*it;
}

const json& JsonObject::require(const char* key) const {
  const json* v = find(key);
  if (v == nullptr) src_.fail(path(key), "missing key");
  return *v;
}

uint64_t JsonObject::uint(const char* key, uint64_t lo, uint64_t hi) const {
  return src_.uint(require(key), path(key), lo, hi);
}

uint64_t JsonObject::uint(const char* key, uint64_t lo, uint64_t hi, uint64_t fallback) const {
  const json* v = find(key);
  return v == nullptr ? fallback : src_.uint(*v, path(key), lo, hi);
}

double JsonObject::number(const char* key, double lo, double hi) const {
  return src_.number(require(key), path(key), lo, hi);
}

double JsonObject::number(const char* key, double lo, double hi, double fallback) const {
  const json* v = find(key);
  return v == nullptr ? fallback : src_.number(*v, path(key), lo, hi);
}

bool JsonObject::boolean(const char* key) const {
  return src_.boolean(require(key), path(key));
}

bool JsonObject::boolean(const char* key, bool fallback) const {
  const json* v = find(key);
  return v == nullptr ? fallback : src_.boolean(*v, path(key));
}

std::string JsonObject::string(const char* key) const {
  return src_.string(require(key), path(key));
}

std::string JsonObject::string(const char* key, const std::string& fallback) const {
  const json* v = find(key);
  return v == nullptr ? fallback : src_.string(*v, path(key));
}

MacBytes JsonObject::mac(const char* key) const {
  return src_.mac(require(key), path(key));
}

MacBytes JsonObject::mac(const char* key, const MacBytes& fallback) const {
  const json* v = find(key);
  return v == nullptr ? fallback : src_.mac(*v, path(key));
}

uint32_t JsonObject::ipv4(const char* key) const {
  return src_.ipv4(require(key), path(key));
}

uint32_t JsonObject::ipv4(const char* key, uint32_t fallback) const {
  const json* v = find(key);
  return v == nullptr ? fallback : src_.ipv4(*v, path(key));
}

const json& JsonObject::array(const char* key, bool non_empty) const {
  return src_.array(require(key), path(key), non_empty);
}

JsonObject JsonObject::object(const char* key, std::initializer_list<const char*> keys) const {
  return JsonObject(src_, require(key), path(key), keys);
}

// ------------------------------------------------------------------ documents

json parse_json_text(const std::string& text, const JsonSource& src) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    src.fail_file(invalid_json(e));
  }
}

json read_json_file(const std::string& path, JsonThrower thrower) {
  const JsonSource src(path, thrower);
  std::ifstream in(path);
  if (!in) src.fail_file(fmt::format("cannot open: {}", std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  return parse_json_text(text.str(), src);
}

}  // namespace panama::config
