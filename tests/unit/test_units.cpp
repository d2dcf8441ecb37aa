// Amounts as messages and the progress line show them.
#include <doctest/doctest.h>

#include "core/units.hpp"

TEST_CASE("units: bytes in binary units with three significant digits") {
  CHECK(mb::byte_text(17) == "17 B");
  CHECK(mb::byte_text(1024) == "1.00 KiB");
  CHECK(mb::byte_text(640 * 1024) == "640 KiB");
  CHECK(mb::byte_text(1.2 * (1 << 30)) == "1.20 GiB");
  CHECK(mb::byte_text(55.5 * (1 << 20)) == "55.5 MiB");
}

TEST_CASE("units: time left rounds up, so unfinished work never shows 0s") {
  CHECK(mb::time_left_text(50, 1000) == "1s");  // half done in a moment
  CHECK(mb::time_left_text(0, 1000) == "0s");
  CHECK(mb::time_left_text(3000, 1000) == "3s");
  CHECK(mb::time_left_text(3001, 1000) == "4s");
  CHECK(mb::time_left_text(245, 1) == "4m05s");
  CHECK(mb::time_left_text(7800, 1) == "2h10m");
  CHECK(mb::time_left_text(100, 0) == "--");
}
