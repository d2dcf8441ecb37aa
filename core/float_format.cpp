#include "core/float_format.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace mb {
namespace {

std::uint64_t low_mask(unsigned bits) { return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1; }

std::uint64_t field(std::uint64_t bits, unsigned pos, unsigned width) { return (bits >> pos) & low_mask(width); }

bool fits(unsigned pos, unsigned width, std::size_t size) { return width <= 64 && pos + width <= size * 8; }

// round(m * 2^-shift), to nearest, ties to even. m < 2^53.
std::uint64_t shift_round(std::uint64_t m, std::int64_t shift) {
  if (shift <= 0) return m << std::min<std::int64_t>(-shift, 63);  // exact: never reached for a valid format
  if (shift > 54) return 0;  // m < 2^53 <= half of 2^shift, strictly
  const std::uint64_t q = m >> shift;
  const std::uint64_t rem = m & low_mask(static_cast<unsigned>(shift));
  const std::uint64_t half = std::uint64_t{1} << (shift - 1);
  return (rem > half || (rem == half && (q & 1) != 0)) ? q + 1 : q;
}

struct Packer {
  const FloatFormat& f;
  std::uint64_t sign;
  std::uint64_t operator()(std::uint64_t exponent, std::uint64_t mantissa) const {
    return f.pad_ones | sign | (exponent << f.exp_pos) | (mantissa << f.mant_pos);
  }
};

}  // namespace

FloatFormat FloatFormat::binary16() { return {2, false, 15, 10, 5, 0, 10, 15, 0}; }
FloatFormat FloatFormat::binary32() { return {4, false, 31, 23, 8, 0, 23, 127, 0}; }
FloatFormat FloatFormat::binary64() { return {8, false, 63, 52, 11, 0, 52, 1023, 0}; }
FloatFormat FloatFormat::bfloat16() { return {2, false, 15, 7, 8, 0, 7, 127, 0}; }

bool FloatFormat::same_layout(const FloatFormat& other) const {
  FloatFormat a = *this;
  a.big_endian = other.big_endian;
  return a == other;
}

bool widens_to_double(const FloatFormat& f) {
  if (f.size < 1 || f.size > 8) return false;
  if (f.exp_bits < 2 || f.mant_bits < 1 || f.mant_bits > 52) return false;
  if (!fits(f.sign_pos, 1, f.size) || !fits(f.exp_pos, f.exp_bits, f.size) || !fits(f.mant_pos, f.mant_bits, f.size))
    return false;
  const std::uint64_t s = std::uint64_t{1} << f.sign_pos;
  const std::uint64_t e = low_mask(f.exp_bits) << f.exp_pos;
  const std::uint64_t m = low_mask(f.mant_bits) << f.mant_pos;
  if ((s & e) || (s & m) || (e & m) || (f.pad_ones & (s | e | m))) return false;
  if (f.exp_bits > 12 || f.bias > 4096) return false;  // far outside double's range either way
  const auto bias = static_cast<std::int64_t>(f.bias);
  const std::int64_t max_exponent = static_cast<std::int64_t>(low_mask(f.exp_bits)) - 1 - bias;
  const std::int64_t min_quantum = 1 - bias - static_cast<std::int64_t>(f.mant_bits);
  return max_exponent <= 1023 && min_quantum >= -1074;
}

std::uint64_t load_float_bits(const FloatFormat& f, const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < f.size; ++i) {
    const std::size_t byte = f.big_endian ? i : f.size - 1 - i;  // most significant first
    bits = (bits << 8) | b[byte];
  }
  return bits;
}

void store_float_bits(const FloatFormat& f, void* p, std::uint64_t bits) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < f.size; ++i) {
    const std::size_t byte = f.big_endian ? f.size - 1 - i : i;  // least significant first
    b[byte] = static_cast<unsigned char>(bits >> (8 * i));
  }
}

bool float_bits_are_nan(const FloatFormat& f, std::uint64_t bits) {
  return field(bits, f.exp_pos, f.exp_bits) == low_mask(f.exp_bits) && field(bits, f.mant_pos, f.mant_bits) != 0;
}

double float_bits_to_double(const FloatFormat& f, std::uint64_t bits) {
  const bool negative = field(bits, f.sign_pos, 1) != 0;
  const std::uint64_t exponent = field(bits, f.exp_pos, f.exp_bits);
  const std::uint64_t mantissa = field(bits, f.mant_pos, f.mant_bits);
  const auto m = static_cast<int>(f.mant_bits);
  double magnitude;
  if (exponent == low_mask(f.exp_bits)) {
    if (mantissa != 0) {  // NaN: the payload moves to the top of double's mantissa, bit for bit
      const std::uint64_t d = (std::uint64_t{negative} << 63) | (std::uint64_t{0x7ff} << 52) | (mantissa << (52 - m));
      return std::bit_cast<double>(d);
    }
    magnitude = INFINITY;
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), static_cast<int>(1 - static_cast<std::int64_t>(f.bias) - m));
  } else {
    const std::uint64_t significand = (std::uint64_t{1} << m) | mantissa;
    magnitude = std::ldexp(static_cast<double>(significand),
                           static_cast<int>(static_cast<std::int64_t>(exponent) - static_cast<std::int64_t>(f.bias) - m));
  }
  return negative ? -magnitude : magnitude;  // exact: ldexp of an integer below 2^53, in range
}

std::uint64_t double_to_float_bits(const FloatFormat& f, double x) {
  const auto d = std::bit_cast<std::uint64_t>(x);
  const Packer pack{f, (d >> 63) ? std::uint64_t{1} << f.sign_pos : 0};
  const std::uint64_t all_ones = low_mask(f.exp_bits);
  const auto d_exponent = static_cast<std::int64_t>((d >> 52) & 0x7ff);
  const std::uint64_t d_mantissa = d & low_mask(52);
  if (d_exponent == 0x7ff) {
    if (d_mantissa == 0) return pack(all_ones, 0);
    const std::uint64_t payload = d_mantissa >> (52 - f.mant_bits);
    return pack(all_ones, payload != 0 ? payload : 1);
  }
  if (d_exponent == 0 && d_mantissa == 0) return pack(0, 0);
  // |x| = significand * 2^e exactly; its leading bit has weight 2^top.
  const std::uint64_t significand = d_exponent != 0 ? d_mantissa | (std::uint64_t{1} << 52) : d_mantissa;
  const std::int64_t e = (d_exponent != 0 ? d_exponent : 1) - 1075;
  const std::int64_t top = e + std::bit_width(significand) - 1;
  const auto m = static_cast<std::int64_t>(f.mant_bits);
  const auto bias = static_cast<std::int64_t>(f.bias);
  // The weight of the target's last mantissa bit: fixed below the normal range.
  const std::int64_t subnormal_quantum = 1 - bias - m;
  const std::int64_t quantum = std::max(top - m, subnormal_quantum);
  std::uint64_t n = shift_round(significand, quantum - e);  // at most 2^(m+1)
  const std::uint64_t implied = std::uint64_t{1} << m;
  if (n < implied) return pack(0, n);  // subnormal, or zero (keeps the sign)
  std::int64_t biased = quantum + m + bias;
  if (n == 2 * implied) {  // rounded up into the next binade
    n = implied;
    ++biased;
  }
  if (biased >= static_cast<std::int64_t>(all_ones)) return pack(all_ones, 0);  // overflow: inf
  return pack(static_cast<std::uint64_t>(biased), n - implied);
}

}  // namespace mb
