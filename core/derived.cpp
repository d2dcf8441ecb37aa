#include "core/derived.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {

const char* quantity_name(Quantity q) {
  switch (q) {
    case Quantity::MaxSeqlen: return "max_seqlen";
    case Quantity::NumTokens: return "num_tokens";
    case Quantity::NumSequences: return "num_sequences";
    case Quantity::NumRows: return "num_rows";
  }
  return "?";
}

std::uint64_t derive(Quantity q, const Offsets& offsets) {
  if (offsets.empty()) return 0;
  if (q == Quantity::NumSequences || q == Quantity::NumRows) return offsets.size() - 1;
  if (q == Quantity::NumTokens) return offsets.back() - offsets.front();
  std::uint64_t longest = 0;
  for (std::size_t i = 1; i < offsets.size(); ++i) longest = std::max(longest, offsets[i] - offsets[i - 1]);
  return longest;
}

std::uint64_t largest_value(const IntegerType& type) {
  const unsigned bits = type.bits - (type.is_signed ? 1 : 0);
  return bits >= 64 ? UINT64_MAX : (std::uint64_t{1} << bits) - 1;
}

void check_fits(const std::string& what, Quantity q, std::uint64_t value, const IntegerType& type) {
  if (value <= largest_value(type)) return;
  throw Error(fmt::format("{}: {} {} does not fit {} (at most {})", what, quantity_name(q), value, type.name,
                          largest_value(type)));
}

bool same_value(const StoredInteger& stored, std::uint64_t value) {
  if (const auto* s = std::get_if<std::int64_t>(&stored)) return *s >= 0 && static_cast<std::uint64_t>(*s) == value;
  return std::get<std::uint64_t>(stored) == value;
}

std::string integer_text(const StoredInteger& stored) {
  return std::visit([](auto v) { return fmt::format("{}", v); }, stored);
}

void check_stored(const DerivedLeaf& leaf, const StoredInteger& stored, const Offsets& offsets) {
  check_stored(leaf, stored, derive(leaf.quantity, offsets));
}

void check_stored(const DerivedLeaf& leaf, const StoredInteger& stored, std::uint64_t computed) {
  if (same_value(stored, computed)) return;
  const char* name = quantity_name(leaf.quantity);
  if (leaf.quantity == Quantity::NumRows)
    throw Error(fmt::format("{}: holds {} {}, but {} has {} rows: the value is inconsistent with the data "
                            "(microbatch does not write a silently corrected value)",
                            leaf.what, name, integer_text(stored), leaf.offsets, computed));
  throw Error(fmt::format("{}: holds {} {}, but its offsets {} give {} {}: the value is inconsistent with the "
                          "offsets (microbatch does not write a silently corrected value)",
                          leaf.what, name, integer_text(stored), leaf.offsets, name, computed));
}

}  // namespace mb
