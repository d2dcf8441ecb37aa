#include "specs/emit.hpp"

namespace mb::specs {

nlohmann::ordered_json rule_json(const LeafRule& rule) {
  switch (rule.mode) {
    case LeafRule::Mode::Split: return rule.axis;
    case LeafRule::Mode::Replicate: return "replicate";
    case LeafRule::Mode::Reduce: return {{"reduce", reducer_name(rule.reducer)}};
    case LeafRule::Mode::Offsets: return "offsets";
    case LeafRule::Mode::Packed: return {{"packed", rule.offsets}, {"axis", rule.axis}};
    case LeafRule::Mode::PerSequence: return {{"per_sequence", rule.offsets}, {"axis", rule.axis}};
  }
  return nullptr;
}

nlohmann::ordered_json resolved_spec_json(const NodeInfo& node, const Resolution& resolution) {
  if (!node.is_group()) return rule_json(resolution.dataset_rule(node.path));
  auto out = nlohmann::ordered_json::object();
  for (const auto& a : node.attributes) {
    const LeafRule rule = resolution.attribute_rule(node.path, a.name);
    if (rule.mode == LeafRule::Mode::Reduce) out["@" + a.name] = rule_json(rule);
  }
  for (const auto& child : node.children) out[child.name] = resolved_spec_json(child, resolution);
  return out;
}

}  // namespace mb::specs
