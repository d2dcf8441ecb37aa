#include "core/presets.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb {

// One declaration and one registry line per preset (core/presets/NAME.cpp).
Preset netcdf_preset();
Preset anndata_preset();
Preset pandas_preset();

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      netcdf_preset(),
      anndata_preset(),
      pandas_preset(),
  };
  return all;
}

std::string preset_names() {
  std::string out;
  for (const auto& p : presets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

namespace {
const Preset* find_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}
}  // namespace

void check_preset_name(const std::string& name) {
  if (name == "auto" || name == "none" || find_preset(name)) return;
  throw usage_error(fmt::format("--preset: unknown preset '{}' (expected auto, none, {})", name, preset_names()));
}

PresetPick pick_preset(const std::string& choice, const NodeInfo& root) {
  check_preset_name(choice);
  if (choice == "none") return {};
  if (choice != "auto") return {find_preset(choice), false};
  for (const auto& p : presets())
    if (p.detect(root)) return {&p, true};
  return {};
}

const std::string* attribute_text(const NodeInfo& node, const std::string& name) {
  for (const auto& a : node.attributes)
    if (a.name == name) return a.text ? &*a.text : nullptr;
  return nullptr;
}

bool has_attribute(const NodeInfo& node, const std::string& name) {
  return std::any_of(node.attributes.begin(), node.attributes.end(),
                     [&](const AttributeInfo& a) { return a.name == name; });
}

}  // namespace mb
