#include "core/packed.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h before fmt 11)

#include "core/error.hpp"

namespace mb {
namespace {

__extension__ typedef unsigned __int128 Wide;  // holds L * (L + 1) for any 64-bit L

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
Offsets checked_offsets(const std::vector<T>& offsets, const std::string& what) {
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
  return std::visit([&](const auto& values) { return checked_offsets(values, what); }, offsets);
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

std::string padded_offsets_name(const std::string& path) { return path + "_padded"; }

std::string rank_bounds_name(const std::string& path) { return path + "_dp_bounds"; }

Offsets rank_bounds(const std::vector<Range>& runs, std::uint64_t ranks, std::uint64_t microbatch) {
  const std::uint64_t microbatches = runs.size() / ranks;
  Offsets bounds{0};
  for (std::uint64_t d = 0; d < ranks; ++d)
    bounds.push_back(bounds.back() + runs.at(d * microbatches + microbatch).size());
  return bounds;
}

void check_rank_bounds(const std::string& what, const Offsets& stored, const Offsets& expected,
                       std::uint64_t sequences) {
  if (stored != expected || expected.back() != sequences)  // expected: never empty
    throw Error(fmt::format("{}: the data-parallel ranks' sequence bounds [{}] are not those of the file's cells "
                            "([{}], of {} sequences)",
                            what, fmt::join(stored, ", "), fmt::join(expected, ", "), sequences));
}

std::vector<std::uint64_t> sequence_work(const std::vector<Offsets>& offsets_sets) {
  if (offsets_sets.empty()) return {};
  std::vector<std::uint64_t> work(offsets_sets.front().size() - 1, 0);
  std::uint64_t total = 0;
  for (const auto& offsets : offsets_sets)
    for (std::size_t j = 0; j + 1 < offsets.size(); ++j) {
      const Wide length = offsets[j + 1] - offsets[j];
      const Wide w = length * (length + 1) / 2;
      if (w > UINT64_MAX || __builtin_add_overflow(total, static_cast<std::uint64_t>(w), &total))
        throw Error(fmt::format("the attention work of the sequences (sum of L*(L+1)/2) is more than {}", UINT64_MAX));
      work[j] += static_cast<std::uint64_t>(w);  // no wrap: work[j] <= total
    }
  return work;
}

std::vector<Range> balance_runs(const std::vector<std::uint64_t>& weights, std::uint64_t pieces) {
  if (pieces == 0) throw Error("balance_runs: cannot cut into 0 pieces");
  const std::uint64_t count = weights.size();
  std::uint64_t lo = 0, hi = 0;
  for (auto t : weights) {
    lo = std::max(lo, t);
    // Every run's sum is at most the total: when it fits, so do they.
    if (__builtin_add_overflow(hi, t, &hi))
      throw Error(fmt::format("balance_runs: a total of more than {}", UINT64_MAX));
  }
  // Smallest cap for which the sequences fit in `pieces` runs.
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (runs_needed(weights, mid) <= pieces) {
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
      if (!must_take && !last_run && (sum + weights[end] > cap || count - end <= runs_after)) break;
      sum += weights[end++];
    }
    runs.push_back({at, end});
    at = end;
  }
  return runs;
}

std::vector<std::uint64_t> run_weights(const std::vector<std::uint64_t>& weights, const std::vector<Range>& runs) {
  std::vector<std::uint64_t> out;
  for (const auto& r : runs)
    out.push_back(std::accumulate(weights.begin() + static_cast<std::ptrdiff_t>(r.begin),
                                  weights.begin() + static_cast<std::ptrdiff_t>(r.end), std::uint64_t{0}));
  return out;
}

RowMap offsets_rows(const std::vector<Range>& runs) {
  RowMap rows;
  for (const Range& run : runs) {
    if (rows.empty()) {
      rows.push_back({run.begin, run.size() + 1, 1});
    } else if (run.size() > 0) {
      rows.push_back({run.begin + 1, run.size(), 1});
    }
  }
  return rows;
}

RowMap sequences_of_offsets_rows(const RowMap& rows, const std::string& what) {
  RowMap out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Segment& s = rows[k];
    const bool first = k == 0;
    if (s.stride != 1 || s.count == 0 || (!first && s.begin == 0))
      throw Error(fmt::format("{}: offsets rows [{}, {}, {}] are not those of whole sequences", what, s.begin,
                              s.stop(), s.stride));
    const Segment sequences = first ? Segment{s.begin, s.count - 1, 1} : Segment{s.begin - 1, s.count, 1};
    if (sequences.count > 0) out.push_back(sequences);
  }
  return out;
}

std::vector<std::uint64_t> file_lengths(const std::vector<Offsets>& segments) {
  std::vector<std::uint64_t> out;
  for (const Offsets& values : segments)
    for (std::size_t k = 1; k < values.size(); ++k) out.push_back(values[k] - values[k - 1]);
  return out;
}

Offsets offsets_of(const std::vector<std::uint64_t>& lengths) {
  Offsets out{0};
  for (const std::uint64_t length : lengths) {
    std::uint64_t next = 0;
    if (__builtin_add_overflow(out.back(), length, &next))
      throw Error(fmt::format("offsets of more than {} tokens", UINT64_MAX));
    out.push_back(next);
  }
  return out;
}

}  // namespace mb
