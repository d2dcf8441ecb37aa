// Merge's checks: every input has the first input's tree, and what should be
// equal is equal.
#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "core/values.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/source/input.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/h5/virtual.hpp"
#include "io/merge/checks.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::merge {
namespace {

using Names = std::vector<std::string> (*)(hid_t, const h5::Location&);

// The root's path is "/", but names below it read "/name", not "//name".
std::string path_prefix(const NodeInfo& node) { return node.path == "/" ? "" : node.path; }

// Refuses an input whose names (`list` gives them) at `path` are not the
// first input's (`ours`); `what` is "member /group/" or "attribute /x@".
void check_names(const Context& ctx, const std::set<std::string>& ours, const std::string& what,
                 const std::string& path, hid_t object, Names list) {
  if (ctx.first()) return;  // the model's tree was read from it
  const std::string& first = ctx.job.inputs[0].source.shown();
  const std::vector<std::string> names = list(object, ctx.where(path));
  const std::set<std::string> theirs(names.begin(), names.end());
  for (const auto& n : ours)
    if (!theirs.count(n)) throw Error(fmt::format("{}: {}{} is missing (present in {})", ctx.file(), what, n, first));
  for (const auto& n : theirs)
    if (!ours.count(n)) throw Error(fmt::format("{}: {}{} is extra (not in {})", ctx.file(), what, n, first));
}

const char* kind_name(H5I_type_t type) {
  return type == H5I_GROUP ? "group" : type == H5I_DATASET ? "dataset" : "named datatype";
}

}  // namespace

void Context::differ(const std::string& what, const std::string& detail) const {
  throw Error(fmt::format("{} differs between {} and {}: {}", what, job.inputs[0].label, job.inputs[input].label,
                          detail),
              ErrorKind::Data, {job.inputs[input].source.shown(), what});
}

std::string reducer_hint(const Context& ctx, const std::string& what, const std::string& key) {
  std::string weights;
  for (const auto& [path, rule] : ctx.resolution.datasets)
    if (rule.weighted() && rule.weight_text() == what) weights = fmt::format(", the weight of the mean of {},", path);
  return fmt::format(" (a replicated value{} must be equal in every input: if it is meant to differ, give it a "
                     "reducer in the spec, e.g. \"{}\": {{\"reduce\": \"sum\"}})",
                     weights, key);
}

void check_members(const Context& ctx, const NodeInfo& group, hid_t object) {
  std::set<std::string> ours;
  for (const auto& child : group.children) ours.insert(child.name);
  check_names(ctx, ours, "member " + path_prefix(group) + "/", group.path, object, tree::member_names);
}

void check_kind(const Context& ctx, const NodeInfo& node, hid_t object) {
  const H5I_type_t expected = node.is_group() ? H5I_GROUP : H5I_DATASET;
  const H5I_type_t type = h5::kind_of(object, ctx.where(node.path));
  if (type != expected)
    throw Error(fmt::format("{}: {} is a {}, but a {} in {}", ctx.file(), node.path, kind_name(type),
                            kind_name(expected), ctx.job.inputs[0].source.shown()));
}

void LinkCheck::check(const Context& ctx, const NodeInfo& node, hid_t object) {
  if (ctx.first()) return;  // the model's links were read from it
  const std::string& first = ctx.job.inputs[0].source.shown();
  const h5::HardLinks links = h5::hard_links(object, ctx.where(node.path));
  const auto met = links.count > 1 ? first_names_.find(links.address) : first_names_.end();
  const bool one_of_many = met != first_names_.end();
  if (node.is_further_name() && !one_of_many)
    throw Error(fmt::format("{}: {} is a separate object, but in {} it is another name of {} (a hard link); merge "
                            "needs the links of one split in every input",
                            ctx.file(), node.path, first, node.first_name));
  if (one_of_many && met->second != node.first_name)
    throw Error(fmt::format("{}: {} is another name of {} (a hard link), but in {} {}; merge needs the links of "
                            "one split in every input",
                            ctx.file(), node.path, met->second, first,
                            node.is_further_name() ? fmt::format("it is another name of {}", node.first_name)
                                                   : std::string("they are separate objects")));
  if (links.count > 1 && !one_of_many) first_names_.emplace(links.address, node.path);
}

void check_attribute_names(const Context& ctx, const NodeInfo& node, hid_t object) {
  std::set<std::string> ours;
  for (const auto& attr : node.attributes) ours.insert(attr.name);
  check_names(ctx, ours, "attribute " + path_prefix(node) + "@", node.path, object, h5::attribute_names);
}

void check_dtype(const Context& ctx, const std::string& what, hid_t model, hid_t type) {
  if (!h5::same_type(model, type, ctx.where(what)))
    ctx.differ(what, fmt::format("dtype {} vs {}", h5::dtype_name(model), h5::dtype_name(type)));
}

[[noreturn]] void shapes_differ(const Context& ctx, const std::string& what, const Shape& a, const Shape& b) {
  ctx.differ(what, fmt::format("shape {} vs {}", shape_text(a), shape_text(b)));
}

DatasetPair describe_pair(const Context& ctx, Carried& carried, const NodeInfo& node, hid_t object) {
  const auto at = ctx.where(node.path);
  h5::Id type = h5::type_of(object, at);
  h5::SpaceInfo space = h5::dataset_space(object, at);
  if (ctx.first()) {  // the model; the tree reader checked its virtual sources
    ModelInfo& model = carried.models[node.path];
    model.type = carried.intern(type.get(), at);
    model.space = space;
    return {node, model, object, std::move(type), std::move(space)};
  }
  const ModelInfo& model = carried.models.at(node.path);
  h5::check_virtual_sources(object, at);
  check_dtype(ctx, node.path, model.type, type.get());
  if (model.space.null_space != space.null_space || model.space.dims.size() != space.dims.size())
    shapes_differ(ctx, node.path, model.space.dims, space.dims);
  return {node, model, object, std::move(type), std::move(space)};
}

void require_same_shape(const Context& ctx, const DatasetPair& in, std::optional<std::size_t> except_axis) {
  const Shape& first = in.model.space.dims;
  for (std::size_t d = 0; d < first.size(); ++d)
    if (d != except_axis && in.space.dims[d] != first[d])
      ctx.differ(in.node.path,
                 fmt::format("shape {} vs {}{}", shape_text(first), shape_text(in.space.dims),
                             except_axis ? fmt::format(" outside the concatenation axis {}", *except_axis) : ""));
}

void check_rows(const Context& ctx, const DatasetPair& in, const MergedLeaf* leaf) {
  if (ctx.job.manifest) {
    const auto it = ctx.job.manifest->datasets.find(in.node.path);
    if (it != ctx.job.manifest->datasets.end()) {
      const specs::SplitDatasetRecord& record = it->second;
      const auto axis = static_cast<std::size_t>(record.axis);
      const std::uint64_t expected = ctx.input < record.rows.size() ? record.held(ctx.input) : 0;
      const std::uint64_t held = axis < in.space.dims.size() ? in.space.dims[axis] : 0;
      if (ctx.input >= record.rows.size() || axis >= in.space.dims.size() || held != expected)
        throw Error(fmt::format("{}: {} has {} rows on axis {}, but the manifest of its split says {}", ctx.file(),
                                in.node.path, held, axis, expected));
    }
  }
  if (!leaf) return;
  const std::uint64_t planned = leaf->held[ctx.input];
  if (in.space.dims[leaf->axis] != planned)
    throw Error(fmt::format("{}: {} has {} rows on axis {}, {} when the merge was planned (was the file changed "
                            "during the merge?)",
                            ctx.file(), in.node.path, in.space.dims[leaf->axis], leaf->axis, planned));
}

namespace {

// The input's dataset holds the values of `other` (of the model's type,
// shape `shape`, in input `other_input`).
// A difference of a replicated dataset says how values meant to differ merge;
// one of CP twins, that they hold the same rows.
enum class Copies { Replicated, Twins };
void compare_with(const Context& ctx, const DatasetPair& in, hid_t other, std::size_t other_input,
                  const Shape& shape, Copies copies) {
  const hid_t type = in.model.type;
  const std::string& path = in.node.path;
  const h5::Location other_where{ctx.job.inputs[other_input].source.shown(), path};
  const ValueType t = h5::value_type_of(type, other_where);
  h5::Buffer a(type), b(type);
  const std::size_t element = std::max<std::size_t>(h5::size_of(type, other_where), 1);
  // Both sides are in memory at once: half the buffer each.
  for_each_block(shape, ctx.job.policy.buffer_bytes / 2 / element, [&](const Shape& start, const Shape& block) {
    const Selection part = Selection::all(shape).part(start, block);
    h5::read(other, part, a, other_where);
    h5::read(in.object, part, b, ctx.where(path));
    if (auto at = first_difference(t, a.data(), b.data(), a.elements()))
      throw Error(fmt::format("{} differs between {} and {}: {}", path, ctx.job.inputs[other_input].label,
                              ctx.job.inputs[ctx.input].label,
                              difference_text(t, shape,
                                              {a.data(), b.data(), a.elements(), flat_index(shape, start), *at}) +
                                  (copies == Copies::Twins ? std::string(" (every CP rank holds the same rows)")
                                                           : reducer_hint(ctx, path, in.node.name))),
                  ErrorKind::Data, {ctx.job.inputs[ctx.input].source.shown(), path});
  });
}

}  // namespace

void compare_replicated(const Context& ctx, const DatasetPair& in) {
  if (ctx.first() || in.model.space.null_space) return;
  const h5::Id model = open_model(ctx, in.node.path);
  compare_with(ctx, in, model.get(), 0, in.model.space.dims, Copies::Replicated);
}

void compare_with_twin(const Context& ctx, const DatasetPair& in) {
  if (in.space.null_space) return;
  const std::size_t twin = ctx.plan.twin(ctx.input);
  const Source& twin_source = ctx.job.inputs[twin].source;
  const std::string& twin_path = twin_source.shown();
  const h5::Id file = twin == 0 ? h5::Id() : source::open(twin_source);
  const h5::Id other =
      h5::open_object(twin == 0 ? ctx.model_file : file.get(), in.node.path, {twin_path, in.node.path});
  const h5::SpaceInfo space = h5::dataset_space(other.get(), {twin_path, in.node.path});
  if (space.dims != in.space.dims)
    throw Error(fmt::format("{} differs between {} and {}: shape {} vs {} (every CP rank holds the same rows)",
                            in.node.path, ctx.job.inputs[twin].label, ctx.job.inputs[ctx.input].label,
                            shape_text(space.dims), shape_text(in.space.dims)));
  compare_with(ctx, in, other.get(), twin, in.space.dims, Copies::Twins);
}

}  // namespace mb::io::merge
