#pragma once
// The split plan: how many microbatches, and which rows of each split dataset
// go into each. -n N cuts every split axis as numpy.array_split does (the
// first L mod N pieces get floor(L/N)+1 rows, the rest floor(L/N)),
// --micro-batch-size M into pieces of M rows, the last shorter (torch.split),
// or left out with --drop-last (DataLoader's drop_last); packed sequences are
// never cut in half.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/context_parallel.hpp"
#include "core/layout.hpp"
#include "core/packed.hpp"
#include "core/partition.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"

namespace mb {

enum class OnShort { Error, Downsize, Empty };

// How packed sequences are shared out: fewest tokens in the largest cell
// (default), array_split of the sequence count, or least causal attention
// work (sum of L·(L+1)/2 over its sequences) in the largest cell.
enum class Balance { Tokens, Sequences, Attention };

// Beyond this many microbatches a request is taken for a typo.
inline constexpr std::uint64_t kMaxMicrobatches = 1'000'000;

struct SplitOptions {
  std::optional<std::uint64_t> count;             // -n N: number of microbatches
  std::optional<std::uint64_t> micro_batch_size;  // --micro-batch-size M
  OnShort on_short = OnShort::Error;
  DataParallel dp;                                // --dp-degree D, --align
  FileLayout layout = FileLayout::PerMicrobatch;  // --layout
  Balance balance = Balance::Tokens;              // --balance
  std::uint64_t cp_degree = 1;                    // --cp-degree C
  // --cp-pad: a packed document whose length 2C does not divide is padded
  // at its end to the next multiple of 2C (core/context_parallel.hpp).
  bool cp_pad = false;
  // --drop-last: the split is that of the longest prefix of whole
  // microbatches (of M * D rows, or M sequences); the rows after it are left out.
  bool drop_last = false;
  // --allow-copies: a spec that splits no dataset is taken as meant (every
  // file a whole copy of the input), not refused.
  bool allow_copies = false;
};

// Values of every "offsets" dataset, by path, exact as read (io reads them
// before planning; the plan checks them).
using OffsetsValues = std::map<std::string, RawOffsets>;

// Packed sequences of a plan: which sequences, how many tokens (summed over
// the offsets datasets) and how much causal attention work each cell holds.
// A cell is one data-parallel rank's microbatch: with --dp-degree D there
// are D·N of them, rank-major (cell (d, i) is runs[d·N + i]); rank d holds
// a contiguous run of sequences, and the sequences keep their order.
struct SequencePlan {
  std::vector<std::string> offsets;  // paths of the offsets datasets
  std::uint64_t sequences = 0;
  std::uint64_t tokens = 0;
  std::uint64_t work = 0;   // sum of L·(L+1)/2 (0 with run_work empty: more than 64 bits)
  std::uint64_t ranks = 1;  // data-parallel ranks the cells are cut for
  std::vector<Range> runs;                // per cell
  std::vector<std::uint64_t> run_tokens;  // per cell
  std::vector<std::uint64_t> run_work;    // per cell, when the work fits 64 bits
};

struct SplitPlan {
  std::uint64_t count = 0;  // number of microbatches
  FileLayout layout = FileLayout::PerMicrobatch;
  std::uint64_t ranks = 1;  // per-rank layout: files per microbatch (the data-parallel degree)
  std::uint64_t cp = 1;     // context-parallel degree: files per (rank, microbatch)
  FileGrid grid() const { return {ranks, cp, count}; }
  std::uint64_t files() const { return grid().files(); }
  // Per split dataset (by path): its rows in each output file (file order:
  // FileGrid's, rank, CP rank, microbatch).
  std::map<std::string, std::vector<RowMap>> pieces;
  // Context parallelism: per dataset with a sequence axis (by path), its
  // positions along that axis in each output file.
  std::map<std::string, std::vector<RowMap>> positions;
  // --cp-pad: per packed dataset (by path), per output file, the file rows
  // its rows (`pieces`) fill and the file's length; the other rows are pads.
  // Offsets datasets then hold each rank's real tokens per document, and
  // beside each, padded_offsets_name() holds its padded documents' offsets.
  std::map<std::string, std::vector<FileRows>> padded;
  bool cp_pad = false;
  // Context parallelism: how evenly CP ranks share the attention work, of
  // every offsets dataset's documents and of each sequence length marked.
  std::vector<CpLoad> cp_loads;
  std::optional<SequencePlan> sequences;  // when the spec has packed sequences
  // --drop-last: the rows (of every split axis; sequences when packed) left
  // out at the end of the batch.
  std::uint64_t dropped = 0;
  std::vector<std::string> warnings;
};

// Checks that the resolution can be split (no reducers) and cuts every split
// dataset. Throws mb::Error naming the dataset when a length does not allow
// the requested cut.
SplitPlan plan_split(const NodeInfo& root, const Resolution& resolution, const SplitOptions& options,
                     const OffsetsValues& offsets = {});

}  // namespace mb
