#pragma once
// Context-parallel layout (--cp-degree C): long sequences are also cut
// across C ranks. Causal attention makes late positions costlier (position
// p attends to p+1 positions), so each sequence is cut into 2C equal stripes
// and CP rank r holds stripes r and 2C-1-r, in that order (the "zigzag" or
// head-tail order of Megatron-LM, Transformer Engine and PyTorch): every
// rank then does the same attention work. Padded datasets are cut so along
// the sequence axis their spec marks; packed sequences per document.
#include <cstdint>
#include <string>
#include <vector>

#include "core/layout.hpp"
#include "core/packed.hpp"
#include "core/partition.hpp"

namespace mb {

// The positions CP rank `rank` of `degree` holds of `document` (a range of
// the batch's axis whose length is divisible by 2 * degree), appended to
// `map`; a segment that continues the map's last one is joined to it.
void append_zigzag(RowMap& map, const Range& document, std::uint64_t degree, std::uint64_t rank);

// Of every document in turn (in batch coordinates).
RowMap zigzag(const std::vector<Range>& documents, std::uint64_t degree, std::uint64_t rank);

// The documents of a packed microbatch: sequences [run.begin, run.end) of
// `offsets`, in the batch's coordinates.
std::vector<Range> documents_of(const Offsets& offsets, const Range& run);

// The documents a CP rank's file describes, put back in the batch: of
// these lengths, laid one after the other along `whole`, the batch rows
// its microbatch's documents fill (unit-stride segments, one per
// data-parallel cell, none cutting a document). Throws mb::Error when they
// do not fit `whole`.
std::vector<Range> documents_along(const std::vector<std::uint64_t>& lengths, const RowMap& whole);

// Refuses a sequence length that 2 * degree does not divide; `what` says
// whose ("/input_ids has 6 positions on its sequence axis 1").
void require_zigzag_divisible(std::uint64_t length, std::uint64_t degree, const std::string& what);

// Per document, refuses a length that 2 * degree does not divide, naming
// the offsets dataset, the sequence and its length: never rounded down.
void require_documents_divisible(const Offsets& offsets, std::uint64_t degree, const std::string& what);

// --cp-pad: a document of `length` tokens is padded at its end to the next
// multiple of 2C, as Transformer Engine's THD format with context
// parallelism expects; CP rank r then holds stripes r and 2C-1-r of the
// padded document (thd_get_partitioned_indices), pads included.
std::uint64_t padded_length(std::uint64_t length, std::uint64_t degree);

// The real tokens (positions below `length`) CP rank `rank` holds of a
// document padded so.
std::uint64_t real_share(std::uint64_t length, std::uint64_t degree, std::uint64_t rank);

// Rows of a file that are not all its own: `rows` (rising) of `length`.
struct FileRows {
  RowMap rows;
  std::uint64_t length = 0;
  friend bool operator==(const FileRows&, const FileRows&) = default;
};

// CP rank `rank`'s padded file of `documents` (batch ranges of real
// tokens): `batch` the real tokens it holds, in order, and `file` the rows
// they fill, segment k of one paired with segment k of the other (of equal
// counts); the file's other rows are pads. Without padding (every length
// divisible by 2C) the batch map is zigzag()'s and the file rows all of it.
struct PaddedCut {
  RowMap batch;
  FileRows file;
};
PaddedCut padded_zigzag(const std::vector<Range>& documents, std::uint64_t degree, std::uint64_t rank);

// The rows of [0, length) that `rows` (rising, unit stride) does not hold.
RowMap complement(const RowMap& rows, std::uint64_t length);

// Causal attention work of a set of positions within one sequence: the sum
// of (position + 1), each position attending to itself and all before it.
std::uint64_t causal_work(const RowMap& positions);

// How evenly CP ranks share the causal attention work of `what` (an
// offsets dataset: every document; a dataset with a sequence axis: one
// sequence), per CP rank: tokens held, work of the zigzag cut, and the work
// a contiguous cut into C parts would give, against the ideal total / C.
struct CpLoad {
  std::string what;
  std::vector<std::uint64_t> tokens, work, contiguous;
  std::uint64_t total_work = 0;
};

// Of documents of these lengths (each divisible by 2 * degree).
CpLoad cp_load(const std::string& what, const std::vector<std::uint64_t>& lengths, std::uint64_t degree);

// The order of a split's files: data-parallel rank (per-rank layout), then
// CP rank, then microbatch, so that a glob lists each CP rank's files
// together and in order.
struct FileGrid {
  std::uint64_t ranks = 1;  // data-parallel ranks with files of their own (per-rank layout), else 1
  std::uint64_t cp = 1;     // context-parallel degree
  std::uint64_t microbatches = 0;

  std::uint64_t files() const { return ranks * cp * microbatches; }
  std::uint64_t rank_of(std::uint64_t file) const { return file / (cp * microbatches); }
  std::uint64_t cp_rank_of(std::uint64_t file) const { return file / microbatches % cp; }
  std::uint64_t microbatch_of(std::uint64_t file) const { return file % microbatches; }
  // The file of the same rank and microbatch without CP: what every CP
  // rank's file is cut from.
  std::uint64_t base_of(std::uint64_t file) const { return rank_of(file) * microbatches + microbatch_of(file); }
  // The file of the same rank and microbatch for CP rank `cp_rank`.
  std::uint64_t file_of(std::uint64_t base, std::uint64_t cp_rank) const {
    return (base / microbatches * cp + cp_rank) * microbatches + base % microbatches;
  }
};

}  // namespace mb
