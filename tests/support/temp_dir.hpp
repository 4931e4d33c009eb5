// Test helper: fresh temporary folders that are removed, with everything in
// them, when the test process ends.
#pragma once

#include <stdlib.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace panama::test {

// A new folder /tmp/<prefix>-XXXXXX.
inline std::string temp_dir(const std::string& prefix) {
  struct Dirs {
    std::vector<std::string> paths;
    ~Dirs() {
      for (const auto& p : paths) std::filesystem::remove_all(p);
    }
  };
  static Dirs dirs;
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  dirs.paths.push_back(tmpl);
  return tmpl;
}

}  // namespace panama::test
