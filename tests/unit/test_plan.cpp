#include <doctest/doctest.h>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "helpers.hpp"
#include "specs/parse.hpp"

using namespace mb::test;
using mb::OnShort;
using mb::Range;

namespace {

mb::NodeInfo tree() { return root({dataset("a", {10, 2}), dataset("b", {3, 7}), dataset("s", {})}); }

mb::SplitPlan plan(const std::string& spec, mb::SplitOptions o) {
  const auto t = tree();
  return mb::plan_split(t, mb::resolve(t, mb::specs::parse_spec(spec, "s"), "s"), o);
}

mb::SplitOptions chunks(std::uint64_t n, OnShort s = OnShort::Error) { return {n, std::nullopt, s}; }

std::string error_of(const std::string& spec, mb::SplitOptions o) {
  try {
    plan(spec, o);
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("each dataset is cut by its own length") {
  const auto p = plan("null", chunks(3));
  CHECK(p.count == 3);
  CHECK(p.pieces.at("/a") == std::vector<Range>{{0, 4}, {4, 7}, {7, 10}});
  CHECK(p.pieces.at("/b") == std::vector<Range>{{0, 1}, {1, 2}, {2, 3}});
  CHECK(p.pieces.count("/s") == 0);
}

TEST_CASE("on-short policies") {
  CHECK(error_of("null", chunks(4)).find("/b has 3 rows") != std::string::npos);
  const auto down = plan("null", chunks(4, OnShort::Downsize));
  CHECK(down.count == 3);
  REQUIRE(down.warnings.size() == 1);
  CHECK(down.warnings[0].find("downsizing from 4 to 3") != std::string::npos);
  const auto empty = plan("null", chunks(4, OnShort::Empty));
  CHECK(empty.count == 4);
  CHECK(empty.pieces.at("/b") == std::vector<Range>{{0, 1}, {1, 2}, {2, 3}, {3, 3}});
}

TEST_CASE("micro-batch size needs equal split lengths") {
  CHECK(error_of("null", {std::nullopt, 4, OnShort::Error}).find("same length") != std::string::npos);
  const auto p = plan(R"({"a": 0, "b": "replicate", "s": "replicate"})", {std::nullopt, 3, OnShort::Error});
  CHECK(p.count == 4);
  CHECK(p.pieces.at("/a") == std::vector<Range>{{0, 3}, {3, 6}, {6, 9}, {9, 10}});
  CHECK(error_of(R"({"*": "replicate"})", {std::nullopt, 3, OnShort::Error}).find("splits none") !=
        std::string::npos);
}

TEST_CASE("reducers are refused on split, absurd counts are usage errors") {
  CHECK(error_of(R"({"*": null, "s": {"reduce": "sum"}})", chunks(2)) ==
        "spec gives a reducer for /s: a reducer only applies to merge");
  try {
    plan("null", chunks(1'000'000'000'000));
    FAIL("expected an error");
  } catch (const mb::Error& e) {
    CHECK(e.exit_code() == 2);
  }
  CHECK_THROWS_AS(plan("null", chunks(0)), mb::Error);
}

TEST_CASE("concat offsets") {
  CHECK(mb::concat_offsets({4, 3, 0, 3}) == std::vector<std::uint64_t>{0, 4, 7, 7});
}
