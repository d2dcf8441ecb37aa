#include "core/reduce.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

template <typename T>
T load(const void* base, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store(void* base, std::size_t i, T v) {
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
}

Int128 load_int(NumKind k, const void* p, std::size_t i) {
  switch (k) {
    case NumKind::I8: return load<std::int8_t>(p, i);
    case NumKind::I16: return load<std::int16_t>(p, i);
    case NumKind::I32: return load<std::int32_t>(p, i);
    case NumKind::I64: return load<std::int64_t>(p, i);
    case NumKind::U8: return load<std::uint8_t>(p, i);
    case NumKind::U16: return load<std::uint16_t>(p, i);
    case NumKind::U32: return load<std::uint32_t>(p, i);
    case NumKind::U64: return load<std::uint64_t>(p, i);
    default: return 0;
  }
}

template <typename T>
bool store_checked(void* p, std::size_t i, Int128 v) {
  if (v < static_cast<Int128>(std::numeric_limits<T>::min()) ||
      v > static_cast<Int128>(std::numeric_limits<T>::max()))
    return false;
  store<T>(p, i, static_cast<T>(v));
  return true;
}

bool store_int(NumKind k, void* p, std::size_t i, Int128 v) {
  switch (k) {
    case NumKind::I8: return store_checked<std::int8_t>(p, i, v);
    case NumKind::I16: return store_checked<std::int16_t>(p, i, v);
    case NumKind::I32: return store_checked<std::int32_t>(p, i, v);
    case NumKind::I64: return store_checked<std::int64_t>(p, i, v);
    case NumKind::U8: return store_checked<std::uint8_t>(p, i, v);
    case NumKind::U16: return store_checked<std::uint16_t>(p, i, v);
    case NumKind::U32: return store_checked<std::uint32_t>(p, i, v);
    case NumKind::U64: return store_checked<std::uint64_t>(p, i, v);
    default: return false;
  }
}

// Exact sum / d (d > 0) rounded to nearest, ties to even.
Int128 rounded_quotient(Int128 sum, Int128 d) {
  Int128 q = sum / d;
  Int128 r = sum % d;
  if (r < 0) {  // make the remainder non-negative: q = floor(sum / n)
    r += d;
    q -= 1;
  }
  if (2 * r > d || (2 * r == d && (q & 1) != 0)) q += 1;
  return q;
}

// The smallest and largest value of an integer kind.
std::pair<Int128, Int128> int_range(NumKind k) {
  const std::size_t bits = 8 * num_kind_size(k);
  const bool is_signed = k == NumKind::I8 || k == NumKind::I16 || k == NumKind::I32 || k == NumKind::I64;
  if (!is_signed) return {0, (Int128{1} << bits) - 1};
  return {-(Int128{1} << (bits - 1)), (Int128{1} << (bits - 1)) - 1};
}

// A finite double rounded to the nearest integer, ties to even, held inside
// the kind's range (the exact mean is inside it; double's own rounding of
// 64-bit values may not be).
Int128 nearest_in_range(NumKind k, double v) {
  const double r = std::nearbyint(v);  // the default rounding mode: to nearest, ties to even
  const auto [lo, hi] = int_range(k);
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<Int128>(r);
}

void check_reducer(Reducer reducer, bool weighted) {
  if (reducer == Reducer::Stack) throw Error("internal: stack is not accumulated");
  if (weighted && reducer != Reducer::Mean) throw Error("internal: a weighted reducer other than mean");
}

// acc + v as numpy's float64 add gives it: of two NaNs the first, quieted.
// (Written out because a compiler may swap the operands of a commutative +.)
double add_in_order(double acc, double v) {
  if (std::isnan(acc)) return std::bit_cast<double>(std::bit_cast<std::uint64_t>(acc) | (std::uint64_t{1} << 51));
  return acc + v;
}

// Whether acc = np.minimum(acc, v) (or np.maximum) takes v: a NaN already
// held stays, a new NaN wins, equal values (+0.0, -0.0) keep the first for
// float16 and take the second for the other types (numpy 1.24's loops).
bool takes_new(Reducer r, double acc, double v, bool first_wins_ties) {
  if (std::isnan(acc)) return false;
  if (std::isnan(v)) return true;
  if (v == acc) return !first_wins_ties;
  return r == Reducer::Min ? v < acc : v > acc;
}

}  // namespace

const char* num_kind_name(NumKind k) {
  static const char* names[] = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float"};
  return names[static_cast<int>(k)];
}

std::size_t num_kind_size(NumKind k) {
  static const std::size_t sizes[] = {1, 2, 4, 8, 1, 2, 4, 8, 0};
  return sizes[static_cast<int>(k)];
}

Accumulator::Accumulator(Reducer reducer, NumKind kind, std::size_t count, bool weighted)
    : reducer_(reducer), kind_(kind), count_(count), weighted_(weighted) {
  check_reducer(reducer, weighted);
  if (kind == NumKind::Float) throw Error("internal: a float accumulator needs its format");
  if (!weighted) ints_.assign(count, 0);  // weighted: integers or doubles, as the weights are (first add)
}

Accumulator::Accumulator(Reducer reducer, const FloatFormat& format, std::size_t count, bool weighted)
    : reducer_(reducer), kind_(NumKind::Float), format_(format), count_(count), weighted_(weighted) {
  check_reducer(reducer, weighted);
  if (!widens_to_double(format)) throw Error("internal: a float format that double does not hold");
  if (format.same_layout(FloatFormat::binary32())) path_ = FloatPath::Binary32;
  if (format.same_layout(FloatFormat::binary64())) path_ = FloatPath::Binary64;
  first_wins_ties_ = format.same_layout(FloatFormat::binary16());
  floats_.assign(count, 0.0);
  if (selects()) bits_.assign(count, 0);
}

std::size_t Accumulator::element_size() const { return kind_ == NumKind::Float ? format_.size : num_kind_size(kind_); }

double Accumulator::widen(std::uint64_t bits) const {
  switch (path_) {
    case FloatPath::Binary32: return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case FloatPath::Binary64: return std::bit_cast<double>(bits);
    case FloatPath::Software: break;
  }
  return float_bits_to_double(format_, bits);
}

std::uint64_t Accumulator::narrow(double value) const {
  switch (path_) {
    case FloatPath::Binary32: return std::bit_cast<std::uint32_t>(static_cast<float>(value));
    case FloatPath::Binary64: return std::bit_cast<std::uint64_t>(value);
    case FloatPath::Software: break;
  }
  return double_to_float_bits(format_, value);
}

void Accumulator::add_floats(const void* values, bool first) {
  const auto* bytes = static_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < count_; ++i) {
    const std::uint64_t bits = load_float_bits(format_, bytes + i * format_.size);
    const double v = widen(bits);
    double& acc = floats_[i];
    if (!selects()) {
      acc = first ? v : add_in_order(acc, v);
    } else if (first || takes_new(reducer_, acc, v, first_wins_ties_)) {
      acc = v;
      bits_[i] = bits;  // the value itself, not its widening: NaN payloads and signs stay
    }
  }
}

void Accumulator::add(const void* values) {
  if (weighted_) throw Error("internal: a weighted mean given no weight");
  const bool first = inputs_ == 0;
  ++inputs_;
  if (kind_ == NumKind::Float) {
    add_floats(values, first);
    return;
  }
  for (std::size_t i = 0; i < count_; ++i) {
    const Int128 v = load_int(kind_, values, i);
    Int128& acc = ints_[i];
    switch (reducer_) {
      case Reducer::Sum:
      case Reducer::Mean: acc = first ? v : acc + v; break;
      case Reducer::Min: acc = first ? v : std::min(acc, v); break;
      case Reducer::Max: acc = first ? v : std::max(acc, v); break;
      case Reducer::Stack: break;  // refused by the constructor
    }
  }
}

void Accumulator::add(const void* values, const Weight& weight) {
  if (!weighted_) throw Error("internal: a weight for an unweighted reducer");
  const bool first = inputs_ == 0;
  if (first) {
    integer_weights_ = weight.integer;
  } else if (weight.integer != integer_weights_) {
    throw Error("internal: integer and float weights in one mean");
  }
  ++inputs_;
  if (weight.integer) {
    weight_total_ += weight.exact;
  } else {
    float_weight_total_ = first ? weight.value : float_weight_total_ + weight.value;
  }
  if (kind_ == NumKind::Float) return add_weighted_floats(values, weight.as_double(), first);
  add_weighted_ints(values, weight, first);
}

void Accumulator::add_weighted_floats(const void* values, double weight, bool first) {
  const auto* bytes = static_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < count_; ++i) {
    const double term = weight * widen(load_float_bits(format_, bytes + i * format_.size));
    floats_[i] = first ? term : add_in_order(floats_[i], term);
  }
}

void Accumulator::add_weighted_ints(const void* values, const Weight& weight, bool first) {
  if (first && weight.integer) ints_.assign(count_, 0);
  if (first && !weight.integer) floats_.assign(count_, 0.0);
  for (std::size_t i = 0; i < count_; ++i) {
    const Int128 x = load_int(kind_, values, i);
    if (!weight.integer) {
      const double term = weight.value * static_cast<double>(x);
      floats_[i] = first ? term : floats_[i] + term;
      continue;
    }
    Int128 term, sum;
    const bool over = __builtin_mul_overflow(x, weight.exact, &term) || __builtin_add_overflow(ints_[i], term, &sum);
    if (over && (overflowed_ == 0 || i + 1 < overflowed_)) overflowed_ = i + 1;
    if (!over) ints_[i] = sum;
  }
}

void Accumulator::finish_floats(void* out) const {
  auto* bytes = static_cast<unsigned char*>(out);
  for (std::size_t i = 0; i < count_; ++i) {
    std::uint64_t bits;
    if (selects()) {
      bits = bits_[i];
    } else {
      const double v = reducer_ == Reducer::Mean ? floats_[i] / static_cast<double>(inputs_) : floats_[i];
      bits = narrow(v);  // the one rounding to the dtype
    }
    store_float_bits(format_, bytes + i * format_.size, bits);
  }
}

void Accumulator::finish_weighted(void* out, const std::string& what, std::uint64_t first_index) const {
  const double total = integer_weights_ ? static_cast<double>(weight_total_) : float_weight_total_;
  if (!(total > 0) || !std::isfinite(total))
    throw Error(fmt::format("{}: the weights of its mean sum to {}, not a positive float64", what, total));
  if (overflowed_ != 0)
    throw Error(fmt::format("{}: weighted mean: weight * value summed over the inputs exceeds 128 bits at element {}",
                            what, first_index + overflowed_ - 1));
  if (kind_ == NumKind::Float) {
    auto* bytes = static_cast<unsigned char*>(out);
    for (std::size_t i = 0; i < count_; ++i)
      store_float_bits(format_, bytes + i * format_.size, narrow(floats_[i] / total));  // the one rounding
    return;
  }
  for (std::size_t i = 0; i < count_; ++i) {
    const Int128 v = integer_weights_ ? rounded_quotient(ints_[i], weight_total_)
                                      : nearest_in_range(kind_, floats_[i] / total);
    if (!store_int(kind_, out, i, v))  // the mean of values of the dtype is one of them: never
      throw Error(fmt::format("internal: {}: weighted mean {} outside {} at element {}", what, v,
                              num_kind_name(kind_), first_index + i));
  }
}

void Accumulator::finish(void* out, const std::string& what, std::uint64_t first_index) const {
  if (inputs_ == 0) throw Error(fmt::format("internal: reducing {} over no input", what));
  if (weighted_) return finish_weighted(out, what, first_index);
  if (kind_ == NumKind::Float) {
    finish_floats(out);
    return;
  }
  for (std::size_t i = 0; i < count_; ++i) {
    const Int128 v = reducer_ == Reducer::Mean ? rounded_quotient(ints_[i], inputs_) : ints_[i];
    if (!store_int(kind_, out, i, v))
      throw Error(fmt::format("{}: {} overflows {} at element {} (exact value {})", what, reducer_name(reducer_),
                              num_kind_name(kind_), first_index + i, v));  // fmt prints __int128 exactly
  }
}

}  // namespace mb
