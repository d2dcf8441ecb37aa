#pragma once
// Which output files of a split can be copies of another.
//
// libhdf5 lays a file out from the calls made to it, not from the values
// written, and split's outputs are reproducible (no timestamps): two
// microbatch files whose datasets have the same shapes are the same bytes
// but inside their datasets' data. So of each class of files with the same
// shapes one, the model, is written through libhdf5, and the others are
// copies of it with their own data written over the model's (io/split/
// clone.hpp). This file decides the classes; io/ checks each model's
// layout before any copy is made of it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "core/shards.hpp"
#include "core/tree.hpp"

namespace mb {

// A dataset whose data differs from file to file: one the plan cuts.
struct PatchedDataset {
  const NodeInfo* node;
  std::size_t axis;
  // Context parallelism: also cut along this axis by the plan's positions.
  std::optional<std::size_t> sequence_axis;
};

struct CloneClass {
  std::uint64_t model;                // written through libhdf5
  std::vector<std::uint64_t> copies;  // the same shapes: copies of the model
};

struct ClonePlan {
  std::vector<PatchedDataset> patched;
  // Every file of the range in exactly one class, in file order of models.
  std::vector<CloneClass> classes;
};

// The classes of files [files.begin, files.end). Every file is its own
// class (nothing is copied) when some file's data is not only rows of the
// input: rebased offsets, derived values, or packed documents shared out
// among context-parallel ranks.
ClonePlan plan_clones(const NodeInfo& tree, const Resolution& resolution, const SplitPlan& plan,
                      const FileRange& files);

// The shape of patched dataset `d` in output file `file`.
Shape piece_shape(const PatchedDataset& d, const SplitPlan& plan, std::uint64_t file);

// A run of bytes of a file.
struct ByteSpan {
  std::uint64_t begin = 0, size = 0;
  std::uint64_t end() const { return begin + size; }
  friend bool operator==(const ByteSpan&, const ByteSpan&) = default;
};

// The bytes of a file of `size` bytes outside `spans` (in any order; empty
// ones ignored), in order; none when two spans overlap or one passes the
// end, which no file libhdf5 wrote has. Merge compares an input with the
// model there (io/merge/copies.cpp).
std::optional<std::vector<ByteSpan>> outside(std::vector<ByteSpan> spans, std::uint64_t size);

}  // namespace mb
