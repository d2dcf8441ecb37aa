#include "specs/dtype.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <string>

#include "specs/emit.hpp"

namespace mb::specs {
namespace {

using json = nlohmann::ordered_json;
using K = ValueType::Kind;

char order(const ValueType& t) {
  if (t.size == 1) return '|';
  return t.big_endian ? '>' : '<';
}

// h5py's bool: an enum of a 1-byte integer with FALSE = 0 and TRUE = 1.
bool is_bool(const ValueType& t) {
  return t.kind == K::Enum && t.size == 1 && t.names.size() == 2 && t.names[0] == "FALSE" && t.names[1] == "TRUE" &&
         t.enum_values[0] == 0 && t.enum_values[1] == 1;
}

// h5py's complex: a compound of two equal floats "r" and "i", packed.
bool is_complex(const ValueType& t) {
  return t.kind == K::Compound && t.names == std::vector<std::string>{"r", "i"} && t.elements[0].kind == K::Float &&
         t.elements[1].kind == K::Float && t.elements[0].size == t.elements[1].size &&
         t.elements[0].big_endian == t.elements[1].big_endian && t.offsets[0] == 0 &&
         t.offsets[1] == t.elements[0].size && t.size == 2 * t.elements[0].size && t.elements[0].size >= 4;
}

std::string array_dims(const ValueType& t) {
  if (t.dims.size() == 1) return fmt::format("({},)", t.dims[0]);
  return fmt::format("({})", fmt::join(t.dims, ", "));
}

std::uint64_t load_bits(const unsigned char* p, std::size_t size, bool big_endian) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < size && i < 8; ++i) {
    const std::size_t byte = big_endian ? i : size - 1 - i;
    v = (v << 8) | p[byte];
  }
  return v;
}

std::int64_t load_signed(const unsigned char* p, std::size_t size, bool big_endian) {
  const std::uint64_t v = load_bits(p, size, big_endian);
  if (size >= 8) return static_cast<std::int64_t>(v);
  const std::uint64_t sign = std::uint64_t{1} << (8 * size - 1);
  return static_cast<std::int64_t>((v ^ sign) - sign);
}

json float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json float_value(const ValueType& t, const unsigned char* p) {
  const std::uint64_t bits = load_bits(p, t.size, t.big_endian);
  switch (t.size) {
    case 2: return float_json(half_to_float(static_cast<std::uint16_t>(bits)));
    case 4: {
      float f;
      const auto b = static_cast<std::uint32_t>(bits);
      std::memcpy(&f, &b, sizeof f);
      return float_json(f);
    }
    case 8: {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return float_json(d);
    }
    default: break;
  }
  std::string hex;  // a float format numpy has no name for: its bytes
  for (std::size_t i = 0; i < t.size; ++i) hex += fmt::format("\\x{:02x}", p[i]);
  return hex;
}

std::string bytes_text(const unsigned char* p, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("\\x{:02x}", p[i]);
  return out;
}

json element_json(const ValueType& t, const unsigned char* p);

json elements_json(const ValueType& t, const unsigned char* p, const std::vector<std::uint64_t>& shape,
                   std::size_t axis) {
  if (axis == shape.size()) return element_json(t, p);
  std::uint64_t stride = t.size;
  for (std::size_t d = axis + 1; d < shape.size(); ++d) stride *= shape[d];
  json out = json::array();
  for (std::uint64_t i = 0; i < shape[axis]; ++i) out.push_back(elements_json(t, p + i * stride, shape, axis + 1));
  return out;
}

json element_json(const ValueType& t, const unsigned char* p) {
  switch (t.kind) {
    case K::Int: return load_signed(p, t.size, t.big_endian);
    case K::UInt: return load_bits(p, t.size, t.big_endian);
    case K::Float: return float_value(t, p);
    case K::Enum: {
      const ValueType& base = t.elements[0];
      if (is_bool(t)) return load_bits(p, 1, false) != 0;
      return base.kind == K::Int ? json(load_signed(p, base.size, base.big_endian))
                                 : json(load_bits(p, base.size, base.big_endian));
    }
    case K::FixedString: {
      std::size_t n = t.size;
      while (n > 0 && p[n - 1] == 0) --n;
      return printable_text(std::string_view(reinterpret_cast<const char*>(p), n));
    }
    case K::VlenString: {
      const char* s = nullptr;
      std::memcpy(&s, p, sizeof s);
      return s ? json(printable_text(s)) : json(nullptr);
    }
    case K::Compound: {
      json out = json::object();
      for (std::size_t i = 0; i < t.names.size(); ++i)
        out[escape_name(t.names[i])] = element_json(t.elements[i], p + t.offsets[i]);
      return out;
    }
    case K::Array: {
      const std::vector<std::uint64_t> dims = t.dims.empty() ? std::vector<std::uint64_t>{t.count} : t.dims;
      return elements_json(t.elements[0], p, dims, 0);
    }
    case K::Vlen: {
      VlenSeq seq{};
      std::memcpy(&seq, p, sizeof seq);
      json out = json::array();
      const auto* base = static_cast<const unsigned char*>(seq.p);
      for (std::size_t i = 0; i < seq.len; ++i) out.push_back(element_json(t.elements[0], base + i * t.elements[0].size));
      return out;
    }
    case K::Opaque: return bytes_text(p, t.size);
  }
  return nullptr;
}

}  // namespace

json dtype_json(const ValueType& t) {
  switch (t.kind) {
    case K::Int: return fmt::format("{}i{}", order(t), t.size);
    case K::UInt: return fmt::format("{}u{}", order(t), t.size);
    case K::Float: return fmt::format("{}f{}", order(t), t.size);
    case K::Enum: return is_bool(t) ? json("|b1") : dtype_json(t.elements[0]);
    case K::FixedString: return fmt::format("|S{}", t.size);
    case K::VlenString:
    case K::Vlen: return "O";
    case K::Opaque: return fmt::format("|V{}", t.size);
    case K::Array: {
      const json base = dtype_json(t.elements[0]);
      if (base.is_string()) return array_dims(t) + base.get<std::string>();
      // numpy's subarray of a compound: the tuple form, as a list [base, dims]
      return json::array({base, t.dims.empty() ? json::array({t.count}) : json(t.dims)});
    }
    case K::Compound: {
      if (is_complex(t)) return fmt::format("{}c{}", order(t.elements[0]), t.size);
      json out{{"names", json::array()}, {"formats", json::array()}, {"offsets", t.offsets}, {"itemsize", t.size}};
      for (std::size_t i = 0; i < t.names.size(); ++i) {
        out["names"].push_back(escape_name(t.names[i]));
        out["formats"].push_back(dtype_json(t.elements[i]));
      }
      return out;
    }
  }
  return nullptr;
}

json h5type_json(const ValueType& t) {
  switch (t.kind) {
    case K::VlenString: return {{"class", "string"}, {"variable", true}};
    case K::Vlen: {
      json out{{"class", "vlen"}, {"base", dtype_json(t.elements[0])}};
      if (json inner = h5type_json(t.elements[0]); !inner.is_null()) out["h5type"] = inner;
      return out;
    }
    case K::Enum: {
      if (is_bool(t)) return nullptr;
      json members = json::object();
      for (std::size_t i = 0; i < t.names.size(); ++i) members[escape_name(t.names[i])] = t.enum_values[i];
      return {{"class", "enum"}, {"base", dtype_json(t.elements[0])}, {"members", members}};
    }
    case K::Opaque: return {{"class", "opaque"}, {"size", t.size}};
    case K::Array: {
      json inner = h5type_json(t.elements[0]);
      if (inner.is_null()) return nullptr;
      return {{"class", "array"}, {"base", inner}};
    }
    case K::Compound: {
      json members = json::object();
      for (std::size_t i = 0; i < t.names.size(); ++i)
        if (json inner = h5type_json(t.elements[i]); !inner.is_null()) members[escape_name(t.names[i])] = inner;
      if (members.empty()) return nullptr;
      return {{"class", "compound"}, {"members", members}};
    }
    default: return nullptr;
  }
}

json values_json(const ValueType& type, const void* data, const std::vector<std::uint64_t>& shape) {
  return elements_json(type, static_cast<const unsigned char*>(data), shape, 0);
}

}  // namespace mb::specs
