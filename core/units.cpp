#include "core/units.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <iterator>

namespace mb {

std::string byte_text(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", bytes);
  const int decimals = bytes < 10 ? 2 : bytes < 100 ? 1 : 0;
  return fmt::format("{:.{}f} {}", bytes, decimals, kUnits[unit]);
}

std::string time_left_text(double remaining, double rate) {
  if (!(rate > 0)) return "--";
  const auto s = static_cast<std::uint64_t>(std::ceil(std::max(remaining, 0.0) / rate));
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, s / 60 % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

}  // namespace mb
