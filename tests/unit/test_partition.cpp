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
  CHECK_THROWS_AS(mb::split_by_size(5, 0), mb::Error);
}
