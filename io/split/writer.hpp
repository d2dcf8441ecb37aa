#pragma once
// Writes a batch of output files of a split plan from the input's tree:
// the input is walked once per batch, and each object is read once for all
// the outputs of the batch.
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "core/shards.hpp"
#include "core/tree.hpp"
#include "io/h5/handle.hpp"
#include "io/transfer/policy.hpp"

namespace mb::io::tree {
class Held;  // io/tree/held.hpp
}  // namespace mb::io::tree

namespace mb::io::split {

class ModelNotes;  // io/split/clone.hpp

struct SplitSource {
  hid_t file;
  std::string name;  // for messages
  const NodeInfo& tree;
  const Resolution& resolution;
  const SplitPlan& plan;
  transfer::Policy policy;
  ModelNotes* notes = nullptr;  // told of every dataset written, when some files are copies
  tree::Held* held = nullptr;   // small datasets kept from the tree's walk, not opened again
};

// Writes output files `files` (indices in the plan) into the open
// `outputs`, one for each; `names` are their final paths, for messages.
void write_outputs(const SplitSource& source, const std::vector<std::uint64_t>& files,
                   const std::vector<h5::Id>& outputs, const std::vector<std::string>& names);

// The bytes of data write_outputs writes into all the output files (what
// its progress meter counts): each dataset's elements in each output, at
// its size in the file; of output files `files` only (a shard's).
std::uint64_t split_bytes(const NodeInfo& tree, const Resolution& resolution, const SplitPlan& plan,
                          const FileRange& files);

}  // namespace mb::io::split
