#include "core/reduce.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

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

// Exact sum / n rounded to nearest, ties to even.
Int128 rounded_mean(Int128 sum, std::uint64_t n) {
  const Int128 d = n;
  Int128 q = sum / d;
  Int128 r = sum % d;
  if (r < 0) {  // make the remainder non-negative: q = floor(sum / n)
    r += d;
    q -= 1;
  }
  if (2 * r > d || (2 * r == d && (q & 1) != 0)) q += 1;
  return q;
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

Accumulator::Accumulator(Reducer reducer, NumKind kind, std::size_t count)
    : reducer_(reducer), kind_(kind), count_(count) {
  if (kind == NumKind::Float) throw Error("internal: a float accumulator needs its format");
  ints_.assign(count, 0);
}

Accumulator::Accumulator(Reducer reducer, const FloatFormat& format, std::size_t count)
    : reducer_(reducer), kind_(NumKind::Float), format_(format), count_(count) {
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
    }
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

void Accumulator::finish(void* out, const std::string& what, std::uint64_t first_index) const {
  if (inputs_ == 0) throw Error(fmt::format("internal: reducing {} over no input", what));
  if (kind_ == NumKind::Float) {
    finish_floats(out);
    return;
  }
  for (std::size_t i = 0; i < count_; ++i) {
    const Int128 v = reducer_ == Reducer::Mean ? rounded_mean(ints_[i], inputs_) : ints_[i];
    if (!store_int(kind_, out, i, v))
      throw Error(fmt::format("{}: {} overflows {} at element {} (exact value {})", what, reducer_name(reducer_),
                              num_kind_name(kind_), first_index + i, v));  // fmt prints __int128 exactly
  }
}

}  // namespace mb
