#pragma once
// Presets: the default spec of a kind of file written by another library
// (netCDF-4, AnnData, pandas), recognised from what the tree reader gives
// (attribute names and scalar values), so that a user need not write it.
// Pure: no HDF5.
#include <string>
#include <vector>

#include "core/spec.hpp"
#include "core/tree.hpp"

namespace mb {

struct Preset {
  std::string name;     // what --preset takes, and inspect shows
  std::string summary;  // one line: what it recognises and what its spec does
  bool (*detect)(const NodeInfo& root);
  SpecNode (*spec)(const NodeInfo& root);
};

// Every preset, in the order detection tries them (one line each in
// core/presets.cpp; each preset in its own file, core/presets/NAME.cpp).
const std::vector<Preset>& presets();

// "netcdf, anndata, ...": the names --preset takes besides auto and none.
std::string preset_names();

// What --preset asks for: "auto" (detect), "none" (no preset: the default
// spec) or a preset's name. Another name: a usage error (exit 2) listing
// the names.
void check_preset_name(const std::string& name);

// The preset `choice` gives for a file: for "auto" the first that detects
// it (nullptr when none does), for "none" nullptr, else the named one.
struct PresetPick {
  const Preset* preset = nullptr;
  bool detected = false;  // chosen by detection, not by name
};
PresetPick pick_preset(const std::string& choice, const NodeInfo& root);

// The value of attribute `name` of `node` as the tree reader gives it
// (AttributeInfo::text), or nullptr when it has none or no such attribute.
const std::string* attribute_text(const NodeInfo& node, const std::string& name);
bool has_attribute(const NodeInfo& node, const std::string& name);

}  // namespace mb
