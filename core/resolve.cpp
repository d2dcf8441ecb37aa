#include "core/resolve.hpp"

#include <set>

#include "core/error.hpp"

namespace mb {
namespace {

std::string where(const std::string& spec_name, const SourcePos& pos) {
  if (pos.line == 0) return spec_name;
  return spec_name + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
}

class Resolver {
 public:
  explicit Resolver(const std::string& spec_name) : spec_name_(spec_name) {}

  Resolution run(const NodeInfo& root, const SpecNode& spec) {
    visit(root, spec);
    check_offsets_references();
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const SpecNode& at, const std::string& what) const {
    throw Error(where(spec_name_, at.pos) + ": " + what);
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
        return;
      case SpecNode::Kind::Leaf:
        out_.datasets[ds.path] = checked_rule(ds, spec);
        return;
      case SpecNode::Kind::Object:
        fail(spec, "spec gives an object (a group) for " + ds.path + ", which is a dataset");
      case SpecNode::Kind::Array:
        fail(spec, "spec gives an array (a sequence group) for " + ds.path + ", which is a dataset");
    }
  }

  LeafRule checked_rule(const NodeInfo& ds, const SpecNode& spec) {
    LeafRule rule = spec.leaf;
    if (rule.mode == LeafRule::Mode::Offsets) {
      if (ds.null_space || ds.rank() != 1)
        fail(spec, "\"offsets\" needs a 1-D dataset of S+1 integers; " + ds.path + " has rank " +
                       std::to_string(ds.rank()));
      return rule;
    }
    if (!rule.cuts_rows()) return rule;
    if (rule.mode != LeafRule::Mode::Split) references_.push_back({ds.path, rule.offsets, spec.pos});
    if (ds.null_space || ds.rank() == 0)
      fail(spec, "cannot split " + ds.path + ": it is a rank-0 dataset (use \"replicate\" or a reducer)");
    // (axis checks below apply to split, packed and per-sequence leaves alike)
    const int rank = static_cast<int>(ds.rank());
    if (rule.axis < -rank || rule.axis >= rank)
      fail(spec, "split axis " + std::to_string(rule.axis) + " is out of range for " + ds.path + " of rank " +
                     std::to_string(rank));
    if (rule.axis < 0) rule.axis += rank;
    return rule;
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
      fail(spec, "spec gives an array for " + group.path + ", whose members are not named 0..n-1");
    if (spec.elements.size() != group.children.size())
      fail(spec, "spec array for " + group.path + " has " + std::to_string(spec.elements.size()) +
                     " elements, the group has " + std::to_string(group.children.size()) + " members");
    for (std::size_t i = 0; i < spec.elements.size(); ++i)
      visit(*group.child(std::to_string(i)), spec.elements[i]);
  }

  void visit_object(const NodeInfo& group, const SpecNode& spec) {
    std::set<std::string> named;
    for (const auto& [key, sub] : spec.members) {
      if (!key.empty() && key[0] == '@') {
        visit_attribute_key(group, key.substr(1), sub);
        continue;
      }
      const NodeInfo* member = group.child(key);
      if (member == nullptr)
        fail(sub, "spec key \"" + key + "\" names nothing in the file: " + group.path + " has no member " +
                      join_path(group.path, key));
      named.insert(key);
      visit(*member, sub);
    }
    for (const auto& member : group.children) {
      if (named.count(member.name) != 0) continue;
      if (!spec.star)
        fail(spec, "file member " + member.path + " is not covered by the spec (no key \"" + member.name +
                       "\" and no \"*\" in the object for " + group.path + ")");
      visit(member, *spec.star);
    }
  }

  void visit_attribute_key(const NodeInfo& group, const std::string& name, const SpecNode& spec) {
    bool exists = false;
    for (const auto& a : group.attributes) exists = exists || a.name == name;
    if (!exists)
      fail(spec, "spec key \"@" + name + "\" names nothing in the file: " + group.path + " has no attribute " + name);
    if (spec.kind == SpecNode::Kind::Default) return;
    if (spec.kind != SpecNode::Kind::Leaf)
      fail(spec, "the spec of attribute " + group.path + "@" + name + " must be \"replicate\" or a reducer");
    if (spec.leaf.cuts_rows())
      fail(spec, "attribute " + group.path + "@" + name + " cannot be split: attributes are replicated or reduced");
    // Only reducers are recorded: "replicate" is what every other attribute gets.
    if (spec.leaf.mode == LeafRule::Mode::Reduce) out_.attributes[{group.path, name}] = spec.leaf;
  }

  // Every packed / per-sequence leaf must name a dataset whose spec is "offsets".
  void check_offsets_references() const {
    for (const auto& ref : references_) {
      auto it = out_.datasets.find(ref.offsets);
      if (it == out_.datasets.end() || it->second.mode != LeafRule::Mode::Offsets)
        throw Error(where(spec_name_, ref.pos) + ": " + ref.dataset + " names " + ref.offsets +
                    " as its offsets, but " +
                    (it == out_.datasets.end() ? std::string("the file has no dataset there")
                                               : "its spec is not \"offsets\""));
    }
  }

  struct Reference {
    std::string dataset;
    std::string offsets;
    SourcePos pos;
  };

  const std::string& spec_name_;
  Resolution out_;
  std::vector<Reference> references_;
};

}  // namespace

const LeafRule& Resolution::dataset_rule(const std::string& path) const {
  auto it = datasets.find(path);
  if (it == datasets.end()) throw Error("internal: no rule resolved for dataset " + path);
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

Resolution resolve(const NodeInfo& root, const SpecNode& spec, const std::string& spec_name) {
  return Resolver(spec_name).run(root, spec);
}

}  // namespace mb
