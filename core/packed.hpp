#pragma once
// Packed variable-length sequences: S sequences back to back along one axis,
// described by offsets of S+1 rising integers from 0 (FlashAttention's
// cu_seqlens). A microbatch gets a contiguous run of whole sequences, so no
// sequence is cut in half.
#include <cstdint>
#include <string>
#include <vector>

#include "core/partition.hpp"

namespace mb {

// Checks that `offsets` start at 0 and never fall; `what` names the dataset.
// Returns the sequence count S (offsets.size() - 1).
std::uint64_t check_offsets(const std::vector<std::int64_t>& offsets, const std::string& what);

// Tokens per sequence summed over several offsets datasets of the same
// sequence count (cu_seqlens_q and cu_seqlens_k are balanced together).
std::vector<std::uint64_t> sequence_tokens(const std::vector<std::vector<std::int64_t>>& offsets_sets);

// Cuts S sequences into `pieces` contiguous runs so that the largest run
// holds as few tokens as possible (the exact optimum: binary search on the
// largest run, greedy feasibility). Runs are non-empty while there are
// sequences left; with fewer sequences than pieces the last runs are empty.
std::vector<Range> balance_tokens(const std::vector<std::uint64_t>& tokens, std::uint64_t pieces);

// Token count of each run.
std::vector<std::uint64_t> run_tokens(const std::vector<std::uint64_t>& tokens, const std::vector<Range>& runs);

}  // namespace mb
