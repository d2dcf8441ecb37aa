#include "core/shards.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/error.hpp"

namespace mb {
namespace {

// Decimal digits only (no sign, no spaces), as a whole number.
bool whole(const std::string& text, std::uint64_t& out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::uint64_t slurm_number(const std::map<std::string, std::string>& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end())
    throw usage_error(fmt::format("--shard auto: {} is not set (auto takes the shard from a Slurm job array: sbatch "
                                  "--array); give --shard K/P instead",
                                  name));
  std::uint64_t value = 0;
  if (!whole(it->second, value))
    throw usage_error(fmt::format("--shard auto: {} is \"{}\", not a whole number", name, it->second));
  return value;
}

Shard checked_shard(std::uint64_t index, std::uint64_t count, const std::string& what) {
  if (count == 0) throw usage_error(fmt::format("--shard {}: the shard count must be at least 1", what));
  if (index >= count)
    throw usage_error(fmt::format("--shard {}: shard {} does not exist (shards are numbered 0 to {})", what, index,
                                  count - 1));
  return {index, count};
}

}  // namespace

FileRange share_of(std::uint64_t files, std::uint64_t parts, std::uint64_t part) {
  return share_of(FileRange{0, files}, parts, part);
}

FileRange share_of(const FileRange& range, std::uint64_t parts, std::uint64_t part) {
  const std::uint64_t n = range.size();
  // n * part fits: file counts and part counts are far below 2^32.
  return {range.begin + part * n / parts, range.begin + (part + 1) * n / parts};
}

Shard parse_shard(const std::string& text, const std::map<std::string, std::string>& env) {
  if (text == "auto") {
    const std::uint64_t id = slurm_number(env, "SLURM_ARRAY_TASK_ID");
    const std::uint64_t count = slurm_number(env, "SLURM_ARRAY_TASK_COUNT");
    const std::uint64_t min = slurm_number(env, "SLURM_ARRAY_TASK_MIN");
    if (id < min)
      throw usage_error(fmt::format("--shard auto: SLURM_ARRAY_TASK_ID {} is below SLURM_ARRAY_TASK_MIN {}", id, min));
    return checked_shard(id - min, count,
                   fmt::format("auto (SLURM_ARRAY_TASK_ID {} - SLURM_ARRAY_TASK_MIN {} of SLURM_ARRAY_TASK_COUNT {})",
                               id, min, count));
  }
  const auto slash = text.find('/');
  std::uint64_t index = 0, count = 0;
  if (slash == std::string::npos || !whole(text.substr(0, slash), index) || !whole(text.substr(slash + 1), count))
    throw usage_error(fmt::format("--shard \"{}\": expected K/P (shard K of P, 0 <= K < P) or auto", text));
  return checked_shard(index, count, text);
}

Handing::Handing(FileRange mine, std::uint64_t round, std::uint64_t files)
    : mine_(mine), round_(round == 0 ? std::max<std::uint64_t>(mine.size(), 1) : round), handed_(files, false) {}

std::vector<FileRange> Handing::rounds() const {
  std::vector<FileRange> out;
  for (std::uint64_t begin = mine_.begin; begin < mine_.end; begin += round_)
    out.push_back({begin, std::min(begin + round_, mine_.end)});
  return out;
}

std::vector<std::uint64_t> Handing::take(FileRange done) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t i = done.begin; i < done.end; ++i)
    if (!handed_.at(i)) {
      handed_[i] = true;
      out.push_back(i);
    }
  return out;
}

}  // namespace mb
