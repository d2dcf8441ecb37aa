// The walk over one input: the first input's tree, object by object, each
// object of the input opened once and checked against what input 0 left of
// the model in Carried. Input 0 creates the output's objects; later inputs
// open one only to write to it.
#include "core/selection.hpp"
#include "io/tree/derived.hpp"
#include "io/run/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"
#include "io/transfer/copy.hpp"

namespace mb::io::merge {
namespace {

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
    if (ctx.resolution.dataset_rule(ds.path).stacks()) return create_stacked(ctx, in, parent);
    h5::Prototype prototype = h5::read_prototype(in.object, ctx.model_where(ds.path));
    if (leaf) allocate_assembly(ctx, ds.path, *leaf, prototype);
    return h5::create_dataset(prototype, leaf ? leaf->dims : in.model.space.dims, parent, ds.name,
                              ctx.out_where(ds.path));
  });
}

// What the dataset's rule does with the input's data.
void write_data(const Context& ctx, const DatasetPair& in, const LeafRule& rule, const MergedLeaf* leaf, hid_t dst) {
  switch (rule.mode) {
    case LeafRule::Mode::Split:
    case LeafRule::Mode::Packed:
    case LeafRule::Mode::PerSequence: concatenate(ctx, in, *leaf, dst); return;
    case LeafRule::Mode::Offsets: concatenate_offsets(ctx, in, *leaf, dst); return;
    // A derived value differs from file to file: each input's was checked
    // against its offsets, and the merged batch's is written after the walk.
    case LeafRule::Mode::Derive: return;
    case LeafRule::Mode::Drop: return;  // refused by merge before the walk (check_options)
    case LeafRule::Mode::Replicate: {
      if (!ctx.first()) return compare_replicated(ctx, in);
      const Selection all = Selection::all(in.model.space.dims);
      transfer::copy(transfer::Side::of(in.object, ctx.where(in.node.path)), all,
                     transfer::Side::of(dst, ctx.out_where(in.node.path)), all, ctx.job.policy);
      return;
    }
    case LeafRule::Mode::Reduce:
      if (rule.stacks()) return stack_dataset(ctx, in, dst);
      return reduce_dataset(ctx, in, rule, dst);
  }
}

// Whether input `ctx.input` writes to the output's dataset (input 0 creates
// it): opening an output object costs, a virtual one's every mapping.
bool writes_output(const Context& ctx, const NodeInfo& ds, const LeafRule& rule, bool as_virtual, bool twin) {
  if (ctx.first()) return true;
  if (ctx.last() && has_reduced_attribute(ctx, ds)) return true;
  if (as_virtual) return false;
  const bool assembled = ctx.carried.assembled.count(ds.path) != 0;
  if (twin) return ctx.last() && assembled && !placed(ctx, ds.path);
  switch (rule.mode) {
    case LeafRule::Mode::Split:
    case LeafRule::Mode::Packed:
    case LeafRule::Mode::PerSequence: return !assembled || (ctx.last() && !placed(ctx, ds.path));
    case LeafRule::Mode::Offsets: return true;
    case LeafRule::Mode::Replicate:
    case LeafRule::Mode::Derive:
    case LeafRule::Mode::Drop: return false;
    case LeafRule::Mode::Reduce: return rule.stacks() || (ctx.last() && ctx.carried.reducing.count(ds.path));
  }
  return true;
}

void merge_dataset(const Context& ctx, const NodeInfo& ds, hid_t object, hid_t parent) {
  const LeafRule& rule = ctx.resolution.dataset_rule(ds.path);
  const MergedLeaf* leaf = ctx.plan.leaf(ds.path);
  const DatasetPair in = describe_pair(ctx, ds, object);
  check_rows(ctx, in, leaf);
  require_same_shape(ctx, in, leaf ? std::optional<std::size_t>(leaf->axis) : std::nullopt);
  check_sequence_lengths(ctx, in, rule);
  // Each input's derived value is what its own offsets give (the merged
  // batch's is written after the walk).
  if (rule.mode == LeafRule::Mode::Derive)
    tree::check_derived_value(object, {}, rule, *ctx.offsets, ctx.where(ds.path));
  if (rule.mode == LeafRule::Mode::Reduce && !rule.stacks()) reducible_kind(ctx, ds.path, in.model.type);
  const bool as_virtual = ctx.job.virtual_datasets && leaf && rule.mode != LeafRule::Mode::Offsets;
  // Context parallelism: of a dataset the same for every CP rank, only CP
  // rank 0's file is written; the others are checked against it.
  const bool twin = leaf && leaf->shared && ctx.plan.twin(ctx.input) != ctx.input;
  h5::Id dst;
  if (ctx.first()) {
    dst = create_output(ctx, in, leaf, as_virtual, parent);
  } else if (writes_output(ctx, ds, rule, as_virtual, twin)) {
    dst = h5::open_object(parent, ds.name, ctx.out_where(ds.path));
  }
  merge_attributes(ctx, ds, object, dst.get());
  if (twin) {
    compare_with_twin(ctx, in);
    write_assembled(ctx, ds.path, *leaf, dst.get());
    return;
  }
  if (!as_virtual) write_data(ctx, in, rule, leaf, dst.get());
}

void merge_members(const Context& ctx, LinkCheck& links, const NodeInfo& group, hid_t object, hid_t dst) {
  check_members(ctx, group, object);
  for (const auto& child : group.children) {
    run::throw_if_interrupted();
    const h5::Id member = h5::open_object(object, child.name, ctx.where(child.path));
    check_kind(ctx, child, member.get());
    links.check(ctx, child, member.get());
    if (child.is_further_name()) {  // merged under its first name, met before
      if (ctx.first()) h5::create_hard_link(dst, child.name, child.first_name, ctx.out_where(child.path));
      continue;
    }
    if (!child.is_group()) {
      merge_dataset(ctx, child, member.get(), dst);
      continue;
    }
    h5::Id out = ctx.first() ? h5::create_group(dst, child.name, needs_newer_header(ctx, child, member.get()),
                                                ctx.out_where(child.path))
                             : h5::open_object(dst, child.name, ctx.out_where(child.path));
    merge_attributes(ctx, child, member.get(), out.get());
    merge_members(ctx, links, child, member.get(), out.get());
  }
}

}  // namespace

bool Carried::take(std::uint64_t bytes) {
  if (bytes > budget) return false;
  budget -= bytes;
  return true;
}

hid_t Carried::intern(hid_t type, const h5::Location& where) {
  const h5::Interned::Found found = types.find(type);
  if (found.id != H5I_INVALID_HID) return found.id;
  return types.add(h5::copy_type(type, where));
}

KeptValue Carried::keep(h5::AttributeValue value, const h5::Location& where) {
  KeptValue kept{intern(value.type.get(), where), value.shape, std::move(value.data)};
  kept.data.retype(kept.type);
  return kept;
}

h5::Id open_model(const Context& ctx, const std::string& path) {
  return h5::open_object(ctx.model_file, path, ctx.model_where(path));
}

void merge_input(const Context& ctx, const NodeInfo& root, hid_t file, hid_t output) {
  const h5::Id input_root = h5::open_object(file, "/", ctx.where("/"));
  // The input's offsets are read and checked first: packed lengths are
  // checked against them on the walk, as split checks its input.
  const InputOffsets offsets = read_input_offsets(ctx, file);
  // Weights too: a weight may come after the leaves it weighs in the walk.
  read_input_weights(ctx, file);
  Context with_offsets = ctx;
  with_offsets.offsets = &offsets;
  const h5::Id out_root = h5::open_object(output, "/", ctx.out_where("/"));
  merge_attributes(with_offsets, root, input_root.get(), out_root.get());
  LinkCheck links;
  merge_members(with_offsets, links, root, input_root.get(), out_root.get());
}

}  // namespace mb::io::merge
