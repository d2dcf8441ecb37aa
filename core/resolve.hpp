#pragma once
// Spec resolution: match a spec tree against a file's tree and give every
// dataset and every attribute its rule. Strict: every spec key must name
// something in the file, and every file member must be covered by a key or
// a "*".
#include <map>
#include <string>
#include <utility>

#include "core/spec.hpp"
#include "core/tree.hpp"

namespace mb {

struct Resolution {
  // Every dataset of the file, by path. Split axes are normalised (>= 0).
  std::map<std::string, LeafRule> datasets;
  // Attributes given a reducer by an "@name" key, by (object path, attribute
  // name). Every other attribute is replicated.
  std::map<std::pair<std::string, std::string>, LeafRule> attributes;

  const LeafRule& dataset_rule(const std::string& path) const;
  LeafRule attribute_rule(const std::string& object_path, const std::string& name) const;
};

// The rule a leaf gets when no spec names it: rank >= 1 splits on axis 0,
// rank 0 (and null dataspaces) replicate.
LeafRule default_rule(const NodeInfo& dataset);

// `spec_name` names the spec in messages (a file name, or "default spec").
// Throws mb::Error (exit 1) naming the path, and the line and column of the
// spec node, when the spec does not fit the tree.
Resolution resolve(const NodeInfo& root, const SpecNode& spec, const std::string& spec_name);

// What a split wrote beside every offsets dataset NAME, which the spec does
// not name: with --cp-pad, NAME_padded (core/packed.hpp), required; in the
// default layout with --dp-degree, NAME_dp_bounds (rank_bounds_name), taken
// when there (a split of microbatch 0.7 or older wrote none).
struct OffsetsTwins {
  bool padded = false;
  bool rank_bounds = false;
};

// Merge of such a split: resolves the tree without the twins and gives each
// the rule PaddedOffsets or RankBounds; throws mb::Error when an offsets
// dataset has no NAME_padded beside it that `twins.padded` requires.
Resolution resolve_twins(const NodeInfo& root, const SpecNode& spec, const std::string& spec_name,
                         OffsetsTwins twins);

// Split's view of the tree: datasets whose rule is "drop" removed, with
// every group they leave empty, and their rules with them (the outputs,
// and the manifest's spec, hold none of them).
void prune_dropped(NodeInfo& root, Resolution& resolution);

}  // namespace mb
