#pragma once
// Partition math: how a split axis of length L is cut into pieces.
#include <cstdint>
#include <vector>

namespace mb {

// Half-open row range [begin, end) along a split axis.
struct Range {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t size() const { return end - begin; }
  friend bool operator==(const Range&, const Range&) = default;
};

// numpy.array_split / torch.tensor_split: the first L mod N pieces get
// floor(L/N)+1 rows, the rest floor(L/N). N must be >= 1.
std::vector<Range> array_split(std::uint64_t length, std::uint64_t pieces);

// torch.split: pieces of exactly `size` rows, the last one shorter.
// size must be >= 1; a length of 0 gives no pieces.
std::vector<Range> split_by_size(std::uint64_t length, std::uint64_t size);

}  // namespace mb
