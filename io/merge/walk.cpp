// The walk over one input: the first input's tree, object by object, each
// object of the input opened once and checked against what input 0 left of
// the model in Carried. Input 0 creates the output's objects; later inputs
// open one only to write to it.
#include "io/merge/walk.hpp"

#include "core/selection.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/types.hpp"
#include "io/merge/attributes.hpp"
#include "io/merge/checks.hpp"
#include "io/merge/virtual.hpp"
#include "io/run/guard.hpp"
#include "io/transfer/copy.hpp"
#include "io/tree/derived.hpp"

namespace mb::io::merge {
namespace {

bool has_reduced_attribute(const Context& ctx, const NodeInfo& node) {
  for (const auto& attr : node.attributes)
    if (ctx.resolution.attribute_rule(node.path, attr.name).mode == LeafRule::Mode::Reduce) return true;
  return false;
}

// One input's walk: what every object of it needs, and the state it changes.
class Walk {
 public:
  Walk(const Context& ctx, MergeState& state) : ctx_(ctx), state_(state) {}

  void merge_members(const NodeInfo& group, hid_t object, hid_t dst);

 private:
  h5::Id create_output(const DatasetPair& in, const MergedLeaf* leaf, bool as_virtual, hid_t parent);
  void write_data(const DatasetPair& in, const LeafRule& rule, const MergedLeaf* leaf, hid_t dst);
  bool writes_output(const NodeInfo& ds, const LeafRule& rule, bool as_virtual, bool twin) const;
  void merge_dataset(const NodeInfo& ds, hid_t object, hid_t parent);

  const Context& ctx_;
  MergeState& state_;
  LinkCheck links_;
};

h5::Id Walk::create_output(const DatasetPair& in, const MergedLeaf* leaf, bool as_virtual, hid_t parent) {
  const NodeInfo& ds = in.node;
  return h5::with_newer_object_header(parent, ds.has_large_attribute(), ctx_.out_where(ds.path), [&] {
    if (as_virtual) return create_virtual(ctx_, in, *leaf, parent);
    if (ctx_.resolution.dataset_rule(ds.path).stacks()) return create_stacked(ctx_, in, parent);
    h5::Prototype prototype = h5::read_prototype(in.object, ctx_.model_where(ds.path));
    if (leaf) allocate_assembly(ctx_, ds.path, *leaf, prototype);
    return h5::create_dataset(prototype, leaf ? leaf->dims : in.model.space.dims, {transfer::kFileBytesMin}, parent,
                              ds.name, ctx_.out_where(ds.path));
  });
}

// What the dataset's rule does with the input's data.
void Walk::write_data(const DatasetPair& in, const LeafRule& rule, const MergedLeaf* leaf, hid_t dst) {
  switch (rule.mode) {
    case LeafRule::Mode::Split:
    case LeafRule::Mode::Packed:
    case LeafRule::Mode::PerSequence: concatenate(ctx_, state_, in, *leaf, dst); return;
    case LeafRule::Mode::Offsets: concatenate_offsets(ctx_, state_.concat, in, *leaf, dst); return;
    // A derived value differs from file to file: each input's was checked
    // against its offsets, and the merged batch's is written after the walk.
    case LeafRule::Mode::Derive: return;
    case LeafRule::Mode::Drop: return;  // refused by merge before the walk (check_options)
    case LeafRule::Mode::PaddedOffsets:
    case LeafRule::Mode::RankBounds: return;  // left out (merge_dataset)
    case LeafRule::Mode::Replicate: {
      if (!ctx_.first()) return compare_replicated(ctx_, in);
      const Selection all = Selection::all(in.model.space.dims);
      transfer::copy(transfer::Side::of(in.object, ctx_.where(in.node.path)), all,
                     transfer::Side::of(dst, ctx_.out_where(in.node.path)), all, ctx_.job.policy);
      return;
    }
    case LeafRule::Mode::Reduce:
      if (rule.stacks()) return stack_dataset(ctx_, in, dst);
      return reduce_dataset(ctx_, state_.carried, state_.reduce, in, dst);
  }
}

// Whether input `ctx.input` writes to the output's dataset (input 0 creates
// it): opening an output object costs, a virtual one's every mapping.
bool Walk::writes_output(const NodeInfo& ds, const LeafRule& rule, bool as_virtual, bool twin) const {
  if (ctx_.first()) return true;
  if (ctx_.last() && has_reduced_attribute(ctx_, ds)) return true;
  if (as_virtual) return false;
  const bool assembled = state_.concat.assembled.count(ds.path) != 0;
  const bool written_at_last = ctx_.last() && !placed(state_.concat, ds.path);
  if (twin) return assembled && written_at_last;
  switch (rule.mode) {
    case LeafRule::Mode::Split:
    case LeafRule::Mode::Packed:
    case LeafRule::Mode::PerSequence: return !assembled || written_at_last;
    case LeafRule::Mode::Offsets: return true;
    case LeafRule::Mode::Replicate:
    case LeafRule::Mode::Derive:
    case LeafRule::Mode::Drop:
    case LeafRule::Mode::PaddedOffsets:
    case LeafRule::Mode::RankBounds: return false;
    case LeafRule::Mode::Reduce: return rule.stacks() || (ctx_.last() && state_.reduce.reducing.count(ds.path));
  }
  return true;
}

void Walk::merge_dataset(const NodeInfo& ds, hid_t object, hid_t parent) {
  const LeafRule& rule = ctx_.resolution.dataset_rule(ds.path);
  // The merged batch has no pads, and no ranks' bounds (both checked before the walk).
  if (rule.mode == LeafRule::Mode::PaddedOffsets || rule.mode == LeafRule::Mode::RankBounds) return;
  const MergedLeaf* leaf = ctx_.plan.leaf(ds.path);
  const DatasetPair in = describe_pair(ctx_, state_.carried, ds, object);
  check_rows(ctx_, in, leaf);
  require_same_shape(ctx_, in, leaf ? std::optional<std::size_t>(leaf->axis) : std::nullopt);
  check_sequence_lengths(ctx_, in, rule);
  // Each input's derived value is what its own offsets give (the merged
  // batch's is written after the walk).
  if (rule.mode == LeafRule::Mode::Derive)
    tree::check_derived_value(object, {}, rule, *ctx_.offsets, ctx_.where(ds.path));
  if (rule.mode == LeafRule::Mode::Reduce && !rule.stacks()) reducible_kind(ctx_, ds.path, in.model.type);
  const bool as_virtual = ctx_.job.virtual_datasets && leaf && rule.mode != LeafRule::Mode::Offsets;
  // Context parallelism: of a dataset the same for every CP rank, only CP
  // rank 0's file is written; the others are checked against it.
  const bool twin = leaf && leaf->shared && ctx_.plan.twin(ctx_.input) != ctx_.input;
  h5::Id dst;
  if (ctx_.first()) {
    dst = create_output(in, leaf, as_virtual, parent);
  } else if (writes_output(ds, rule, as_virtual, twin)) {
    dst = h5::open_object(parent, ds.name, ctx_.out_where(ds.path));
  }
  merge_attributes(ctx_, state_, ds, object, dst.get());
  if (twin) {
    compare_with_twin(ctx_, in);
    write_assembled(ctx_, state_, ds.path, *leaf, dst.get());
    return;
  }
  if (!as_virtual) write_data(in, rule, leaf, dst.get());
}

void Walk::merge_members(const NodeInfo& group, hid_t object, hid_t dst) {
  check_members(ctx_, group, object);
  for (const auto& child : group.children) {
    run::throw_if_interrupted();
    const h5::Id member = h5::open_object(object, child.name, ctx_.where(child.path));
    check_kind(ctx_, child, member.get());
    links_.check(ctx_, child, member.get());
    if (child.is_further_name()) {  // merged under its first name, met before
      if (ctx_.first()) h5::create_hard_link(dst, child.name, child.first_name, ctx_.out_where(child.path));
      continue;
    }
    if (!child.is_group()) {
      merge_dataset(child, member.get(), dst);
      continue;
    }
    h5::Id out = ctx_.first() ? h5::create_group(dst, child.name, needs_newer_header(ctx_, child, member.get()),
                                                 ctx_.out_where(child.path))
                              : h5::open_object(dst, child.name, ctx_.out_where(child.path));
    merge_attributes(ctx_, state_, child, member.get(), out.get());
    merge_members(child, member.get(), out.get());
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

void merge_input(const Context& ctx, MergeState& state, const NodeInfo& root, hid_t file, hid_t output) {
  const h5::Id input_root = h5::open_object(file, "/", ctx.where("/"));
  // The input's offsets are read and checked first: packed lengths are
  // checked against them on the walk, as split checks its input.
  const InputOffsets offsets = read_input_offsets(ctx, file);
  // Weights too: a weight may come after the leaves it weighs in the walk.
  read_input_weights(ctx, state.carried, state.weights, file);
  Context with_offsets = ctx;
  with_offsets.offsets = &offsets;
  const h5::Id out_root = h5::open_object(output, "/", ctx.out_where("/"));
  merge_attributes(with_offsets, state, root, input_root.get(), out_root.get());
  Walk(with_offsets, state).merge_members(root, input_root.get(), out_root.get());
}

}  // namespace mb::io::merge
