// {"reduce": "stack"}: the inputs' values side by side along a new leading
// axis. Nothing is accumulated: the output's dataset has its final shape
// from input 0 on, and each input writes its own slice when it is walked.
// Attributes are written whole, so their values are kept to the last input.
#include <fmt/format.h>

#include <cstring>

#include "core/partition.hpp"
#include "io/run/guard.hpp"
#include "io/h5/attributes.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/merge/stack.hpp"

namespace mb::io::merge {
namespace {

// Slice `input` of the stacked tensor, at `start` within it, `block` deep.
Selection slice(std::size_t input, const Shape& start, const Shape& block) {
  Selection s;
  s.start = start;
  s.count = block;
  s.start.insert(s.start.begin(), input);
  s.count.insert(s.count.begin(), 1);
  return s;
}

}  // namespace

h5::Id create_stacked(const Context& ctx, const DatasetPair& in, hid_t parent) {
  const NodeInfo& ds = in.node;
  const h5::Location at = ctx.out_where(ds.path);
  const h5::Prototype prototype =
      h5::stacked_prototype(h5::read_prototype(in.object, ctx.model_where(ds.path)), ctx.job.inputs.size(), at);
  return h5::create_dataset(prototype, prototype.space.dims, {transfer::kFileBytesMin}, parent, ds.name, at);
}

void stack_dataset(const Context& ctx, const DatasetPair& in, hid_t dst) {
  if (in.model.space.null_space) return;  // no value: the output is a null dataspace too
  const std::string& path = in.node.path;
  const Shape& dims = in.model.space.dims;  // every input's (require_same_shape)
  // Read in the model's type, which every input's equals: nothing is converted.
  h5::Buffer buffer(in.model.type);
  const std::size_t element = std::max<std::size_t>(h5::size_of(in.model.type, ctx.where(path)), 1);
  for_each_block(dims, ctx.job.policy.buffer_bytes / element, [&](const Shape& start, const Shape& block) {
    run::throw_if_interrupted();
    h5::read(in.object, Selection::all(dims).part(start, block), buffer, ctx.where(path));
    h5::write(dst, slice(ctx.input, start, block), buffer.type(), buffer.data(), ctx.out_where(path));
  });
}

void stack_attribute(const Context& ctx, StackState& state, const ReducedAttribute& attribute, const KeptValue& model,
                     hid_t dst) {
  std::vector<h5::Buffer>& values = state.attributes[attribute.what];
  // The input's type equals the model's (merge_attributes checks): read in it.
  const std::uint64_t n = model.shape.elements();
  const h5::Location at = ctx.where(attribute.what);
  h5::Buffer value(model.type);
  value.prepare(n);
  const h5::Id attr = h5::open_attribute(attribute.object, attribute.name, ctx.where(attribute.path));
  if (n > 0) h5::read_all(attr.get(), model.type, value.data(), at);
  values.push_back(std::move(value));
  if (!ctx.last()) return;
  const h5::Location out_at = ctx.out_where(attribute.what);
  const std::size_t bytes = n * h5::size_of(model.type, out_at);
  // Side by side, in input order; variable-length elements point into the
  // kept buffers, which own them until they are erased.
  std::vector<unsigned char> all(std::max<std::size_t>(values.size() * bytes, 1));
  for (std::size_t i = 0; i < values.size(); ++i)
    if (bytes > 0) std::memcpy(all.data() + i * bytes, values[i].data(), bytes);
  Shape dims = model.shape.dims;
  dims.insert(dims.begin(), values.size());
  const h5::Id space = model.shape.null_space ? h5::make_null_space(out_at) : h5::make_space(dims, out_at);
  const h5::Id out =
      h5::create_attribute(dst, attribute.name, model.type, space.get(), ctx.out_where(attribute.path));
  if (n > 0) h5::write_all(out.get(), model.type, all.data(), out_at);
  state.attributes.erase(attribute.what);
}

bool needs_newer_header(const Context& ctx, const NodeInfo& node, hid_t object) {
  if (node.has_large_attribute()) return true;
  for (const auto& a : node.attributes) {
    if (a.null_space || !ctx.resolution.attribute_rule(node.path, a.name).stacks()) continue;
    const h5::Location at = ctx.model_where(node.path).attribute(a.name);
    const h5::Id attr = h5::open_attribute(object, a.name, ctx.model_where(node.path));
    const h5::Id type = h5::type_of(attr.get(), at);
    if (h5::too_large_for_a_header_message(attr.get(), type.get(), a.name, a.shape.size() + 1, ctx.job.inputs.size()))
      return true;
  }
  return false;
}

}  // namespace mb::io::merge
