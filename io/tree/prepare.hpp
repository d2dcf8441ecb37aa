#pragma once
// The step split and inspect share: open the batch, read its tree, resolve
// the spec against it, read the offsets of packed sequences, and plan.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "core/source.hpp"
#include "core/spec.hpp"
#include "core/tree.hpp"
#include "io/tree/spec_choice.hpp"

#include <nlohmann/json.hpp>

namespace mb::io::tree {

class Held;  // io/tree/held.hpp

struct PrepareRequest {
  Source input;
  SpecRequest spec;  // where the spec comes from (the default spec only when planning)
  std::optional<SplitOptions> partition;  // plan when given
  bool previews = false;                  // read every attribute's value for display
  bool describe_unreadable = false;       // keep unreadable datasets, marked (not when planning)
  // Split: keep small datasets from the walk of the tree, up to this many
  // bytes of values, for the writer (io/tree/held.hpp); 0 keeps none.
  std::uint64_t keep_bytes = 0;
};

struct Prepared {
  Source input;  // the file prepared
  NodeInfo tree;
  std::optional<Resolution> resolution;
  std::optional<SplitPlan> plan;
  std::optional<PresetSpec> preset;  // the preset whose spec was used
  // (object path, attribute name) -> short text of the value (a pair: both may hold "@")
  std::map<std::pair<std::string, std::string>, std::string> previews;
  // The same attributes' values as JSON (inspect --json).
  std::map<std::pair<std::string, std::string>, nlohmann::ordered_json> values;
  std::shared_ptr<Held> held;  // when asked for (keep_bytes)
};

Prepared prepare(const PrepareRequest& request);

// Runs fn; an mb::Error it throws is given `file` as its first word, so
// resolution and planning errors name the batch file they are about, and
// `file` as where it happened (with the HDF5 object the error gave).
template <typename Fn>
auto about_file(const std::string& file, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(file + ": " + e.what(), e.kind(), {file, e.where().object});
  }
}

}  // namespace mb::io::tree
