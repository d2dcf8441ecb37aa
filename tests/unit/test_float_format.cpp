// Float formats: exact widening to double and the one rounding back, checked
// exhaustively for every float16 and bfloat16 bit pattern (and small custom
// formats) against references written independently of core/float_format.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/float_format.hpp"

using mb::FloatFormat;

namespace {

// A standard layout (mantissa at bit 0, then exponent, then sign) of `exp`
// and `mant` bits with the IEEE bias.
FloatFormat standard(std::size_t size, unsigned exp, unsigned mant) {
  FloatFormat f;
  f.size = size;
  f.mant_pos = 0;
  f.mant_bits = mant;
  f.exp_pos = mant;
  f.exp_bits = exp;
  f.sign_pos = exp + mant;
  f.bias = (std::uint64_t{1} << (exp - 1)) - 1;
  return f;
}

// The value of a standard-layout pattern, from the IEEE definition.
double reference_value(unsigned exp, unsigned mant, std::uint64_t bits) {
  const std::uint64_t m = bits & ((std::uint64_t{1} << mant) - 1);
  const std::uint64_t e = (bits >> mant) & ((std::uint64_t{1} << exp) - 1);
  const bool negative = (bits >> (exp + mant)) & 1;
  const int bias = (1 << (exp - 1)) - 1;
  double v;
  if (e == (std::uint64_t{1} << exp) - 1)
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0)
    v = static_cast<double>(m) * std::pow(2.0, 1 - bias - static_cast<int>(mant));
  else
    v = (1.0 + static_cast<double>(m) / std::pow(2.0, mant)) * std::pow(2.0, static_cast<int>(e) - bias);
  return negative ? -v : v;
}

// Round to nearest, ties to even, by search over every finite magnitude of
// a small standard format (patterns 0 .. max finite are increasing values):
// the nearest of the two neighbours, the even pattern on a tie, inf past the
// midpoint between the largest finite value and the next power of two.
struct Reference {
  unsigned exp, mant;
  std::vector<double> magnitudes;  // index = bit pattern

  Reference(unsigned e, unsigned m) : exp(e), mant(m) {
    const std::uint64_t inf = ((std::uint64_t{1} << e) - 1) << m;
    for (std::uint64_t b = 0; b < inf; ++b) magnitudes.push_back(reference_value(e, m, b));
    // The "next" value past the largest finite one, where inf starts.
    magnitudes.push_back(std::ldexp(1.0, (1 << (e - 1))));
  }

  std::uint64_t round(double x) const {
    const std::uint64_t sign = std::signbit(x) ? std::uint64_t{1} << (exp + mant) : 0;
    const double a = std::fabs(x);
    const auto hi = static_cast<std::uint64_t>(std::upper_bound(magnitudes.begin(), magnitudes.end(), a) -
                                               magnitudes.begin());
    if (hi == 0) return sign;  // cannot happen: magnitudes[0] == 0
    if (hi == magnitudes.size()) return sign | (magnitudes.size() - 1);  // past the end: inf
    const std::uint64_t lo = hi - 1;
    const double mid = (magnitudes[lo] + magnitudes[hi]) / 2;  // exact: few bits
    if (a < mid) return sign | lo;
    if (a > mid) return sign | hi;
    return sign | ((lo & 1) ? hi : lo);
  }
};

// Doubles around every rounding decision of a format: each value, each
// midpoint between neighbours, and the doubles just beside each midpoint.
std::vector<double> probes(const Reference& ref) {
  std::vector<double> out;
  const auto& m = ref.magnitudes;
  for (std::size_t i = 0; i + 1 < m.size(); ++i) {
    const double mid = (m[i] + m[i + 1]) / 2;
    for (double x : {m[i], mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY)}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  for (double x : {0.0, 1e-320, 4.9e-324, 1e300, std::numeric_limits<double>::max(), 1e-300}) {
    out.push_back(x);
    out.push_back(-x);
  }
  return out;
}

void check_against_reference(const FloatFormat& f, const Reference& ref) {
  for (double x : probes(ref)) {
    const std::uint64_t got = mb::double_to_float_bits(f, x);
    if (got != ref.round(x)) FAIL_CHECK("x=" << x << " got " << got << " want " << ref.round(x));
  }
}

// The compiler's own float16 (GCC; clang 14 has none on x86), a second reference.
#ifdef __FLT16_MAX__
#define MB_HAVE_FLOAT16 1
std::uint16_t half_bits(double x) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(x)); }
#endif

}  // namespace

TEST_CASE("float16: every bit pattern widens exactly and rounds back to itself") {
  const FloatFormat f = FloatFormat::binary16();
  REQUIRE(mb::widens_to_double(f));
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double v = mb::float_bits_to_double(f, b);
    const double want = reference_value(5, 10, b);
#ifdef MB_HAVE_FLOAT16
    const double compiler = static_cast<double>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(b)));
    REQUIRE((std::isnan(want) ? std::isnan(compiler) : compiler == want && std::signbit(compiler) == std::signbit(want)));
#endif
    if (std::isnan(want)) {
      REQUIRE(std::isnan(v));
      REQUIRE(mb::float_bits_are_nan(f, b));
      // the payload sits in double's top mantissa bits, not quieted
      REQUIRE(std::bit_cast<std::uint64_t>(v) == ((std::uint64_t{b >> 15} << 63) | (std::uint64_t{0x7ff} << 52) |
                                                  (std::uint64_t{b & 0x3ff} << 42)));
    } else {
      REQUIRE(v == want);
      REQUIRE(std::signbit(v) == std::signbit(want));
      REQUIRE_FALSE(mb::float_bits_are_nan(f, b));
    }
    REQUIRE(mb::double_to_float_bits(f, v) == b);
  }
}

TEST_CASE("float16: double -> half rounds to nearest even, like the compiler's _Float16 and a search") {
  const FloatFormat f = FloatFormat::binary16();
  const Reference ref(5, 10);
  check_against_reference(f, ref);
  // random doubles in float16's range and beyond
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::bit_cast<double>((rng() & 0x800fffffffffffffULL) | (std::uint64_t{0x3e0 + rng() % 0x40} << 52));
    if (mb::double_to_float_bits(f, x) != ref.round(x)) FAIL_CHECK("x=" << x);
  }
#ifdef MB_HAVE_FLOAT16
  for (double x : probes(ref))  // libgcc's IEEE conversion agrees
    if (mb::double_to_float_bits(f, x) != half_bits(x)) FAIL_CHECK("x=" << x);
#endif
}

TEST_CASE("float16: the cases HDF5 1.10.8 gets wrong, overflow, underflow, signed zero") {
  const FloatFormat f = FloatFormat::binary16();
  CHECK(mb::double_to_float_bits(f, 1 + std::ldexp(1.0, -11)) == 0x3c00);      // tie -> even (1.0)
  CHECK(mb::double_to_float_bits(f, 1 + 3 * std::ldexp(1.0, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(mb::double_to_float_bits(f, 1.0 - std::ldexp(1.0, -13)) == 0x3c00);    // rounds up into 2^0
  CHECK(mb::double_to_float_bits(f, 3 * std::ldexp(1.0, -24)) == 0x0003);      // subnormal
  CHECK(mb::double_to_float_bits(f, std::ldexp(1.0, -25)) == 0x0000);          // tie -> 0
  CHECK(mb::double_to_float_bits(f, -std::ldexp(1.0, -25)) == 0x8000);         // keeps the sign
  CHECK(mb::double_to_float_bits(f, std::nextafter(std::ldexp(1.0, -25), 1.0)) == 0x0001);
  CHECK(mb::double_to_float_bits(f, 65504.0) == 0x7bff);
  CHECK(mb::double_to_float_bits(f, std::nextafter(65520.0, 0.0)) == 0x7bff);
  CHECK(mb::double_to_float_bits(f, 65520.0) == 0x7c00);  // tie -> even = inf
  CHECK(mb::double_to_float_bits(f, -1e300) == 0xfc00);
  CHECK(mb::double_to_float_bits(f, -INFINITY) == 0xfc00);
  CHECK(mb::double_to_float_bits(f, -0.0) == 0x8000);
  CHECK(mb::double_to_float_bits(f, 5e-324) == 0x0000);
}

TEST_CASE("NaN: sign and top payload bits kept, a vanishing payload becomes 1 (numpy's float64 -> float16)") {
  const FloatFormat f = FloatFormat::binary16();
  CHECK(mb::double_to_float_bits(f, std::bit_cast<double>(0x7ff8000000000000ULL)) == 0x7e00);
  CHECK(mb::double_to_float_bits(f, std::bit_cast<double>(0xfff8000000000000ULL)) == 0xfe00);
  CHECK(mb::double_to_float_bits(f, std::bit_cast<double>(0x7ff0000000000001ULL)) == 0x7c01);
  CHECK(mb::double_to_float_bits(f, std::bit_cast<double>(0xfff4000000000000ULL)) == 0xfd00);
  CHECK(mb::double_to_float_bits(f, std::bit_cast<double>(0x7ffd540000000000ULL)) == 0x7f55);
}

TEST_CASE("bfloat16: every pattern widens like float32 << 16 and rounds like float32's round-to-nearest-even") {
  const FloatFormat f = FloatFormat::bfloat16();
  REQUIRE(mb::widens_to_double(f));
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const float as_float = std::bit_cast<float>(b << 16);
    const double v = mb::float_bits_to_double(f, b);
    if (!std::isnan(as_float)) REQUIRE(v == static_cast<double>(as_float));
    if (!std::isnan(as_float)) REQUIRE(std::signbit(v) == std::signbit(as_float));
    REQUIRE(mb::double_to_float_bits(f, v) == b);
  }
  check_against_reference(f, Reference(8, 7));
  // every float32 just beside and on a bfloat16 midpoint, against the classic bit trick
  for (std::uint32_t hi = 0; hi < 0x7f80; ++hi) {
    for (std::uint32_t low : {0x7fffu, 0x8000u, 0x8001u, 0x0001u, 0xffffu}) {
      const std::uint32_t bits = (hi << 16) | low;
      const std::uint32_t want = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
      const double x = std::bit_cast<float>(bits);
      if (mb::double_to_float_bits(f, x) != want) FAIL_CHECK("bits=" << bits);
      if (mb::double_to_float_bits(f, -x) != (want | 0x8000)) FAIL_CHECK("-bits=" << bits);
    }
  }
}

TEST_CASE("float32 and float64 in software agree with the hardware conversions") {
  const FloatFormat f32 = FloatFormat::binary32(), f64 = FloatFormat::binary64();
  REQUIRE(mb::widens_to_double(f32));
  REQUIRE(mb::widens_to_double(f64));
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300000; ++i) {
    // exponents around float32's whole range, subnormals included
    const double x = std::bit_cast<double>((rng() & 0x800fffffffffffffULL) | (std::uint64_t{0x350 + rng() % 0x140} << 52));
    REQUIRE(mb::double_to_float_bits(f32, x) == std::bit_cast<std::uint32_t>(static_cast<float>(x)));
    REQUIRE(mb::double_to_float_bits(f64, x) == std::bit_cast<std::uint64_t>(x));
    const auto b = static_cast<std::uint32_t>(rng());
    const float v = std::bit_cast<float>(b);
    if (!std::isnan(v)) REQUIRE(mb::float_bits_to_double(f32, b) == static_cast<double>(v));
    REQUIRE(mb::double_to_float_bits(f32, mb::float_bits_to_double(f32, b)) == b);
  }
}

TEST_CASE("small custom formats (float8 e4m3 and e5m2 as IEEE-like) against the search") {
  for (const auto& [exp_bits, mant_bits] : {std::pair{4u, 3u}, std::pair{5u, 2u}, std::pair{3u, 4u}, std::pair{2u, 1u}}) {
    const unsigned e = exp_bits, m = mant_bits;  // plain variables: lambdas (CAPTURE) cannot name bindings in C++20
    CAPTURE(e);
    CAPTURE(m);
    const FloatFormat f = standard(1, e, m);
    REQUIRE(mb::widens_to_double(f));
    const Reference ref(e, m);
    check_against_reference(f, ref);
    for (std::uint32_t b = 0; b < (2u << (e + m)); ++b) {
      const double v = mb::float_bits_to_double(f, b);
      const double want = reference_value(e, m, b);
      REQUIRE((std::isnan(v) ? std::isnan(want) : v == want));
      REQUIRE(mb::double_to_float_bits(f, v) == b);
    }
  }
}

TEST_CASE("fields anywhere, padding set to one, big-endian bytes") {
  // float16's fields in a 3-byte element: sign at bit 0, mantissa at 4..13,
  // exponent at 14..18; the other bits are padding HDF5 fills with ones.
  FloatFormat f;
  f.size = 3;
  f.big_endian = true;
  f.sign_pos = 0;
  f.mant_pos = 4;
  f.mant_bits = 10;
  f.exp_pos = 14;
  f.exp_bits = 5;
  f.bias = 15;
  f.pad_ones = 0xf80000 | 0xe;
  REQUIRE(mb::widens_to_double(f));
  const FloatFormat half = FloatFormat::binary16();
  const auto relayout = [&](std::uint64_t h) {
    return f.pad_ones | (h >> 15) | ((h & 0x3ff) << 4) | (((h >> 10) & 0x1f) << 14);
  };
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const double v = mb::float_bits_to_double(half, h);
    REQUIRE(mb::double_to_float_bits(f, v) == relayout(h));
    const double back = mb::float_bits_to_double(f, relayout(h));
    REQUIRE(std::bit_cast<std::uint64_t>(back) == std::bit_cast<std::uint64_t>(v));
  }
  unsigned char bytes[3];
  mb::store_float_bits(f, bytes, 0x123456);
  CHECK((bytes[0] == 0x12 && bytes[1] == 0x34 && bytes[2] == 0x56));
  CHECK(mb::load_float_bits(f, bytes) == 0x123456);
  f.big_endian = false;
  mb::store_float_bits(f, bytes, 0x123456);
  CHECK((bytes[0] == 0x56 && bytes[1] == 0x34 && bytes[2] == 0x12));
  CHECK(mb::load_float_bits(f, bytes) == 0x123456);
}

TEST_CASE("formats double does not hold, or that are not well formed, are refused") {
  FloatFormat f = FloatFormat::binary64();
  f.mant_bits = 53;  // more precision than double (e.g. x87 extended's 64)
  CHECK_FALSE(mb::widens_to_double(f));
  f = standard(8, 12, 51);  // more range than double
  CHECK_FALSE(mb::widens_to_double(f));
  f = FloatFormat::binary64();
  f.bias = 1022;  // max exponent 1024
  CHECK_FALSE(mb::widens_to_double(f));
  f = FloatFormat::binary64();
  f.bias = 1024;  // smallest subnormal 2^-1075
  CHECK_FALSE(mb::widens_to_double(f));
  f = FloatFormat::binary16();
  f.exp_pos = 9;  // overlaps the mantissa
  CHECK_FALSE(mb::widens_to_double(f));
  f = FloatFormat::binary16();
  f.pad_ones = 1;  // padding over the mantissa
  CHECK_FALSE(mb::widens_to_double(f));
  f = FloatFormat::binary16();
  f.size = 1;  // fields past the element
  CHECK_FALSE(mb::widens_to_double(f));
  f = standard(16, 15, 112);  // IEEE binary128
  CHECK_FALSE(mb::widens_to_double(f));
}
