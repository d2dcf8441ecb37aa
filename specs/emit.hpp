#pragma once
// The resolved spec as JSON: one explicit leaf per dataset, "@name" keys for
// reduced attributes. Written to manifest.json; parse_spec reads it back.
// And how HDF5 names are written in JSON.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/resolve.hpp"
#include "core/tree.hpp"

namespace mb::specs {

nlohmann::ordered_json resolved_spec_json(const NodeInfo& root, const Resolution& resolution);

// A leaf's rule as JSON, in one of two forms: the spec language's (what a
// spec file or the manifest holds: 0, "replicate", {"reduce": "mean"}), or
// inspect --json's object, one shape for every mode: {"mode": "split",
// "axis": 0}, {"mode": "replicate"}, {"mode": "reduce", "reducer": "mean",
// "weight": "/n"}, {"mode": "offsets"}, {"mode": "packed", "offsets":
// "/cu", "axis": 0}, {"mode": "per_sequence", "offsets": "/cu", "axis": 0}.
// A new mode or field is added here, to both forms.
enum class RuleForm { Spec, Object };
nlohmann::ordered_json rule_json(const LeafRule& rule, RuleForm form = RuleForm::Spec);

// An HDF5 name or path in JSON (spec keys and offsets paths, the manifest,
// inspect --json). HDF5 names are any bytes but NUL ('/' separates them in
// a path); JSON strings are UTF-8. A name is written as is, except that a
// backslash is written \\ and every byte that is not part of valid UTF-8 is
// written \xNN (two hex digits): b"\xff\xfe" -> "\\xff\\xfe" in JSON source.
// specs::unescape_name reads it back.
std::string escape_name(std::string_view raw);

// The spec key naming the group member `name`: its escaped name, with the
// first character written \xNN where the key would otherwise read as the
// "*" wildcard, an attribute key ("@...") or a leaf key ("split_axis",
// "reduce", "packed", "per_sequence"): a member "*" is "\\x2a".
std::string member_key(const std::string& name);
// The spec key naming an attribute: "@" and its escaped name.
std::string attribute_key(const std::string& name);

// A weighted mean's "weight" in JSON: the escaped path and, after an "@",
// the escaped attribute name, with every "@" inside them written \x40.
std::string weight_key(const LeafRule& rule);

// Text that is shown, not read back (values, dtypes, warnings): bytes that
// are not valid UTF-8 are written \xNN, nothing else changes.
std::string printable_text(std::string_view raw);

}  // namespace mb::specs
