#include "core/resolve_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"

namespace mb {
namespace {

std::string rule_text(const LeafRule& rule);

// Two names of one object (`first` and `further`) given rules `a` and `b`.
struct Conflict {
  std::string first, further;
  LeafRule a, b;
  SourcePos pos;  // of the further name's spec node
  std::string object;  // the further name's HDF5 path
};

[[noreturn]] void refuse(const Conflict& c, const std::string& spec_name) {
  throw Error(fmt::format("{}: {} and {} are one object (hard links), but the "
                          "spec gives them different rules ({} "
                          "vs {}): give every name of an object the same rule",
                          spec_where(spec_name, c.pos), c.first, c.further, rule_text(c.a), rule_text(c.b)),
              ErrorKind::Data, {"", c.object});
}

std::string rule_text(const LeafRule& rule) {
  switch (rule.mode) {
    case LeafRule::Mode::Split:
      if (rule.sequence_axis) return fmt::format("split on axis {}, sequence axis {}", rule.axis, *rule.sequence_axis);
      return fmt::format("split on axis {}", rule.axis);
    case LeafRule::Mode::Replicate:
      return "replicate";
    case LeafRule::Mode::Reduce:
      if (rule.weighted()) return fmt::format("reduce mean weighted by {}", rule.weight_text());
      return fmt::format("reduce {}", reducer_name(rule.reducer));
    case LeafRule::Mode::Offsets:
      return "offsets";
    case LeafRule::Mode::Packed:
      return fmt::format("packed by {} on axis {}", rule.offsets, rule.axis);
    case LeafRule::Mode::PerSequence:
      return fmt::format("per sequence of {} on axis {}", rule.offsets, rule.axis);
    case LeafRule::Mode::Derive:
      return fmt::format("{} of {}", quantity_name(rule.quantity), rule.offsets);
    case LeafRule::Mode::Drop:
      return "drop";
    case LeafRule::Mode::PaddedOffsets:
      return fmt::format("padded offsets of {}", rule.offsets);
    case LeafRule::Mode::RankBounds:
      return fmt::format("data-parallel rank bounds of {}", rule.offsets);
  }
  return "?";
}

// The names of one object (hard links) are one object in every output:
// they must get one rule, whatever name the spec gives it by.
void check_further_names(const NodeInfo& root, const Resolution& resolution, const Walked& walked,
                         const std::string& spec_name) {
  for_each_node(root, [&](const NodeInfo& n) {
    if (!n.is_further_name()) return;
    if (!n.is_group()) {
      const LeafRule& a = resolution.dataset_rule(n.first_name);
      const LeafRule& b = resolution.dataset_rule(n.path);
      if (!(a == b)) refuse({n.first_name, n.path, a, b, walked.positions.at(n.path), n.path}, spec_name);
      return;
    }
    for (const auto& attr : n.attributes) {
      const LeafRule a = resolution.attribute_rule(n.first_name, attr.name);
      const LeafRule b = resolution.attribute_rule(n.path, attr.name);
      if (!(a == b)) refuse({n.first_name + "@" + attr.name, n.path + "@" + attr.name, a, b, {}, n.path}, spec_name);
    }
  });
}

// Every packed / per-sequence / derived leaf must name a dataset whose
// spec is "offsets"; num_rows, one split on axis 0.
void check_offsets_references(const Resolution& resolution, const Walked& walked, const std::string& spec_name) {
  for (const auto& ref : walked.references) {
    auto it = resolution.datasets.find(ref.offsets);
    if (ref.quantity == Quantity::NumRows) {
      if (it != resolution.datasets.end() && it->second.mode == LeafRule::Mode::Split && it->second.axis == 0) continue;
      const char* why = it == resolution.datasets.end() ? "the file has no dataset there" : "it is not split on axis 0";
      throw Error(fmt::format("{}: {} is num_rows of {}, but {}", spec_where(spec_name, ref.pos), ref.dataset,
                              ref.offsets, why),
                  ErrorKind::Data, {"", ref.object});
    }
    if (it != resolution.datasets.end() && it->second.mode == LeafRule::Mode::Offsets) continue;
    const char* why = it == resolution.datasets.end() ? "the file has no dataset there" : "its spec is not \"offsets\"";
    throw Error(fmt::format("{}: {} names {} as its offsets, but {}", spec_where(spec_name, ref.pos), ref.dataset,
                            ref.offsets, why),
                ErrorKind::Data, {"", ref.object});
  }
}

// Every weight of a weighted mean is a rank-0 dataset, or a rank-0
// attribute, of the file (each input's is checked again when it is read).
void check_weights(const NodeInfo& root, const Walked& walked, const std::string& spec_name) {
  std::set<std::pair<std::string, std::string>> checked;
  for (const auto& use : walked.weights) {
    if (!checked.insert({use.path, use.attribute}).second) continue;
    const std::string weight = use.attribute.empty() ? use.path : use.path + "@" + use.attribute;
    const auto refuse = [&](const std::string& why) {
      throw Error(fmt::format("{}: the mean of {} is weighted by {}, but {}", spec_where(spec_name, use.pos), use.leaf,
                              weight, why),
                  ErrorKind::Data, {"", use.object});
    };
    const NodeInfo* node = nullptr;
    for_each_node(root, [&](const NodeInfo& n) {
      if (!node && n.path == use.path) node = &n;
    });
    if (!node) refuse(fmt::format("the file has no {} {}", use.attribute.empty() ? "dataset" : "object", use.path));
    Shape shape = node->shape;
    bool null_space = node->null_space;
    if (!use.attribute.empty()) {
      const auto it = std::find_if(node->attributes.begin(), node->attributes.end(),
                                   [&](const AttributeInfo& a) { return a.name == use.attribute; });
      if (it == node->attributes.end()) refuse(fmt::format("{} has no attribute {}", use.path, use.attribute));
      shape = it->shape;
      null_space = it->null_space;
    } else if (node->is_group()) {
      refuse(
          fmt::format("{} is a group (a weight is a rank-0 dataset, or an "
                      "attribute: \"{}@name\")",
                      use.path, use.path));
    }
    if (null_space) refuse("it has a null dataspace (a weight is one number per input)");
    if (!shape.empty())
      refuse(fmt::format("it has shape {} (a weight is one number per input: rank 0)", shape_text(shape)));
  }
}

}  // namespace

std::string spec_where(const std::string& spec_name, const SourcePos& pos) {
  if (pos.line == 0) return spec_name;
  return fmt::format("{}:{}:{}", spec_name, pos.line, pos.column);
}

void check_walked(const NodeInfo& root, const Resolution& resolution, const Walked& walked,
                  const std::string& spec_name) {
  check_further_names(root, resolution, walked, spec_name);
  check_offsets_references(resolution, walked, spec_name);
  check_weights(root, walked, spec_name);
}

}  // namespace mb
