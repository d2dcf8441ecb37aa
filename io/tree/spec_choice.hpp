#pragma once
// Where a run's spec comes from, for split, merge and inspect alike, in this
// order: a spec given (-s, --spec-json); a preset named, or detected from
// the file's tree (--preset auto); the spec a split recorded (merge of a
// directory: its manifest's; --preset auto does not detect over it); the
// default spec. No HDF5 types here (cli/ fills the request).
#include <optional>
#include <string>

#include "core/spec.hpp"
#include "core/tree.hpp"

namespace mb::io::tree {

struct SpecRequest {
  std::optional<SpecNode> given;  // -s or --spec-json
  std::string given_name;           // names it in messages
  // --preset: "auto", "none" or a preset's name (core/presets); none: no preset.
  std::optional<std::string> preset;
  std::optional<SpecNode> recorded;  // the split's own spec (merge of a directory)
  std::string recorded_name;
  bool default_spec = true;  // fall back to the default spec (inspect without a spec: no spec)
};

// The preset a --preset choice gives for a file's tree, and its spec.
struct PresetSpec {
  std::string name;
  bool detected = false;  // by detection (--preset auto), not by name
  SpecNode spec;
};

struct SpecChoice {
  SpecNode spec;
  std::string name;                  // names the spec in messages ("preset netcdf", "default spec", ...)
  std::optional<PresetSpec> preset;  // the preset whose spec it is
};

// The spec for the tree of `file` (a preset's refusal names the file); none
// when nothing gives one and `default_spec` is off.
std::optional<SpecChoice> choose_spec(const SpecRequest& request, const NodeInfo& tree, const std::string& file);

// The one log line a run writes about its spec: which preset, if any.
void log_preset(const std::string& shown_file, const std::optional<PresetSpec>& preset);

}  // namespace mb::io::tree
