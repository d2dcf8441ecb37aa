#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/layout.hpp"

using mb::DataParallel;
using mb::Range;
using mb::RowMap;
using mb::Segment;

namespace {
// Expands row maps into the list of source rows, microbatch by microbatch.
std::vector<std::vector<std::uint64_t>> expand(const std::vector<RowMap>& maps) {
  std::vector<std::vector<std::uint64_t>> out;
  for (const auto& m : maps) {
    out.emplace_back();
    for (const auto& s : m)
      for (std::uint64_t k = 0; k < s.count; ++k) out.back().push_back(s.begin + k * s.stride);
  }
  return out;
}

// PaddlePaddle's align reorder written out literally: new[s*R + r] = old[s + r*D].
std::vector<std::uint64_t> aligned_order(std::uint64_t length, std::uint64_t d) {
  const std::uint64_t r_len = length / d;
  std::vector<std::uint64_t> order(length);
  for (std::uint64_t s = 0; s < d; ++s)
    for (std::uint64_t r = 0; r < r_len; ++r) order[s * r_len + r] = s + r * d;
  return order;
}
}  // namespace

TEST_CASE("data-parallel maps: microbatch i is piece i of every slice") {
  // L = 12, D = 2: slices [0,6) and [6,12); N = 3 pieces of 2 rows each
  const auto maps = mb::data_parallel_maps(12, {2, false}, mb::array_split(6, 3));
  CHECK(expand(maps) == std::vector<std::vector<std::uint64_t>>{{0, 1, 6, 7}, {2, 3, 8, 9}, {4, 5, 10, 11}});
}

TEST_CASE("align mode matches the literal reorder for many sizes") {
  for (std::uint64_t d = 1; d <= 4; ++d)
    for (std::uint64_t r = 0; r <= 7; ++r)
      for (std::uint64_t n = 1; n <= 5; ++n) {
        const std::uint64_t length = d * r;
        const auto order = aligned_order(length, d);
        const auto pieces = mb::array_split(r, n);
        const auto got = expand(mb::data_parallel_maps(length, {d, true}, pieces));
        // expected: reorder, then the plain data-parallel cut of the reordered rows
        const auto plain = expand(mb::data_parallel_maps(length, {d, false}, pieces));
        REQUIRE(got.size() == plain.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
          std::vector<std::uint64_t> expect;
          for (auto row : plain[i]) expect.push_back(order[row]);
          CHECK(got[i] == expect);
        }
      }
}

TEST_CASE("every source row lands in exactly one microbatch") {
  for (bool align : {false, true}) {
    const auto rows = expand(mb::data_parallel_maps(30, {3, align}, mb::array_split(10, 4)));
    std::vector<int> seen(30, 0);
    for (const auto& mb_rows : rows)
      for (auto r : mb_rows) seen.at(r)++;
    for (auto s : seen) CHECK(s == 1);
  }
}

TEST_CASE("merge maps invert split maps from the microbatch lengths alone") {
  for (bool align : {false, true})
    for (std::uint64_t n = 1; n <= 6; ++n) {
      const DataParallel dp{3, align};
      const auto split = mb::data_parallel_maps(21, dp, mb::array_split(7, n));
      std::vector<std::uint64_t> lengths;
      for (const auto& m : split) lengths.push_back(mb::rows_in(m));
      CHECK(expand(mb::merge_maps(lengths, dp, mb::FileLayout::PerMicrobatch, "/x")) == expand(split));
    }
  CHECK(expand(mb::merge_maps({4, 3}, {1, false}, mb::FileLayout::PerMicrobatch, "/x")) ==
        std::vector<std::vector<std::uint64_t>>{{0, 1, 2, 3}, {4, 5, 6}});
  CHECK_THROWS_WITH_AS(mb::merge_maps({4, 3}, {2, false}, mb::FileLayout::PerMicrobatch, "/x"),
                       "/x: microbatch 1 has 3 rows, not a multiple of the data-parallel degree 2", mb::Error);
}

TEST_CASE("segments print as Python slices") {
  CHECK(Segment{3, 4, 2}.stop() == 10);  // rows 3,5,7,9
  CHECK(Segment{3, 0, 2}.stop() == 3);
  CHECK(mb::rows_in({{0, 2, 1}, {5, 3, 2}}) == 5);
}

TEST_CASE("per-rank files: file (s, i) is piece i of slice s, rank-major, and merge inverts it") {
  const auto maps = mb::per_rank_maps(12, {2, false}, mb::array_split(6, 3));
  CHECK(expand(maps) == std::vector<std::vector<std::uint64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}});
  for (bool align : {false, true})
    for (std::uint64_t n = 1; n <= 5; ++n) {
      const DataParallel dp{3, align};
      const auto split = mb::per_rank_maps(12, dp, mb::array_split(4, n));
      std::vector<std::uint64_t> lengths;
      for (const auto& m : split) lengths.push_back(mb::rows_in(m));
      CHECK(expand(mb::merge_maps(lengths, dp, mb::FileLayout::PerRank, "/x")) == expand(split));
    }
  CHECK_THROWS_WITH_AS(mb::merge_maps({2, 2, 1}, {2, false}, mb::FileLayout::PerRank, "/x"),
                       "/x: 3 per-rank files do not divide into 2 ranks", mb::Error);
  CHECK_THROWS_WITH_AS(mb::merge_maps({2, 2, 1, 2}, {2, false}, mb::FileLayout::PerRank, "/x"),
                       "/x: rank 1 holds 3 rows, rank 0 holds 4 (data-parallel slices must be equal)", mb::Error);
}
