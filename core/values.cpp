#include "core/values.hpp"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (in fmt/format.h before fmt 11)

#include "core/tree.hpp"

namespace mb {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

const unsigned char* bytes(const void* p) { return static_cast<const unsigned char*>(p); }

// Reads an integer of `size` bytes in the given byte order.
std::uint64_t load_bits(const void* p, std::size_t size, bool big_endian) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t byte = big_endian ? i : size - 1 - i;
    v = (v << 8) | bytes(p)[byte];
  }
  return v;
}

std::int64_t load_signed(const void* p, std::size_t size, bool big_endian) {
  std::uint64_t v = load_bits(p, size, big_endian);
  if (size < 8 && (v >> (size * 8 - 1)) != 0) v |= ~std::uint64_t{0} << (size * 8);
  return static_cast<std::int64_t>(v);
}

std::int64_t load_enum_value(const ValueType& base, const void* p) {
  return base.kind == ValueType::Kind::Int ? load_signed(p, base.size, base.big_endian)
                                           : static_cast<std::int64_t>(load_bits(p, base.size, base.big_endian));
}

template <typename T>
std::string shortest(T v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // numpy prints floats with a decimal point: 1.0, not 1.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_float(const ValueType& t, const void* p) {
  const std::uint64_t bits = load_bits(p, t.size, t.big_endian);
  switch (t.size) {
    case 2: return shortest(half_to_float(static_cast<std::uint16_t>(bits)));
    case 4: return shortest(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    case 8: return shortest(std::bit_cast<double>(bits));
    default: return fmt::format("<float{}>", t.size * 8);
  }
}

std::string quote_bytes(const char* s, std::size_t n, bool as_bytes) {
  std::string out = as_bytes ? "b'" : "'";
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f || (as_bytes && c >= 0x80)) {
      out += "\\x";
      out += kHexDigits[c >> 4];
      out += kHexDigits[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "'";
}

bool is_complex(const ValueType& t) {
  return t.kind == ValueType::Kind::Compound && t.names.size() == 2 && t.names[0] == "r" && t.names[1] == "i" &&
         t.elements[0].kind == ValueType::Kind::Float && t.elements[1].kind == ValueType::Kind::Float;
}

}  // namespace

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f;
  const std::uint32_t mant = h & 0x3ffu;
  std::uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);  // inf or nan, payload kept
  } else if (exp != 0) {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    out = sign;  // signed zero
  } else {
    // Subnormal half: value = mant * 2^-24, exactly representable in float.
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return std::bit_cast<float>(out);
}

bool equal_element(const ValueType& t, const void* a, const void* b) {
  using K = ValueType::Kind;
  switch (t.kind) {
    case K::VlenString: {
      const char* sa = *static_cast<const char* const*>(a);
      const char* sb = *static_cast<const char* const*>(b);
      return std::strcmp(sa ? sa : "", sb ? sb : "") == 0;
    }
    case K::Vlen: {
      const auto* va = static_cast<const VlenSeq*>(a);
      const auto* vb = static_cast<const VlenSeq*>(b);
      return va->len == vb->len && !first_difference(t.elements[0], va->p, vb->p, va->len);
    }
    case K::Compound:
      for (std::size_t m = 0; m < t.elements.size(); ++m)
        if (!equal_element(t.elements[m], bytes(a) + t.offsets[m], bytes(b) + t.offsets[m])) return false;
      return true;
    case K::Array:
      return !first_difference(t.elements[0], a, b, t.count);
    default:
      return std::memcmp(a, b, t.size) == 0;
  }
}

std::optional<std::uint64_t> first_difference(const ValueType& t, const void* a, const void* b,
                                              std::uint64_t count) {
  using K = ValueType::Kind;
  const bool flat = t.kind != K::VlenString && t.kind != K::Vlen && t.kind != K::Compound && t.kind != K::Array;
  if (flat && std::memcmp(a, b, t.size * count) == 0) return std::nullopt;
  for (std::uint64_t i = 0; i < count; ++i)
    if (!equal_element(t, bytes(a) + i * t.size, bytes(b) + i * t.size)) return i;
  return std::nullopt;
}

std::string format_element(const ValueType& t, const void* p) {
  using K = ValueType::Kind;
  switch (t.kind) {
    case K::Int: return std::to_string(load_signed(p, t.size, t.big_endian));
    case K::UInt: return std::to_string(load_bits(p, t.size, t.big_endian));
    case K::Float: return format_float(t, p);
    case K::Enum: {
      const std::int64_t v = load_enum_value(t.elements[0], p);
      for (std::size_t i = 0; i < t.names.size(); ++i)
        if (t.enum_values[i] == v) {
          if (t.names[i] == "TRUE") return "True";  // h5py's bool
          if (t.names[i] == "FALSE") return "False";
          return t.names[i];
        }
      return std::to_string(v);
    }
    case K::FixedString: {
      const char* s = static_cast<const char*>(p);
      return quote_bytes(s, strnlen(s, t.size), true);
    }
    case K::VlenString: {
      const char* s = *static_cast<const char* const*>(p);
      return s ? quote_bytes(s, std::strlen(s), false) : "''";
    }
    case K::Compound: {
      if (is_complex(t)) {
        std::string im = format_element(t.elements[1], bytes(p) + t.offsets[1]);
        if (im[0] != '-') im = "+" + im;
        return "(" + format_element(t.elements[0], bytes(p) + t.offsets[0]) + im + "j)";
      }
      std::string out = "(";
      for (std::size_t m = 0; m < t.elements.size(); ++m) {
        if (m) out += ", ";
        out += format_element(t.elements[m], bytes(p) + t.offsets[m]);
      }
      return out + ")";
    }
    case K::Array: return format_elements(t.elements[0], p, t.count, false);
    case K::Vlen: {
      const auto* v = static_cast<const VlenSeq*>(p);
      return format_elements(t.elements[0], v->p, v->len, false);
    }
    case K::Opaque: {
      std::string out = "0x";
      for (std::size_t i = 0; i < t.size; ++i) {
        out += kHexDigits[bytes(p)[i] >> 4];
        out += kHexDigits[bytes(p)[i] & 15];
      }
      return out;
    }
  }
  return "?";
}

std::string format_elements(const ValueType& t, const void* p, std::uint64_t count, bool as_scalar,
                            std::uint64_t limit) {
  if (as_scalar && count == 1) return format_element(t, p);
  std::string out = "[";
  for (std::uint64_t i = 0; i < count && i < limit; ++i) {
    if (i) out += ", ";
    out += format_element(t, bytes(p) + i * t.size);
  }
  if (count > limit) out += ", …";
  return out + "]";
}

std::string format_index(const std::vector<std::uint64_t>& shape, std::uint64_t index) {
  std::vector<std::uint64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) continue;
    idx[d] = index % shape[d];
    index /= shape[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

std::string difference_text(const ValueType& t, const std::vector<std::uint64_t>& shape, const Difference& d) {
  const bool scalar = shape.empty();
  if (d.first_flat == 0 && d.count <= 8 && element_count(shape) == d.count)
    return format_elements(t, d.a, d.count, scalar) + " vs " + format_elements(t, d.b, d.count, scalar);
  const auto* a = static_cast<const unsigned char*>(d.a) + d.at * t.size;
  const auto* b = static_cast<const unsigned char*>(d.b) + d.at * t.size;
  return fmt::format("at {}: {} vs {}", format_index(shape, d.first_flat + d.at), format_element(t, a),
                     format_element(t, b));
}

}  // namespace mb
