// Merge's attributes: the same in every input unless a reducer is given.
#include "io/h5/attributes.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merging {
namespace {

void check_alike(const Context& ctx, const std::string& what, const h5::AttributeValue& a,
                 const h5::AttributeValue& b) {
  check_dtype(ctx, what, a.type.get(), b.type.get());
  if (a.shape.null_space != b.shape.null_space || a.shape.dims != b.shape.dims)
    shapes_differ(ctx, what, a.shape.dims, b.shape.dims);
}

void check_equal(const Context& ctx, const std::string& what, const h5::AttributeValue& a,
                 const h5::AttributeValue& b) {
  const ValueType t = h5::value_type_of(a.type.get(), ctx.model_where(what));
  const std::uint64_t n = a.shape.elements();
  if (auto at = first_difference(t, a.data.data(), b.data.data(), n))
    ctx.differ(what, difference_text(t, a.shape.dims, {a.data.data(), b.data.data(), n, 0, *at}));
}

}  // namespace

void merge_attributes(const Context& ctx, const NodeInfo& node, Pair ids, hid_t dst) {
  check_attribute_names(ctx, node, ids.object);
  for (const auto& attr : node.attributes) {
    const LeafRule rule = ctx.resolution.attribute_rule(node.path, attr.name);
    const std::string what = node.path + "@" + attr.name;
    const h5::AttributeValue value = h5::read_attribute(ids.object, attr.name, ctx.where(node.path));
    const bool reduced = rule.mode == LeafRule::Mode::Reduce;
    if (ctx.first()) {  // the model itself
      if (reduced) {
        reduce_attribute(ctx, {what, attr.name, rule.reducer, ids.object}, value, dst);
      } else {
        h5::write_attribute(dst, attr.name, value, ctx.out_where(node.path));
      }
      continue;
    }
    const h5::AttributeValue model = h5::read_attribute(ids.model, attr.name, ctx.model_where(node.path));
    check_alike(ctx, what, model, value);
    if (reduced) {
      reduce_attribute(ctx, {what, attr.name, rule.reducer, ids.object}, model, dst);
      continue;
    }
    check_equal(ctx, what, model, value);
  }
}

}  // namespace mb::io::merging
