#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/partition.hpp"

using mb::Range;

TEST_CASE("array_split matches numpy.array_split sizes") {
  // numpy.array_split(range(10), 3) -> sizes 4, 3, 3
  CHECK(mb::array_split(10, 3) == std::vector<Range>{{0, 4}, {4, 7}, {7, 10}});
  CHECK(mb::array_split(9, 3) == std::vector<Range>{{0, 3}, {3, 6}, {6, 9}});
  // shorter than the piece count: leading pieces get one row, the rest none
  CHECK(mb::array_split(2, 4) == std::vector<Range>{{0, 1}, {1, 2}, {2, 2}, {2, 2}});
  CHECK(mb::array_split(0, 2) == std::vector<Range>{{0, 0}, {0, 0}});
  CHECK_THROWS_AS(mb::array_split(5, 0), mb::Error);
}

TEST_CASE("array_split pieces are contiguous and cover the axis for many sizes") {
  for (std::uint64_t len = 0; len < 40; ++len)
    for (std::uint64_t n = 1; n < 12; ++n) {
      auto pieces = mb::array_split(len, n);
      REQUIRE(pieces.size() == n);
      std::uint64_t at = 0;
      for (std::uint64_t i = 0; i < n; ++i) {
        CHECK(pieces[i].begin == at);
        const std::uint64_t expect = len / n + (i < len % n ? 1 : 0);
        CHECK(pieces[i].size() == expect);
        at = pieces[i].end;
      }
      CHECK(at == len);
    }
}

TEST_CASE("split_by_size follows torch.split") {
  CHECK(mb::split_by_size(10, 4) == std::vector<Range>{{0, 4}, {4, 8}, {8, 10}});
  CHECK(mb::split_by_size(8, 4) == std::vector<Range>{{0, 4}, {4, 8}});
  CHECK(mb::split_by_size(3, 5) == std::vector<Range>{{0, 3}});
  CHECK(mb::split_by_size(0, 5).empty());
  // at + size would wrap past 2^64 for the second piece.
  const std::uint64_t half = UINT64_MAX / 2 + 1;
  CHECK(mb::split_by_size(UINT64_MAX, half) == std::vector<Range>{{0, half}, {half, UINT64_MAX}});
  CHECK(mb::split_by_size(UINT64_MAX, UINT64_MAX) == std::vector<Range>{{0, UINT64_MAX}});
  CHECK_THROWS_AS(mb::split_by_size(5, 0), mb::Error);
}

namespace {
// Runs for_each_block and checks that the blocks tile the box exactly once,
// in row-major order, each within the budget.
std::size_t tile(const std::vector<std::uint64_t>& count, std::uint64_t budget) {
  std::uint64_t total = 1;
  for (auto c : count) total *= c;
  std::vector<int> seen(total, 0);
  std::uint64_t last_flat = 0;
  std::size_t blocks = 0;
  mb::for_each_block(count, budget, [&](const auto& start, const auto& block) {
    ++blocks;
    std::uint64_t n = 1;
    for (auto b : block) n *= b;
    CHECK(n >= 1);
    CHECK((n <= budget || n == 1 || budget == 0));
    // visit every element of the block
    std::vector<std::uint64_t> idx(count.size(), 0);
    for (std::uint64_t e = 0; e < n; ++e) {
      std::uint64_t rem = e, flat = 0;
      for (std::size_t d = count.size(); d-- > 0;) {
        idx[d] = start[d] + rem % block[d];
        rem /= block[d];
      }
      for (std::size_t d = 0; d < count.size(); ++d) flat = flat * count[d] + idx[d];
      if (e == 0) {
        CHECK((blocks == 1 || flat > last_flat));
        last_flat = flat;
      }
      seen.at(flat)++;
    }
  });
  for (auto s : seen) CHECK(s == 1);
  return blocks;
}
}  // namespace

TEST_CASE("for_each_block tiles a box exactly once within the budget") {
  CHECK(tile({10}, 4) == 3);
  CHECK(tile({10}, 100) == 1);
  CHECK(tile({4, 5}, 10) == 2);   // two rows of 5 per block
  CHECK(tile({4, 5}, 3) == 8);    // a row does not fit: runs of 3 and 2 within each row
  CHECK(tile({3, 4, 5}, 20) == 3);
  CHECK(tile({3, 4, 5}, 7) == 12);
  CHECK(tile({2, 3, 4}, 1) == 24);
  std::size_t calls = 0;
  mb::for_each_block({}, 10, [&](const auto&, const auto&) { ++calls; });
  CHECK(calls == 1);
  mb::for_each_block({3, 0, 2}, 10, [&](const auto&, const auto&) { ++calls; });
  CHECK(calls == 1);
}
