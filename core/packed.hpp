#pragma once
// Packed variable-length sequences: S sequences back to back along one axis,
// described by offsets of S+1 rising integers from 0 (FlashAttention's
// cu_seqlens). A microbatch gets a contiguous run of whole sequences, so no
// sequence is cut in half.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/layout.hpp"
#include "core/partition.hpp"

namespace mb {

// An offsets dataset's values as read, exact whatever its integer type: a
// signed dataset's as int64, an unsigned one's as uint64 (a uint64 offset
// of 2^63 or more must not pass through int64).
using RawOffsets = std::variant<std::vector<std::int64_t>, std::vector<std::uint64_t>>;

// Offsets once checked: they start at 0 and never fall, so every value is
// non-negative and exact as unsigned 64-bit, whatever the dataset's type.
using Offsets = std::vector<std::uint64_t>;

// Checks that `offsets` start at 0 and never fall; `what` names the dataset.
// Returns them as unsigned values (offsets.size() - 1 sequences).
Offsets check_offsets(const RawOffsets& offsets, const std::string& what);

// The rules that tie a file's packed datasets to its offsets, the same for
// split's input and for every input of a merge. `what` names the dataset.
struct SequenceLeaf {
  const std::string& what;
  int axis;
  std::uint64_t length;         // along `axis`
  const std::string& offsets;   // path of its offsets dataset
};
// Token-level data: its length is the last offset.
void check_packed_length(const SequenceLeaf& leaf, const Offsets& offsets);
// Per-sequence data: its length is the sequence count.
void check_per_sequence_length(const SequenceLeaf& leaf, const Offsets& offsets);
// Several offsets datasets of one file describe the same sequence count.
void check_same_sequences(const std::string& first, const Offsets& a, const std::string& other, const Offsets& b);

// Tokens per sequence summed over several offsets datasets of the same
// sequence count (cu_seqlens_q and cu_seqlens_k are balanced together).
// Refuses token counts whose total does not fit 64 bits, so that every sum
// of tokens computed from them is exact.
std::vector<std::uint64_t> sequence_tokens(const std::vector<Offsets>& offsets_sets);

// The dataset split --cp-pad writes beside offsets dataset `path`:
// PATH_padded, its padded documents' offsets (Transformer Engine's
// cu_seqlens_padded).
std::string padded_offsets_name(const std::string& path);

// The dataset a default-layout --dp-degree D split writes beside offsets
// dataset `path`: PATH_dp_bounds, D+1 sequence indices of the file, rank d's
// sequences being [b[d], b[d+1]). The file holds cells (0, i) .. (D-1, i)
// back to back, and without it only the manifest says where one ends.
std::string rank_bounds_name(const std::string& path);

// Those bounds for microbatch `microbatch` of cells `runs` (rank-major: cell
// (d, i) is runs[d * N + i], N = runs.size() / ranks): from 0, each rank's
// cell's sequence count added.
Offsets rank_bounds(const std::vector<Range>& runs, std::uint64_t ranks, std::uint64_t microbatch);

// Refuses bounds stored in a file (`what` names it and the dataset) other
// than `expected`, or that do not end at the file's sequence count.
void check_rank_bounds(const std::string& what, const Offsets& stored, const Offsets& expected,
                       std::uint64_t sequences);

// Causal attention work per sequence: L * (L + 1) / 2 for a sequence of L
// tokens (each token attends to itself and those before it), summed over
// several offsets datasets. Refuses a total that does not fit 64 bits.
std::vector<std::uint64_t> sequence_work(const std::vector<Offsets>& offsets_sets);

// Cuts S sequences of these weights (tokens or work) into `pieces`
// contiguous runs so that the heaviest run weighs as little as possible
// (the exact optimum: binary search on the heaviest run, greedy
// feasibility). Runs are non-empty while there are sequences left; with
// fewer sequences than pieces the last runs are empty.
std::vector<Range> balance_runs(const std::vector<std::uint64_t>& weights, std::uint64_t pieces);

// Weight of each run (its tokens, or its work).
std::vector<std::uint64_t> run_weights(const std::vector<std::uint64_t>& weights, const std::vector<Range>& runs);

// The offsets rows of a file holding these runs of sequences, in order:
// the first run's rows [begin, end] (its leading offset and one per
// sequence), every later run's rows (begin, end] (one per sequence, the
// file's offsets running on). The rows hold S + 1 values for S sequences.
// Empty runs after the first add nothing.
RowMap offsets_rows(const std::vector<Range>& runs);

// The inverse: the runs of sequences (as one segment each) that offsets
// rows laid out so describe. Throws mb::Error naming `what` for rows that
// are not so laid out.
RowMap sequences_of_offsets_rows(const RowMap& rows, const std::string& what);

// The lengths of a file's sequences, from the input's values of its
// offsets rows (offsets_rows), each segment read with the row before it
// but the first.
std::vector<std::uint64_t> file_lengths(const std::vector<Offsets>& segments);

// Offsets from 0 of sequences of these lengths (their sum fits 64 bits:
// each is at most an input's, or a CP rank's share of one, padded).
Offsets offsets_of(const std::vector<std::uint64_t>& lengths);

}  // namespace mb
