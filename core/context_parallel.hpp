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

// The documents a CP rank's file describes, put back in the batch: its own
// offsets (each document's share, L/C tokens) scaled by the degree, from
// `begin`, the batch row where its microbatch starts.
std::vector<Range> documents_from_share(const Offsets& share, std::uint64_t degree, std::uint64_t begin);

// Refuses a sequence length that 2 * degree does not divide; `what` says
// whose ("/input_ids has 6 positions on its sequence axis 1").
void require_zigzag_divisible(std::uint64_t length, std::uint64_t degree, const std::string& what);

// Per document, refuses a length that 2 * degree does not divide, naming
// the offsets dataset, the sequence and its length: never rounded down.
void require_documents_divisible(const Offsets& offsets, std::uint64_t degree, const std::string& what);

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
