#include "io/merge_writer.hpp"

#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "core/plan.hpp"
#include "core/packed.hpp"
#include "core/reduce.hpp"
#include "core/values.hpp"
#include "io/atomic.hpp"
#include "io/guard.hpp"
#include "io/h5.hpp"
#include "io/tree_reader.hpp"
#include "io/types.hpp"

namespace mb::io {
namespace fs = std::filesystem;
namespace {

const char* kind_name(const NodeInfo& n) { return n.is_group() ? "group" : "dataset"; }

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (std::size_t d = 0; d < s.size(); ++d) out += (d ? ", " : "") + std::to_string(s[d]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// Refuses an input whose member or attribute names (`theirs`) are not the
// first input's (`ours`); `what` is "member /group/" or "attribute /x@".
void compare_names(const std::set<std::string>& ours, const std::set<std::string>& theirs, const std::string& what,
                   const MergeInput& first, const MergeInput& other) {
  for (const auto& n : ours)
    if (!theirs.count(n)) throw Error(other.path + ": " + what + n + " is missing (present in " + first.path + ")");
  for (const auto& n : theirs)
    if (!ours.count(n)) throw Error(other.path + ": " + what + n + " is extra (not in " + first.path + ")");
}

std::uint64_t flat_index(const Shape& shape, const Shape& start) {
  std::uint64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + start[d];
  return flat;
}

std::string type_name(hid_t type) { return h5::dtype_name(type); }

class MergeWriter {
 public:
  MergeWriter(const MergeJob& job, const Resolution& resolution, const std::vector<h5::Id>& files, hid_t output,
              const std::string& output_name)
      : job_(job), resolution_(resolution), files_(files), output_(output), output_name_(output_name) {}

  void write(const NodeInfo& root) {
    std::vector<h5::Id> roots;
    for (std::size_t i = 0; i < files_.size(); ++i)
      roots.emplace_back(H5Gopen2(files_[i].get(), "/", H5P_DEFAULT), where(i, "/"), "cannot open the root group");
    h5::Id out_root(H5Gopen2(output_, "/", H5P_DEFAULT), {output_name_, "/"}, "cannot open the root group");
    merge_attributes(root, roots, out_root.get());
    write_children(root, roots, out_root.get());
  }

 private:
  h5::Location where(std::size_t i, const std::string& path) const { return {job_.inputs[i].path, path}; }
  h5::Location out_where(const std::string& path) const { return {output_name_, path}; }

  [[noreturn]] void differ(const std::string& what, std::size_t i, const std::string& detail) const {
    throw Error(what + " differs between " + job_.inputs[0].label + " and " + job_.inputs[i].label + ": " + detail);
  }

  std::vector<h5::Id> open_all(const std::vector<h5::Id>& parents, const NodeInfo& node) const {
    std::vector<h5::Id> out;
    for (std::size_t i = 0; i < parents.size(); ++i)
      out.push_back(h5::open_object(parents[i].get(), node.name, where(i, node.path)));
    return out;
  }

  // The first input's tree was read whole (read_tree); the others are
  // checked against it on the way, as their objects are opened for the copy
  // anyway: the same members, kinds and attribute names.
  // `list` gives input i's names at `path`; `what` prefixes a name in messages.
  template <typename List>
  void check_names(const std::set<std::string>& ours, const std::string& what, const std::string& path,
                   const std::vector<h5::Id>& srcs, List list) const {
    for (std::size_t i = 1; i < srcs.size(); ++i) {
      const std::vector<std::string> names = list(srcs[i].get(), where(i, path));
      compare_names(ours, {names.begin(), names.end()}, what, job_.inputs[0], job_.inputs[i]);
    }
  }

  void check_members(const NodeInfo& group, const std::vector<h5::Id>& srcs) const {
    std::set<std::string> ours;
    for (const auto& child : group.children) ours.insert(child.name);
    check_names(ours, "member " + path_prefix(group) + "/", group.path, srcs, h5::member_names);
  }

  void check_kind(const NodeInfo& node, const std::vector<h5::Id>& objects) const {
    for (std::size_t i = 1; i < objects.size(); ++i) {
      const H5I_type_t type = H5Iget_type(objects[i].get());
      const bool same = node.is_group() ? type == H5I_GROUP : type == H5I_DATASET;
      if (!same)
        throw Error(job_.inputs[i].path + ": " + node.path + " is a " +
                    (type == H5I_GROUP ? "group" : type == H5I_DATASET ? "dataset" : "named datatype") + ", but a " +
                    kind_name(node) + " in " + job_.inputs[0].path);
    }
  }

  void check_attribute_names(const NodeInfo& node, const std::vector<h5::Id>& srcs) const {
    std::set<std::string> ours;
    for (const auto& attr : node.attributes) ours.insert(attr.name);
    check_names(ours, "attribute " + path_prefix(node) + "@", node.path, srcs, h5::attribute_names);
  }

  // The root's path is "/", but names below it read "/name", not "//name".
  static std::string path_prefix(const NodeInfo& node) { return node.path == "/" ? "" : node.path; }

  void write_children(const NodeInfo& group, const std::vector<h5::Id>& srcs, hid_t dst) {
    check_members(group, srcs);
    for (const auto& child : group.children) {
      throw_if_interrupted();
      std::vector<h5::Id> objects = open_all(srcs, child);
      check_kind(child, objects);
      if (child.is_group()) {
        h5::Id out(H5Gcreate2(dst, child.name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), out_where(child.path),
                   "cannot create the group");
        merge_attributes(child, objects, out.get());
        write_children(child, objects, out.get());
      } else {
        write_dataset(child, objects, dst);
      }
    }
  }

  // --- attributes ---------------------------------------------------------

  void merge_attributes(const NodeInfo& node, const std::vector<h5::Id>& srcs, hid_t dst) {
    check_attribute_names(node, srcs);
    for (const auto& attr : node.attributes) {
      const LeafRule rule = resolution_.attribute_rule(node.path, attr.name);
      const std::string what = node.path + "@" + attr.name;
      std::vector<h5::AttributeValue> values;
      for (std::size_t i = 0; i < srcs.size(); ++i)
        values.push_back(h5::read_attribute(srcs[i].get(), attr.name, where(i, node.path)));
      for (std::size_t i = 1; i < values.size(); ++i) check_alike(what, values[0], values[i], i);
      if (rule.mode == LeafRule::Mode::Reduce) {
        reduce_attribute(what, rule.reducer, attr.name, srcs, values[0], dst);
        continue;
      }
      if (values.size() > 1) {
        const ValueType t = h5::value_type_of(values[0].type.get(), {job_.inputs[0].path, what});
        for (std::size_t i = 1; i < values.size(); ++i) check_equal(what, t, values[0], values[i], i);
      }
      h5::write_attribute(dst, attr.name, values[0], out_where(node.path));
    }
  }

  void check_alike(const std::string& what, const h5::AttributeValue& a, const h5::AttributeValue& b,
                   std::size_t i) const {
    if (H5Tequal(a.type.get(), b.type.get()) <= 0)
      differ(what, i, "dtype " + type_name(a.type.get()) + " vs " + type_name(b.type.get()));
    if (a.shape.null_space != b.shape.null_space || a.shape.dims != b.shape.dims)
      differ(what, i, "shape " + shape_text(a.shape.dims) + " vs " + shape_text(b.shape.dims));
  }

  void check_equal(const std::string& what, const ValueType& t, const h5::AttributeValue& a,
                   const h5::AttributeValue& b, std::size_t i) const {
    const std::uint64_t n = a.shape.elements();
    if (auto at = first_difference(t, a.data.data(), b.data.data(), n))
      differ(what, i, difference_text(t, a.shape.dims, a.data.data(), b.data.data(), n, 0, *at));
  }

  static std::string difference_text(const ValueType& t, const Shape& shape, const void* a, const void* b,
                                     std::uint64_t n, std::uint64_t first_flat, std::uint64_t at) {
    const bool scalar = shape.empty();
    if (first_flat == 0 && n <= 8 && flat_elements(shape) == n)
      return format_elements(t, a, n, scalar) + " vs " + format_elements(t, b, n, scalar);
    const auto* pa = static_cast<const unsigned char*>(a) + at * t.size;
    const auto* pb = static_cast<const unsigned char*>(b) + at * t.size;
    return "at " + format_index(shape, first_flat + at) + ": " + format_element(t, pa) + " vs " +
           format_element(t, pb);
  }

  static std::uint64_t flat_elements(const Shape& s) {
    std::uint64_t n = 1;
    for (auto d : s) n *= d;
    return n;
  }

  NumKind reducible_kind(const std::string& what, hid_t type) const {
    const auto kind = h5::numeric_kind(type);
    if (!kind)
      throw Error(job_.inputs[0].path + ": " + what + ": cannot reduce dtype " + type_name(type) +
                  " (reducers take integers and floats)");
    return *kind;
  }

  void reduce_attribute(const std::string& what, Reducer reducer, const std::string& name,
                        const std::vector<h5::Id>& srcs, const h5::AttributeValue& first, hid_t dst) {
    const NumKind kind = reducible_kind(what, first.type.get());
    const std::uint64_t n = first.shape.elements();
    Accumulator acc(reducer, kind, n);
    std::vector<unsigned char> buf(std::max<std::uint64_t>(n, 1) * num_kind_size(kind));
    for (std::size_t i = 0; i < srcs.size(); ++i) {
      const h5::Location at{job_.inputs[i].path, what};
      h5::Id attr(H5Aopen(srcs[i].get(), name.c_str(), H5P_DEFAULT), at, "cannot open the attribute");
      if (n > 0) h5::check(H5Aread(attr.get(), h5::native_type(kind), buf.data()), at, "cannot read the attribute");
      acc.add(buf.data());
    }
    acc.finish(buf.data(), what);
    const h5::Location at = out_where(what);
    h5::Id attr(H5Acreate2(dst, name.c_str(), first.type.get(), first.space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
                "cannot create the attribute");
    if (n > 0) h5::check(H5Awrite(attr.get(), h5::native_type(kind), buf.data()), at, "cannot write the attribute");
  }

  // --- datasets -----------------------------------------------------------

  struct Inputs {
    std::vector<h5::Id> types;
    std::vector<h5::SpaceInfo> spaces;
  };

  Inputs describe(const NodeInfo& ds, const std::vector<h5::Id>& objects) const {
    Inputs in;
    for (std::size_t i = 0; i < objects.size(); ++i) {
      const auto at = where(i, ds.path);
      in.types.emplace_back(H5Dget_type(objects[i].get()), at, "cannot read the datatype");
      h5::Id space(H5Dget_space(objects[i].get()), at, "cannot read the dataspace");
      in.spaces.push_back(h5::space_info(space.get(), at));
      if (i > 0 && H5Tequal(in.types[0].get(), in.types[i].get()) <= 0)
        differ(ds.path, i, "dtype " + type_name(in.types[0].get()) + " vs " + type_name(in.types[i].get()));
      if (in.spaces[i].null_space != in.spaces[0].null_space || in.spaces[i].dims.size() != in.spaces[0].dims.size())
        differ(ds.path, i, "shape " + shape_text(in.spaces[0].dims) + " vs " + shape_text(in.spaces[i].dims));
    }
    return in;
  }

  void require_same_shape(const NodeInfo& ds, const Inputs& in, std::optional<std::size_t> except_axis) const {
    for (std::size_t i = 1; i < in.spaces.size(); ++i)
      for (std::size_t d = 0; d < in.spaces[0].dims.size(); ++d)
        if (d != except_axis && in.spaces[i].dims[d] != in.spaces[0].dims[d])
          differ(ds.path, i,
                 "shape " + shape_text(in.spaces[0].dims) + " vs " + shape_text(in.spaces[i].dims) +
                     (except_axis ? " outside the concatenation axis " + std::to_string(*except_axis) : ""));
  }

  void write_dataset(const NodeInfo& ds, const std::vector<h5::Id>& objects, hid_t dst_parent) {
    const LeafRule& rule = resolution_.dataset_rule(ds.path);
    const Inputs in = describe(ds, objects);
    const Shape& dims0 = in.spaces[0].dims;
    Shape out_dims = dims0;
    std::optional<int> axis;
    if (rule.cuts_rows()) {
      axis = rule.axis;
      require_same_shape(ds, in, static_cast<std::size_t>(rule.axis));
      std::uint64_t total = 0;
      for (const auto& s : in.spaces) total += s.dims[static_cast<std::size_t>(rule.axis)];
      // Offsets: every input repeats the leading 0, the output has it once.
      if (rule.mode == LeafRule::Mode::Offsets) total -= in.spaces.size() - 1;
      out_dims[static_cast<std::size_t>(rule.axis)] = total;
    } else {
      require_same_shape(ds, in, std::nullopt);
    }
    NumKind kind{};
    if (rule.mode == LeafRule::Mode::Reduce) kind = reducible_kind(ds.path, in.types[0].get());
    if (rule.mode == LeafRule::Mode::Replicate) compare_replicated(ds, objects, in);

    const bool virtual_leaf = job_.virtual_datasets && rule.cuts_rows() && rule.mode != LeafRule::Mode::Offsets;
    h5::Id dst = virtual_leaf ? create_virtual(ds, in, rule.axis, out_dims, dst_parent)
                              : h5::create_dataset_like(objects[0].get(), dst_parent, ds.name, out_dims, axis,
                                                        out_where(ds.path));
    merge_attributes(ds, objects, dst.get());
    if (virtual_leaf) return;
    switch (rule.mode) {
      case LeafRule::Mode::Split:
      case LeafRule::Mode::Packed:
      case LeafRule::Mode::PerSequence: concatenate(ds, objects, in, rule.axis, out_dims, dst.get()); break;
      case LeafRule::Mode::Offsets: concatenate_offsets(ds, objects, dst.get()); break;
      case LeafRule::Mode::Replicate:
        h5::copy_box(objects[0].get(), where(0, ds.path), h5::Placement::origin(dims0.size()), dst.get(),
                     out_where(ds.path), h5::Placement::origin(dims0.size()), dims0, job_.buffer_bytes);
        break;
      case LeafRule::Mode::Reduce: reduce_dataset(ds, objects, in, rule.reducer, kind, dst.get()); break;
    }
  }

  // Puts every input's rows back where the split took them from: consecutive
  // ranges, or the data-parallel row maps.
  void concatenate(const NodeInfo& ds, const std::vector<h5::Id>& objects, const Inputs& in, int axis,
                   const Shape& out_dims, hid_t dst) {
    const auto a = static_cast<std::size_t>(axis);
    const std::size_t rank = in.spaces[0].dims.size();
    std::vector<std::uint64_t> lengths;
    for (const auto& s : in.spaces) lengths.push_back(s.dims[a]);
    const auto maps = merge_maps(lengths, job_.dp, job_.layout, ds.path);
    if (concatenate_in_memory(ds, objects, in, maps, a, out_dims, dst)) return;
    for (std::size_t i = 0; i < objects.size(); ++i) {
      Shape count = in.spaces[i].dims;
      std::uint64_t at = 0;
      for (const Segment& seg : maps[i]) {
        count[a] = seg.count;
        if (seg.stride == 1) {
          h5::copy_rows(objects[i].get(), where(i, ds.path), at, dst, out_where(ds.path), seg.begin, seg.count, a,
                        job_.buffer_bytes);
        } else {
          h5::copy_box(objects[i].get(), where(i, ds.path), h5::Placement::on_axis(rank, a, at), dst,
                       out_where(ds.path), h5::Placement::on_axis(rank, a, seg.begin, seg.stride), count,
                       job_.buffer_bytes);
        }
        at += seg.count;
      }
    }
  }

  // A small unfiltered result is assembled in memory, one read per input and
  // one write, rather than copied piece by piece: tens of thousands of tiny
  // datasets then cost few library calls each. (Filtered data is left to
  // copy_rows, which moves aligned chunks without recompressing.)
  bool concatenate_in_memory(const NodeInfo& ds, const std::vector<h5::Id>& objects, const Inputs& in,
                             const std::vector<RowMap>& maps, std::size_t a, const Shape& out_dims, hid_t dst) const {
    const hid_t type = in.types[0].get();
    if (flat_elements(out_dims) * H5Tget_size(type) > h5::kWholeInMemory) return false;
    h5::Id dcpl(H5Dget_create_plist(dst), out_where(ds.path), "cannot read the creation properties");
    if (H5Pget_nfilters(dcpl.get()) != 0) return false;
    h5::Buffer whole(type);
    whole.prepare(flat_elements(out_dims));
    const std::size_t rank = out_dims.size();
    for (std::size_t i = 0; i < objects.size(); ++i) {
      Shape count = in.spaces[i].dims;
      std::uint64_t at = 0;
      for (const Segment& seg : maps[i]) {
        count[a] = seg.count;
        h5::read_to_memory(objects[i].get(), type, whole.data(), out_dims, h5::Placement::on_axis(rank, a, at),
                           h5::Placement::on_axis(rank, a, seg.begin, seg.stride), count, where(i, ds.path));
        at += seg.count;
      }
    }
    if (flat_elements(out_dims) > 0)
      h5::check(H5Dwrite(dst, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, whole.data()), out_where(ds.path),
                "cannot write data");
    return true;
  }

  // A virtual dataset whose rows map onto the inputs' rows through the same
  // row maps a copy would use: nothing is copied.
  h5::Id create_virtual(const NodeInfo& ds, const Inputs& in, int axis, const Shape& out_dims, hid_t dst_parent) {
    const auto a = static_cast<std::size_t>(axis);
    std::vector<std::uint64_t> lengths;
    for (const auto& s : in.spaces) lengths.push_back(s.dims[a]);
    const auto maps = merge_maps(lengths, job_.dp, job_.layout, ds.path);
    const auto where_out = out_where(ds.path);
    h5::Id dcpl(H5Pcreate(H5P_DATASET_CREATE), where_out, "cannot create creation properties");
    h5::Id out_space = h5::make_space(out_dims, where_out);
    for (std::size_t i = 0; i < in.spaces.size(); ++i) {
      const std::string source = fs::absolute(job_.inputs[i].path).lexically_normal().string();
      std::uint64_t at = 0;
      for (const Segment& seg : maps[i]) {
        Shape count = in.spaces[i].dims;
        count[a] = seg.count;
        const auto to = h5::Placement::on_axis(count.size(), a, seg.begin, seg.stride);
        const auto from = h5::Placement::on_axis(count.size(), a, at);
        h5::Id vspace(H5Scopy(out_space.get()), where_out, "cannot copy a dataspace");
        h5::select_box(vspace.get(), to.start, count, to.stride, where_out);
        h5::Id sspace = h5::make_space(in.spaces[i].dims, where_out);
        h5::select_box(sspace.get(), from.start, count, from.stride, where_out);
        h5::check(H5Pset_virtual(dcpl.get(), vspace.get(), source.c_str(), ds.path.c_str(), sspace.get()),
                  where_out, "cannot map a virtual dataset");
        at += seg.count;
      }
    }
    return h5::Id(H5Dcreate2(dst_parent, ds.name.c_str(), in.types[0].get(), out_space.get(), H5P_DEFAULT, dcpl.get(),
                             H5P_DEFAULT),
                  where_out, "cannot create the virtual dataset");
  }

  // Offsets come back by shifting each input's offsets past the previous
  // inputs' tokens, dropping every leading 0 but the first.
  void concatenate_offsets(const NodeInfo& ds, const std::vector<h5::Id>& objects, hid_t dst) {
    std::vector<std::int64_t> out{0};
    for (std::size_t i = 0; i < objects.size(); ++i) {
      const auto values = h5::read_int64_vector(objects[i].get(), where(i, ds.path));
      check_offsets(values, job_.inputs[i].path + ": " + ds.path);
      const std::int64_t base = out.back();
      for (std::size_t k = 1; k < values.size(); ++k) out.push_back(values[k] + base);
    }
    h5::write_box(dst, H5T_NATIVE_INT64, {0}, {out.size()}, out.data(), out_where(ds.path));
  }

  void compare_replicated(const NodeInfo& ds, const std::vector<h5::Id>& objects, const Inputs& in) const {
    if (in.spaces[0].null_space) return;
    const hid_t type = in.types[0].get();
    const ValueType t = h5::value_type_of(type, where(0, ds.path));
    const Shape& shape = in.spaces[0].dims;
    h5::Buffer a(type), b(type);
    const std::size_t element = std::max<std::size_t>(H5Tget_size(type), 1);
    // Both sides are in memory at once: half the buffer each.
    for (std::size_t i = 1; i < objects.size(); ++i)
      for_each_block(shape, job_.buffer_bytes / 2 / element, [&](const Shape& start, const Shape& block) {
        h5::read_box(objects[0].get(), type, start, block, a, where(0, ds.path));
        h5::read_box(objects[i].get(), type, start, block, b, where(i, ds.path));
        if (auto at = first_difference(t, a.data(), b.data(), a.elements()))
          differ(ds.path, i,
                 difference_text(t, shape, a.data(), b.data(), a.elements(), flat_index(shape, start), *at));
      });
  }

  void reduce_dataset(const NodeInfo& ds, const std::vector<h5::Id>& objects, const Inputs& in, Reducer reducer,
                      NumKind kind, hid_t dst) {
    if (in.spaces[0].null_space) return;
    const Shape& shape = in.spaces[0].dims;
    const hid_t mem = h5::native_type(kind);
    h5::Buffer buf(mem), out(mem);
    // One input block, the output block and the 16-byte accumulators at once.
    const std::size_t per_element = 2 * num_kind_size(kind) + 16;
    for_each_block(shape, job_.buffer_bytes / per_element, [&](const Shape& start, const Shape& block) {
      std::uint64_t n = 1;
      for (auto d : block) n *= d;
      Accumulator acc(reducer, kind, n);
      for (std::size_t i = 0; i < objects.size(); ++i) {
        h5::read_box(objects[i].get(), mem, start, block, buf, where(i, ds.path));
        acc.add(buf.data());
      }
      out.prepare(n);
      acc.finish(out.data(), ds.path, flat_index(shape, start));
      h5::write_box(dst, mem, start, block, out.data(), out_where(ds.path));
    });
  }

  const MergeJob& job_;
  const Resolution& resolution_;
  const std::vector<h5::Id>& files_;
  hid_t output_;
  std::string output_name_;
};

void check_output_path(const MergeJob& job) {
  std::error_code ec;
  if (fs::is_directory(job.output, ec)) throw Error(job.output + ": the output path is a directory");
  if (!fs::exists(job.output, ec)) return;
  for (const auto& in : job.inputs)
    if (fs::equivalent(in.path, job.output, ec))
      throw Error(job.output + ": the output would replace input " + in.path);
  if (!job.force) throw Error(job.output + ": the output exists; use --force to replace it");
}

}  // namespace

MergeSources open_merge_sources(const std::vector<MergeInput>& inputs) {
  if (inputs.empty()) throw usage_error("merge needs at least one input");
  MergeSources sources;
  for (const auto& input : inputs) sources.files.push_back(h5::open_file_read_only(input.path));
  sources.tree = h5::read_tree(sources.files.front().get(), inputs.front().path);
  return sources;
}

void write_merge(const MergeJob& job, const MergeSources& sources, const Resolution& resolution) {
  if (job.dp.degree != 1)
    for (const auto& [path, rule] : resolution.datasets)
      if (rule.mode == LeafRule::Mode::Offsets)
        throw usage_error("--dp-degree does not combine with packed sequences (" + path + " is \"offsets\")");
  check_output_path(job);
  AtomicOutputs outputs;
  const std::string temp = outputs.add(job.output);
  h5::Id out = h5::create_file(temp, job.output);
  MergeWriter(job, resolution, sources.files, out.get(), job.output).write(sources.tree);
  out.close({job.output, ""});
  if (job.progress) job.progress(1, 1);
  outputs.publish();
  outputs.keep();
}

}  // namespace mb::io
