#include "core/clones.hpp"

#include <algorithm>
#include <map>

namespace mb {
namespace {

// Whether every file's data of the dataset is rows (and positions) of the
// input's, which a copy can write from the input's elements alone.
bool rows_only(const LeafRule& rule, const SplitPlan& plan) {
  using M = LeafRule::Mode;
  if (rule.mode == M::Offsets || rule.mode == M::Derive) return false;
  return !(rule.mode == M::Packed && plan.cp > 1);  // shared out document by document
}

// What tells the files of a class from others: every patched dataset's shape.
std::vector<std::uint64_t> signature(const std::vector<PatchedDataset>& patched, const SplitPlan& plan,
                                     std::uint64_t file) {
  std::vector<std::uint64_t> out;
  for (const auto& d : patched) {
    const Shape dims = piece_shape(d, plan, file);
    out.insert(out.end(), dims.begin(), dims.end());
  }
  return out;
}

}  // namespace

Shape piece_shape(const PatchedDataset& d, const SplitPlan& plan, std::uint64_t file) {
  Shape dims = d.node->shape;
  dims[d.axis] = rows_in(plan.pieces.at(d.node->path).at(file));
  if (d.sequence_axis) dims[*d.sequence_axis] = rows_in(plan.positions.at(d.node->path).at(file));
  return dims;
}

ClonePlan plan_clones(const NodeInfo& tree, const Resolution& resolution, const SplitPlan& plan,
                      const FileRange& files) {
  ClonePlan out;
  bool copyable = true;
  for_each_node(tree, [&](const NodeInfo& node) {
    if (node.is_group() || node.is_further_name()) return;
    const LeafRule& rule = resolution.dataset_rule(node.path);
    if (!rows_only(rule, plan)) copyable = false;
    if (!rule.cuts_rows() || node.null_space) return;
    std::optional<std::size_t> sequence_axis;
    if (plan.positions.count(node.path)) sequence_axis = static_cast<std::size_t>(rule.sequence_axis.value());
    out.patched.push_back({&node, static_cast<std::size_t>(rule.axis), sequence_axis});
  });
  std::map<std::vector<std::uint64_t>, std::size_t> class_of;  // signature -> index in out.classes
  for (std::uint64_t f = files.begin; f < files.end; ++f) {
    if (!copyable) {
      out.classes.push_back({f, {}});
      continue;
    }
    const auto [it, fresh] = class_of.try_emplace(signature(out.patched, plan, f), out.classes.size());
    if (fresh) {
      out.classes.push_back({f, {}});
    } else {
      out.classes[it->second].copies.push_back(f);
    }
  }
  return out;
}

std::optional<std::vector<ByteSpan>> outside(std::vector<ByteSpan> spans, std::uint64_t size) {
  std::erase_if(spans, [](const ByteSpan& s) { return s.size == 0; });
  std::sort(spans.begin(), spans.end(), [](const ByteSpan& a, const ByteSpan& b) { return a.begin < b.begin; });
  std::vector<ByteSpan> out;
  std::uint64_t at = 0;
  for (const ByteSpan& s : spans) {
    if (s.begin < at || s.size > size - std::min(size, s.begin) || s.begin > size) return std::nullopt;
    if (s.begin > at) out.push_back({at, s.begin - at});
    at = s.end();
  }
  if (at < size) out.push_back({at, size - at});
  return out;
}

}  // namespace mb
