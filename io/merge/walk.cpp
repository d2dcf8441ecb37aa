// The merge walk: the first input's tree, object by object. Each input
// object is opened once, for the structure check and the copy alike.
#include "core/selection.hpp"
#include "io/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/merge/steps.hpp"
#include "io/transfer/copy.hpp"

namespace mb::io::merging {
namespace {

std::vector<h5::Id> open_all(const Context& ctx, const std::vector<h5::Id>& parents, const NodeInfo& node) {
  std::vector<h5::Id> out;
  for (std::size_t i = 0; i < parents.size(); ++i)
    out.push_back(h5::open_object(parents[i].get(), node.name, ctx.where(i, node.path)));
  return out;
}

// The merged extent: the first input's, with the rows of every input along
// a cut axis (offsets: every input repeats the leading 0, the output has it
// once).
Shape merged_dims(const DatasetInputs& in, const LeafRule& rule) {
  Shape dims = in.spaces[0].dims;
  if (!rule.cuts_rows()) return dims;
  const auto axis = static_cast<std::size_t>(rule.axis);
  std::uint64_t total = 0;
  for (const auto& s : in.spaces) total += s.dims[axis];
  if (rule.mode == LeafRule::Mode::Offsets) total -= in.spaces.size() - 1;
  dims[axis] = total;
  return dims;
}

// What a dataset's rule does with the inputs' data, once the output exists.
struct DataStep {
  const LeafRule& rule;
  std::vector<RowMap> maps;  // leaves whose rows are mapped (not offsets)
  Shape dims;                // of the output
  NumKind kind{};            // reducers
};

void write_data(const Context& ctx, const DatasetInputs& in, const DataStep& step, hid_t dst) {
  const LeafRule& rule = step.rule;
  switch (rule.mode) {
    case LeafRule::Mode::Split:
    case LeafRule::Mode::Packed:
    case LeafRule::Mode::PerSequence:
      concatenate(ctx, in, static_cast<std::size_t>(rule.axis), step.maps, step.dims, dst);
      return;
    case LeafRule::Mode::Offsets: concatenate_offsets(ctx, in, dst); return;
    case LeafRule::Mode::Replicate: {
      const Selection all = Selection::all(in.spaces[0].dims);
      transfer::copy(transfer::Side::of(in.objects[0].get(), ctx.where(0, in.node.path)), all,
                     transfer::Side::of(dst, ctx.out_where(in.node.path)), all, ctx.job.policy);
      return;
    }
    case LeafRule::Mode::Reduce:
      reduce_dataset(ctx, in, rule.reducer, step.kind, dst);
      return;
  }
}

void write_dataset(const Context& ctx, const NodeInfo& ds, const std::vector<h5::Id>& objects, hid_t parent) {
  const LeafRule& rule = ctx.resolution.dataset_rule(ds.path);
  const DatasetInputs in = describe_inputs(ctx, ds, objects);
  check_manifest_rows(ctx, in);
  const std::optional<int> axis = rule.cuts_rows() ? std::optional<int>(rule.axis) : std::nullopt;
  require_same_shape(ctx, in, axis ? std::optional<std::size_t>(*axis) : std::nullopt);
  check_sequence_lengths(ctx, in, rule);
  DataStep step{rule, {}, merged_dims(in, rule)};
  if (rule.mode == LeafRule::Mode::Reduce) step.kind = reducible_kind(ctx, ds.path, in.types[0].get());
  if (rule.mode == LeafRule::Mode::Replicate) compare_replicated(ctx, in);
  const bool rows_mapped = rule.cuts_rows() && rule.mode != LeafRule::Mode::Offsets;
  if (rows_mapped) step.maps = row_maps(ctx, in, static_cast<std::size_t>(rule.axis));
  const bool as_virtual = ctx.job.virtual_datasets && rows_mapped;
  h5::Id dst = h5::with_newer_object_header(parent, ds.has_large_attribute(), ctx.out_where(ds.path), [&] {
    return as_virtual ? create_virtual(ctx, in, static_cast<std::size_t>(rule.axis), step.maps, step.dims, parent)
                      : h5::create_dataset(h5::read_prototype(objects[0].get(), ctx.where(0, ds.path)), step.dims,
                                           parent, ds.name, ctx.out_where(ds.path));
  });
  merge_attributes(ctx, ds, objects, dst.get());
  if (!as_virtual) write_data(ctx, in, step, dst.get());
}

void write_children(const Context& ctx, LinkCheck& links, const NodeInfo& group, const std::vector<h5::Id>& groups,
                    hid_t dst) {
  check_members(ctx, group, groups);
  for (const auto& child : group.children) {
    throw_if_interrupted();
    std::vector<h5::Id> objects = open_all(ctx, groups, child);
    check_kind(ctx, child, objects);
    links.check(ctx, child, objects);
    if (child.is_further_name()) {  // merged under its first name, met before
      h5::create_hard_link(dst, child.name, child.first_name, ctx.out_where(child.path));
      continue;
    }
    if (!child.is_group()) {
      write_dataset(ctx, child, objects, dst);
      continue;
    }
    h5::Id out = h5::create_group(dst, child.name, child.has_large_attribute(), ctx.out_where(child.path));
    merge_attributes(ctx, child, objects, out.get());
    write_children(ctx, links, child, objects, out.get());
  }
}

}  // namespace

void write_tree(const Context& ctx, const NodeInfo& root, const std::vector<h5::Id>& files, hid_t output) {
  std::vector<h5::Id> roots;
  for (std::size_t i = 0; i < files.size(); ++i)
    roots.emplace_back(H5Gopen2(files[i].get(), "/", H5P_DEFAULT), ctx.where(i, "/"), "cannot open the root group");
  // Every input's offsets are read and checked (and their merge checked to
  // fit) before anything is written; packed lengths are checked against them
  // on the walk, as split checks its input.
  const InputOffsets offsets = read_input_offsets(ctx, files);
  const Context with_offsets{ctx.job, ctx.resolution, &offsets};
  h5::Id out_root(H5Gopen2(output, "/", H5P_DEFAULT), ctx.out_where("/"), "cannot open the root group");
  merge_attributes(with_offsets, root, roots, out_root.get());
  LinkCheck links(files.size());
  write_children(with_offsets, links, root, roots, out_root.get());
}

}  // namespace mb::io::merging
