#include "io/copy.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "io/guard.hpp"
#include "io/types.hpp"

namespace mb::h5 {
namespace {

// HDF5 refuses compact datasets of 64 KiB and more; larger ones fall back to contiguous.
constexpr std::size_t kCompactLimit = 64000;

// The element `offset` steps (per dimension) past `at`.
Shape advance(const Placement& at, const Shape& offset) {
  Shape out(at.start);
  for (std::size_t d = 0; d < out.size(); ++d) out[d] += offset[d] * (at.stride.empty() ? 1 : at.stride[d]);
  return out;
}

std::uint64_t product(const Shape& s) {
  std::uint64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

// Adapts a copy of the source's creation properties to the new extent.
Id adapted_dcpl(hid_t source, const Shape& dims, std::vector<MaxDim>& max_dims, std::size_t element_size,
                const Location& where) {
  Id dcpl(H5Dget_create_plist(source), where, "cannot read the creation properties");
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  const int external = H5Pget_external_count(dcpl.get());
  if (layout == H5D_VIRTUAL || external > 0) {
    // The data is copied, so the mapping to other files is not.
    return Id(H5Pcreate(H5P_DATASET_CREATE), where, "cannot create creation properties");
  }
  if (layout == H5D_COMPACT && product(dims) * element_size >= kCompactLimit)
    check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), where, "cannot set the layout");
  if (layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(dims.size());
    check(H5Pget_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), where, "cannot read chunks");
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (!max_dims[d]) continue;
      // A chunk must fit a fixed maximum, and a chunk dimension is at least 1.
      max_dims[d] = std::max<std::uint64_t>(*max_dims[d], 1);
      chunk[d] = std::min<hsize_t>(chunk[d], *max_dims[d]);
    }
    check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), where, "cannot set chunks");
  }
  return dcpl;
}

}  // namespace

Buffer::Buffer(hid_t type)
    : type_(type), element_size_(H5Tget_size(type)), variable_(has_variable_length(type)) {}

Buffer::~Buffer() { reclaim(); }

Buffer::Buffer(Buffer&& other) noexcept
    : type_(other.type_),
      element_size_(other.element_size_),
      variable_(other.variable_),
      elements_(std::exchange(other.elements_, 0)),
      bytes_(std::move(other.bytes_)) {}

void Buffer::reclaim() {
  if (variable_ && elements_ > 0) {
    const hsize_t n = elements_;
    Id space(H5Screate_simple(1, &n, nullptr));
    if (space.valid()) H5Dvlen_reclaim(type_, space.get(), H5P_DEFAULT, bytes_.data());
  }
  elements_ = 0;
}

void* Buffer::prepare(std::uint64_t elements) {
  reclaim();
  bytes_.assign(std::max<std::uint64_t>(elements, 1) * element_size_, 0);
  elements_ = elements;
  return bytes_.data();
}

Id create_dataset_like(hid_t source, hid_t parent, const std::string& name, const Shape& dims,
                       std::optional<int> resized_axis, const Location& where) {
  Id type(H5Dget_type(source), where, "cannot read the datatype");
  Id src_space(H5Dget_space(source), where, "cannot read the dataspace");
  const SpaceInfo src = space_info(src_space.get(), where);
  std::vector<MaxDim> max_dims = src.max_dims;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const bool resized = resized_axis && static_cast<std::size_t>(*resized_axis) == d;
    if (max_dims[d] && (resized || *max_dims[d] < dims[d])) max_dims[d] = dims[d];
  }
  Id dcpl = adapted_dcpl(source, dims, max_dims, H5Tget_size(type.get()), where);
  Id space = src.null_space ? make_null_space(where) : make_space(dims, max_dims, where);
  return Id(H5Dcreate2(parent, name.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT), where,
            "cannot create the dataset");
}

Placement Placement::on_axis(std::size_t rank, std::size_t axis, std::uint64_t begin, std::uint64_t step) {
  Placement p{Shape(rank, 0), Shape(rank, 1)};
  p.start.at(axis) = begin;
  p.stride.at(axis) = step;
  return p;
}

void read_box(hid_t dataset, hid_t mem_type, const Shape& start, const Shape& count, Buffer& buffer,
              const Location& where, const Shape& stride) {
  io::note_activity(where.file, where.path);
  Id file_space(H5Dget_space(dataset), where, "cannot read the dataspace");
  select_box(file_space.get(), start, count, stride, where);
  Id mem_space = make_space(count, where);
  buffer.prepare(product(count));
  check(H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()), where,
        "cannot read data");
}

void write_box(hid_t dataset, hid_t mem_type, const Shape& start, const Shape& count, const void* data,
               const Location& where, const Shape& stride) {
  Id file_space(H5Dget_space(dataset), where, "cannot read the dataspace");
  select_box(file_space.get(), start, count, stride, where);
  Id mem_space = make_space(count, where);
  check(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), where,
        "cannot write data");
}

void copy_box(hid_t src, const Location& src_where, const Placement& from, hid_t dst, const Location& dst_where,
              const Placement& to, const Shape& count, std::size_t buffer_bytes) {
  Id type(H5Dget_type(src), src_where, "cannot read the datatype");
  Id src_space(H5Dget_space(src), src_where, "cannot read the dataspace");
  if (H5Sget_simple_extent_type(src_space.get()) == H5S_NULL) return;  // no elements to copy
  Buffer buffer(type.get());
  const std::size_t element = std::max<std::size_t>(H5Tget_size(type.get()), 1);
  for_each_block(count, buffer_bytes / element, [&](const Shape& start, const Shape& block) {
    io::throw_if_interrupted();
    read_box(src, type.get(), advance(from, start), block, buffer, src_where, from.stride);
    write_box(dst, type.get(), advance(to, start), block, buffer.data(), dst_where, to.stride);
  });
}

namespace {
herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> attribute_names(hid_t object, const Location& where) {
  std::vector<std::string> names;
  check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names), where,
        "cannot list attributes");
  return names;
}

AttributeValue read_attribute(hid_t object, const std::string& name, const Location& where) {
  const Location at{where.file, where.path + "@" + name};
  io::note_activity(at.file, at.path);
  Id attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), at, "cannot open the attribute");
  AttributeValue value(Id(H5Aget_type(attr.get()), at, "cannot read the attribute's type"));
  value.space = Id(H5Aget_space(attr.get()), at, "cannot read the attribute's dataspace");
  value.shape = space_info(value.space.get(), at);
  value.data.prepare(value.shape.elements());
  if (!value.shape.null_space)
    check(H5Aread(attr.get(), value.type.get(), value.data.data()), at, "cannot read the attribute");
  return value;
}

void write_attribute(hid_t object, const std::string& name, const AttributeValue& value, const Location& where) {
  const Location at{where.file, where.path + "@" + name};
  Id attr(H5Acreate2(object, name.c_str(), value.type.get(), value.space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
          "cannot create the attribute");
  if (!value.shape.null_space)
    check(H5Awrite(attr.get(), value.type.get(), value.data.data()), at, "cannot write the attribute");
}

void copy_attributes(hid_t src, const Location& src_where, hid_t dst, const Location& dst_where) {
  for (const auto& name : attribute_names(src, src_where))
    write_attribute(dst, name, read_attribute(src, name, src_where), dst_where);
}

Id open_object(hid_t file, const std::string& path, const Location& where) {
  return Id(H5Oopen(file, path.c_str(), H5P_DEFAULT), where, "cannot open");
}

}  // namespace mb::h5
