#pragma once
// Merges microbatch files back into one batch: concatenation of split
// leaves, exact equality of replicated leaves and attributes, reducers.
#include <string>
#include <vector>

#include "core/layout.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "io/copy.hpp"
#include "io/split_writer.hpp"

namespace mb::io {

struct MergeInput {
  std::string path;
  std::string label;  // "microbatch 3 (dir/microbatch-00003.h5)", for messages
};

struct MergeJob {
  std::vector<MergeInput> inputs;
  std::string output;
  bool force = false;
  DataParallel dp;  // the layout the microbatches were split with
  FileLayout layout = FileLayout::PerMicrobatch;
  // Split leaves become virtual datasets over the inputs (recorded by their
  // absolute paths) instead of copies.
  bool virtual_datasets = false;
  std::size_t buffer_bytes = h5::kDefaultBufferBytes;
  Progress progress;
};

// The inputs, opened once for the structure check and the copy (a reopened
// file would read all its metadata again), and the tree they share.
struct MergeSources {
  std::vector<h5::Id> files;
  NodeInfo tree;
};

// Opens every input and reads the first's tree.
MergeSources open_merge_sources(const std::vector<MergeInput>& inputs);

// Writes the merged file, checking on the way that every input has the
// first's tree (same groups, datasets and attribute names). On any error no
// file is left at job.output.
void write_merge(const MergeJob& job, const MergeSources& sources, const Resolution& resolution);

}  // namespace mb::io
