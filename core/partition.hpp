#pragma once
// Partition math: how a split axis of length L is cut into pieces.
#include <cstdint>
#include <functional>
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

// Cuts a row-major box of shape `count` into blocks of at most `max_elements`
// elements (always at least one element per block) and calls
// fn(start, block) for each, start relative to the box, in storage order.
// Blocks are whole trailing rows where the budget allows, so HDF5 sees few,
// large, contiguous selections. A rank-0 box is one block; an empty box none.
void for_each_block(
    const std::vector<std::uint64_t>& count, std::uint64_t max_elements,
    const std::function<void(const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&)>& fn);

}  // namespace mb
