#pragma once
// Element-wise reducers across microbatches (merge of {"reduce": ...}).
//
// Values arrive in native byte order. The result keeps the input dtype:
// - integers: sum and mean are accumulated exactly in 128 bits; a sum that
//   does not fit the dtype is an error, never a wrap-around; an integer mean
//   is the exact mean rounded to the nearest integer, ties to even
//   (numpy.round(numpy.mean(x)).astype(dtype)).
// - floats: sum and mean are accumulated in double, in input order, then
//   rounded to the dtype; min and max propagate NaN (numpy.minimum/maximum).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/spec.hpp"

namespace mb {

// Exact accumulators for integer sums (GCC/Clang extension; -Wpedantic is told).
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

enum class NumKind { I8, I16, I32, I64, U8, U16, U32, U64, F32, F64 };

const char* num_kind_name(NumKind k);
std::size_t num_kind_size(NumKind k);

class Accumulator {
 public:
  Accumulator(Reducer reducer, NumKind kind, std::size_t count);

  // Folds in one input's `count` values.
  void add(const void* values);

  // Writes the result as `count` values of the accumulator's kind. Throws
  // mb::Error naming `what` and the flat element index (counted from
  // `first_index`) when an integer sum does not fit the dtype.
  void finish(void* out, const std::string& what, std::uint64_t first_index = 0) const;

 private:
  Reducer reducer_;
  NumKind kind_;
  std::size_t count_;
  std::uint64_t inputs_ = 0;
  std::vector<Int128> ints_;  // integer kinds
  std::vector<double> floats_;  // float kinds
};

}  // namespace mb
