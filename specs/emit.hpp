#pragma once
// The resolved spec as JSON: one explicit leaf per dataset, "@name" keys for
// reduced attributes. Written to manifest.json; parse_spec reads it back.
#include <nlohmann/json.hpp>

#include "core/resolve.hpp"
#include "core/tree.hpp"

namespace mb::specs {

nlohmann::ordered_json resolved_spec_json(const NodeInfo& root, const Resolution& resolution);

nlohmann::ordered_json rule_json(const LeafRule& rule);

}  // namespace mb::specs
