#include "core/merge_plan.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {
namespace {

// Offsets: input 0's rows as they are, every later input's rows after its
// leading 0 (which the merged offsets hold once).
MergedLeaf plan_offsets(const NodeInfo& node, const std::vector<std::uint64_t>& lengths) {
  MergedLeaf leaf{0, node.shape, {}, {}, {}, {}, false};
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
  MergedLeaf leaf{axis, node.shape, merge_maps(lengths, dp, layout, node.path), {}, {}, {}, false};
  std::uint64_t total = 0;
  for (auto n : lengths) total += n;
  leaf.dims[axis] = total;
  return leaf;
}

// Context parallelism: the lengths of the files as they were before the CP
// cut (per rank and microbatch), from every CP rank's file. Packed data is
// shared out among the CP ranks (every rank holds L/C of each document);
// everything else is the same length in every CP rank's file.
std::vector<std::uint64_t> base_lengths(const NodeInfo& node, bool packed, const std::vector<std::uint64_t>& lengths,
                                        const FileGrid& grid) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = 0; b < grid.ranks * grid.microbatches; ++b) {
    const std::uint64_t first = lengths[grid.file_of(b, 0)];
    for (std::uint64_t r = 1; r < grid.cp; ++r)
      if (lengths[grid.file_of(b, r)] != first)
        throw Error(fmt::format("{}: input {} (CP rank {}) holds {} rows, input {} (CP rank 0 of the same "
                                "microbatch) {}: the CP ranks of a split hold as many",
                                node.path, grid.file_of(b, r), r, lengths[grid.file_of(b, r)], grid.file_of(b, 0),
                                first));
    out.push_back(packed ? first * grid.cp : first);
  }
  return out;
}

// Packed data under CP: every input's rows are, of each document its own
// offsets describe, the rank's zigzag tokens.
void place_documents(const std::string& path, const std::vector<Offsets>& shares, const FileGrid& grid,
                     MergedLeaf& leaf) {
  for (std::uint64_t f = 0; f < grid.files(); ++f) {
    const Offsets& share = shares.at(f);
    for (std::size_t s = 0; s + 1 < share.size(); ++s)
      if ((share[s + 1] - share[s]) % 2 != 0)
        throw Error(fmt::format("{}: input {} (CP rank {}) holds {} tokens of sequence {}, not the two equal stripes "
                                "of a CP split",
                                path, f, grid.cp_rank_of(f), share[s + 1] - share[s], s));
    const RowMap& whole = leaf.maps[f];  // the microbatch's rows, all documents whole
    leaf.maps[f] = zigzag(documents_from_share(share, grid.cp, whole.empty() ? 0 : whole.front().begin), grid.cp,
                          grid.cp_rank_of(f));
  }
}

// A leaf of a CP split: planned as the files before the CP cut, then given
// to every CP rank's file.
MergedLeaf plan_cp_leaf(const NodeInfo& node, const LeafRule& rule, const std::vector<std::uint64_t>& lengths,
                        const DataParallel& dp, FileLayout layout, const FileGrid& grid,
                        const ContextParallelInputs& cp) {
  const bool packed = rule.mode == LeafRule::Mode::Packed;
  const auto base = base_lengths(node, packed, lengths, grid);
  const MergedLeaf merged = rule.mode == LeafRule::Mode::Offsets
                                ? plan_offsets(node, base)
                                : plan_rows(node, static_cast<std::size_t>(rule.axis), base, dp, layout);
  MergedLeaf leaf{merged.axis, merged.dims, {}, lengths, {}, {}, !packed && !rule.sequence_axis};
  for (std::uint64_t f = 0; f < grid.files(); ++f) leaf.maps.push_back(merged.maps[grid.base_of(f)]);
  if (packed) place_documents(node.path, cp.offsets.at(rule.offsets), grid, leaf);
  if (rule.sequence_axis) {
    const auto axis = static_cast<std::size_t>(*rule.sequence_axis);
    if (node.shape[axis] % 2 != 0)
      throw Error(fmt::format("{}: {} positions on its sequence axis {}, not the two equal stripes of a CP split",
                              node.path, node.shape[axis], axis));
    leaf.sequence_axis = axis;
    leaf.dims[axis] = node.shape[axis] * grid.cp;
    for (std::uint64_t f = 0; f < grid.files(); ++f)
      leaf.positions.push_back(zigzag({{0, leaf.dims[axis]}}, grid.cp, grid.cp_rank_of(f)));
  }
  return leaf;
}

FileGrid cp_grid(const InputLengths& lengths, const DataParallel& dp, FileLayout layout, std::uint64_t degree) {
  FileGrid grid{layout == FileLayout::PerRank ? dp.degree : 1, degree, 0};
  const std::uint64_t inputs = lengths.empty() ? 0 : lengths.begin()->second.size();
  if (inputs % (grid.ranks * grid.cp) != 0)
    throw Error(fmt::format("{} inputs do not divide into {} CP ranks{}", inputs, grid.cp,
                            grid.ranks > 1 ? fmt::format(" of {} data-parallel ranks", grid.ranks) : ""));
  grid.microbatches = inputs / (grid.ranks * grid.cp);
  return grid;
}

}  // namespace

std::size_t MergePlan::twin(std::size_t input) const {
  return grid.cp == 1 ? input : grid.file_of(grid.base_of(input), 0);
}

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
                     const DataParallel& dp, FileLayout layout, const ContextParallelInputs& cp) {
  MergePlan plan;
  if (cp.degree > 1) plan.grid = cp_grid(lengths, dp, layout, cp.degree);
  for (const NodeInfo* node : cut_datasets(first, resolution)) {
    const LeafRule& rule = resolution.dataset_rule(node->path);
    const auto& per_input = lengths.at(node->path);
    if (cp.degree > 1) {
      plan.leaves[node->path] = plan_cp_leaf(*node, rule, per_input, dp, layout, plan.grid, cp);
      continue;
    }
    MergedLeaf leaf = rule.mode == LeafRule::Mode::Offsets
                          ? plan_offsets(*node, per_input)
                          : plan_rows(*node, static_cast<std::size_t>(rule.axis), per_input, dp, layout);
    leaf.held = per_input;
    plan.leaves[node->path] = std::move(leaf);
  }
  bool cut = false;
  for (const auto& entry : plan.leaves) cut = cut || !entry.second.shared;
  if (cp.degree > 1 && !cut)
    throw Error(fmt::format("--cp-degree {} has nothing to put back: no dataset's spec marks a sequence axis and no "
                            "dataset is packed",
                            cp.degree));
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
    std::uint64_t row = ds.element_size;  // bytes of one row along the cut axis (and one position along CP's)
    for (std::size_t d = 0; d < leaf->dims.size(); ++d)
      if (d != leaf->axis && d != leaf->sequence_axis) row *= leaf->dims[d];
    for (std::size_t i = 0; i < inputs && i < leaf->maps.size(); ++i)
      bytes[i] += rows_in(leaf->maps[i]) * row * (leaf->sequence_axis ? rows_in(leaf->positions[i]) : 1);
  });
  return bytes;
}

}  // namespace mb
