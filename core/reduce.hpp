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
// - a weighted mean, sum(w_i * x_i) / sum(w_i), takes one weight per input
//   (finite, >= 0; the caller checks them). Integer values with integer
//   weights: exact in 128 bits, the quotient rounded to the nearest integer,
//   ties to even. Otherwise in double, in input order: w_i (as double) times
//   x_i (widened exactly) added up, divided by the weights' total (integer
//   weights summed exactly, then made a double; float weights added up in
//   input order), rounded once to the dtype (integers: to nearest, ties to
//   even, held inside the dtype's range); numpy's
//   acc = w0 * x0.astype(f8); acc = acc + w1 * x1.astype(f8) ...; acc / total.
// Stack is no accumulation (merge writes each input's slice): refused here.
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

// One input's weight in a weighted mean: an integer, kept exact, or a float.
struct Weight {
  bool integer = true;
  Int128 exact = 0;    // integer weights
  double value = 0.0;  // float weights
  static Weight of_integer(Int128 w) { return {true, w, 0.0}; }
  static Weight of_float(double w) { return {false, 0, w}; }
  double as_double() const { return integer ? static_cast<double>(exact) : value; }
};

class Accumulator {
 public:
  // Integers, in native byte order. `weighted` (Mean only): every add()
  // comes with its input's weight.
  Accumulator(Reducer reducer, NumKind kind, std::size_t count, bool weighted = false);
  // Floats of `format` (needs widens_to_double(format)), in its byte order.
  Accumulator(Reducer reducer, const FloatFormat& format, std::size_t count, bool weighted = false);

  // Bytes of one value given to add() and written by finish().
  std::size_t element_size() const;

  // Folds in one input's `count` values.
  void add(const void* values);
  // The same for a weighted mean; every input's weight is an integer, or
  // every input's a float.
  void add(const void* values, const Weight& weight);

  // Writes the result as `count` values of the accumulator's kind. Throws
  // mb::Error naming `what` and the flat element index (counted from
  // `first_index`) when an integer sum does not fit the dtype (or a
  // weighted sum 128 bits), and when the weights sum to 0.
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
  void add_weighted_floats(const void* values, double weight, bool first);
  void add_weighted_ints(const void* values, const Weight& weight, bool first);
  void finish_weighted(void* out, const std::string& what, std::uint64_t first_index) const;

  Reducer reducer_;
  NumKind kind_;
  FloatFormat format_{};
  FloatPath path_ = FloatPath::Software;
  bool first_wins_ties_ = false;  // min/max of float16 (numpy's half loops)
  std::size_t count_;
  std::uint64_t inputs_ = 0;
  bool weighted_ = false;
  bool integer_weights_ = true;  // weighted: as the first input's weight
  Int128 weight_total_ = 0;      // integer weights
  double float_weight_total_ = 0.0;
  std::uint64_t overflowed_ = 0;  // weighted integer sums: 1 + the first element past 128 bits, or 0
  std::vector<Int128> ints_;  // integer kinds (weighted: with integer weights)
  std::vector<double> floats_;  // floats: sums, or the current min/max value; integers with float weights
  std::vector<std::uint64_t> bits_;  // float min/max: the current value's own bits
};

}  // namespace mb
