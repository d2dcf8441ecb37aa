// Merge's checks: every input has the first input's tree, and what should be
// equal is equal.
#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "core/values.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/types.hpp"
#include "io/h5/virtual.hpp"
#include "io/merge/steps.hpp"
#include "io/tree_reader.hpp"

namespace mb::io::merging {
namespace {

using Names = std::vector<std::string> (*)(hid_t, const h5::Location&);

// The root's path is "/", but names below it read "/name", not "//name".
std::string path_prefix(const NodeInfo& node) { return node.path == "/" ? "" : node.path; }

// Refuses an input whose names (`list` gives them) at `path` are not the
// first input's (`ours`); `what` is "member /group/" or "attribute /x@".
void check_names(const Context& ctx, const std::set<std::string>& ours, const std::string& what,
                 const std::string& path, const std::vector<h5::Id>& objects, Names list) {
  const std::string& first = ctx.job.inputs[0].path;
  for (std::size_t i = 1; i < objects.size(); ++i) {
    const std::string& other = ctx.job.inputs[i].path;
    const std::vector<std::string> names = list(objects[i].get(), ctx.where(i, path));
    const std::set<std::string> theirs(names.begin(), names.end());
    for (const auto& n : ours)
      if (!theirs.count(n)) throw Error(fmt::format("{}: {}{} is missing (present in {})", other, what, n, first));
    for (const auto& n : theirs)
      if (!ours.count(n)) throw Error(fmt::format("{}: {}{} is extra (not in {})", other, what, n, first));
  }
}

const char* kind_name(H5I_type_t type) {
  return type == H5I_GROUP ? "group" : type == H5I_DATASET ? "dataset" : "named datatype";
}

}  // namespace

void Context::differ(const std::string& what, std::size_t input, const std::string& detail) const {
  throw Error(fmt::format("{} differs between {} and {}: {}", what, job.inputs[0].label, job.inputs[input].label,
                          detail));
}

void check_members(const Context& ctx, const NodeInfo& group, const std::vector<h5::Id>& groups) {
  std::set<std::string> ours;
  for (const auto& child : group.children) ours.insert(child.name);
  check_names(ctx, ours, "member " + path_prefix(group) + "/", group.path, groups, h5::member_names);
}

void check_kind(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects) {
  const H5I_type_t expected = node.is_group() ? H5I_GROUP : H5I_DATASET;
  for (std::size_t i = 1; i < objects.size(); ++i) {
    const H5I_type_t type = H5Iget_type(objects[i].get());
    if (type != expected)
      throw Error(fmt::format("{}: {} is a {}, but a {} in {}", ctx.job.inputs[i].path, node.path, kind_name(type),
                              kind_name(expected), ctx.job.inputs[0].path));
  }
}

void LinkCheck::check(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects) {
  const std::string& first = ctx.job.inputs[0].path;
  for (std::size_t i = 1; i < objects.size(); ++i) {
    const std::string& input = ctx.job.inputs[i].path;
    H5O_info_t info;
    h5::check(H5Oget_info2(objects[i].get(), &info, H5O_INFO_BASIC), ctx.where(i, node.path),
              "cannot read the object's header");
    const auto met = info.rc > 1 ? first_names_[i].find(info.addr) : first_names_[i].end();
    const bool one_of_many = met != first_names_[i].end();
    if (node.is_further_name() && !one_of_many)
      throw Error(fmt::format("{}: {} is a separate object, but in {} it is another name of {} (a hard link); merge "
                              "needs the links of one split in every input",
                              input, node.path, first, node.first_name));
    if (one_of_many && met->second != node.first_name)
      throw Error(fmt::format("{}: {} is another name of {} (a hard link), but in {} {}; merge needs the links of "
                              "one split in every input",
                              input, node.path, met->second, first,
                              node.is_further_name() ? fmt::format("it is another name of {}", node.first_name)
                                                     : std::string("they are separate objects")));
    if (info.rc > 1 && !one_of_many) first_names_[i].emplace(info.addr, node.path);
  }
}

void check_attribute_names(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects) {
  std::set<std::string> ours;
  for (const auto& attr : node.attributes) ours.insert(attr.name);
  check_names(ctx, ours, "attribute " + path_prefix(node) + "@", node.path, objects, h5::attribute_names);
}

void check_dtype(const Context& ctx, const std::string& what, hid_t a, hid_t b, std::size_t input) {
  if (H5Tequal(a, b) <= 0)
    ctx.differ(what, input, fmt::format("dtype {} vs {}", h5::dtype_name(a), h5::dtype_name(b)));
}

[[noreturn]] void shapes_differ(const Context& ctx, const std::string& what, const Shape& a, const Shape& b, std::size_t input) {
  ctx.differ(what, input, fmt::format("shape {} vs {}", shape_text(a), shape_text(b)));
}

DatasetInputs describe_inputs(const Context& ctx, const NodeInfo& node, const std::vector<h5::Id>& objects) {
  DatasetInputs in{node, objects, {}, {}};
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto at = ctx.where(i, node.path);
    in.types.emplace_back(H5Dget_type(objects[i].get()), at, "cannot read the datatype");
    in.spaces.push_back(h5::dataset_space(objects[i].get(), at));
    if (i == 0) continue;  // the first input's tree reader checked its virtual sources
    h5::check_virtual_sources(objects[i].get(), at);
    check_dtype(ctx, node.path, in.types[0].get(), in.types[i].get(), i);
    const h5::SpaceInfo& a = in.spaces[0];
    const h5::SpaceInfo& b = in.spaces[i];
    if (a.null_space != b.null_space || a.dims.size() != b.dims.size()) shapes_differ(ctx, node.path, a.dims, b.dims, i);
  }
  return in;
}

void require_same_shape(const Context& ctx, const DatasetInputs& in, std::optional<std::size_t> except_axis) {
  const Shape& first = in.spaces[0].dims;
  for (std::size_t i = 1; i < in.spaces.size(); ++i)
    for (std::size_t d = 0; d < first.size(); ++d)
      if (d != except_axis && in.spaces[i].dims[d] != first[d])
        ctx.differ(in.node.path, i,
                   fmt::format("shape {} vs {}{}", shape_text(first), shape_text(in.spaces[i].dims),
                               except_axis ? fmt::format(" outside the concatenation axis {}", *except_axis) : ""));
}

void check_manifest_rows(const Context& ctx, const DatasetInputs& in) {
  if (!ctx.job.manifest) return;
  const auto it = ctx.job.manifest->datasets.find(in.node.path);
  if (it == ctx.job.manifest->datasets.end()) return;
  const specs::SplitDatasetRecord& record = it->second;
  const auto axis = static_cast<std::size_t>(record.axis);
  for (std::size_t i = 0; i < in.spaces.size(); ++i) {
    const std::uint64_t expected = i < record.rows.size() ? rows_in(record.rows[i]) : 0;
    const std::uint64_t held = axis < in.spaces[i].dims.size() ? in.spaces[i].dims[axis] : 0;
    if (i >= record.rows.size() || axis >= in.spaces[i].dims.size() || held != expected)
      throw Error(fmt::format("{}: {} has {} rows on axis {}, but the manifest of its split says {}",
                              ctx.job.inputs[i].path, in.node.path, held, axis, expected));
  }
}

std::string difference_text(const ValueType& t, const Shape& shape, const Difference& d) {
  const bool scalar = shape.empty();
  if (d.first_flat == 0 && d.count <= 8 && element_count(shape) == d.count)
    return format_elements(t, d.a, d.count, scalar) + " vs " + format_elements(t, d.b, d.count, scalar);
  const auto* a = static_cast<const unsigned char*>(d.a) + d.at * t.size;
  const auto* b = static_cast<const unsigned char*>(d.b) + d.at * t.size;
  return fmt::format("at {}: {} vs {}", format_index(shape, d.first_flat + d.at), format_element(t, a),
                     format_element(t, b));
}

void compare_replicated(const Context& ctx, const DatasetInputs& in) {
  if (in.spaces[0].null_space) return;
  const hid_t type = in.types[0].get();
  const std::string& path = in.node.path;
  const ValueType t = h5::value_type_of(type, ctx.where(0, path));
  const Shape& shape = in.spaces[0].dims;
  h5::Buffer a(type), b(type);
  const std::size_t element = std::max<std::size_t>(h5::size_of(type, ctx.where(0, path)), 1);
  // Both sides are in memory at once: half the buffer each.
  for (std::size_t i = 1; i < in.objects.size(); ++i)
    for_each_block(shape, ctx.job.policy.buffer_bytes / 2 / element, [&](const Shape& start, const Shape& block) {
      const Selection part = Selection::all(shape).part(start, block);
      h5::read(in.objects[0].get(), part, a, ctx.where(0, path));
      h5::read(in.objects[i].get(), part, b, ctx.where(i, path));
      if (auto at = first_difference(t, a.data(), b.data(), a.elements()))
        ctx.differ(path, i, difference_text(t, shape, {a.data(), b.data(), a.elements(), flat_index(shape, start), *at}));
    });
}

}  // namespace mb::io::merging
