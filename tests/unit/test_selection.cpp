#include <doctest/doctest.h>

#include <map>

#include "core/error.hpp"
#include "core/layout.hpp"
#include "core/partition.hpp"
#include "core/selection.hpp"

using mb::DataParallel;
using mb::FileLayout;
using mb::RowMap;
using mb::Selection;
using mb::Shape;

namespace {

// Every element a selection names, as a flat index of `dims`.
std::vector<std::uint64_t> elements(const Selection& s, const Shape& dims) {
  std::vector<std::uint64_t> out;
  mb::for_each_block(s.count, 1, [&](const Shape& at, const Shape&) {
    Shape index(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) index[d] = s.start[d] + at[d] * (s.stride.empty() ? 1 : s.stride[d]);
    out.push_back(mb::flat_index(dims, index));
  });
  return out;
}

}  // namespace

TEST_CASE("selection: all, rows, part and the flat index") {
  const Selection all = Selection::all({3, 4});
  CHECK(all.elements() == 12);
  CHECK(all.unit_stride());
  const Selection rows = Selection::rows({10, 4}, 0, {1, 3, 2});  // rows 1, 3, 5
  CHECK(rows.count == Shape{3, 4});
  CHECK_FALSE(rows.unit_stride());
  CHECK(elements(rows, {10, 4}) == std::vector<std::uint64_t>{4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23});
  // A part steps through the strided rows, not the dataset's rows.
  const Selection part = rows.part({1, 2}, {2, 2});
  CHECK(part.start == Shape{3, 2});
  CHECK(elements(part, {10, 4}) == std::vector<std::uint64_t>{14, 15, 22, 23});
  CHECK(mb::flat_index({2, 3, 4}, {1, 2, 3}) == 23);
  CHECK(Selection::all({}).elements() == 1);  // a scalar holds one element
}

TEST_CASE("selection: the row-map walk puts every row of the batch in one piece, in map order") {
  // Rows of a (L, 3) batch, data-parallel maps with and without align, every
  // file layout: each batch element lands exactly once, each piece is filled
  // in order, and batch and piece selections agree in size.
  for (std::uint64_t degree : {1u, 2u, 3u})
    for (bool align : {false, true})
      for (auto layout : {FileLayout::PerMicrobatch, FileLayout::PerRank}) {
        const std::uint64_t length = 12 * degree;
        const DataParallel dp{degree, align};
        const auto pieces = mb::array_split(length / degree, 5);
        const auto maps = layout == FileLayout::PerRank ? mb::per_rank_maps(length, dp, pieces)
                                                        : mb::data_parallel_maps(length, dp, pieces);
        const Shape batch{length, 3};
        std::map<std::uint64_t, int> seen;
        for (const RowMap& map : maps) {
          const Shape piece{mb::rows_in(map), 3};
          std::vector<std::uint64_t> filled;
          for (const auto& place : mb::place_segments(map, 0, batch, piece)) {
            CHECK(place.batch.count == place.piece.count);
            for (auto e : elements(place.batch, batch)) ++seen[e];
            for (auto e : elements(place.piece, piece)) filled.push_back(e);
          }
          std::vector<std::uint64_t> in_order(mb::element_count(piece));
          for (std::uint64_t k = 0; k < in_order.size(); ++k) in_order[k] = k;
          CHECK(filled == in_order);
        }
        CHECK(seen.size() == length * 3);
        for (const auto& [element, times] : seen) CHECK(times == 1);
      }
}

TEST_CASE("selection: segments along a later axis keep the other axes whole") {
  const RowMap map{{2, 3, 1}, {10, 2, 1}};
  const auto places = mb::place_segments(map, 1, {4, 20}, {4, 5});
  REQUIRE(places.size() == 2);
  CHECK(places[0].batch.start == Shape{0, 2});
  CHECK(places[0].batch.count == Shape{4, 3});
  CHECK(places[0].piece.start == Shape{0, 0});
  CHECK(places[1].batch.start == Shape{0, 10});
  CHECK(places[1].piece.start == Shape{0, 3});
  CHECK(places[1].piece.count == Shape{4, 2});
}

TEST_CASE("copy_selected: takes the elements a selection names, in order, as bytes") {
  // 4 x 6 tensor of 2-byte elements numbered 0..23.
  const mb::Shape from_dims{4, 6};
  std::vector<std::uint16_t> from(24);
  for (std::uint16_t k = 0; k < 24; ++k) from[k] = k;
  const auto* src = reinterpret_cast<const unsigned char*>(from.data());
  SUBCASE("rows 1..2 into a 2 x 6 piece") {
    const mb::Shape to_dims{2, 6};
    std::vector<std::uint16_t> to(12, 99);
    mb::copy_selected({src, from_dims}, mb::Selection::rows(from_dims, 0, {1, 2, 1}),
                      {reinterpret_cast<unsigned char*>(to.data()), to_dims}, mb::Selection::all(to_dims), 2);
    CHECK(to == std::vector<std::uint16_t>{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  }
  SUBCASE("every other column from 1, into columns 1..3 of a 4 x 4 piece") {
    const mb::Shape to_dims{4, 4};
    std::vector<std::uint16_t> to(16, 99);
    mb::copy_selected({src, from_dims}, mb::Selection::rows(from_dims, 1, {1, 3, 2}),
                      {reinterpret_cast<unsigned char*>(to.data()), to_dims},
                      mb::Selection::rows(to_dims, 1, {1, 3, 1}), 2);
    CHECK(to == std::vector<std::uint16_t>{99, 1, 3, 5, 99, 7, 9, 11, 99, 13, 15, 17, 99, 19, 21, 23});
  }
  SUBCASE("selections of different shapes or outside the tensor are refused") {
    std::vector<std::uint16_t> to(24);
    const mb::Tensor dst{reinterpret_cast<unsigned char*>(to.data()), from_dims};
    CHECK_THROWS_AS(mb::copy_selected({src, from_dims}, mb::Selection::rows(from_dims, 0, {0, 2, 1}), dst,
                                      mb::Selection::rows(from_dims, 0, {0, 3, 1}), 2),
                    mb::Error);
    CHECK_THROWS_AS(mb::copy_selected({src, from_dims}, mb::Selection::rows(from_dims, 0, {3, 2, 1}), dst,
                                      mb::Selection::rows(from_dims, 0, {0, 2, 1}), 2),
                    mb::Error);
  }
}

TEST_CASE("moves_as_stored: only rows that start on chunk boundaries on both sides and span whole chunks") {
  using mb::moves_as_stored;
  using mb::Segment;
  // 100 rows in chunks of 10: pieces of 30, 30, 40 at chunk boundaries.
  const std::vector<RowMap> aligned{{Segment{0, 30, 1}}, {Segment{30, 30, 1}}, {Segment{60, 40, 1}}};
  CHECK(moves_as_stored(aligned, 10, 100));
  // A short last chunk is an edge chunk on both sides: 95 rows.
  CHECK(moves_as_stored({{Segment{0, 30, 1}}, {Segment{30, 30, 1}}, {Segment{60, 35, 1}}}, 10, 95));
  // Pieces of 25 rows: the second starts inside a chunk of the output.
  CHECK_FALSE(moves_as_stored({{Segment{0, 25, 1}}, {Segment{25, 25, 1}}}, 10, 50));
  // A short piece that does not end the batch.
  CHECK_FALSE(moves_as_stored({{Segment{0, 15, 1}}, {Segment{20, 30, 1}}}, 10, 50));
  // Two segments in one piece: the second starts at piece row 10, batch row 40, both boundaries.
  CHECK(moves_as_stored({{Segment{0, 10, 1}, Segment{40, 10, 1}}, {Segment{10, 30, 1}}}, 10, 50));
  // Strided rows (data-parallel interleaving) never move as chunks.
  CHECK_FALSE(moves_as_stored({{Segment{0, 10, 2}}, {Segment{1, 10, 2}}}, 10, 20));
  CHECK_FALSE(moves_as_stored(aligned, 0, 100));
}
