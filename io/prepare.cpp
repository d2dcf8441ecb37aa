#include "io/prepare.hpp"

#include "io/derived.hpp"
#include "io/h5/file.hpp"
#include "io/tree_reader.hpp"

namespace mb::io {

Prepared prepare(const PrepareRequest& request) {
  Prepared out;
  const std::string& input = request.input;
  h5::Id file = h5::open_read_only(input);
  out.tree = request.describe_unreadable && !request.partition ? h5::describe_tree(file.get(), input)
                                                                : h5::read_tree(file.get(), input);
  if (request.previews)
    for_each_node(out.tree, [&](const NodeInfo& n) {
      for (const auto& a : n.attributes) {
        out.previews[{n.path, a.name}] = h5::attribute_preview(file.get(), input, n.path, a.name);
        out.values[{n.path, a.name}] = h5::attribute_json(file.get(), input, n.path, a.name);
      }
    });
  if (request.spec)
    out.resolution = about_file(input, [&] { return resolve(out.tree, *request.spec, request.spec_name); });
  if (!request.partition || !out.resolution) return out;
  prune_dropped(out.tree, *out.resolution);
  const OffsetsValues offsets = h5::read_offsets_values(file.get(), input, out.tree, *out.resolution);
  out.plan = about_file(input, [&] { return plan_split(out.tree, *out.resolution, *request.partition, offsets); });
  // The batch's derived values must be what its offsets give: a split of an
  // inconsistent batch would hide the inconsistency (its files' values are
  // recomputed) and its merge could not give the batch back.
  const std::vector<DerivedTarget> derived = derived_targets(out.tree, *out.resolution);
  if (!derived.empty()) {
    std::map<std::string, Offsets> checked;
    for (const auto& [path, raw] : offsets) checked[path] = check_offsets(raw, path);
    check_derived_values(file.get(), input, derived, checked);
  }
  return out;
}

}  // namespace mb::io
