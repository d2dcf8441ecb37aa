// The walk over one input: the first input's tree, object by object, each
// object of the input opened once, next to the model's and the output's.
// Input 0 creates the output's objects; later inputs open them.
#include "core/selection.hpp"
#include "io/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/merge/steps.hpp"
#include "io/transfer/copy.hpp"

namespace mb::io::merging {
namespace {

// One member, open in the input and (for inputs after the first) in the model.
struct Opened {
  h5::Id object;
  h5::Id model;  // invalid for input 0: the object is the model
  Pair ids() const { return {model.valid() ? model.get() : object.get(), object.get()}; }
};

Opened open_member(const Context& ctx, Pair parent, const NodeInfo& node) {
  Opened out{h5::open_object(parent.object, node.name, ctx.where(node.path)), {}};
  if (!ctx.first()) out.model = h5::open_object(parent.model, node.name, ctx.model_where(node.path));
  return out;
}

h5::Id open_root(hid_t file, const h5::Location& where) {
  return h5::Id(H5Gopen2(file, "/", H5P_DEFAULT), where, "cannot open the root group");
}

bool has_reduced_attribute(const Context& ctx, const NodeInfo& node) {
  for (const auto& attr : node.attributes)
    if (ctx.resolution.attribute_rule(node.path, attr.name).mode == LeafRule::Mode::Reduce) return true;
  return false;
}

h5::Id create_output(const Context& ctx, const DatasetPair& in, const MergedLeaf* leaf, bool as_virtual,
                     hid_t parent) {
  const NodeInfo& ds = in.node;
  return h5::with_newer_object_header(parent, ds.has_large_attribute(), ctx.out_where(ds.path), [&] {
    if (as_virtual) return create_virtual(ctx, in, *leaf, parent);
    return h5::create_dataset(h5::read_prototype(in.ids.model, ctx.model_where(ds.path)),
                              leaf ? leaf->dims : in.model_space.dims, parent, ds.name, ctx.out_where(ds.path));
  });
}

// What the dataset's rule does with the input's data.
void write_data(const Context& ctx, const DatasetPair& in, const LeafRule& rule, const MergedLeaf* leaf, hid_t dst) {
  switch (rule.mode) {
    case LeafRule::Mode::Split:
    case LeafRule::Mode::Packed:
    case LeafRule::Mode::PerSequence: concatenate(ctx, in, *leaf, dst); return;
    case LeafRule::Mode::Offsets: concatenate_offsets(ctx, in, *leaf, dst); return;
    case LeafRule::Mode::Replicate: {
      if (!ctx.first()) return compare_replicated(ctx, in);
      const Selection all = Selection::all(in.model_space.dims);
      transfer::copy(transfer::Side::of(in.ids.object, ctx.where(in.node.path)), all,
                     transfer::Side::of(dst, ctx.out_where(in.node.path)), all, ctx.job.policy);
      return;
    }
    case LeafRule::Mode::Reduce: reduce_dataset(ctx, in, rule.reducer, dst); return;
  }
}

void merge_dataset(const Context& ctx, const NodeInfo& ds, Pair ids, hid_t parent) {
  const LeafRule& rule = ctx.resolution.dataset_rule(ds.path);
  const MergedLeaf* leaf = ctx.plan.leaf(ds.path);
  const DatasetPair in = describe_pair(ctx, ds, ids);
  check_rows(ctx, in, leaf);
  require_same_shape(ctx, in, leaf ? std::optional<std::size_t>(leaf->axis) : std::nullopt);
  check_sequence_lengths(ctx, in, rule);
  if (rule.mode == LeafRule::Mode::Reduce) reducible_kind(ctx, ds.path, in.model_type.get());
  const bool as_virtual = ctx.job.virtual_datasets && leaf && rule.mode != LeafRule::Mode::Offsets;
  h5::Id dst;
  if (ctx.first()) {
    dst = create_output(ctx, in, leaf, as_virtual, parent);
  } else if (!as_virtual || (ctx.last() && has_reduced_attribute(ctx, ds))) {
    // Opening a virtual dataset reads its every mapping: once, not per input.
    dst = h5::open_object(parent, ds.name, ctx.out_where(ds.path));
  }
  merge_attributes(ctx, ds, ids, dst.get());
  if (!as_virtual) write_data(ctx, in, rule, leaf, dst.get());
}

void merge_members(const Context& ctx, LinkCheck& links, const NodeInfo& group, Pair ids, hid_t dst) {
  check_members(ctx, group, ids.object);
  for (const auto& child : group.children) {
    throw_if_interrupted();
    const Opened member = open_member(ctx, ids, child);
    check_kind(ctx, child, member.object.get());
    links.check(ctx, child, member.object.get());
    if (child.is_further_name()) {  // merged under its first name, met before
      if (ctx.first()) h5::create_hard_link(dst, child.name, child.first_name, ctx.out_where(child.path));
      continue;
    }
    if (!child.is_group()) {
      merge_dataset(ctx, child, member.ids(), dst);
      continue;
    }
    h5::Id out = ctx.first() ? h5::create_group(dst, child.name, child.has_large_attribute(), ctx.out_where(child.path))
                             : h5::open_object(dst, child.name, ctx.out_where(child.path));
    merge_attributes(ctx, child, member.ids(), out.get());
    merge_members(ctx, links, child, member.ids(), out.get());
  }
}

}  // namespace

bool Carried::take(std::uint64_t bytes) {
  if (bytes > budget) return false;
  budget -= bytes;
  return true;
}

void merge_input(const Context& ctx, const NodeInfo& root, hid_t file, hid_t model, hid_t output) {
  const h5::Id input_root = open_root(file, ctx.where("/"));
  const h5::Id model_root = ctx.first() ? h5::Id() : open_root(model, ctx.model_where("/"));
  const Pair ids{ctx.first() ? input_root.get() : model_root.get(), input_root.get()};
  // The input's offsets are read and checked first: packed lengths are
  // checked against them on the walk, as split checks its input.
  const InputOffsets offsets = read_input_offsets(ctx, file);
  Context with_offsets = ctx;
  with_offsets.offsets = &offsets;
  const h5::Id out_root = open_root(output, ctx.out_where("/"));
  merge_attributes(with_offsets, root, ids, out_root.get());
  LinkCheck links;
  merge_members(with_offsets, links, root, ids, out_root.get());
}

}  // namespace mb::io::merging
