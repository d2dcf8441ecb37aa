#pragma once
// Element-wise reducers across microbatches (merge of {"reduce": ...}).
//
// Values arrive in native byte order. The result keeps the input dtype:
// - integers: sum and mean are accumulated exactly in 128 bits; a sum that
//   does not fit the dtype is an error, never a wrap-around; an integer mean
//   is the exact mean rounded to the nearest integer, ties to even
//   (numpy.round(numpy.mean(x)).astype(dtype)).
// - floats (any format FloatFormat describes, in its own byte order): sum and
//   mean are accumulated in double, in input order, then rounded once to the
//   dtype, to nearest even (numpy: the float64 result .astype(dtype)). min
//   and max keep the winning input's own bits, as folding numpy.minimum /
//   numpy.maximum in input order does: the first NaN met wins (payload and
//   sign kept), and of two equal values (+0.0 and -0.0) float16 keeps the
//   one met first, every other format the one met last.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/float_format.hpp"
#include "core/spec.hpp"

namespace mb {

// Exact accumulators for integer sums (GCC/Clang extension; -Wpedantic is told).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

// Float: any float format; its layout is given as a FloatFormat.
enum class NumKind { I8, I16, I32, I64, U8, U16, U32, U64, Float };

const char* num_kind_name(NumKind k);
std::size_t num_kind_size(NumKind k);  // 0 for Float: the format has the size

class Accumulator {
 public:
  // Integers, in native byte order.
  Accumulator(Reducer reducer, NumKind kind, std::size_t count);
  // Floats of `format` (needs widens_to_double(format)), in its byte order.
  Accumulator(Reducer reducer, const FloatFormat& format, std::size_t count);

  // Bytes of one value given to add() and written by finish().
  std::size_t element_size() const;

  // Folds in one input's `count` values.
  void add(const void* values);

  // Writes the result as `count` values of the accumulator's kind. Throws
  // mb::Error naming `what` and the flat element index (counted from
  // `first_index`) when an integer sum does not fit the dtype.
  void finish(void* out, const std::string& what, std::uint64_t first_index = 0) const;

 private:
  // binary32 and binary64 convert in hardware, as numpy does; any other
  // layout goes through float_format's exact conversions.
  enum class FloatPath { Binary32, Binary64, Software };

  // min and max pick one input's value; sum and mean compute a new one.
  bool selects() const { return reducer_ == Reducer::Min || reducer_ == Reducer::Max; }
  double widen(std::uint64_t bits) const;
  std::uint64_t narrow(double value) const;
  void add_floats(const void* values, bool first);
  void finish_floats(void* out) const;

  Reducer reducer_;
  NumKind kind_;
  FloatFormat format_{};
  FloatPath path_ = FloatPath::Software;
  bool first_wins_ties_ = false;  // min/max of float16 (numpy's half loops)
  std::size_t count_;
  std::uint64_t inputs_ = 0;
  std::vector<Int128> ints_;  // integer kinds
  std::vector<double> floats_;  // floats: sums, or the current min/max value
  std::vector<std::uint64_t> bits_;  // float min/max: the current value's own bits
};

}  // namespace mb
