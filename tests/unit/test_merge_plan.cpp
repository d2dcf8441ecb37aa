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
  // Input 2 holds only the leading 0: no rows of its own, so no segment (a RowMap holds none of count 0).
  CHECK(leaf.maps == std::vector<RowMap>{{Segment{0, 4, 1}}, {Segment{4, 2, 1}}, {}, {Segment{6, 1, 1}}});
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

namespace {

bool has_empty_segment(const mb::MergePlan& plan) {
  for (const auto& [path, leaf] : plan.leaves)
    for (const auto* maps : {&leaf.maps, &leaf.placed, &leaf.positions})
      for (const RowMap& map : *maps)
        for (const Segment& seg : map)
          if (seg.count == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("--cp-pad: a microbatch without sequences fills no rows of any dataset") {
  // cu = [0, 5] split -n 2 --cp-degree 2 --cp-pad --on-short empty: the document, padded to 8, gives CP rank 0
  // its tokens 0-1 (and two pads), CP rank 1 its tokens 2-4 (and one pad); microbatch 1 is empty. Files in
  // placement order: (CP 0, mb 0), (CP 0, mb 1), (CP 1, mb 0), (CP 1, mb 1).
  const auto t = root({dataset("cu", {2}), dataset("cu_padded", {2}), dataset("ids", {4}), dataset("seq", {1})});
  const auto spec = mb::specs::parse_spec(
      R"({"cu": "offsets", "ids": {"packed": "/cu"}, "seq": {"per_sequence": "/cu"}})", "s");
  const auto res = mb::resolve_twins(t, spec, "s", {.padded = true});
  mb::PackedInputs in;
  in.degree = 2;
  in.pad = true;
  in.offsets["/cu"] = {{0, 2}, {0}, {0, 3}, {0}};
  in.padded["/cu"] = {{0, 4}, {0}, {0, 4}, {0}};
  const mb::InputLengths lengths{{"/cu", {2, 1, 2, 1}}, {"/ids", {4, 0, 4, 0}}, {"/seq", {1, 0, 1, 0}}};
  const mb::MergePlan plan = mb::plan_merge(t, res, lengths, {}, FileLayout::PerMicrobatch, in);
  CHECK_FALSE(has_empty_segment(plan));
  const mb::MergedLeaf& cu = *plan.leaf("/cu");
  CHECK(cu.values == mb::Offsets{0, 5});
  CHECK(cu.maps == std::vector<RowMap>{{Segment{0, 2, 1}}, {}, {Segment{0, 2, 1}}, {}});
  const mb::MergedLeaf& ids = *plan.leaf("/ids");
  CHECK(ids.dims == mb::Shape{5});
  CHECK(ids.maps == std::vector<RowMap>{{Segment{0, 2, 1}}, {}, {Segment{2, 3, 1}}, {}});
  CHECK(ids.placed == std::vector<RowMap>{{Segment{0, 2, 1}}, {}, {Segment{0, 3, 1}}, {}});
  CHECK(plan.leaf("/seq")->maps == std::vector<RowMap>{{Segment{0, 1, 1}}, {}, {Segment{0, 1, 1}}, {}});
}
