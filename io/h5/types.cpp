#include "io/h5/types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "io/h5/intern.hpp"

namespace mb::io::h5 {
namespace {

std::string take_name(char* name) {
  std::string out = name ? name : "";
  if (name) H5free_memory(name);
  return out;
}

bool big_endian(hid_t type) { return H5Tget_order(type) == H5T_ORDER_BE; }

bool is_h5py_bool(hid_t type) {
  if (H5Tget_nmembers(type) != 2) return false;
  return take_name(H5Tget_member_name(type, 0)) == "FALSE" && take_name(H5Tget_member_name(type, 1)) == "TRUE";
}

bool is_complex(hid_t type) {
  if (H5Tget_nmembers(type) != 2) return false;
  Id r(H5Tget_member_type(type, 0)), i(H5Tget_member_type(type, 1));
  return take_name(H5Tget_member_name(type, 0)) == "r" && take_name(H5Tget_member_name(type, 1)) == "i" &&
         H5Tget_class(r.get()) == H5T_FLOAT && H5Tequal(r.get(), i.get()) > 0;
}

std::string array_dims(hid_t type) {
  const int rank = H5Tget_array_ndims(type);
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Tget_array_dims2(type, dims.data());
  std::string out = "[";
  for (std::size_t d = 0; d < dims.size(); ++d) out += fmt::format("{}{}", d ? "," : "", dims[d]);
  return out + "]";
}

}  // namespace

std::size_t size_of(hid_t type, const Location& where) {
  const std::size_t size = H5Tget_size(type);
  if (size == 0) fail(where, "cannot read the size of the datatype");
  return size;
}

bool copyable_as_bytes(hid_t type) {
  return !has_variable_length(type) && H5Tdetect_class(type, H5T_REFERENCE) == 0;
}

namespace {

ValueType enum_type(hid_t type, std::size_t size, const Location& where) {
  ValueType t = ValueType::scalar(ValueType::Kind::Enum, size);
  Id base(H5Tget_super(type), where, "cannot read an enum's base type");
  t.elements.push_back(value_type_of(base.get(), where));
  const int n = check(H5Tget_nmembers(type), where, "cannot read an enum's members");
  for (int i = 0; i < n; ++i) {
    t.names.push_back(take_name(H5Tget_member_name(type, static_cast<unsigned>(i))));
    // Member values are stored in the base type; HDF5 converts one to long long for us.
    std::vector<unsigned char> raw(std::max(size, sizeof(long long)));
    check(H5Tget_member_value(type, static_cast<unsigned>(i), raw.data()), where, "cannot read an enum value");
    check(H5Tconvert(base.get(), H5T_NATIVE_LLONG, 1, raw.data(), nullptr, H5P_DEFAULT), where,
          "cannot convert an enum value");
    long long v = 0;
    std::memcpy(&v, raw.data(), sizeof v);
    t.enum_values.push_back(v);
  }
  return t;
}

ValueType compound_type(hid_t type, std::size_t size, const Location& where) {
  ValueType t = ValueType::scalar(ValueType::Kind::Compound, size);
  const int n = check(H5Tget_nmembers(type), where, "cannot read a compound's members");
  for (int i = 0; i < n; ++i) {
    const auto idx = static_cast<unsigned>(i);
    Id member(H5Tget_member_type(type, idx), where, "cannot read a compound member type");
    t.names.push_back(take_name(H5Tget_member_name(type, idx)));
    t.offsets.push_back(H5Tget_member_offset(type, idx));  // cannot fail once its type was read
    t.elements.push_back(value_type_of(member.get(), where));
  }
  return t;
}

ValueType array_type(hid_t type, std::size_t size, const Location& where) {
  ValueType t = ValueType::scalar(ValueType::Kind::Array, size);
  Id base(H5Tget_super(type), where, "cannot read an array's base type");
  t.elements.push_back(value_type_of(base.get(), where));
  t.count = t.elements[0].size ? size / t.elements[0].size : 0;
  const int rank = check(H5Tget_array_ndims(type), where, "cannot read an array's rank");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  check(H5Tget_array_dims2(type, dims.data()), where, "cannot read an array's dimensions");
  t.dims.assign(dims.begin(), dims.end());
  return t;
}

}  // namespace

ValueType value_type_of(hid_t type, const Location& where) {
  using K = ValueType::Kind;
  const std::size_t size = size_of(type, where);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return ValueType::scalar(H5Tget_sign(type) == H5T_SGN_NONE ? K::UInt : K::Int, size, big_endian(type));
    case H5T_FLOAT: return ValueType::scalar(K::Float, size, big_endian(type));
    case H5T_ENUM: return enum_type(type, size, where);
    case H5T_STRING:
      return ValueType::scalar(H5Tis_variable_str(type) > 0 ? K::VlenString : K::FixedString, size);
    case H5T_COMPOUND: return compound_type(type, size, where);
    case H5T_ARRAY: return array_type(type, size, where);
    case H5T_VLEN: {
      ValueType t = ValueType::scalar(K::Vlen, size);
      Id base(H5Tget_super(type), where, "cannot read a sequence's base type");
      t.elements.push_back(value_type_of(base.get(), where));
      return t;
    }
    case H5T_OPAQUE:
    case H5T_BITFIELD: return ValueType::scalar(K::Opaque, size);
    default: break;
  }
  throw Error(where.describe() + ": datatype " + dtype_name(type) + " is not supported");
}

std::string dtype_name(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  const std::string bits = fmt::format("{}", size * 8);
  const std::string order = big_endian(type) ? " (big-endian)" : "";
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + bits + order;
    case H5T_FLOAT: return "float" + bits + order;
    case H5T_ENUM: {
      if (is_h5py_bool(type)) return "bool";
      Id base(H5Tget_super(type));
      return "enum(" + (base.valid() ? dtype_name(base.get()) : std::string("?")) + ")";
    }
    case H5T_STRING: {
      const bool utf8 = H5Tget_cset(type) == H5T_CSET_UTF8;
      if (H5Tis_variable_str(type) > 0) return utf8 ? "str" : "bytes (vlen ascii)";
      return fmt::format("|S{}{}", size, utf8 ? " (utf-8)" : "");
    }
    case H5T_COMPOUND: {
      if (is_complex(type)) return "complex" + bits + order;
      std::string out = "{";
      const int n = H5Tget_nmembers(type);
      for (int i = 0; i < n; ++i) {
        Id member(H5Tget_member_type(type, static_cast<unsigned>(i)));
        out += (i ? ", " : "") + take_name(H5Tget_member_name(type, static_cast<unsigned>(i))) + ": " +
               (member.valid() ? dtype_name(member.get()) : "?");
      }
      return out + "}";
    }
    case H5T_ARRAY: {
      Id base(H5Tget_super(type));
      return (base.valid() ? dtype_name(base.get()) : std::string("?")) + array_dims(type);
    }
    case H5T_VLEN: {
      Id base(H5Tget_super(type));
      return "vlen " + (base.valid() ? dtype_name(base.get()) : std::string("?"));
    }
    case H5T_OPAQUE: return "opaque" + bits;
    case H5T_BITFIELD: return "bitfield" + bits;
    case H5T_REFERENCE: return "reference";
    case H5T_TIME: return "time";
    default: return "unknown";
  }
}

bool has_variable_length(hid_t type) {
  switch (H5Tget_class(type)) {
    case H5T_VLEN: return true;
    case H5T_STRING: return H5Tis_variable_str(type) > 0;
    case H5T_COMPOUND: {
      const int n = H5Tget_nmembers(type);
      for (int i = 0; i < n; ++i) {
        Id member(H5Tget_member_type(type, static_cast<unsigned>(i)));
        if (member.valid() && has_variable_length(member.get())) return true;
      }
      return false;
    }
    case H5T_ARRAY: {
      Id base(H5Tget_super(type));
      return base.valid() && has_variable_length(base.get());
    }
    default: return false;
  }
}

std::optional<FloatFormat> float_format(hid_t type) {
  if (H5Tget_class(type) != H5T_FLOAT || H5Tget_norm(type) != H5T_NORM_IMPLIED) return std::nullopt;
  const H5T_order_t order = H5Tget_order(type);
  if (order != H5T_ORDER_LE && order != H5T_ORDER_BE) return std::nullopt;
  std::size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  if (H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize) < 0) return std::nullopt;
  const std::size_t size = H5Tget_size(type);
  const int offset = H5Tget_offset(type);
  const std::size_t precision = H5Tget_precision(type);
  H5T_pad_t lsb = H5T_PAD_ERROR, msb = H5T_PAD_ERROR;
  if (size == 0 || size > 8 || offset < 0 || precision == 0 || H5Tget_pad(type, &lsb, &msb) < 0) return std::nullopt;
  FloatFormat f;
  f.size = size;
  f.big_endian = order == H5T_ORDER_BE;
  f.sign_pos = static_cast<unsigned>(spos);
  f.exp_pos = static_cast<unsigned>(epos);
  f.exp_bits = static_cast<unsigned>(esize);
  f.mant_pos = static_cast<unsigned>(mpos);
  f.mant_bits = static_cast<unsigned>(msize);
  f.bias = H5Tget_ebias(type);
  // Padding HDF5 fills with ones: below the offset, above the precision, and
  // unused bits between the fields.
  const auto ones = [](std::size_t from, std::size_t to) {
    std::uint64_t m = 0;
    for (std::size_t b = from; b < to && b < 64; ++b) m |= std::uint64_t{1} << b;
    return m;
  };
  const auto low = static_cast<std::size_t>(offset), high = low + precision;
  if (lsb == H5T_PAD_ONE) f.pad_ones |= ones(0, low);
  if (msb == H5T_PAD_ONE) f.pad_ones |= ones(high, size * 8);
  if (H5Tget_inpad(type) == H5T_PAD_ONE) {
    const std::uint64_t fields = ones(spos, spos + 1) | ones(epos, epos + esize) | ones(mpos, mpos + msize);
    f.pad_ones |= ones(low, high) & ~fields;
  }
  return f;
}

std::optional<NumKind> numeric_kind(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool is_unsigned = H5Tget_sign(type) == H5T_SGN_NONE;
      switch (size) {
        case 1: return is_unsigned ? NumKind::U8 : NumKind::I8;
        case 2: return is_unsigned ? NumKind::U16 : NumKind::I16;
        case 4: return is_unsigned ? NumKind::U32 : NumKind::I32;
        case 8: return is_unsigned ? NumKind::U64 : NumKind::I64;
        default: return std::nullopt;
      }
    }
    case H5T_FLOAT: {
      // Widened to double and rounded back by core/float_format, never by HDF5.
      const auto format = float_format(type);
      if (format && widens_to_double(*format)) return NumKind::Float;
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

hid_t native_type(NumKind kind) {
  switch (kind) {
    case NumKind::I8: return H5T_NATIVE_INT8;
    case NumKind::I16: return H5T_NATIVE_INT16;
    case NumKind::I32: return H5T_NATIVE_INT32;
    case NumKind::I64: return H5T_NATIVE_INT64;
    case NumKind::U8: return H5T_NATIVE_UINT8;
    case NumKind::U16: return H5T_NATIVE_UINT16;
    case NumKind::U32: return H5T_NATIVE_UINT32;
    case NumKind::U64: return H5T_NATIVE_UINT64;
    case NumKind::Float: break;
  }
  throw Error("internal: floats are reduced in their own type, not a native one");
}

H5T_class_t class_of(hid_t type, const Location& where) {
  const H5T_class_t cls = H5Tget_class(type);
  if (cls == H5T_NO_CLASS) fail(where, "cannot read the datatype's class");
  return cls;
}

bool is_unsigned(hid_t type, const Location& where) {
  const H5T_sign_t sign = H5Tget_sign(type);
  if (sign == H5T_SGN_ERROR) fail(where, "cannot read the datatype's sign");
  return sign == H5T_SGN_NONE;
}

std::size_t precision_of(hid_t type, const Location& where) {
  const std::size_t precision = H5Tget_precision(type);
  if (precision == 0) fail(where, "cannot read the datatype's precision");
  return precision;
}

bool contains_class(hid_t type, H5T_class_t cls, const Location& where) {
  return check(H5Tdetect_class(type, cls), where, "cannot read the datatype") > 0;
}

bool same_type(hid_t a, hid_t b, const Location& where) {
  return check(equal_types(a, b), where, "cannot compare datatypes") > 0;
}

bool is_variable_string(hid_t type, const Location& where) {
  return class_of(type, where) == H5T_STRING && check(H5Tis_variable_str(type), where, "cannot read the datatype") > 0;
}

Id copy_type(hid_t type, const Location& where) { return Id(H5Tcopy(type), where, "cannot copy the datatype"); }

Id variable_string_type(hid_t like, const Location& where) {
  Id memory(H5Tcopy(H5T_C_S1), where, "cannot make a string type");
  check(H5Tset_size(memory.get(), H5T_VARIABLE), where, "cannot make a string type");
  check(H5Tset_cset(memory.get(), H5Tget_cset(like)), where, "cannot make a string type");
  return memory;
}

bool is_committed(hid_t type, const Location& where) {
  return check(H5Tcommitted(type), where, "cannot read the datatype") > 0;
}

namespace {

std::string pad_text(const PadValue& pad) {
  switch (pad.kind) {
    case PadValue::Kind::Integer: return std::to_string(pad.integer);
    case PadValue::Kind::Number: return fmt::format("{}", pad.number);
    case PadValue::Kind::Bool: return pad.flag ? "true" : "false";
  }
  return {};
}

// `value` (of native type `from`) converted to `type` and back: equal only
// when the type holds it exactly.
template <typename T>
std::vector<unsigned char> exactly(hid_t type, hid_t from, T value, const Location& where) {
  const std::size_t size = size_of(type, where);
  std::vector<unsigned char> element(std::max(size, sizeof(T)));
  std::memcpy(element.data(), &value, sizeof(T));
  check(H5Tconvert(from, type, 1, element.data(), nullptr, H5P_DEFAULT), where, "cannot convert a pad value");
  std::vector<unsigned char> back = element;
  check(H5Tconvert(type, from, 1, back.data(), nullptr, H5P_DEFAULT), where, "cannot convert a pad value");
  T round = 0;
  std::memcpy(&round, back.data(), sizeof(T));
  if (round != value) return {};
  element.resize(size);
  return element;
}

}  // namespace

namespace {

// h5py's bool padded: the bytes of its FALSE or TRUE member, as the type
// itself stores them (whatever its base type and byte order).
std::vector<unsigned char> bool_pad(hid_t type, const std::optional<PadValue>& pad, const Location& where) {
  if (pad && pad->kind != PadValue::Kind::Bool)
    throw Error(fmt::format("{}: \"pad\": {} is a number, but the dataset holds bool: give \"pad\": true or false",
                            where.describe(), pad_text(*pad)));
  std::vector<unsigned char> element(size_of(type, where));
  check(H5Tenum_valueof(type, pad && pad->flag ? "TRUE" : "FALSE", element.data()), where,
        "cannot read a bool's members");
  return element;
}

}  // namespace

std::vector<unsigned char> pad_element(hid_t type, const std::optional<PadValue>& pad, const Location& where) {
  const H5T_class_t cls = class_of(type, where);
  if (cls == H5T_ENUM && is_h5py_bool(type)) return bool_pad(type, pad, where);
  if (cls != H5T_INTEGER && cls != H5T_FLOAT)
    throw Error(fmt::format("{}: --cp-pad pads integer, floating-point and bool data only, not {}", where.describe(),
                            dtype_name(type)));
  if (pad && pad->kind == PadValue::Kind::Bool)
    throw Error(fmt::format("{}: \"pad\": {} is a bool, but the dataset holds {}: give a number",
                            where.describe(), pad_text(*pad), dtype_name(type)));
  const PadValue value = pad.value_or(PadValue{});  // 0
  std::vector<unsigned char> element;
  if (value.kind == PadValue::Kind::Integer) {
    element = exactly(type, H5T_NATIVE_INT64, value.integer, where);
  } else if (cls == H5T_FLOAT) {
    element = exactly(type, H5T_NATIVE_DOUBLE, value.number, where);
  }
  if (element.empty())
    throw Error(fmt::format("{}: pad {} does not fit {}", where.describe(), pad_text(value), dtype_name(type)));
  return element;
}

}  // namespace mb::io::h5
