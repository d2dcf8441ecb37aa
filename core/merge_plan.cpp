#include "core/merge_plan.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

// Offsets: input 0's rows as they are, every later input's rows after its
// leading 0 (which the merged offsets hold once).
MergedLeaf plan_offsets(const NodeInfo& node, const std::vector<std::uint64_t>& lengths) {
  MergedLeaf leaf{0, node.shape, {}};
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] == 0)
      throw Error(fmt::format("{}: microbatch {} holds no offsets (they start with 0)", node.path, i));
    const std::uint64_t skip = i == 0 ? 0 : 1;
    leaf.maps.push_back({{at, lengths[i] - skip, 1}});
    at += lengths[i] - skip;
  }
  leaf.dims[0] = at;
  return leaf;
}

MergedLeaf plan_rows(const NodeInfo& node, std::size_t axis, const std::vector<std::uint64_t>& lengths,
                     const DataParallel& dp, FileLayout layout) {
  MergedLeaf leaf{axis, node.shape, merge_maps(lengths, dp, layout, node.path)};
  std::uint64_t total = 0;
  for (auto n : lengths) total += n;
  leaf.dims[axis] = total;
  return leaf;
}

}  // namespace

const MergedLeaf* MergePlan::leaf(const std::string& path) const {
  const auto it = leaves.find(path);
  return it == leaves.end() ? nullptr : &it->second;
}

std::vector<const NodeInfo*> cut_datasets(const NodeInfo& first, const Resolution& resolution) {
  std::vector<const NodeInfo*> out;
  for_each_node(first, [&](const NodeInfo& node) {
    if (!node.is_group() && !node.is_further_name() && resolution.dataset_rule(node.path).cuts_rows())
      out.push_back(&node);
  });
  return out;
}

MergePlan plan_merge(const NodeInfo& first, const Resolution& resolution, const InputLengths& lengths,
                     const DataParallel& dp, FileLayout layout) {
  MergePlan plan;
  for (const NodeInfo* node : cut_datasets(first, resolution)) {
    const LeafRule& rule = resolution.dataset_rule(node->path);
    const auto& per_input = lengths.at(node->path);
    plan.leaves[node->path] = rule.mode == LeafRule::Mode::Offsets
                                  ? plan_offsets(*node, per_input)
                                  : plan_rows(*node, static_cast<std::size_t>(rule.axis), per_input, dp, layout);
  }
  return plan;
}

std::vector<std::uint64_t> input_bytes(const NodeInfo& first, const MergePlan& plan, std::size_t inputs) {
  std::vector<std::uint64_t> bytes(inputs, 0);
  for_each_node(first, [&](const NodeInfo& ds) {
    if (ds.is_group() || ds.is_further_name() || ds.null_space) return;
    const MergedLeaf* leaf = plan.leaf(ds.path);
    if (!leaf) {
      for (auto& b : bytes) b += element_count(ds.shape) * ds.element_size;
      return;
    }
    std::uint64_t row = ds.element_size;  // bytes of one row along the cut axis
    for (std::size_t d = 0; d < leaf->dims.size(); ++d)
      if (d != leaf->axis) row *= leaf->dims[d];
    for (std::size_t i = 0; i < inputs && i < leaf->maps.size(); ++i) bytes[i] += rows_in(leaf->maps[i]) * row;
  });
  return bytes;
}

}  // namespace mb
