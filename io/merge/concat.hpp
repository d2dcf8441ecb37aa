#pragma once
// Concatenation: each input's rows go back where the split took them from.
// Small results are assembled in memory across the inputs and written at
// the last; offsets are shifted past the tokens of the inputs before.
#include <map>
#include <string>

#include "io/h5/dataset.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merge {

struct MergeState;  // state.hpp

// What concatenation carries from one input to the next.
struct ConcatState {
  std::map<std::string, h5::Buffer> assembled;  // small results (of interned types), written at the last input
  // Where assembled results allocated at creation lie in the output
  // (allocate_assembly), and the output's file descriptor: the last input
  // writes them there as file bytes rather than reopening each dataset.
  std::map<std::string, std::uint64_t> placed;
  int output_fd = -1;
  std::uint64_t placed_written = 0;             // how many were
  std::map<std::string, std::uint64_t> tokens;  // offsets: the tokens of the inputs merged so far
};

// The input's rows where the split took them from: into the result
// assembled in memory (taking from the budget at input 0), or this rank's
// share of a team merge; notes the model's data for copies.
void concatenate(const Context& ctx, MergeState& state, const DatasetPair& in, const MergedLeaf& leaf, hid_t dst);
// Before input 0 creates a split dataset's output: a result small enough to
// be assembled in memory, of a type whose elements are its file bytes, gets
// its storage at creation, whatever the path taken later, so that merged
// files do not depend on it.
void allocate_assembly(const Context& ctx, const std::string& path, const MergedLeaf& leaf, h5::Prototype& prototype);
// Whether the result assembled for `path` is written at the last input as
// file bytes where it lies, with no need of its output dataset.
bool placed(const ConcatState& state, const std::string& path);
// At the last input, writes the result assembled in memory (if it was) to
// `dst`, which may be invalid when the result is placed, and gives its
// bytes back to the budget.
void write_assembled(const Context& ctx, MergeState& state, const std::string& path, const MergedLeaf& leaf,
                     hid_t dst);
// The input's offsets, shifted past the tokens of the inputs before it.
void concatenate_offsets(const Context& ctx, ConcatState& state, const DatasetPair& in, const MergedLeaf& leaf,
                         hid_t dst);
// The input's offsets datasets, checked as split checks its input (from 0,
// rising, the same sequence count in each).
InputOffsets read_input_offsets(const Context& ctx, hid_t file);
// Packed and per-sequence lengths agree with the input's offsets.
void check_sequence_lengths(const Context& ctx, const DatasetPair& in, const LeafRule& rule);

}  // namespace mb::io::merge
