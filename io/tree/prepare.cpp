#include "io/tree/prepare.hpp"

#include <spdlog/spdlog.h>

#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/run/identity.hpp"
#include "io/tree/derived.hpp"
#include "io/tree/held.hpp"
#include "io/source/input.hpp"
#include "io/tree/offsets.hpp"
#include "io/tree/reader.hpp"


namespace mb::io::tree {

Prepared prepare(const PrepareRequest& request) {
  Prepared out;
  out.input = request.input;
  const std::string& input = request.input.name();
  source::watch(request.input);  // before the first byte is read: a split publishes only one version
  h5::Id file = source::open(request.input, h5::Cache::Keep);
  if (request.keep_bytes > 0 && request.partition) out.held = std::make_shared<Held>(request.keep_bytes);
  out.tree = request.describe_unreadable && !request.partition ? tree::describe_tree(file.get(), input)
                                                                : tree::read_tree(file.get(), input, out.held.get());
  if (out.held)
    spdlog::debug("{}: {} small datasets kept from the walk of the tree", request.input.shown(), out.held->size());
  if (request.previews)
    for_each_node(out.tree, [&](const NodeInfo& n) {
      for (const auto& a : n.attributes) {
        if (a.references) {  // object references: not read as values
          out.previews[{n.path, a.name}] = a.dimension_scale ? "(dimension scales)" : "(object references)";
          out.values[{n.path, a.name}] = nullptr;
          continue;
        }
        out.previews[{n.path, a.name}] = tree::attribute_preview(file.get(), input, n.path, a.name);
        out.values[{n.path, a.name}] = tree::attribute_json(file.get(), input, n.path, a.name);
      }
    });
  SpecRequest spec = request.spec;
  spec.default_spec = request.partition.has_value();  // inspect shows a tree without a spec
  if (const auto choice = choose_spec(spec, out.tree, input)) {
    out.preset = choice->preset;
    out.resolution = about_file(input, [&] { return resolve(out.tree, choice->spec, choice->name); });
  }
  if (!request.partition || !out.resolution) return out;
  prune_dropped(out.tree, *out.resolution);
  const OffsetsValues offsets = tree::read_offsets_values(file.get(), input, out.tree, *out.resolution);
  out.plan = about_file(input, [&] { return plan_split(out.tree, *out.resolution, *request.partition, offsets); });
  // The batch's derived values must be what its offsets give: a split of an
  // inconsistent batch would hide the inconsistency (its files' values are
  // recomputed) and its merge could not give the batch back.
  // --cp-pad: every pad value fits its dataset's type, before anything is written.
  for (const auto& entry : out.plan->padded) {
    const h5::Location where{input, entry.first};
    const h5::Id dataset = h5::open_object(file.get(), entry.first, where);
    h5::pad_element(h5::type_of(dataset.get(), where).get(), out.resolution->dataset_rule(entry.first).pad, where);
  }
  const std::vector<DerivedTarget> derived = derived_targets(out.tree, *out.resolution);
  if (!derived.empty()) {
    std::map<std::string, Offsets> checked;
    for (const auto& [path, raw] : offsets) checked[path] = check_offsets(raw, path);
    check_derived_values(file.get(), input, derived, checked);
  }
  return out;
}

}  // namespace mb::io::tree
