// Merge's attributes: the same in every input unless a reducer is given.
#include "io/h5/attributes.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merging {
namespace {

void check_alike(const Context& ctx, const std::string& what, const h5::AttributeValue& a,
                 const h5::AttributeValue& b, std::size_t input) {
  check_dtype(ctx, what, a.type.get(), b.type.get(), input);
  if (a.shape.null_space != b.shape.null_space || a.shape.dims != b.shape.dims)
    shapes_differ(ctx, what, a.shape.dims, b.shape.dims, input);
}

void check_equal(const Context& ctx, const std::string& what, const std::vector<h5::AttributeValue>& values) {
  if (values.size() < 2) return;
  const ValueType t = h5::value_type_of(values[0].type.get(), {ctx.job.inputs[0].path, what});
  const h5::AttributeValue& a = values[0];
  const std::uint64_t n = a.shape.elements();
  for (std::size_t i = 1; i < values.size(); ++i)
    if (auto at = first_difference(t, a.data.data(), values[i].data.data(), n))
      ctx.differ(what, i, difference_text(t, a.shape.dims, {a.data.data(), values[i].data.data(), n, 0, *at}));
}

}  // namespace

void merge_attributes(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects, hid_t dst) {
  check_attribute_names(ctx, node, objects);
  for (const auto& attr : node.attributes) {
    const LeafRule rule = ctx.resolution.attribute_rule(node.path, attr.name);
    const std::string what = node.path + "@" + attr.name;
    std::vector<h5::AttributeValue> values;
    for (std::size_t i = 0; i < objects.size(); ++i)
      values.push_back(h5::read_attribute(objects[i].get(), attr.name, ctx.where(i, node.path)));
    for (std::size_t i = 1; i < values.size(); ++i) check_alike(ctx, what, values[0], values[i], i);
    if (rule.mode == LeafRule::Mode::Reduce) {
      reduce_attribute(ctx, what, rule.reducer, attr.name, objects, values[0], dst);
      continue;
    }
    check_equal(ctx, what, values);
    h5::write_attribute(dst, attr.name, values[0], ctx.out_where(node.path));
  }
}

}  // namespace mb::io::merging
