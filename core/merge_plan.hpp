#pragma once
// Where each input's rows go in the merged batch, known before any input's
// data is read: the merged extent of every dataset whose rows were cut, and
// each input's row map, from how many rows each input holds along the cut
// axis (the manifest says, or one pass over the inputs' shapes). Merge can
// then open each input once, write its rows where they belong and close it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/layout.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"

namespace mb {

// Per dataset whose rows were cut (by path): each input's length along the
// cut axis, in input order.
using InputLengths = std::map<std::string, std::vector<std::uint64_t>>;

struct MergedLeaf {
  std::size_t axis = 0;
  Shape dims;  // of the merged dataset
  // Per input, the rows of the merged dataset its rows fill, in its order.
  // Offsets: input 0 fills rows [0, L0); every later input repeats the
  // leading 0 and fills the rows after the previous one's with its own
  // rows 1.. (shifted by the tokens before it).
  std::vector<RowMap> maps;
};

struct MergePlan {
  std::map<std::string, MergedLeaf> leaves;
  // Null for a dataset whose rows are not cut (replicated, reduced).
  const MergedLeaf* leaf(const std::string& path) const;
};

// The datasets of `first` (the first input's tree) whose rule cuts rows.
std::vector<const NodeInfo*> cut_datasets(const NodeInfo& first, const Resolution& resolution);

// Throws mb::Error naming the dataset when the lengths cannot be the
// microbatches of one split with these options (data-parallel shards of
// unequal length, a microbatch not divisible by the degree, an input
// without the leading 0 of its offsets).
// Each input's bytes of data (what merge's progress counts): its rows of
// every cut dataset, and every other dataset whole (as the first input holds
// it), at their size in the file.
std::vector<std::uint64_t> input_bytes(const NodeInfo& first, const MergePlan& plan, std::size_t inputs);

MergePlan plan_merge(const NodeInfo& first, const Resolution& resolution, const InputLengths& lengths,
                     const DataParallel& dp, FileLayout layout);

}  // namespace mb
