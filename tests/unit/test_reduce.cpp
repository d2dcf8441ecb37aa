#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.hpp"
#include "core/reduce.hpp"

using mb::Accumulator;
using mb::NumKind;
using mb::Reducer;

namespace {
template <typename T>
std::vector<T> reduce(Reducer r, NumKind k, std::vector<std::vector<T>> inputs) {
  const std::size_t n = inputs.front().size();
  Accumulator acc(r, k, n);
  for (auto& in : inputs) acc.add(in.data());
  std::vector<T> out(n);
  acc.finish(out.data(), "/x");
  return out;
}
}  // namespace

TEST_CASE("integer sum, min, max are exact") {
  CHECK(reduce<std::int32_t>(Reducer::Sum, NumKind::I32, {{1, -2, 3}, {10, 20, -30}}) ==
        std::vector<std::int32_t>{11, 18, -27});
  CHECK(reduce<std::int32_t>(Reducer::Min, NumKind::I32, {{1, -2, 3}, {10, 20, -30}}) ==
        std::vector<std::int32_t>{1, -2, -30});
  CHECK(reduce<std::int32_t>(Reducer::Max, NumKind::I32, {{1, -2, 3}, {10, 20, -30}}) ==
        std::vector<std::int32_t>{10, 20, 3});
}

TEST_CASE("integer overflow is an error, not a wrap-around") {
  CHECK(reduce<std::uint8_t>(Reducer::Sum, NumKind::U8, {{200, 1}, {55, 2}}) == std::vector<std::uint8_t>{255, 3});
  try {
    reduce<std::uint8_t>(Reducer::Sum, NumKind::U8, {{1, 200}, {2, 56}});
    FAIL("expected overflow");
  } catch (const mb::Error& e) {
    CHECK(std::string(e.what()) == "/x: sum overflows uint8 at element 1 (exact value 256)");
  }
  // a mean of values whose sum overflows int64 is still exact
  const auto big = std::numeric_limits<std::int64_t>::max();
  CHECK(reduce<std::int64_t>(Reducer::Mean, NumKind::I64, {{big}, {big}}) == std::vector<std::int64_t>{big});
}

TEST_CASE("integer mean rounds to nearest, ties to even") {
  // means: 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, 0.25 -> 0, -0.75 -> -1
  CHECK(reduce<std::int16_t>(Reducer::Mean, NumKind::I16, {{1, 2, -1, 1, -3}, {2, 3, -2, 0, 0}}) ==
        std::vector<std::int16_t>{2, 2, -2, 0, -2});
  CHECK(reduce<std::int16_t>(Reducer::Mean, NumKind::I16, {{1, -3}, {0, 0}, {0, 0}, {0, 0}}) ==
        std::vector<std::int16_t>{0, -1});
}

TEST_CASE("float reducers: mean in double, NaN propagates through min and max") {
  const auto mean = reduce<float>(Reducer::Mean, NumKind::F32, {{1.0f, 2.0f}, {2.0f, 4.0f}});
  CHECK(mean == std::vector<float>{1.5f, 3.0f});
  const auto mn = reduce<float>(Reducer::Min, NumKind::F32, {{1.0f, NAN}, {0.5f, 4.0f}});
  CHECK(mn[0] == 0.5f);
  CHECK(std::isnan(mn[1]));
  CHECK(reduce<double>(Reducer::Sum, NumKind::F64, {{0.1}, {0.2}})[0] == 0.1 + 0.2);
}
