#include "core/layout.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {

std::uint64_t rows_in(const RowMap& map) {
  std::uint64_t n = 0;
  for (const auto& s : map) n += s.count;
  return n;
}

void append_rows(RowMap& map, std::uint64_t begin, std::uint64_t count) {
  if (count == 0) return;
  if (!map.empty() && map.back().stride == 1 && map.back().stop() == begin) {
    map.back().count += count;
    return;
  }
  map.push_back({begin, count, 1});
}

Segment slice_segment(std::uint64_t slice_length, const DataParallel& dp, std::uint64_t slice, const Range& piece) {
  if (dp.align) return {slice + piece.begin * dp.degree, piece.size(), dp.degree};
  return {slice * slice_length + piece.begin, piece.size(), 1};
}

std::vector<RowMap> data_parallel_maps(std::uint64_t length, const DataParallel& dp, const std::vector<Range>& pieces) {
  const std::uint64_t slice_length = length / dp.degree;
  std::vector<RowMap> maps(pieces.size());
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (std::uint64_t s = 0; s < dp.degree; ++s) {
      const Segment seg = slice_segment(slice_length, dp, s, pieces[i]);
      if (seg.count > 0) maps[i].push_back(seg);
    }
  return maps;
}

std::vector<RowMap> per_rank_maps(std::uint64_t length, const DataParallel& dp, const std::vector<Range>& pieces) {
  const std::uint64_t slice_length = length / dp.degree;
  std::vector<RowMap> maps;
  for (std::uint64_t s = 0; s < dp.degree; ++s)
    for (const auto& piece : pieces)
      maps.push_back(piece.size() ? RowMap{slice_segment(slice_length, dp, s, piece)} : RowMap{});
  return maps;
}

namespace {

std::vector<RowMap> merge_per_rank(const std::vector<std::uint64_t>& lengths, const DataParallel& dp,
                                   const std::string& what) {
  if (lengths.size() % dp.degree != 0)
    throw Error(fmt::format("{}: {} per-rank files do not divide into {} ranks", what, lengths.size(), dp.degree));
  const std::size_t per_rank = lengths.size() / dp.degree;
  std::vector<std::vector<Range>> pieces(dp.degree);
  std::uint64_t slice_length = 0;
  for (std::uint64_t s = 0; s < dp.degree; ++s) {
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < per_rank; ++i) {
      const std::uint64_t n = lengths[s * per_rank + i];
      pieces[s].push_back({at, at + n});
      at += n;
    }
    if (s > 0 && at != slice_length)
      throw Error(fmt::format("{}: rank {} holds {} rows, rank 0 holds {} (data-parallel slices must be equal)", what,
                              s, at, slice_length));
    slice_length = at;
  }
  std::vector<RowMap> maps;
  for (std::uint64_t s = 0; s < dp.degree; ++s)
    for (const auto& piece : pieces[s])
      maps.push_back(piece.size() ? RowMap{slice_segment(slice_length, dp, s, piece)} : RowMap{});
  return maps;
}

}  // namespace

std::vector<RowMap> merge_maps(const std::vector<std::uint64_t>& lengths, const DataParallel& dp, FileLayout layout,
                               const std::string& what) {
  if (layout == FileLayout::PerRank) return merge_per_rank(lengths, dp, what);
  std::vector<Range> pieces;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] % dp.degree != 0)
      throw Error(fmt::format("{}: microbatch {} has {} rows, not a multiple of the data-parallel degree {}", what, i,
                              lengths[i], dp.degree));
    const std::uint64_t piece = lengths[i] / dp.degree;
    pieces.push_back({at, at + piece});
    at += piece;
  }
  return data_parallel_maps(at * dp.degree, dp, pieces);
}

}  // namespace mb
