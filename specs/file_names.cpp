#include "specs/file_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "specs/manifest.hpp"

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

bool all_digits(std::string_view s) {
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return !s.empty() && std::all_of(s.begin(), s.end(), digit);
}

// NAME of .NAME<infix>TAIL, when TAIL passes `tail_ok`.
template <class TailOk>
std::optional<std::string> hidden_of(std::string_view entry, std::string_view infix, TailOk tail_ok) {
  if (!entry.starts_with(".")) return std::nullopt;
  const auto at = entry.rfind(infix);
  if (at == std::string_view::npos || at < 2 || !tail_ok(entry.substr(at + infix.size()))) return std::nullopt;
  return std::string(entry.substr(1, at - 1));
}

// K-of-P: two numbers around "-of-", consumed whole.
bool is_k_of_p(std::string_view rest) {
  return take_number(rest, '-') && rest.starts_with("of-") && all_digits(rest.substr(3));
}

constexpr std::string_view kJournalSuffix = ".journal";

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

std::string part_record_name(std::uint64_t index, std::uint64_t count) {
  return fmt::format("part-{:05}-of-{:05}.json", index, count);
}

std::uint64_t part_record_count(std::string_view name) {
  if (!name.starts_with("part-") || !name.ends_with(".json")) return 0;
  const std::string_view k_of_p = name.substr(5, name.size() - 10);
  if (!is_k_of_p(k_of_p)) return 0;
  const std::string_view p = k_of_p.substr(k_of_p.find("-of-") + 4);
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(p.data(), p.data() + p.size(), count);
  return error == std::errc() && end == p.data() + p.size() ? count : 0;  // too large: no split's
}

std::string journal_name(std::string_view file) { return "." + std::string(file) + std::string(kJournalSuffix); }

bool is_journal_name(std::string_view name) {
  if (!name.starts_with(".") || !name.ends_with(kJournalSuffix)) return false;
  return is_output_file_name(name.substr(1, name.size() - 1 - kJournalSuffix.size()));
}

std::string journaled_file(std::string_view name) {
  if (!is_journal_name(name)) return std::string(name);
  return std::string(name.substr(1, name.size() - 1 - kJournalSuffix.size()));
}

std::string temporary_name(std::string_view name, long pid) { return fmt::format(".{}.tmp-{}", name, pid); }

std::optional<std::string> temporary_of(std::string_view entry) { return hidden_of(entry, ".tmp-", all_digits); }

std::string aside_name(std::string_view name, long pid) { return fmt::format(".{}.aside-{}", name, pid); }

std::optional<std::string> aside_of(std::string_view entry, long pid) {
  const std::string digits = std::to_string(pid);
  return hidden_of(entry, ".aside-", [&](std::string_view tail) { return tail == digits; });
}

std::string scratch_name(std::string_view name, std::uint64_t rank, std::uint64_t size) {
  return fmt::format(".{}.rank-{}-of-{}.scratch", name, rank, size);
}

std::optional<std::string> scratch_of(std::string_view entry) {
  if (!entry.ends_with(".scratch")) return std::nullopt;
  return hidden_of(entry.substr(0, entry.size() - 8), ".rank-", is_k_of_p);
}

std::string shard_lock_name(std::uint64_t index, std::uint64_t count) {
  return fmt::format("{}.shard-{:05}-of-{:05}", kLockName, index, count);
}

bool is_shard_lock_name(std::string_view name) {
  const std::string stem = std::string(kLockName) + ".shard-";
  return name.starts_with(stem) && is_k_of_p(name.substr(stem.size()));
}

std::string file_lock_name(std::string_view name) { return fmt::format(".{}.lock", name); }

bool is_final_split_name(std::string_view name) {
  return is_output_file_name(name) || name == kManifestName || part_record_count(name) > 0;
}

bool is_split_name(std::string_view name) {
  if (is_final_split_name(name) || is_journal_name(name)) return true;
  std::optional<std::string> of = temporary_of(name);
  if (!of) of = hidden_of(name, ".aside-", all_digits);
  return of && (is_final_split_name(*of) || is_journal_name(*of));
}

}  // namespace mb::specs
