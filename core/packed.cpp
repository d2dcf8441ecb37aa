#include "core/packed.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

// Number of runs needed when no run may exceed `cap` tokens.
std::uint64_t runs_needed(const std::vector<std::uint64_t>& tokens, std::uint64_t cap) {
  std::uint64_t runs = 0, sum = 0;
  bool open = false;
  for (auto t : tokens) {
    if (open && sum + t <= cap) {
      sum += t;
      continue;
    }
    ++runs;
    sum = t;
    open = true;
  }
  return runs;
}

template <typename T>
Offsets checked(const std::vector<T>& offsets, const std::string& what) {
  if (offsets.empty()) throw Error(fmt::format("{}: offsets must start at 0 (the dataset is empty)", what));
  if (offsets.front() != 0)
    throw Error(fmt::format("{}: offsets must start at 0 (offsets[0] is {})", what, offsets.front()));
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] < offsets[i - 1])
      throw Error(fmt::format("{}: offsets must rise: offsets[{}] = {} is below offsets[{}] = {}", what, i, offsets[i],
                              i - 1, offsets[i - 1]));
  // From 0 and rising: every value is non-negative, exact as unsigned.
  return Offsets(offsets.begin(), offsets.end());
}

}  // namespace

Offsets check_offsets(const RawOffsets& offsets, const std::string& what) {
  return std::visit([&](const auto& values) { return checked(values, what); }, offsets);
}

void check_packed_length(const SequenceLeaf& leaf, const Offsets& offsets) {
  if (leaf.length != offsets.back())
    throw Error(fmt::format("{} has {} tokens on axis {}, but its offsets {} end at {}", leaf.what, leaf.length,
                            leaf.axis, leaf.offsets, offsets.back()));
}

void check_per_sequence_length(const SequenceLeaf& leaf, const Offsets& offsets) {
  if (leaf.length != offsets.size() - 1)
    throw Error(fmt::format("{} has {} rows on axis {}, but {} describes {} sequences", leaf.what, leaf.length,
                            leaf.axis, leaf.offsets, offsets.size() - 1));
}

void check_same_sequences(const std::string& first, const Offsets& a, const std::string& other, const Offsets& b) {
  if (a.size() != b.size())
    throw Error(fmt::format("offsets datasets disagree: {} holds {} sequences, {} holds {}", first, a.size() - 1,
                            other, b.size() - 1));
}

std::vector<std::uint64_t> sequence_tokens(const std::vector<Offsets>& offsets_sets) {
  if (offsets_sets.empty()) return {};
  std::vector<std::uint64_t> tokens(offsets_sets.front().size() - 1, 0);
  std::uint64_t total = 0;
  for (const auto& offsets : offsets_sets)
    for (std::size_t j = 0; j + 1 < offsets.size(); ++j) {
      const std::uint64_t t = offsets[j + 1] - offsets[j];
      tokens[j] += t;  // no wrap: tokens[j] <= total
      if (__builtin_add_overflow(total, t, &total))
        throw Error(fmt::format("the offsets datasets describe more than {} tokens together", UINT64_MAX));
    }
  return tokens;
}

std::vector<Range> balance_tokens(const std::vector<std::uint64_t>& tokens, std::uint64_t pieces) {
  if (pieces == 0) throw Error("balance_tokens: cannot cut into 0 pieces");
  const std::uint64_t count = tokens.size();
  std::uint64_t lo = 0, hi = 0;
  for (auto t : tokens) {
    lo = std::max(lo, t);
    // Every run's sum is at most the total: when it fits, so do they.
    if (__builtin_add_overflow(hi, t, &hi))
      throw Error(fmt::format("balance_tokens: more than {} tokens", UINT64_MAX));
  }
  // Smallest cap for which the sequences fit in `pieces` runs.
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (runs_needed(tokens, mid) <= pieces) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  const std::uint64_t cap = lo;
  // Greedy runs under the cap; a run closes early when the sequences left are
  // just enough to give every remaining run one.
  std::vector<Range> runs;
  std::uint64_t at = 0;
  for (std::uint64_t p = 0; p < pieces; ++p) {
    const std::uint64_t runs_after = pieces - p - 1;
    std::uint64_t end = at, sum = 0;
    while (end < count) {
      const bool must_take = end == at;
      const bool last_run = runs_after == 0;
      if (!must_take && !last_run && (sum + tokens[end] > cap || count - end <= runs_after)) break;
      sum += tokens[end++];
    }
    runs.push_back({at, end});
    at = end;
  }
  return runs;
}

std::vector<std::uint64_t> run_tokens(const std::vector<std::uint64_t>& tokens, const std::vector<Range>& runs) {
  std::vector<std::uint64_t> out;
  for (const auto& r : runs)
    out.push_back(std::accumulate(tokens.begin() + static_cast<std::ptrdiff_t>(r.begin),
                                  tokens.begin() + static_cast<std::ptrdiff_t>(r.end), std::uint64_t{0}));
  return out;
}

}  // namespace mb
