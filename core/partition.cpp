#include "core/partition.hpp"

#include <algorithm>

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
  // Both steps compare with what is left, so that at + size never wraps past 2^64.
  for (std::uint64_t at = 0; at < length; at = size >= length - at ? length : at + size)
    out.push_back({at, size >= length - at ? length : at + size});
  return out;
}

void for_each_block(
    const std::vector<std::uint64_t>& count, std::uint64_t max_elements,
    const std::function<void(const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&)>& fn) {
  const std::size_t rank = count.size();
  if (rank == 0) {
    fn({}, {});
    return;
  }
  for (auto c : count)
    if (c == 0) return;
  max_elements = std::max<std::uint64_t>(max_elements, 1);
  // inner[d] = elements in one index step of dimension d (saturating).
  std::vector<std::uint64_t> inner(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d)
    inner[d - 1] = (count[d] != 0 && inner[d] > UINT64_MAX / count[d]) ? UINT64_MAX : inner[d] * count[d];
  // The outermost dimension whose single step fits the budget is cut in runs of `rows`.
  std::size_t cut = 0;
  while (inner[cut] > max_elements) ++cut;
  const std::uint64_t rows = std::min(count[cut], std::max<std::uint64_t>(1, max_elements / inner[cut]));

  std::vector<std::uint64_t> start(rank, 0), block(count);
  for (std::size_t d = 0; d < cut; ++d) block[d] = 1;
  while (true) {
    for (std::uint64_t r = 0; r < count[cut]; r += rows) {
      start[cut] = r;
      block[cut] = std::min(rows, count[cut] - r);
      fn(start, block);
    }
    // Odometer over the dimensions before the cut.
    std::size_t d = cut;
    while (d > 0) {
      --d;
      if (++start[d] < count[d]) break;
      start[d] = 0;
      if (d == 0) return;
    }
    if (cut == 0) return;
  }
}

}  // namespace mb
