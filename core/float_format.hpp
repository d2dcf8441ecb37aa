#pragma once
// Binary floating-point formats as HDF5 describes them (IEEE-like: sign bit,
// biased exponent, mantissa with an implied leading bit, exponent all ones
// for inf and NaN), and exact conversions between them and double.
//
// float16, float32, float64, bfloat16 and any other layout HDF5 can describe
// are handled by the same code, so reducers round exactly once, in our code,
// instead of going through HDF5's conversions (which, in 1.10.8, round ties
// away from zero and mishandle subnormals for float16).
#include <cstddef>
#include <cstdint>

namespace mb {

struct FloatFormat {
  std::size_t size = 0;  // bytes of one element (1..8 here)
  bool big_endian = false;
  unsigned sign_pos = 0;  // bit of the sign, counted from the least significant bit
  unsigned exp_pos = 0;
  unsigned exp_bits = 0;
  unsigned mant_pos = 0;
  unsigned mant_bits = 0;  // stored bits, the leading 1 is implied
  std::uint64_t bias = 0;
  std::uint64_t pad_ones = 0;  // bits outside the fields that HDF5 sets to 1 (usually none)

  static FloatFormat binary16();
  static FloatFormat binary32();
  static FloatFormat binary64();
  static FloatFormat bfloat16();

  // Same fields, whatever the byte order.
  bool same_layout(const FloatFormat& other) const;
  bool operator==(const FloatFormat&) const = default;
};

// Whether every value of `f` is a double (so widening is exact) and the
// fields fit its size without overlapping: what the reducers need.
bool widens_to_double(const FloatFormat& f);

// The element at `p` (f.size bytes in f's byte order) as an unsigned integer.
std::uint64_t load_float_bits(const FloatFormat& f, const void* p);
void store_float_bits(const FloatFormat& f, void* p, std::uint64_t bits);

bool float_bits_are_nan(const FloatFormat& f, std::uint64_t bits);

// Exact value of `bits` (needs widens_to_double(f)). A NaN keeps its sign
// and payload, in the top bits of double's mantissa, and is not quieted
// (numpy's float16 -> float64 does the same).
double float_bits_to_double(const FloatFormat& f, std::uint64_t bits);

// `x` rounded to `f`: to nearest, ties to even, with subnormals, overflow
// to inf and signed zeros. A NaN keeps its sign and the top bits of its
// payload; a payload that would vanish becomes 1, so it stays a NaN (the
// rule of numpy's float64 -> float16).
std::uint64_t double_to_float_bits(const FloatFormat& f, double x);

}  // namespace mb
