#pragma once
// Row maps: which rows of a split axis make up one microbatch. A microbatch
// is usually one contiguous range, but the data-parallel layout makes it a
// concatenation of one piece per data-parallel slice, and align mode makes
// each piece a strided run. HDF5 hyperslabs take strides, so a row map is
// copied as is.
#include <cstdint>
#include <string>
#include <vector>

#include "core/partition.hpp"

namespace mb {

// Rows begin, begin + stride, ..., count of them (Python: [begin:stop:stride]).
struct Segment {
  std::uint64_t begin = 0;
  std::uint64_t count = 0;
  std::uint64_t stride = 1;
  std::uint64_t stop() const { return count == 0 ? begin : begin + (count - 1) * stride + 1; }
  friend bool operator==(const Segment&, const Segment&) = default;
};

// The rows of one microbatch, in order. No segment is empty (count 0): a
// microbatch without rows has no segment, and code that reads a segment's
// first or last row relies on it.
using RowMap = std::vector<Segment>;

std::uint64_t rows_in(const RowMap& map);

// Appends rows [begin, begin + count) to `map`, joined to its last segment
// when they continue it (nothing for count 0).
void append_rows(RowMap& map, std::uint64_t begin, std::uint64_t count);

// Data-parallel layout (PaddlePaddle's microbatch code): the split axis of
// length L holds D = `degree` contiguous slices of R = L/D rows; with
// `align`, new row s*R + r is old row s + r*D, i.e. slice s is the rows
// s, s+D, s+2D, ...
struct DataParallel {
  std::uint64_t degree = 1;
  bool align = false;
};

// How outputs are cut into files: one per microbatch (each holding piece i of
// every slice), or one per (data-parallel rank, microbatch) so that each
// rank's loader opens only its own; files are then rank-major.
enum class FileLayout { PerMicrobatch, PerRank };

// Row map of `piece` (a range of rows within a slice) of slice `slice`.
Segment slice_segment(std::uint64_t slice_length, const DataParallel& dp, std::uint64_t slice, const Range& piece);

// Microbatch i = piece i of every slice, slices in order. `pieces` cut one
// slice (of length L/D).
std::vector<RowMap> data_parallel_maps(std::uint64_t length, const DataParallel& dp, const std::vector<Range>& pieces);

// File (s, i) of the per-rank layout = piece i of slice s; rank-major.
std::vector<RowMap> per_rank_maps(std::uint64_t length, const DataParallel& dp, const std::vector<Range>& pieces);

// The row maps that put files of the given lengths (in file order) back in
// place: the inverse of data_parallel_maps (each length a multiple of the
// degree) or of per_rank_maps (every rank's pieces adding up to the same
// slice length). With degree 1 both are consecutive ranges. `what` names
// the dataset in errors.
std::vector<RowMap> merge_maps(const std::vector<std::uint64_t>& lengths, const DataParallel& dp, FileLayout layout,
                               const std::string& what);

}  // namespace mb
