// Merge's attributes: the same in every input unless a reducer is given.
#include <algorithm>
#include <optional>

#include "io/tree/derived.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/scales.hpp"
#include "io/h5/types.hpp"
#include "io/merge/attributes.hpp"
#include "io/merge/checks.hpp"
#include "io/merge/state.hpp"

namespace mb::io::merge {
namespace {

void check_alike(const Context& ctx, const std::string& what, const KeptValue& a, const h5::AttributeValue& b) {
  check_dtype(ctx, what, a.type, b.type.get());
  if (a.shape.null_space != b.shape.null_space || a.shape.dims != b.shape.dims)
    shapes_differ(ctx, what, a.shape.dims, b.shape.dims);
}

void check_equal(const Context& ctx, const std::string& what, const KeptValue& a, const h5::AttributeValue& b,
                 const std::string& name) {
  const ValueType t = h5::value_type_of(a.type, ctx.model_where(what));
  const std::uint64_t n = a.shape.elements();
  if (auto at = first_difference(t, a.data.data(), b.data.data(), n))
    ctx.differ(what, difference_text(t, a.shape.dims, {a.data.data(), b.data.data(), n, 0, *at}) +
                         reducer_hint(ctx, what, "@" + name));
}

// A derived element's neighbours (a sparse matrix's column count beside its
// derived row count) are replicated: equal in every input.
void check_other_elements(const Context& ctx, const std::string& what, const KeptValue& a,
                          const h5::AttributeValue& b, std::uint64_t derived) {
  const ValueType t = h5::value_type_of(a.type, ctx.model_where(what));
  const std::size_t size = h5::size_of(a.type, ctx.model_where(what));
  const std::uint64_t n = a.shape.elements();
  for (std::uint64_t i = 0; i < n; ++i) {
    const char* x = static_cast<const char*>(a.data.data()) + i * size;
    const char* y = static_cast<const char*>(b.data.data()) + i * size;
    if (i == derived || !first_difference(t, x, y, 1)) continue;
    ctx.differ(what, difference_text(t, a.shape.dims, {a.data.data(), b.data.data(), n, 0, i}));
  }
}

// The model's value of attribute `index` of `node`: kept at input 0, or
// read again from the model's object when it did not fit the budget.
// (`index` counts the attributes merged: dimension-scale ones are not.)
struct ModelValue {
  const NodeInfo& node;
  std::size_t index;
  const std::string& name;
};
const KeptValue& model_value(const Context& ctx, Carried& carried, const ModelValue& value,
                             std::optional<KeptValue>& reread) {
  const ModelInfo& model = carried.models.at(value.node.path);
  if (model.attributes_kept) return model.attributes.at(value.index);
  const h5::Id object = open_model(ctx, value.node.path);
  const h5::Location at = ctx.model_where(value.node.path);
  reread.emplace(carried.keep(h5::read_attribute(object.get(), value.name, at), at));
  return *reread;
}

std::uint64_t kept_bytes(const std::vector<KeptValue>& values, const h5::Location& where) {
  std::uint64_t n = 0;
  for (const auto& v : values) n += v.shape.elements() * h5::size_of(v.type, where) + 128;
  return n;
}

void reduce_or_stack(const Context& ctx, MergeState& state, const ReducedAttribute& attribute, const KeptValue& model,
                     hid_t dst) {
  if (attribute.rule.stacks()) return stack_attribute(ctx, state.stacks, attribute, model, dst);
  reduce_attribute(ctx, state.reduce, attribute, model, dst);
}

// Input 0: the values are the model's; they are written (reduced ones at
// the last input), and kept for the later inputs while the budget allows.
void first_attributes(const Context& ctx, MergeState& state, const NodeInfo& node, hid_t object, hid_t dst) {
  std::vector<KeptValue> values;
  const h5::Location at = ctx.where(node.path);
  for (const auto& attr : node.attributes) {
    if (attr.dimension_scale) continue;  // attached again after the walk (h5::attach_scales)
    const LeafRule rule = ctx.resolution.attribute_rule(node.path, attr.name);
    h5::AttributeValue value = h5::read_attribute(object, attr.name, at);
    if (rule.mode == LeafRule::Mode::Derive)  // the merged batch's value replaces it after the walk
      tree::check_derived_value(object, attr.name, rule, *ctx.offsets, at.attribute(attr.name));
    if (rule.mode != LeafRule::Mode::Reduce) h5::write_attribute(dst, attr.name, value, ctx.out_where(node.path));
    values.push_back(state.carried.keep(std::move(value), at));
    if (rule.mode == LeafRule::Mode::Reduce)
      reduce_or_stack(ctx, state, {node.path + "@" + attr.name, node.path, attr.name, rule, object}, values.back(),
                      dst);
  }
  ModelInfo& model = state.carried.models[node.path];
  if (!state.carried.take(kept_bytes(values, at))) return;
  model.attributes = std::move(values);
  model.attributes_kept = true;
}

}  // namespace

void merge_attributes(const Context& ctx, MergeState& state, const NodeInfo& node, hid_t object, hid_t dst) {
  if (ctx.first()) return first_attributes(ctx, state, node, object, dst);
  check_attribute_names(ctx, node, object);
  std::size_t k = 0;  // index of the attribute among the merged ones
  for (const auto& attr : node.attributes) {
    if (attr.dimension_scale) continue;
    const std::string& name = attr.name;
    const LeafRule rule = ctx.resolution.attribute_rule(node.path, name);
    const std::string what = node.path + "@" + name;
    const h5::AttributeValue value = h5::read_attribute(object, name, ctx.where(node.path));
    std::optional<KeptValue> reread;
    const KeptValue& model = model_value(ctx, state.carried, {node, k++, name}, reread);
    check_alike(ctx, what, model, value);
    if (rule.mode == LeafRule::Mode::Reduce) {
      reduce_or_stack(ctx, state, {what, node.path, name, rule, object}, model, dst);
      continue;
    }
    // A derived value differs from file to file: each is what its own file's offsets give.
    if (rule.mode == LeafRule::Mode::Derive) {
      tree::check_derived_value(object, name, rule, *ctx.offsets, ctx.where(what));
      if (rule.element) check_other_elements(ctx, what, model, value, static_cast<std::uint64_t>(*rule.element));
      continue;
    }
    // A phony dimension's NAME states its length: each file's own, the
    // merged one written after the walk (h5::attach_scales).
    if (h5::is_phony_dimension_name(node, name) && ctx.resolution.dataset_rule(node.path).cuts_rows()) continue;
    check_equal(ctx, what, model, value, name);
  }
}

}  // namespace mb::io::merge
