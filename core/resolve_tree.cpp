// What a resolution does to the tree once the walk is done: the split's
// twins of offsets datasets (NAME_padded, NAME_dp_bounds) told from the
// batch's own datasets, and the datasets a spec drops taken out.
#include "core/resolve.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/packed.hpp"

namespace mb {

namespace {

// True when `node` goes: a dataset whose rule is "drop", or a group that
// had members and is left with none once its dropped members are gone.
bool prune(NodeInfo& node, Resolution& resolution) {
  if (!node.is_group()) {
    const auto it = resolution.datasets.find(node.path);
    return it != resolution.datasets.end() && it->second.mode == LeafRule::Mode::Drop;
  }
  if (node.children.empty()) return false;
  std::vector<NodeInfo> kept;
  for (auto& child : node.children) {
    if (!prune(child, resolution)) {
      kept.push_back(std::move(child));
      continue;
    }
    for_each_node(child, [&](const NodeInfo& gone) { resolution.datasets.erase(gone.path); });
  }
  node.children = std::move(kept);
  return node.children.empty();
}

}  // namespace

namespace {

// A copy of `node` without the datasets at `paths`.
NodeInfo without(const NodeInfo& node, const std::set<std::string>& paths) {
  NodeInfo out = node;
  out.children.clear();
  for (const NodeInfo& c : node.children)
    if (c.is_group() || !paths.count(c.path)) out.children.push_back(without(c, paths));
  return out;
}

}  // namespace

Resolution resolve_twins(const NodeInfo& root, const SpecNode& spec, const std::string& spec_name,
                         OffsetsTwins twins) {
  const std::string pad_suffix = padded_offsets_name(""), bounds_suffix = rank_bounds_name("");
  std::set<std::string> candidates;  // datasets named as a twin of a sibling dataset
  for_each_node(root, [&](const NodeInfo& n) {
    for (const NodeInfo& c : n.children)
      for (const std::string& suffix : {pad_suffix, bounds_suffix}) {
        const NodeInfo* twin = n.child(c.name + suffix);
        if (!c.is_group() && !c.is_further_name() && twin && !twin->is_group()) candidates.insert(twin->path);
      }
  });
  Resolution first = resolve(without(root, candidates), spec, spec_name);
  std::map<std::string, LeafRule> found;  // the candidates beside offsets datasets: the split's
  for (const auto& [path, rule] : first.datasets) {
    if (rule.mode != LeafRule::Mode::Offsets) continue;
    if (twins.padded && !candidates.count(padded_offsets_name(path)))
      throw Error(fmt::format("no {} beside {}: not the files of a split with --cp-pad", padded_offsets_name(path),
                              path));
    LeafRule twin;
    twin.offsets = path;
    if (twins.padded) {
      twin.mode = LeafRule::Mode::PaddedOffsets;
      found[padded_offsets_name(path)] = twin;
    }
    if (twins.rank_bounds && candidates.count(rank_bounds_name(path))) {
      twin.mode = LeafRule::Mode::RankBounds;
      found[rank_bounds_name(path)] = twin;
    }
  }
  std::set<std::string> taken;
  for (const auto& entry : found) taken.insert(entry.first);
  Resolution out = taken == candidates ? std::move(first) : resolve(without(root, taken), spec, spec_name);
  for (auto& [path, rule] : found) out.datasets[path] = std::move(rule);
  return out;
}

void prune_dropped(NodeInfo& root, Resolution& resolution) {
  if (prune(root, resolution)) root.children.clear();  // the root stays, even with every dataset dropped
  for (auto it = resolution.attributes.begin(); it != resolution.attributes.end();) {
    bool found = false;
    for_each_node(root, [&](const NodeInfo& n) { found = found || n.path == it->first.first; });
    it = found ? std::next(it) : resolution.attributes.erase(it);
  }
}

}  // namespace mb
