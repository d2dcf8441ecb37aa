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
  // Offsets of packed sequences placed out of input order, or padded
  // (PackedInputs): the merged values, each input writing its rows of them.
  Offsets values;
  // --cp-pad: per input, the rows of the input its rows come from, segment
  // k paired with segment k of its map (the pads between are left out);
  // empty: the map's rows packed from 0.
  std::vector<RowMap> placed;
};

struct MergePlan {
  std::map<std::string, MergedLeaf> leaves;
  FileGrid grid;  // which (rank, CP rank, microbatch) each input is; CP only
  // Null for a dataset whose rows are not cut (replicated, reduced).
  const MergedLeaf* leaf(const std::string& path) const;
  // The input of CP rank 0 with the same rank and microbatch as `input`.
  std::size_t twin(std::size_t input) const;
};

// What merge needs to put packed sequences back beyond their row counts.
// Context parallelism: the degree the inputs were split with; the file of
// CP rank r holds, of every document, that rank's zigzag tokens. Packed
// sequences cut across data-parallel ranks in the per-microbatch layout:
// each file (before the CP cut) holds one cell of every rank, so its
// sequences are runs of the batch's out of input order; `sequences` gives
// them per such file (from the split's manifest). With either, every
// input's offsets (by path; of CP rank r's file, its shares).
// --cp-pad: each CP rank's offsets hold its real tokens of every document
// (a document's length is their sum) and `padded` (by the offsets' path)
// every input's padded offsets beside them, checked against the documents.
struct PackedInputs {
  std::uint64_t degree = 1;
  std::map<std::string, std::vector<Offsets>> offsets;
  std::vector<RowMap> sequences;  // empty: in input order
  bool pad = false;
  std::map<std::string, std::vector<Offsets>> padded;
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
                     const DataParallel& dp, FileLayout layout, const PackedInputs& cp = {});

}  // namespace mb
