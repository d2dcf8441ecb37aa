#pragma once
// Where each input's rows go in the merged batch, known before any input's
// data is read: the merged extent of every dataset whose rows were cut, and
// each input's row map, from how many rows each input holds along the cut
// axis (the manifest says, or one pass over the inputs' shapes). Merge can
// then open each input once, write its rows where they belong and close it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/context_parallel.hpp"
#include "core/layout.hpp"
#include "core/packed.hpp"
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
  std::vector<std::uint64_t> held;  // per input, its length along `axis` (what the plan was made from)
  // Context parallelism: the sequence axis, if the leaf has one, and per
  // input its positions along it.
  std::optional<std::size_t> sequence_axis;
  std::vector<RowMap> positions;
  // The same in the files of every CP rank of one (rank, microbatch): only
  // CP rank 0's is written, the others are checked equal to it.
  bool shared = false;
};

struct MergePlan {
  std::map<std::string, MergedLeaf> leaves;
  FileGrid grid;  // which (rank, CP rank, microbatch) each input is; CP only
  // Null for a dataset whose rows are not cut (replicated, reduced).
  const MergedLeaf* leaf(const std::string& path) const;
  // The input of CP rank 0 with the same rank and microbatch as `input`.
  std::size_t twin(std::size_t input) const;
};

// Context parallelism on merge: the degree the inputs were split with and,
// when the spec has packed sequences, every input's offsets (by path): the
// file of CP rank r holds, of every document, that rank's zigzag tokens.
struct ContextParallelInputs {
  std::uint64_t degree = 1;
  std::map<std::string, std::vector<Offsets>> offsets;
};

// The datasets of `first` (the first input's tree) whose rule cuts rows.
std::vector<const NodeInfo*> cut_datasets(const NodeInfo& first, const Resolution& resolution);

// Throws mb::Error naming the dataset when the lengths cannot be the
// microbatches of one split with these options (data-parallel slices of
// unequal length, a microbatch not divisible by the degree, an input
// without the leading 0 of its offsets, CP ranks of unequal lengths).
// Each input's bytes of data (what merge's progress counts): its rows of
// every cut dataset, and every other dataset whole (as the first input holds
// it), at their size in the file.
std::vector<std::uint64_t> input_bytes(const NodeInfo& first, const MergePlan& plan, std::size_t inputs);

MergePlan plan_merge(const NodeInfo& first, const Resolution& resolution, const InputLengths& lengths,
                     const DataParallel& dp, FileLayout layout, const ContextParallelInputs& cp = {});

}  // namespace mb
