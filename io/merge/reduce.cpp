// Merge's reducers: element-wise across the inputs, in bounded blocks.
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "io/h5/buffer.hpp"
#include "io/run/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/attributes.hpp"
#include "io/source/input.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/merge/reduce.hpp"
#include "io/merge/weights.hpp"

namespace mb::io::merge {
namespace {

// How reduced values are read and written. Integers: as native integers.
// Floats: in the object's own type, so that HDF5 converts nothing (its
// float16 conversions round wrongly) and the one rounding is core's.
struct ValueIo {
  const LeafRule& rule;
  NumKind kind;
  hid_t mem_type;  // not owned
  std::optional<FloatFormat> format;

  std::size_t element_size() const { return format ? format->size : num_kind_size(kind); }
  Accumulator accumulator(std::size_t count) const {
    return format ? Accumulator(rule.reducer, *format, count, rule.weighted())
                  : Accumulator(rule.reducer, kind, count, rule.weighted());
  }
  // Folds in input `input`'s values, with its weight for a weighted mean.
  void add(const Context& ctx, Accumulator& acc, const void* values, std::size_t input) const {
    if (rule.weighted()) return acc.add(values, input_weight(ctx.weights, rule, input));
    acc.add(values);
  }
};

ValueIo value_io(const LeafRule& rule, NumKind kind, hid_t type) {
  if (kind != NumKind::Float) return {rule, kind, h5::native_type(kind), std::nullopt};
  const auto format = h5::float_format(type);
  if (!format) throw Error("internal: a reducible float without a format");
  return {rule, kind, type, format};
}

}  // namespace

NumKind reducible_kind(const Context& ctx, const std::string& what, hid_t type) {
  const auto kind = h5::numeric_kind(type);
  if (kind) return *kind;
  if (h5::class_of(type, ctx.model_where(what)) == H5T_FLOAT)
    throw Error(fmt::format("{}: {}: cannot reduce dtype {} (reducers take IEEE-like floats whose every value "
                            "float64 holds exactly)",
                            ctx.job.inputs[0].source.shown(), what, h5::dtype_name(type)));
  throw Error(fmt::format("{}: {}: cannot reduce dtype {} (sum, mean, min and max take integers and "
                          "floats; \"stack\" takes any dtype)",
                          ctx.job.inputs[0].source.shown(), what, h5::dtype_name(type)));
}

namespace {

// The accumulator bytes of `elements` values, with room for one block of
// input and output values beside it.
std::uint64_t carried_bytes(const ValueIo& io, std::uint64_t elements) { return elements * (io.element_size() + 16); }

void write_result(const Context& ctx, const std::string& path, const ValueIo& io, const Accumulator& acc,
                  const Selection& part, std::uint64_t first_flat, hid_t dst) {
  h5::Buffer out(io.mem_type);
  out.prepare(part.elements());
  acc.finish(out.data(), path, first_flat);
  h5::write(dst, part, out.type(), out.data(), ctx.out_where(path));
}

}  // namespace

void reduce_dataset(const Context& ctx, Carried& carried, ReduceState& state, const DatasetPair& in, hid_t dst) {
  if (in.model.space.null_space) return;
  const std::string& path = in.node.path;
  const LeafRule& rule = ctx.resolution.dataset_rule(path);
  const NumKind kind = reducible_kind(ctx, path, in.model.type);
  // Every input's type equals the model's (describe_pair), so reading them
  // all with it converts nothing.
  const ValueIo io = value_io(rule, kind, in.model.type);
  const Selection all = Selection::all(in.model.space.dims);
  if (ctx.first()) {
    if (!carried.take(carried_bytes(io, all.elements()))) {
      state.deferred.push_back(path);
      return;
    }
    state.reducing.emplace(path, io.accumulator(all.elements()));
  }
  const auto it = state.reducing.find(path);
  if (it == state.reducing.end()) return;  // deferred
  h5::Buffer values(io.mem_type);
  h5::read(in.object, all, values, ctx.where(path));
  io.add(ctx, it->second, values.data(), ctx.input);
  if (!ctx.last()) return;
  write_result(ctx, path, io, it->second, all, 0, dst);
  state.reducing.erase(it);
  carried.give_back(carried_bytes(io, all.elements()));
}

void reduce_deferred(const Context& ctx, const ReduceState& state, hid_t output) {
  for (const auto& path : state.deferred) {
    run::throw_if_interrupted();
    const h5::Location out_at = ctx.out_where(path);
    h5::Id dst = h5::open_object(output, path, out_at);
    const h5::Id type = h5::type_of(dst.get(), out_at);
    const Shape shape = h5::dataset_space(dst.get(), out_at).dims;
    const ValueIo io = value_io(ctx.resolution.dataset_rule(path), reducible_kind(ctx, path, type.get()), type.get());
    h5::Buffer values(io.mem_type);
    // One input block, the output block and the 16-byte accumulators at once.
    const std::size_t per_element = 2 * io.element_size() + 16;
    for_each_block(shape, ctx.job.policy.buffer_bytes / per_element, [&](const Shape& start, const Shape& block) {
      const Selection part = Selection::all(shape).part(start, block);
      Accumulator acc = io.accumulator(part.elements());
      for (std::size_t i = 0; i < ctx.job.inputs.size(); ++i) {  // each opened for this block only
        run::throw_if_interrupted();
        const Source& input = ctx.job.inputs[i].source;
        const h5::Location at{input.shown(), path};
        h5::Id file = source::open(input);
        h5::Id dataset = h5::open_object(file.get(), path, at);
        h5::read(dataset.get(), part, values, at);
        io.add(ctx, acc, values.data(), i);
      }
      write_result(ctx, path, io, acc, part, flat_index(shape, start), dst.get());
    });
  }
}

void reduce_attribute(const Context& ctx, ReduceState& state, const ReducedAttribute& attribute,
                      const KeptValue& model, hid_t dst) {
  const NumKind kind = reducible_kind(ctx, attribute.what, model.type);
  // The input's attribute type equals the model's (merge_attributes checks).
  const ValueIo io = value_io(attribute.rule, kind, model.type);
  const std::uint64_t n = model.shape.elements();
  if (ctx.first()) state.reducing.emplace(attribute.what, io.accumulator(n));  // attributes are small
  Accumulator& acc = state.reducing.at(attribute.what);
  std::vector<unsigned char> values(std::max<std::uint64_t>(n, 1) * io.element_size());
  const h5::Location at = ctx.where(attribute.what);
  const h5::Id attr = h5::open_attribute(attribute.object, attribute.name, ctx.where(attribute.path));
  if (n > 0) h5::read_all(attr.get(), io.mem_type, values.data(), at);
  io.add(ctx, acc, values.data(), ctx.input);
  if (!ctx.last()) return;
  acc.finish(values.data(), attribute.what);
  state.reducing.erase(attribute.what);
  const h5::Location out_at = ctx.out_where(attribute.what);
  const h5::Id space = model.shape.null_space ? h5::make_null_space(out_at) : h5::make_space(model.shape.dims, out_at);
  const h5::Id out =
      h5::create_attribute(dst, attribute.name, model.type, space.get(), ctx.out_where(attribute.path));
  if (n > 0) h5::write_all(out.get(), io.mem_type, values.data(), out_at);
}

}  // namespace mb::io::merge
