#include "io/tree/spec_choice.hpp"

#include <spdlog/spdlog.h>

#include "core/presets.hpp"
#include "io/tree/prepare.hpp"

namespace mb::io::tree {
namespace {

std::optional<PresetSpec> preset_spec(const std::string& choice, const NodeInfo& tree) {
  const PresetPick pick = pick_preset(choice, tree);
  if (!pick.preset) return std::nullopt;
  return PresetSpec{pick.preset->name, pick.detected, pick.preset->spec(tree)};
}

}  // namespace

std::optional<SpecChoice> choose_spec(const SpecRequest& request, const NodeInfo& tree, const std::string& file) {
  if (request.given) return SpecChoice{*request.given, request.given_name, std::nullopt};
  if (request.preset && (*request.preset != "auto" || !request.recorded)) {
    auto preset = about_file(file, [&] { return preset_spec(*request.preset, tree); });
    if (preset) {
      SpecNode spec = preset->spec;
      std::string name = "preset " + preset->name;
      return SpecChoice{std::move(spec), std::move(name), std::move(preset)};
    }
  }
  if (request.recorded) return SpecChoice{*request.recorded, request.recorded_name, std::nullopt};
  if (request.default_spec) return SpecChoice{SpecNode::make_default(), "default spec", std::nullopt};
  return std::nullopt;
}

void log_preset(const std::string& shown_file, const std::optional<PresetSpec>& preset) {
  if (!preset) return;
  spdlog::info("{}: preset {}{}", shown_file, preset->name,
               preset->detected ? " (detected; --preset none for the default spec)" : "");
}

}  // namespace mb::io::tree
