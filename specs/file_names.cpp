#include "specs/file_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace mb::specs {
namespace {

// `index` with as many digits as `count - 1` has (5 at least), zeros in front.
std::string padded(std::uint64_t index, std::uint64_t count) {
  const std::size_t width = std::max<std::size_t>(5, fmt::formatted_size("{}", count == 0 ? 0 : count - 1));
  return fmt::format("{:0{}}", index, width);
}

bool valid_extension(std::string_view ext) {  // without its dot
  return !ext.empty() && ext.size() <= 8 &&
         std::all_of(ext.begin(), ext.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

// Digits then `end` at the front of `rest`, consumed; false when they are not there.
bool take_number(std::string_view& rest, char end) {
  std::size_t n = 0;
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
  if (n == 0 || n >= rest.size() || rest[n] != end) return false;
  rest.remove_prefix(n + 1);
  return true;
}

}  // namespace

std::string piece_extension(const std::string& input_file_name) {
  const auto dot = input_file_name.rfind('.');
  if (dot == std::string::npos || dot == 0) return ".h5";
  const std::string ext = input_file_name.substr(dot + 1);
  return valid_extension(ext) ? "." + ext : ".h5";
}

bool is_output_file_name(std::string_view name) {
  for (const std::string_view prefix : {"rank-", "cp-"}) {
    if (!name.starts_with(prefix)) continue;
    name.remove_prefix(prefix.size());
    if (!take_number(name, '-')) return false;
  }
  if (!name.starts_with("microbatch-")) return false;
  name.remove_prefix(std::string_view("microbatch-").size());
  return take_number(name, '.') && valid_extension(name);
}

std::string output_file_name(const FileGrid& grid, FileLayout layout, std::uint64_t file,
                             const std::string& extension) {
  std::string name = "microbatch-" + padded(grid.microbatch_of(file), grid.microbatches) + extension;
  if (grid.cp > 1) name = "cp-" + padded(grid.cp_rank_of(file), grid.cp) + "-" + name;
  if (layout == FileLayout::PerRank) name = "rank-" + padded(grid.rank_of(file), grid.ranks) + "-" + name;
  return name;
}

std::string output_file_name(const SplitPlan& plan, std::uint64_t file, const std::string& extension) {
  return output_file_name(plan.grid(), plan.layout, file, extension);
}

}  // namespace mb::specs
