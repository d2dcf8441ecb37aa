#include "core/partition.hpp"

#include "core/error.hpp"

namespace mb {

std::vector<Range> array_split(std::uint64_t length, std::uint64_t pieces) {
  if (pieces == 0) throw Error("array_split: cannot cut into 0 pieces");
  const std::uint64_t base = length / pieces;
  const std::uint64_t longer = length % pieces;
  std::vector<Range> out;
  out.reserve(pieces);
  std::uint64_t at = 0;
  for (std::uint64_t i = 0; i < pieces; ++i) {
    const std::uint64_t rows = base + (i < longer ? 1 : 0);
    out.push_back({at, at + rows});
    at += rows;
  }
  return out;
}

std::vector<Range> split_by_size(std::uint64_t length, std::uint64_t size) {
  if (size == 0) throw Error("split_by_size: piece size must be at least 1");
  std::vector<Range> out;
  out.reserve(length / size + 1);
  for (std::uint64_t at = 0; at < length; at += size) out.push_back({at, std::min(length, at + size)});
  return out;
}

}  // namespace mb
