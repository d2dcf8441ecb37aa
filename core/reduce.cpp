#include "core/reduce.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

bool is_float(NumKind k) { return k == NumKind::F32 || k == NumKind::F64; }

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

double nan_min(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? std::nan("") : std::min(a, b); }
double nan_max(double a, double b) { return (std::isnan(a) || std::isnan(b)) ? std::nan("") : std::max(a, b); }

}  // namespace

const char* num_kind_name(NumKind k) {
  static const char* names[] = {"int8", "int16", "int32", "int64", "uint8",
                                "uint16", "uint32", "uint64", "float32", "float64"};
  return names[static_cast<int>(k)];
}

std::size_t num_kind_size(NumKind k) {
  static const std::size_t sizes[] = {1, 2, 4, 8, 1, 2, 4, 8, 4, 8};
  return sizes[static_cast<int>(k)];
}

Accumulator::Accumulator(Reducer reducer, NumKind kind, std::size_t count)
    : reducer_(reducer), kind_(kind), count_(count) {
  if (is_float(kind)) {
    floats_.assign(count, 0.0);
  } else {
    ints_.assign(count, 0);
  }
}

void Accumulator::add(const void* values) {
  const bool first = inputs_ == 0;
  ++inputs_;
  if (is_float(kind_)) {
    for (std::size_t i = 0; i < count_; ++i) {
      const double v = kind_ == NumKind::F32 ? load<float>(values, i) : load<double>(values, i);
      double& acc = floats_[i];
      switch (reducer_) {
        case Reducer::Sum:
        case Reducer::Mean: acc = first ? v : acc + v; break;
        case Reducer::Min: acc = first ? v : nan_min(acc, v); break;
        case Reducer::Max: acc = first ? v : nan_max(acc, v); break;
      }
    }
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

void Accumulator::finish(void* out, const std::string& what, std::uint64_t first_index) const {
  if (inputs_ == 0) throw Error(fmt::format("internal: reducing {} over no input", what));
  if (is_float(kind_)) {
    for (std::size_t i = 0; i < count_; ++i) {
      double v = floats_[i];
      if (reducer_ == Reducer::Mean) v /= static_cast<double>(inputs_);
      if (kind_ == NumKind::F32) {
        store<float>(out, i, static_cast<float>(v));
      } else {
        store<double>(out, i, v);
      }
    }
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
