#include <doctest/doctest.h>

#include "core/clones.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;

namespace {

struct Planned {
  mb::NodeInfo tree;
  mb::Resolution resolution;
  mb::SplitPlan plan;
};

Planned planned(mb::NodeInfo tree, const std::string& spec, mb::SplitOptions options, mb::OffsetsValues values = {}) {
  Planned p{std::move(tree), {}, {}};
  p.resolution = mb::resolve(p.tree, mb::specs::parse_spec(spec, "s"), "s");
  p.plan = mb::plan_split(p.tree, p.resolution, options, values);
  return p;
}

mb::SplitOptions cut_into(std::uint64_t n) { return {n, std::nullopt, mb::OnShort::Downsize, {}}; }

// (model, copies) of every class.
std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>> classes_of(const mb::ClonePlan& c) {
  std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>> out;
  for (const auto& k : c.classes) out.emplace_back(k.model, k.copies);
  return out;
}

using Classes = std::vector<std::pair<std::uint64_t, std::vector<std::uint64_t>>>;

}  // namespace

TEST_CASE("clones: files whose cut datasets have the same shapes are copies of the first") {
  // 10 rows into 4: 3, 3, 2, 2 rows; the replicated /r and the rank-0 /s do not tell files apart.
  const auto p = planned(root({dataset("a", {10, 2}), dataset("b", {10}), dataset("r", {3, 7}), dataset("s", {})}),
                         R"({"r": "replicate", "*": null})", cut_into(4));
  const auto c = mb::plan_clones(p.tree, p.resolution, p.plan, {0, 4});
  CHECK(classes_of(c) == Classes{{0, {1}}, {2, {3}}});
  REQUIRE(c.patched.size() == 2);
  CHECK(c.patched[0].node->path == "/a");
  CHECK(mb::piece_shape(c.patched[0], p.plan, 2) == mb::Shape{2, 2});
  CHECK(mb::piece_shape(c.patched[1], p.plan, 0) == mb::Shape{3});
  // A shard's range: classes of its own files only.
  CHECK(classes_of(mb::plan_clones(p.tree, p.resolution, p.plan, {1, 3})) == Classes{{1, {}}, {2, {}}});
}

TEST_CASE("clones: a cut on another axis and a data-parallel layout") {
  const auto p = planned(root({dataset("a", {2, 8})}), R"({"a": 1})", cut_into(4));
  CHECK(classes_of(mb::plan_clones(p.tree, p.resolution, p.plan, {0, 4})) == Classes{{0, {1, 2, 3}}});
}

TEST_CASE("clones: nothing is copied when a file's data is not only rows of the input") {
  const auto t = root({dataset("tokens", {8}), dataset("cu", {5}), dataset("n", {})});
  const mb::OffsetsValues values{{"/cu", std::vector<std::int64_t>{0, 2, 4, 6, 8}}};
  // Offsets are rebased per file: equal shapes, different values.
  const auto offsets = planned(t, R"({"tokens": {"packed": "/cu"}, "cu": "offsets", "*": null})", cut_into(2), values);
  CHECK(classes_of(mb::plan_clones(offsets.tree, offsets.resolution, offsets.plan, {0, 2})) ==
        Classes{{0, {}}, {1, {}}});
}

TEST_CASE("outside: the bytes of a file around its datasets' data") {
  using S = mb::ByteSpan;
  CHECK(mb::outside({{10, 5}, {2, 3}, {20, 0}}, 30) == std::vector<S>{{0, 2}, {5, 5}, {15, 15}});
  CHECK(mb::outside({{0, 10}, {10, 20}}, 30) == std::vector<S>{});
  CHECK(mb::outside({}, 7) == std::vector<S>{{0, 7}});
  CHECK_FALSE(mb::outside({{0, 10}, {9, 2}}, 30));  // overlapping
  CHECK_FALSE(mb::outside({{25, 6}}, 30));           // past the end
  CHECK_FALSE(mb::outside({{31, 1}}, 30));
  CHECK_FALSE(mb::outside({{1, ~std::uint64_t{0}}}, 30));  // no wrap-around
}
