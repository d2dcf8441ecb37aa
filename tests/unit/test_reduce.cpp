#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/error.hpp"
#include "core/reduce.hpp"

using mb::Accumulator;
using mb::FloatFormat;
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

// Floats of `format`, given and returned as bit patterns (T: uint16/32/64).
template <typename T>
std::vector<T> reduce_bits(Reducer r, const FloatFormat& format, std::vector<std::vector<T>> inputs) {
  const std::size_t n = inputs.front().size();
  Accumulator acc(r, format, n);
  REQUIRE(acc.element_size() == sizeof(T));
  for (auto& in : inputs) acc.add(in.data());
  std::vector<T> out(n);
  acc.finish(out.data(), "/x");
  return out;
}

template <typename F>
std::vector<F> reduce_floats(Reducer r, std::vector<std::vector<F>> inputs) {
  const FloatFormat format = sizeof(F) == 4 ? FloatFormat::binary32() : FloatFormat::binary64();
  const std::size_t n = inputs.front().size();
  Accumulator acc(r, format, n);
  for (auto& in : inputs) acc.add(in.data());
  std::vector<F> out(n);
  acc.finish(out.data(), "/x");
  return out;
}

// float16 bit patterns (numpy: np.float16(x).view(np.uint16)).
constexpr std::uint16_t kOne = 0x3c00, kMinusOne = 0xbc00, kHalf = 0x3800, kTwo = 0x4000, kThree = 0x4200;
constexpr std::uint16_t k3Tiny = 0x0003;                       // 3 * 2^-24, a subnormal
constexpr std::uint16_t k2m13 = 0x0800, kMinus2m13 = 0x8800;  // +-2^-13
constexpr std::uint16_t k2m11 = 0x1000;                        // 2^-11: half an ulp of 1.0
constexpr std::uint16_t kOnePlusUlp = 0x3c01;                  // 1 + 2^-10
constexpr std::uint16_t k60000 = 0x7b53, kMax = 0x7bff;        // 60000, 65504
constexpr std::uint16_t kTwoThirdsMax = 0x7955;                // 65504 * 2 / 3 = 43669.33 -> 43680
std::uint32_t bits32(float x) { return std::bit_cast<std::uint32_t>(x); }
float f32(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint64_t bits64(double x) { return std::bit_cast<std::uint64_t>(x); }
double f64(std::uint64_t b) { return std::bit_cast<double>(b); }
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
  const auto mean = reduce_floats<float>(Reducer::Mean, {{1.0f, 2.0f}, {2.0f, 4.0f}});
  CHECK(mean == std::vector<float>{1.5f, 3.0f});
  const auto mn = reduce_floats<float>(Reducer::Min, {{1.0f, NAN}, {0.5f, 4.0f}});
  CHECK(mn[0] == 0.5f);
  CHECK(std::isnan(mn[1]));
  CHECK(reduce_floats<double>(Reducer::Sum, {{0.1}, {0.2}})[0] == 0.1 + 0.2);
}

TEST_CASE("float16 sums are accumulated in double and rounded once, to nearest even") {
  const FloatFormat half = FloatFormat::binary16();
  // The example: HDF5 1.10.8's conversion gave [1, 1.8e-7, 0.5, 0.5, -0.5].
  const std::vector<std::uint16_t> a{kOne, k3Tiny, kOne, kHalf, kMinusOne};
  const std::vector<std::uint16_t> b{kMinus2m13, 0, kMinus2m13, 0,
                                     k2m13};
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, half, {a, b}) ==
        std::vector<std::uint16_t>{kOne, k3Tiny, kOne, kHalf, kMinusOne});
  // 1 + 2^-11 is a tie: to even, 1.0 (not 1.0009765625)
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, half, {{kOne}, {k2m11}}) ==
        std::vector<std::uint16_t>{kOne});
  // three inputs, rounded once: 1 + 2^-11 + 2^-11 = 1 + 2^-10 exactly (float16 at each step would give 1.0)
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, half,
                                   {{kOne}, {k2m11}, {k2m11}}) ==
        std::vector<std::uint16_t>{kOnePlusUlp});
  // overflow to inf, signed zero of -0 + -0
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, half, {{k60000, 0x8000}, {k60000, 0x8000}}) ==
        std::vector<std::uint16_t>{0x7c00, 0x8000});
  // mean: the double sum divided, then rounded once; 65504 + 65504 does not overflow on the way
  CHECK(reduce_bits<std::uint16_t>(Reducer::Mean, half, {{kOne, kMax}, {kOne, kMax}, {kOne, 0}}) ==
        std::vector<std::uint16_t>{kOne, kTwoThirdsMax});
}

TEST_CASE("float sums propagate NaN as numpy's float64 add: the first NaN, quieted") {
  const FloatFormat half = FloatFormat::binary16();
  // first-met NaN wins; a signalling float16 NaN (0x7c01) comes out quieted
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, half, {{0x7c01, kOne, 0xfe05}, {0xfe05, 0x7d00, 0x7c01}}) ==
        std::vector<std::uint16_t>{0x7e01, 0x7f00, 0xfe05});
  // inf - inf: the CPU's default NaN (negative, quiet)
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, half, {{0x7c00}, {0xfc00}}) == std::vector<std::uint16_t>{0xfe00});
  const auto s = reduce_floats<double>(Reducer::Sum, {{f64(0x7ff0000000000001)}, {f64(0xfff8000000000002)}});
  CHECK(bits64(s[0]) == 0x7ff8000000000001);
}

TEST_CASE("float min/max fold numpy.minimum/maximum: first NaN kept bit for bit, signed-zero ties as numpy") {
  const FloatFormat half = FloatFormat::binary16();
  // float16 (numpy's half loops): a tie keeps the value met first
  CHECK(reduce_bits<std::uint16_t>(Reducer::Min, half, {{0x8000, 0x0000}, {0x0000, 0x8000}}) ==
        std::vector<std::uint16_t>{0x8000, 0x0000});
  CHECK(reduce_bits<std::uint16_t>(Reducer::Max, half, {{0x8000, 0x0000}, {0x0000, 0x8000}}) ==
        std::vector<std::uint16_t>{0x8000, 0x0000});
  // NaN: the first one met, payload, sign and signalling bit untouched
  CHECK(reduce_bits<std::uint16_t>(Reducer::Min, half, {{0x7c01, kOne, kOne}, {0xfe05, 0xfe05, kMinusOne}, {0, 0x7c01, 0x7d00}}) ==
        std::vector<std::uint16_t>{0x7c01, 0xfe05, 0x7d00});
  CHECK(reduce_bits<std::uint16_t>(Reducer::Max, half, {{kTwo, kOne}, {kThree, kMinusOne}, {kOne, kHalf}}) ==
        std::vector<std::uint16_t>{kThree, kOne});
  // float32 / float64 (numpy's float loops): a tie takes the value met last
  const std::vector<std::uint32_t> zeros32 = {bits32(-0.0f), bits32(0.0f)};
  const std::vector<std::uint32_t> swapped32 = {bits32(0.0f), bits32(-0.0f)};
  CHECK(reduce_bits<std::uint32_t>(Reducer::Min, FloatFormat::binary32(), {zeros32, swapped32}) == swapped32);
  CHECK(reduce_bits<std::uint32_t>(Reducer::Max, FloatFormat::binary32(), {zeros32, swapped32}) == swapped32);
  CHECK(reduce_bits<std::uint64_t>(Reducer::Min, FloatFormat::binary64(),
                                   {{bits64(-0.0), bits64(0.0)}, {bits64(0.0), bits64(-0.0)}}) ==
        std::vector<std::uint64_t>{bits64(0.0), bits64(-0.0)});
  // a signalling float32 NaN is kept as it is (no widening to double on the way)
  CHECK(reduce_bits<std::uint32_t>(Reducer::Max, FloatFormat::binary32(),
                                   {{bits32(1.0f), 0xff800005}, {0x7f800001, 0x7fc00000}}) ==
        std::vector<std::uint32_t>{0x7f800001, 0xff800005});
  CHECK(std::isnan(f32(0x7f800001)));
}

TEST_CASE("big-endian floats are read and written in their own byte order") {
  FloatFormat be = FloatFormat::binary16();
  be.big_endian = true;
  const auto swap = [](std::uint16_t v) { return static_cast<std::uint16_t>((v >> 8) | (v << 8)); };
  CHECK(reduce_bits<std::uint16_t>(Reducer::Sum, be, {{swap(kOne)}, {swap(k2m11)}}) ==
        std::vector<std::uint16_t>{swap(kOne)});
  FloatFormat be32 = FloatFormat::binary32();
  be32.big_endian = true;
  const auto swap32 = [](std::uint32_t v) { return __builtin_bswap32(v); };
  CHECK(reduce_bits<std::uint32_t>(Reducer::Sum, be32, {{swap32(bits32(1.5f))}, {swap32(bits32(2.25f))}}) ==
        std::vector<std::uint32_t>{swap32(bits32(3.75f))});
}

TEST_CASE("a float accumulator needs a format double holds") {
  CHECK_THROWS_AS(Accumulator(Reducer::Sum, NumKind::Float, 1), mb::Error);
  FloatFormat wide = FloatFormat::binary64();
  wide.mant_bits = 53;
  CHECK_THROWS_AS(Accumulator(Reducer::Sum, wide, 1), mb::Error);
}

// -- weighted means -----------------------------------------------------------------------------------------------

namespace {
using mb::Weight;

// Folds each input with its weight into a weighted-mean accumulator.
template <typename T>
std::vector<T> fold_weighted(Accumulator acc, const std::vector<std::vector<T>>& inputs,
                             const std::vector<Weight>& weights) {
  for (std::size_t i = 0; i < inputs.size(); ++i) acc.add(inputs[i].data(), weights[i]);
  std::vector<T> out(inputs.front().size());
  acc.finish(out.data(), "/x");
  return out;
}

template <typename T>
std::vector<T> weighted(NumKind k, std::vector<std::vector<T>> inputs, std::vector<Weight> weights) {
  return fold_weighted(Accumulator(Reducer::Mean, k, inputs.front().size(), true), inputs, weights);
}

template <typename T>
std::vector<T> weighted_bits(const FloatFormat& format, std::vector<std::vector<T>> inputs,
                             std::vector<Weight> weights) {
  return fold_weighted(Accumulator(Reducer::Mean, format, inputs.front().size(), true), inputs, weights);
}

Weight iw(std::int64_t w) { return Weight::of_integer(w); }
Weight fw(double w) { return Weight::of_float(w); }

std::string finish_error(Accumulator& acc, std::size_t n, std::size_t size) {
  std::vector<unsigned char> out(n * size);
  try {
    acc.finish(out.data(), "/x");
  } catch (const mb::Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("weighted mean of integers with integer weights is exact, rounded to nearest, ties to even") {
  // (1*1 + 4*3) / 4 = 3.25 -> 3; (10 + 60) / 4 = 17.5 -> 18; (-3 + 0) / 4 = -0.75 -> -1; (2 + 9) / 4 = 2.75 -> 3
  CHECK(weighted<std::int32_t>(NumKind::I32, {{1, 10, -3, 2}, {4, 20, 0, 3}}, {iw(1), iw(3)}) ==
        std::vector<std::int32_t>{3, 18, -1, 3});
  // ties: 1.5 -> 2, 2.5 -> 2, -1.5 -> -2, -2.5 -> -2
  CHECK(weighted<std::int16_t>(NumKind::I16, {{1, 2, -1, -2}, {2, 3, -2, -3}}, {iw(5), iw(5)}) ==
        std::vector<std::int16_t>{2, 2, -2, -2});
  // a weight of 0 leaves its input out
  CHECK(weighted<std::uint8_t>(NumKind::U8, {{7, 255}, {200, 0}}, {iw(2), iw(0)}) ==
        std::vector<std::uint8_t>{7, 255});
  // exact where double is not: int64 max, and 2^62 + 1 with weights 2^40 and 3
  const auto big = std::numeric_limits<std::int64_t>::max();
  const std::int64_t odd = (std::int64_t{1} << 62) + 1;
  CHECK(weighted<std::int64_t>(NumKind::I64, {{big, odd}, {big, odd}}, {iw(std::int64_t{1} << 40), iw(3)}) ==
        std::vector<std::int64_t>{big, odd});
  const auto umax = std::numeric_limits<std::uint64_t>::max();
  CHECK(weighted<std::uint64_t>(NumKind::U64, {{umax}, {umax - 2}}, {iw(1), iw(1)}) ==
        std::vector<std::uint64_t>{umax - 1});
}

TEST_CASE("weighted integer sums past 128 bits are an error naming the element") {
  const auto umax = std::numeric_limits<std::uint64_t>::max();
  Accumulator acc(Reducer::Mean, NumKind::U64, 2, true);
  const std::vector<std::uint64_t> a{1, umax};
  acc.add(a.data(), Weight::of_integer(umax));
  acc.add(a.data(), Weight::of_integer(umax));
  CHECK(finish_error(acc, 2, 8) == "/x: weighted mean: weight * value summed over the inputs exceeds 128 bits at "
                                   "element 1");
}

TEST_CASE("weighted mean of integers with float weights: float64, rounded to nearest even, inside the dtype") {
  // (10 + 20) / 2 = 15; 1.5 -> 2; 2.5 -> 2; (4 + 8) / 2 = 6; then (0.25 * 4 + 0.75 * 8) / 1 = 7
  CHECK(weighted<std::int16_t>(NumKind::I16, {{10, 1, 2, 4}, {20, 2, 3, 8}}, {fw(0.5), fw(0.5)}) ==
        std::vector<std::int16_t>{15, 2, 2, 6});
  CHECK(weighted<std::int16_t>(NumKind::I16, {{4}, {8}}, {fw(0.25), fw(0.75)}) == std::vector<std::int16_t>{7});
  // int64 max is 2^63 in double: held at the dtype's largest value, not wrapped
  const auto big = std::numeric_limits<std::int64_t>::max();
  const auto small = std::numeric_limits<std::int64_t>::min();
  CHECK(weighted<std::int64_t>(NumKind::I64, {{big, small}, {big, small}}, {fw(1.5), fw(0.5)}) ==
        std::vector<std::int64_t>{big, small});
}

TEST_CASE("weighted mean of floats: w * x summed in double, divided by the total, rounded once") {
  CHECK(weighted_bits<std::uint64_t>(FloatFormat::binary64(), {{bits64(1.0), bits64(2.0)}, {bits64(3.0), bits64(5.0)}},
                                     {fw(0.25), fw(0.75)}) == std::vector<std::uint64_t>{bits64(2.5), bits64(4.25)});
  // float16: (1 + (1 + 2^-10)) / 2 is a tie -> 1.0 (even); (1 + 3 (1 + 2^-10)) / 4 -> 1 + 2^-10
  CHECK(weighted_bits<std::uint16_t>(FloatFormat::binary16(), {{kOne, kOne}, {kOnePlusUlp, kOnePlusUlp}},
                                     {iw(1), iw(1)}) == std::vector<std::uint16_t>{kOne, kOne});
  CHECK(weighted_bits<std::uint16_t>(FloatFormat::binary16(), {{kOne}, {kOnePlusUlp}}, {iw(1), iw(3)}) ==
        std::vector<std::uint16_t>{kOnePlusUlp});
  // float32: 0.1f * 3 + 0.2f * 7 over 10, in double, then one rounding to float32
  const double want = (3.0 * static_cast<double>(0.1f) + 7.0 * static_cast<double>(0.2f)) / 10.0;
  CHECK(weighted_bits<std::uint32_t>(FloatFormat::binary32(), {{bits32(0.1f)}, {bits32(0.2f)}}, {iw(3), iw(7)}) ==
        std::vector<std::uint32_t>{bits32(static_cast<float>(want))});
  // 3 * 65504 overflows float16, not the double it is summed in
  CHECK(weighted_bits<std::uint16_t>(FloatFormat::binary16(), {{kMax}, {kMax}}, {fw(2.0), fw(1.0)}) ==
        std::vector<std::uint16_t>{kMax});
}

TEST_CASE("weighted means refuse weights that sum to 0, and misuse") {
  Accumulator acc(Reducer::Mean, NumKind::I32, 1, true);
  const std::int32_t v = 5;
  acc.add(&v, iw(0));
  acc.add(&v, iw(0));
  CHECK(finish_error(acc, 1, 4).find("/x: the weights of its mean sum to 0") == 0);
  CHECK_THROWS_AS(acc.add(&v), mb::Error);           // a weighted mean needs the weight
  CHECK_THROWS_AS(acc.add(&v, fw(1.0)), mb::Error);  // integer and float weights mixed
  Accumulator plain(Reducer::Mean, NumKind::I32, 1);
  CHECK_THROWS_AS(plain.add(&v, iw(1)), mb::Error);
  CHECK_THROWS_AS(Accumulator(Reducer::Sum, NumKind::I32, 1, true), mb::Error);
  CHECK_THROWS_AS(Accumulator(Reducer::Stack, NumKind::I32, 1), mb::Error);
  CHECK_THROWS_AS(Accumulator(Reducer::Stack, FloatFormat::binary32(), 1), mb::Error);
}
