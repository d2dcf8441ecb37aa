#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/merge_plan.hpp"
#include "core/plan.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;
using mb::FileLayout;
using mb::RowMap;
using mb::Segment;

TEST_CASE("the merge plan puts every input's rows where the split took them from") {
  for (std::uint64_t degree : {1, 2, 3})
    for (bool align : {false, true})
      for (FileLayout layout : {FileLayout::PerMicrobatch, FileLayout::PerRank})
        for (std::uint64_t rows_per_shard : {0, 1, 7, 12})
          for (std::uint64_t n = 1; n <= 5; ++n) {
            if (degree == 1 && (align || layout == FileLayout::PerRank)) continue;
            const auto t = root({dataset("x", {degree * rows_per_shard, 3}), dataset("s", {})});
            const auto res = mb::resolve(t, mb::specs::parse_spec("null", "s"), "s");
            mb::SplitOptions o{n, std::nullopt, mb::OnShort::Empty, {degree, align}, layout};
            const mb::SplitPlan split = mb::plan_split(t, res, o);
            const auto& pieces = split.pieces.at("/x");
            const mb::MergePlan merge = mb::plan_merge(t, res, {{"/x", lengths_of(pieces)}}, {degree, align}, layout);
            CAPTURE(degree);
            CAPTURE(align);
            CAPTURE(rows_per_shard);
            CAPTURE(n);
            REQUIRE(merge.leaf("/x") != nullptr);
            CHECK(merge.leaf("/x")->maps == pieces);
            CHECK(merge.leaf("/x")->dims == mb::Shape{degree * rows_per_shard, 3});
            CHECK(merge.leaf("/s") == nullptr);  // replicated: nothing to place
          }
}

TEST_CASE("offsets: every input after the first adds its rows after the leading 0") {
  const auto t = root({dataset("o", {4})});
  const auto res = mb::resolve(t, mb::specs::parse_spec(R"({"o": "offsets"})", "s"), "s");
  const mb::MergePlan plan = mb::plan_merge(t, res, {{"/o", {4, 3, 1, 2}}}, {}, FileLayout::PerMicrobatch);
  const mb::MergedLeaf& leaf = *plan.leaf("/o");
  CHECK(leaf.dims == mb::Shape{4 + 2 + 0 + 1});
  CHECK(leaf.maps == std::vector<RowMap>{{Segment{0, 4, 1}}, {Segment{4, 2, 1}}, {Segment{6, 0, 1}}, {Segment{6, 1, 1}}});
  CHECK_THROWS_AS(mb::plan_merge(t, res, {{"/o", {4, 0}}}, {}, FileLayout::PerMicrobatch), mb::Error);
}

TEST_CASE("lengths that no split gives are refused, naming the dataset") {
  const auto t = root({dataset("x", {4})});
  const auto res = mb::resolve(t, mb::specs::parse_spec("null", "s"), "s");
  // Degree 2: a microbatch of 3 rows cannot hold equal pieces of both shards.
  CHECK_THROWS_WITH_AS(mb::plan_merge(t, res, {{"/x", {2, 3}}}, {2, false}, FileLayout::PerMicrobatch),
                       doctest::Contains("/x"), mb::Error);
  // Per-rank files: rank 0 holds 3 rows, rank 1 holds 1.
  CHECK_THROWS_WITH_AS(mb::plan_merge(t, res, {{"/x", {1, 2, 1, 0}}}, {2, false}, FileLayout::PerRank),
                       doctest::Contains("/x"), mb::Error);
}
