// Driver test helper: the ErrorKind of the DriverError a call throws.
#pragma once

#include <catch2/catch.hpp>

#include <functional>

#include "panama/driver/errors.hpp"

namespace panama::test {

// Runs `f` and returns the kind of the DriverError it throws; fails the test
// when it throws none.
inline driver::ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const driver::DriverError& e) {
    UNSCOPED_INFO("DriverError: " << e.what());
    return e.kind();
  }
  FAIL("no DriverError thrown");
  return driver::ErrorKind::kUnsupported;
}

}  // namespace panama::test
