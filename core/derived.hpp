#pragma once
// Per-file metadata recomputed from offsets ({"max_seqlen": "/cu_seqlens"},
// {"num_tokens": "/cu_seqlens"}): every output's value is computed from the
// offsets that output holds, never copied from the batch, and must fit the
// leaf's integer type; a stored value is checked against its file's offsets.
#include <cstdint>
#include <string>
#include <variant>

#include "core/packed.hpp"
#include "core/spec.hpp"

namespace mb {

// The quantity of checked offsets (from 0, rising): the longest sequence
// (0 with no sequences), the token count offsets[S] - offsets[0], or the
// sequence count S (num_rows too, of offsets read as rows).
std::uint64_t derive(Quantity q, const Offsets& offsets);

// An integer type of at most 64 bits, as the leaf's dtype is: its sign,
// its precision (bits, the sign bit included) and its name for messages.
struct IntegerType {
  bool is_signed = false;
  unsigned bits = 64;
  std::string name;
};

// The largest value of the type (the smallest is never needed: derived
// values are never negative).
std::uint64_t largest_value(const IntegerType& type);

// Refuses a value the type cannot hold (HDF5 would saturate it silently):
// "WHAT: max_seqlen 300 does not fit uint8 (at most 255)".
void check_fits(const std::string& what, Quantity q, std::uint64_t value, const IntegerType& type);

// A value as stored in the file: signed types read as int64, unsigned as
// uint64, so every value is exact.
using StoredInteger = std::variant<std::int64_t, std::uint64_t>;

bool same_value(const StoredInteger& stored, std::uint64_t value);
std::string integer_text(const StoredInteger& stored);

// What a stored value is checked against, for messages.
struct DerivedLeaf {
  const std::string& what;     // "FILE: /max_seqlen" or "FILE: /@max_seqlen"
  Quantity quantity;
  const std::string& offsets;  // path of the offsets dataset
};

// Refuses a stored value other than the one its file's offsets give.
void check_stored(const DerivedLeaf& leaf, const StoredInteger& stored, const Offsets& offsets);

// The same with the value computed: for num_rows, the length of the
// dataset `leaf.offsets` names.
void check_stored(const DerivedLeaf& leaf, const StoredInteger& stored, std::uint64_t computed);

}  // namespace mb
