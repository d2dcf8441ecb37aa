// Merge's reducers: element-wise across the inputs, in bounded blocks.
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"

namespace mb::io::merging {
namespace {

// How reduced values are read and written. Integers: as native integers.
// Floats: in the object's own type, so that HDF5 converts nothing (its
// float16 conversions round wrongly) and the one rounding is core's.
struct ValueIo {
  Reducer reducer;
  NumKind kind;
  hid_t mem_type;  // not owned
  std::optional<FloatFormat> format;

  std::size_t element_size() const { return format ? format->size : num_kind_size(kind); }
  Accumulator accumulator(std::size_t count) const {
    return format ? Accumulator(reducer, *format, count) : Accumulator(reducer, kind, count);
  }
};

ValueIo value_io(Reducer reducer, NumKind kind, hid_t type) {
  if (kind != NumKind::Float) return {reducer, kind, h5::native_type(kind), std::nullopt};
  const auto format = h5::float_format(type);
  if (!format) throw Error("internal: a reducible float without a format");
  return {reducer, kind, type, format};
}

}  // namespace

NumKind reducible_kind(const Context& ctx, const std::string& what, hid_t type) {
  const auto kind = h5::numeric_kind(type);
  if (kind) return *kind;
  if (H5Tget_class(type) == H5T_FLOAT)
    throw Error(fmt::format("{}: {}: cannot reduce dtype {} (reducers take IEEE-like floats whose every value "
                            "float64 holds exactly)",
                            ctx.job.inputs[0].path, what, h5::dtype_name(type)));
  throw Error(fmt::format("{}: {}: cannot reduce dtype {} (reducers take integers and floats)",
                          ctx.job.inputs[0].path, what, h5::dtype_name(type)));
}

void reduce_dataset(const Context& ctx, const DatasetInputs& in, Reducer reducer, NumKind kind, hid_t dst) {
  if (in.spaces[0].null_space) return;
  const Shape& shape = in.spaces[0].dims;
  const std::string& path = in.node.path;
  // Every input's type equals the first's (describe_inputs), so reading them
  // all with it converts nothing.
  const ValueIo io = value_io(reducer, kind, in.types[0].get());
  h5::Buffer values(io.mem_type), out(io.mem_type);
  // One input block, the output block and the 16-byte accumulators at once.
  const std::size_t per_element = 2 * io.element_size() + 16;
  for_each_block(shape, ctx.job.policy.buffer_bytes / per_element, [&](const Shape& start, const Shape& block) {
    const Selection part = Selection::all(shape).part(start, block);
    Accumulator acc = io.accumulator(part.elements());
    for (std::size_t i = 0; i < in.objects.size(); ++i) {
      h5::read(in.objects[i].get(), part, values, ctx.where(i, path));
      acc.add(values.data());
    }
    out.prepare(part.elements());
    acc.finish(out.data(), path, flat_index(shape, start));
    h5::write(dst, part, out.type(), out.data(), ctx.out_where(path));
  });
}

void reduce_attribute(const Context& ctx, const std::string& what, Reducer reducer, const std::string& name,
                      const std::vector<h5::Id>& objects, const h5::AttributeValue& first, hid_t dst) {
  const NumKind kind = reducible_kind(ctx, what, first.type.get());
  // Every input's attribute type equals the first's (merge_attributes checks).
  const ValueIo io = value_io(reducer, kind, first.type.get());
  const std::uint64_t n = first.shape.elements();
  Accumulator acc = io.accumulator(n);
  std::vector<unsigned char> values(std::max<std::uint64_t>(n, 1) * io.element_size());
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const h5::Location at = ctx.where(i, what);
    h5::Id attr(H5Aopen(objects[i].get(), name.c_str(), H5P_DEFAULT), at, "cannot open the attribute");
    if (n > 0) h5::check(H5Aread(attr.get(), io.mem_type, values.data()), at, "cannot read the attribute");
    acc.add(values.data());
  }
  acc.finish(values.data(), what);
  const h5::Location at = ctx.out_where(what);
  h5::Id attr(H5Acreate2(dst, name.c_str(), first.type.get(), first.space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
              "cannot create the attribute");
  if (n > 0) h5::check(H5Awrite(attr.get(), io.mem_type, values.data()), at, "cannot write the attribute");
}

}  // namespace mb::io::merging
