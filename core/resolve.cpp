#include "core/resolve.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/packed.hpp"
#include "core/resolve_checks.hpp"
#include "core/suggest.hpp"

namespace mb {
namespace {

// Only names that print as they are make a suggestion: the message stays one
// plain line.
bool printable_name(const std::string& name) {
  return std::none_of(name.begin(), name.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// "; did you mean \"NAME\"?" for the member (or attribute) name nearest to a
// key that names nothing, or "" when none is close.
std::string did_you_mean(const std::string& key, std::vector<std::string> names, const char* prefix) {
  std::erase_if(names, [](const std::string& n) { return !printable_name(n); });
  const auto near = nearest(key, names);
  return near ? fmt::format("; did you mean \"{}{}\"?", prefix, *near) : std::string();
}

// For a key that names no member (`sub` its value): when it looks like a
// leaf's key, what the user meant. {"split_axs": 0} meant "split_axis";
// {"reduce": {...}} holds what no leaf's key takes, so it was read as a
// member's name. "" when it looks like none.
std::string leaf_key_hint(const std::string& key, const SpecNode& sub) {
  const auto& keys = leaf_keys();
  const bool nested = sub.kind == SpecNode::Kind::Object || sub.kind == SpecNode::Kind::Array;
  if (std::find(keys.begin(), keys.end(), key) != keys.end())
    return nested ? fmt::format("; as a leaf's key, \"{}\" takes a number or a string, not {}", key,
                                sub.kind == SpecNode::Kind::Array ? "an array" : "an object")
                  : std::string();
  const auto near = nearest(key, keys);
  return near ? fmt::format("; did you mean \"{}\" (a leaf's key)?", *near) : std::string();
}

class Resolver {
 public:
  explicit Resolver(const std::string& spec_name) : spec_name_(spec_name) {}

  Resolution run(const NodeInfo& root, const SpecNode& spec) {
    visit(root, spec);
    check_dimensions_found();
    check_walked(root, out_, walked_, spec_name_);
    return std::move(out_);
  }

 private:
  // `object`: the HDF5 path the mistake is at ("" when none is), for
  // --json's failure object (the message names it too).
  [[noreturn]] void fail(const SpecNode& at, const std::string& object, const std::string& what) const {
    throw Error(fmt::format("{}: {}", spec_where(spec_name_, at.pos), what), ErrorKind::Data, {"", object});
  }

  void visit(const NodeInfo& node, const SpecNode& spec) {
    if (node.is_group()) {
      visit_group(node, spec);
    } else {
      visit_dataset(node, spec);
    }
  }

  void visit_dataset(const NodeInfo& ds, const SpecNode& spec) {
    switch (spec.kind) {
      case SpecNode::Kind::Default:
        out_.datasets[ds.path] = default_rule(ds);
        walked_.positions[ds.path] = spec.pos;
        return;
      case SpecNode::Kind::Leaf:
        out_.datasets[ds.path] = checked_rule(ds, spec);
        walked_.positions[ds.path] = spec.pos;
        for (const auto& m : spec.members) visit_attribute_key(ds, m.key, m.spec);
        return;
      case SpecNode::Kind::Object:
        object_for_dataset(ds, spec);
      case SpecNode::Kind::Array:
        fail(spec, ds.path, fmt::format("spec gives an array (a sequence group) for {}, which is a dataset", ds.path));
    }
  }

  // A dataset has no members, so an object's keys can only be a leaf's,
  // perhaps misspelt: the first key that looks like one gets the hint.
  [[noreturn]] void object_for_dataset(const NodeInfo& ds, const SpecNode& spec) const {
    const std::string what = fmt::format("spec gives an object (a group) for {}, which is a dataset", ds.path);
    for (const auto& m : spec.members) {
      if (m.attribute) continue;
      const std::string hint = leaf_key_hint(m.key, m.spec);
      if (!hint.empty()) fail(m.spec, ds.path, fmt::format("{} (it has no member \"{}\"){}", what, m.key, hint));
    }
    fail(spec, ds.path, what);
  }

  // {"dim": NAME}: the axis of that dimension, or Replicate without it.
  LeafRule dimension_rule(const NodeInfo& ds, const SpecNode& spec) {
    std::vector<int> axes;
    for (std::size_t a = 0; a < ds.dimensions.size(); ++a)
      if (ds.dimensions[a] == spec.leaf.dim) axes.push_back(static_cast<int>(a));
    dimensions_.names.insert(ds.dimensions.begin(), ds.dimensions.end());
    bool& found = dimensions_.found.try_emplace(&spec, false).first->second;
    found = found || !axes.empty();
    // netCDF-C's scale of an unlimited dimension without a coordinate
    // variable is empty (the variables give the length): nothing to cut.
    const bool empty_unlimited_scale = ds.is_scale && ds.rank() == 1 && ds.shape[0] == 0 &&
                                       !ds.storage.max_shape.empty() && !ds.storage.max_shape[0];
    if (axes.empty() || empty_unlimited_scale) return LeafRule::replicate();
    if (axes.size() > 1)
      fail(spec, ds.path,
           fmt::format("{} has dimension \"{}\" on axes {} and {}: give the axis to cut (an integer)", ds.path,
                       spec.leaf.dim, axes[0], axes[1]));
    LeafRule rule = LeafRule::split(axes[0]);
    rule.sequence_axis = spec.leaf.sequence_axis;
    return rule;
  }

  // A {"dim": NAME} that no dataset has is a typo or the wrong file, not a
  // spec that means "copy everything".
  void check_dimensions_found() const {
    for (const auto& [spec, found] : dimensions_.found) {
      if (found) continue;
      std::vector<std::string> names;
      for (const auto& n : dimensions_.names)
        if (!n.empty()) names.push_back(n);
      std::string known = names.empty() ? "none has a named dimension" : "theirs are ";
      for (std::size_t i = 0; i < names.size(); ++i) known += (i ? ", " : "") + fmt::format("\"{}\"", names[i]);
      fail(*spec, "",
           fmt::format("no dataset it applies to has dimension \"{}\" ({}){}", spec->leaf.dim, known,
                       did_you_mean(spec->leaf.dim, names, "")));
    }
  }

  LeafRule checked_rule(const NodeInfo& ds, const SpecNode& spec) {
    LeafRule rule = spec.leaf.dim.empty() ? spec.leaf : dimension_rule(ds, spec);
    if (rule.weighted()) walked_.weights.push_back({ds.path, rule.weight, rule.weight_attribute, spec.pos, ds.path});
    if (rule.mode == LeafRule::Mode::Offsets) {
      if (ds.null_space || ds.rank() != 1)
        fail(spec, ds.path,
             fmt::format("\"offsets\" needs a 1-D dataset of S+1 integers; {} has rank {}", ds.path, ds.rank()));
      return rule;
    }
    if (rule.mode == LeafRule::Mode::Derive) {
      if (rule.element)
        fail(spec, ds.path,
             fmt::format("\"index\" derives one element of an attribute (a shape); {} is a dataset", ds.path));
      check_derived_target(spec, ds.path, ds.path, ds.shape, ds.null_space, ds.dtype);
      walked_.references.push_back({ds.path, rule.offsets, spec.pos, rule.quantity, ds.path});
      return rule;
    }
    if (rule.mode == LeafRule::Mode::Drop) return rule;
    if (!rule.cuts_rows()) return rule;
    if (rule.mode != LeafRule::Mode::Split)
      walked_.references.push_back({ds.path, rule.offsets, spec.pos, rule.quantity, ds.path});
    if (ds.null_space || ds.rank() == 0)
      fail(spec, ds.path,
           fmt::format("cannot split {}: it is a rank-0 dataset (give \"replicate\"; merge also takes a "
                       "reducer)",
                       ds.path));
    // (axis checks below apply to split, packed and per-sequence leaves alike)
    const int rank = static_cast<int>(ds.rank());
    if (rule.axis < -rank || rule.axis >= rank)
      fail(spec, ds.path, fmt::format("split axis {} is out of range for {} of rank {}", rule.axis, ds.path, rank));
    if (rule.axis < 0) rule.axis += rank;
    if (rule.sequence_axis) {
      int& seq = *rule.sequence_axis;
      if (seq < -rank || seq >= rank)
        fail(spec, ds.path, fmt::format("sequence axis {} is out of range for {} of rank {}", seq, ds.path, rank));
      if (seq < 0) seq += rank;
      if (seq == rule.axis)
        fail(spec, ds.path,
             fmt::format("{}: the sequence axis is its split axis {}; context parallelism cuts another axis", ds.path,
                         seq));
    }
    return rule;
  }

  // A derived value is one integer per file (a rank-0 dataset or attribute;
  // a 1-element array would be a second way to say the same), or one
  // element ("index") of a 1-D integer attribute. Its width and sign are the
  // leaf's own: each file's value is checked to fit when written.
  void check_derived_target(const SpecNode& spec, const std::string& object, const std::string& what,
                            const Shape& shape, bool null_space, const std::string& dtype) const {
    const char* quantity = quantity_name(spec.leaf.quantity);
    const std::optional<int>& element = spec.leaf.element;
    if (element && (null_space || shape.size() != 1 || static_cast<std::uint64_t>(*element) >= shape[0]))
      fail(spec, object,
           fmt::format("\"{}\" with \"index\": {} needs a 1-D integer of more than {} elements; {} has {}", quantity,
                       *element, *element, what,
                       null_space ? std::string("a null dataspace") : "shape " + shape_text(shape)));
    if (!element && (null_space || !shape.empty()))
      fail(spec, object,
           fmt::format("\"{}\" needs a rank-0 integer (one value per file); {} has {}", quantity, what,
                       null_space ? std::string("a null dataspace") : "shape " + shape_text(shape)));
    if (dtype.rfind("int", 0) != 0 && dtype.rfind("uint", 0) != 0)
      fail(spec, object,
           fmt::format("\"{}\" needs {} integer; {} is {}", quantity, element ? "an" : "a rank-0", what, dtype));
  }

  // A leaf placed on a group applies to every dataset below it (tree prefix).
  void apply_everywhere(const NodeInfo& node, const SpecNode& spec) {
    for_each_node(node, [&](const NodeInfo& n) {
      if (!n.is_group()) visit_dataset(n, spec);
    });
  }

  void visit_group(const NodeInfo& group, const SpecNode& spec) {
    switch (spec.kind) {
      case SpecNode::Kind::Default:
      case SpecNode::Kind::Leaf:
        if (!spec.members.empty())
          fail(spec, group.path,
               fmt::format("spec gives {} a leaf with attribute keys (\"@{}\"): those name one dataset's "
                           "attributes, and {} is a group",
                           group.path, spec.members.front().key, group.path));
        apply_everywhere(group, spec);
        return;
      case SpecNode::Kind::Array:
        visit_sequence(group, spec);
        return;
      case SpecNode::Kind::Object:
        visit_object(group, spec);
        return;
    }
  }

  void visit_sequence(const NodeInfo& group, const SpecNode& spec) {
    if (!group.is_sequence())
      fail(spec, group.path, fmt::format("spec gives an array for {}, whose members are not named 0..n-1", group.path));
    if (spec.elements.size() != group.children.size())
      fail(spec, group.path,
           fmt::format("spec array for {} has {} elements, the group has {} members", group.path, spec.elements.size(),
                       group.children.size()));
    for (std::size_t i = 0; i < spec.elements.size(); ++i)
      visit(*group.child(std::to_string(i)), spec.elements[i]);
  }

  void visit_object(const NodeInfo& group, const SpecNode& spec) {
    std::set<std::string> named;
    for (const auto& [key, sub, attribute] : spec.members) {
      if (attribute) {
        visit_attribute_key(group, key, sub);
        continue;
      }
      const NodeInfo* member = group.child(key);
      if (member == nullptr) no_such_member(group, spec, key, sub);
      named.insert(key);
      visit(*member, sub);
    }
    for (const auto& member : group.children) {
      if (named.count(member.name) != 0) continue;
      if (!spec.star)
        fail(spec, member.path,
             fmt::format("file member {} is not covered by the spec "
                         "(no key \"{}\" and no \"*\" in the object for {}): add a key \"{}\" for it, or "
                         "\"*\": null to give every member not named the default rule",
                         member.path, member.name, group.path, member.name));
      visit(member, *spec.star);
    }
  }

  [[noreturn]] void no_such_member(const NodeInfo& group, const SpecNode& spec, const std::string& key,
                                    const SpecNode& at) const {
    std::set<std::string> keys;  // a name the spec gives elsewhere is no typo of this one
    for (const auto& m : spec.members)
      if (!m.attribute) keys.insert(m.key);
    std::vector<std::string> names;
    for (const auto& c : group.children)
      if (keys.count(c.name) == 0) names.push_back(c.name);
    // A misspelt member first: a leaf's key is the likelier reading only when no member is close.
    std::string hint = did_you_mean(key, names, "");
    if (hint.empty()) hint = leaf_key_hint(key, at);
    fail(at, group.path,
         fmt::format("spec key \"{}\" names nothing in the file: {} has no member {}{}", key, group.path,
                     join_path(group.path, key), hint));
  }

  void visit_attribute_key(const NodeInfo& group, const std::string& name, const SpecNode& spec) {
    const bool exists = std::any_of(group.attributes.begin(), group.attributes.end(),
                                    [&](const AttributeInfo& a) { return a.name == name; });
    if (!exists) {
      std::vector<std::string> names;
      for (const auto& a : group.attributes) names.push_back(a.name);
      fail(spec, group.path,
           fmt::format("spec key \"@{}\" names nothing in the file: {} has no attribute {}{}", name, group.path, name,
                       did_you_mean(name, names, "@")));
    }
    if (spec.kind == SpecNode::Kind::Default) return;
    if (spec.kind != SpecNode::Kind::Leaf)
      fail(spec, group.path,
           fmt::format("the spec of attribute {}@{} must be \"replicate\" or a reducer", group.path, name));
    if (spec.leaf.cuts_rows() || spec.leaf.mode == LeafRule::Mode::Drop)
      fail(spec, group.path,
           fmt::format("attribute {}@{} cannot be {}: attributes are replicated or reduced", group.path, name,
                       spec.leaf.mode == LeafRule::Mode::Drop ? "dropped" : "split"));
    if (spec.leaf.mode == LeafRule::Mode::Derive) {
      const AttributeInfo& a = *std::find_if(group.attributes.begin(), group.attributes.end(),
                                             [&](const AttributeInfo& x) { return x.name == name; });
      check_derived_target(spec, group.path, group.path + "@" + name, a.shape, a.null_space, a.dtype);
      walked_.references.push_back(
          {group.path + "@" + name, spec.leaf.offsets, spec.pos, spec.leaf.quantity, group.path});
      out_.attributes[{group.path, name}] = spec.leaf;
      return;
    }
    // Only reducers (and derived values) are recorded: "replicate" is what every other attribute gets.
    if (spec.leaf.mode != LeafRule::Mode::Reduce) return;
    out_.attributes[{group.path, name}] = spec.leaf;
    if (spec.leaf.weighted())
      walked_.weights.push_back(
          {group.path + "@" + name, spec.leaf.weight, spec.leaf.weight_attribute, spec.pos, group.path});
  }

  const std::string& spec_name_;
  Resolution out_;
  Walked walked_;
  struct {
    std::map<const SpecNode*, bool> found;  // per {"dim": NAME} leaf: whether a dataset has NAME
    std::set<std::string> names;            // the dimensions of the datasets those leaves applied to
  } dimensions_;
};

}  // namespace

const LeafRule& Resolution::dataset_rule(const std::string& path) const {
  auto it = datasets.find(path);
  if (it == datasets.end()) throw Error(fmt::format("internal: no rule resolved for dataset {}", path));
  return it->second;
}

LeafRule Resolution::attribute_rule(const std::string& object_path, const std::string& name) const {
  auto it = attributes.find({object_path, name});
  return it == attributes.end() ? LeafRule::replicate() : it->second;
}

LeafRule default_rule(const NodeInfo& dataset) {
  if (dataset.null_space || dataset.rank() == 0) return LeafRule::replicate();
  return LeafRule::split(0);
}

const std::vector<std::string>& leaf_keys() {
  static const std::vector<std::string> keys{"split_axis",   "sequence_axis", "reduce",   "weight", "packed",
                                             "per_sequence", "axis",          "pad",      "dim",    "max_seqlen",
                                             "num_tokens",   "num_sequences", "num_rows", "index"};
  return keys;
}

Resolution resolve(const NodeInfo& root, const SpecNode& spec, const std::string& spec_name) {
  return Resolver(spec_name).run(root, spec);
}

}  // namespace mb
