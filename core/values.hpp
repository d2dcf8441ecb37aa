#pragma once
// Element values in memory, described without HDF5: io/ builds a ValueType
// from an HDF5 datatype, core/ compares and prints the bytes HDF5 hands back.
// Comparison is exact on the stored representation (NaN == NaN of the same
// bits, -0.0 != 0.0); variable-length data is compared by content.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mb {

struct ValueType {
  enum class Kind {
    Int,          // signed integer, `size` bytes
    UInt,         // unsigned integer
    Float,        // IEEE binary16/32/64
    Enum,         // integer base (elements[0]) with names (h5py's bool is one)
    FixedString,  // `size` bytes, compared byte for byte
    VlenString,   // char*, NUL-terminated, may be null
    Compound,     // members at offsets
    Array,        // `count` elements of elements[0]
    Vlen,         // VlenSeq of elements[0]
    Opaque,       // `size` raw bytes (also bitfields)
  };

  Kind kind = Kind::Opaque;
  std::size_t size = 0;     // bytes of one element in memory
  bool big_endian = false;  // Int, UInt, Float, Enum
  std::vector<ValueType> elements;  // Array, Vlen, Enum: one base type; Compound: member types
  std::vector<std::string> names;   // Compound: member names; Enum: value names
  std::vector<std::size_t> offsets; // Compound: member offsets
  std::vector<std::int64_t> enum_values;  // Enum: value of each name
  std::uint64_t count = 1;          // Array: number of base elements
  std::vector<std::uint64_t> dims;  // Array: its dimensions (their product is `count`)

  static ValueType scalar(Kind kind, std::size_t size, bool big_endian = false) {
    ValueType t;
    t.kind = kind;
    t.size = size;
    t.big_endian = big_endian;
    return t;
  }
};

// In-memory layout of a variable-length sequence (identical to HDF5's hvl_t).
struct VlenSeq {
  std::size_t len;
  void* p;
};

bool equal_element(const ValueType& type, const void* a, const void* b);

// Index of the first element that differs among `count` elements, if any.
std::optional<std::uint64_t> first_difference(const ValueType& type, const void* a, const void* b,
                                              std::uint64_t count);

// numpy-like text of one element: 3, -0.0, nan, True, b'ab', 'text', (1+2j).
std::string format_element(const ValueType& type, const void* p);

// "[1, 2, 3]" for up to `limit` elements, "…" after that; a scalar prints bare
// when `count` is 1 and `as_scalar` is set.
std::string format_elements(const ValueType& type, const void* p, std::uint64_t count, bool as_scalar,
                            std::uint64_t limit = 8);

// Two values that differ: `count` elements from flat index `first_flat` of
// a tensor, first differing at `at` (relative to first_flat).
struct Difference {
  const void* a;
  const void* b;
  std::uint64_t count;
  std::uint64_t first_flat;
  std::uint64_t at;
};
// Both values when short, else the first differing element and its index.
std::string difference_text(const ValueType& type, const std::vector<std::uint64_t>& shape, const Difference& difference);

// Multi-index of flat element `index` in `shape` (row-major), e.g. "[1, 2]".
std::string format_index(const std::vector<std::uint64_t>& shape, std::uint64_t index);

// IEEE binary16 -> binary32, exact.
float half_to_float(std::uint16_t h);

}  // namespace mb
