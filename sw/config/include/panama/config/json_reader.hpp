// The one reader of the project's JSON input files: node configurations, job
// plans, the software PSwitch's "pswitch" section and the controller's
// cluster and job descriptions. Every error it reports reads
//
//   <origin>: <path>: <what>
//
// <origin> is the file name (or, for a document not read from a file, what it
// is: "cluster", "plan"); <path> the JSON path of the value, e.g.
// `jobs[1].trees` or `entries[0].children[2]` ("(top level)" for the document
// itself); <what> one of
//
//   unknown key (known keys here: a, b, c)
//   missing key
//   wrong type: expected <what is allowed>, got <value> (<JSON type>)
//   out of range: <value> is not in <lo>..<hi>
//
// or the reader's own words for a check of its own (fail()). Each reader
// throws its own exception type (ConfigError, PlanError, SettingsError,
// ControllerError) with that message. docs/configuration.md ("Checks and
// error messages") shows examples.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "panama/table_entry.hpp"

namespace panama::config {

// A configuration that cannot be read, parsed or applied. The message names
// the file (or other origin), the JSON path and what is wrong.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws the reader's exception with `message`; must not return.
using JsonThrower = void (*)(const std::string& message);

template <class Error>
[[noreturn]] void throw_as(const std::string& message) {
  throw Error(message);
}

// The document being read: its origin and the exception its errors throw.
// The value readers check one JSON value at a JSON path.
class JsonSource {
 public:
  explicit JsonSource(std::string origin, JsonThrower thrower = &throw_as<ConfigError>);

  const std::string& origin() const { return origin_; }

  // Throws "<origin>: <path>: <what>".
  [[noreturn]] void fail(const std::string& path, const std::string& what) const;
  // Throws "<origin>: <what>" (a problem of the whole file: cannot open, invalid JSON).
  [[noreturn]] void fail_file(const std::string& what) const;

  // "wrong type: expected <expected>, got <value> (<type>)".
  [[noreturn]] void wrong_type(const nlohmann::json& v, const std::string& path,
                               const std::string& expected) const;

  // An integer (JSON integer: 1.0 and "1" are wrong types) in lo..hi.
  uint64_t uint(const nlohmann::json& v, const std::string& path, uint64_t lo, uint64_t hi) const;
  // A finite number in lo..hi (hi may be infinity).
  double number(const nlohmann::json& v, const std::string& path, double lo,
                double hi = std::numeric_limits<double>::infinity()) const;
  bool boolean(const nlohmann::json& v, const std::string& path) const;
  std::string string(const nlohmann::json& v, const std::string& path) const;
  // "02:00:00:00:00:10" and "10.0.0.1" (config::parse_mac / parse_ipv4).
  MacBytes mac(const nlohmann::json& v, const std::string& path) const;
  uint32_t ipv4(const nlohmann::json& v, const std::string& path) const;
  // An array; `non_empty`: with at least one element.
  const nlohmann::json& array(const nlohmann::json& v, const std::string& path, bool non_empty = false) const;

 private:
  std::string origin_;
  JsonThrower thrower_;
};

// JSON paths: "a.b" (the top level's key is "b") and "a[3]".
std::string json_path(const std::string& parent, const std::string& key);
std::string json_path(const std::string& parent, size_t index);

// A value for a message: its JSON text (cut at 40 characters) and type,
// e.g. "\"fast\" (string)".
std::string describe_json(const nlohmann::json& v);

// One JSON object at a path: checked on construction to be an object with no
// keys but `keys` (listed in this order when one is unknown). The key readers
// without a fallback require the key; those with one return it when the key
// is absent (null is a value, and the wrong type for most). Reading a key not
// in `keys` is a programming error (std::logic_error). Keeps references to
// `src` and `value`.
class JsonObject {
 public:
  JsonObject(const JsonSource& src, const nlohmann::json& value, std::string path,
             std::initializer_list<const char*> keys);

  const JsonSource& source() const { return src_; }
  const nlohmann::json& value() const { return obj_; }
  const std::string& path() const { return path_; }
  std::string path(const std::string& key) const { return json_path(path_, key); }

  bool has(const char* key) const;
  const nlohmann::json* find(const char* key) const;  // null when absent
  const nlohmann::json& require(const char* key) const;

  uint64_t uint(const char* key, uint64_t lo, uint64_t hi) const;
  uint64_t uint(const char* key, uint64_t lo, uint64_t hi, uint64_t fallback) const;
  double number(const char* key, double lo, double hi) const;
  double number(const char* key, double lo, double hi, double fallback) const;
  bool boolean(const char* key) const;
  bool boolean(const char* key, bool fallback) const;
  std::string string(const char* key) const;
  std::string string(const char* key, const std::string& fallback) const;
  MacBytes mac(const char* key) const;
  MacBytes mac(const char* key, const MacBytes& fallback) const;
  uint32_t ipv4(const char* key) const;
  uint32_t ipv4(const char* key, uint32_t fallback) const;
  const nlohmann::json& array(const char* key, bool non_empty = false) const;
  // A nested object (required).
  JsonObject object(const char* key, std::initializer_list<const char*> keys) const;

  // Errors at this object's path, or at one of its keys.
  [[noreturn]] void fail(const std::string& what) const { src_.fail(path_, what); }
  [[noreturn]] void fail(const char* key, const std::string& what) const { src_.fail(path(key), what); }

 private:
  void check_declared(const char* key) const;

  const JsonSource& src_;
  const nlohmann::json& obj_;
  std::string path_;
  std::vector<std::string> keys_;
};

// Parses JSON text, or a file's contents: "<origin>: invalid JSON: parse
// error at line 3, column 15: ..." and "<path>: cannot open: <reason>".
nlohmann::json parse_json_text(const std::string& text, const JsonSource& src);
nlohmann::json read_json_file(const std::string& path, JsonThrower thrower = &throw_as<ConfigError>);

}  // namespace panama::config
