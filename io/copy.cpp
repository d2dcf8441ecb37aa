#include "io/copy.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "core/partition.hpp"
#include "io/file_bytes.hpp"
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
Id adapted_dcpl(hid_t source_dcpl, const Shape& dims, std::vector<MaxDim>& max_dims, hid_t type,
                const Location& where) {
  const std::size_t element_size = H5Tget_size(type);
  Id dcpl(H5Pcopy(source_dcpl), where, "cannot copy the creation properties");
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  const int external = H5Pget_external_count(dcpl.get());
  if (layout == H5D_VIRTUAL || external > 0) {
    // The data is copied, so the mapping to other files is not.
    return Id(H5Pcreate(H5P_DATASET_CREATE), where, "cannot create creation properties");
  }
  if (layout == H5D_COMPACT && product(dims) * element_size >= kCompactLimit)
    check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), where, "cannot set the layout");
  // Large contiguous copies move as file bytes, which needs their place in the file now.
  if (H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS && copyable_as_bytes(type) &&
      product(dims) * element_size >= kFileBytesMin)
    check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), where, "cannot set the allocation time");
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

DatasetShape describe_dataset(hid_t dataset, const Location& where) {
  DatasetShape d;
  d.type = Id(H5Dget_type(dataset), where, "cannot read the datatype");
  Id space(H5Dget_space(dataset), where, "cannot read the dataspace");
  d.space = space_info(space.get(), where);
  d.dcpl = Id(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  return d;
}

Creation prepare_creation(const DatasetShape& source, const Shape& dims, std::optional<int> resized_axis,
                          const Location& where) {
  std::vector<MaxDim> max_dims = source.space.max_dims;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const bool resized = resized_axis && static_cast<std::size_t>(*resized_axis) == d;
    if (max_dims[d] && (resized || *max_dims[d] < dims[d])) max_dims[d] = dims[d];
  }
  Creation c;
  c.dims = dims;
  c.dcpl = adapted_dcpl(source.dcpl.get(), dims, max_dims, source.type.get(), where);
  c.space = source.space.null_space ? make_null_space(where) : make_space(dims, max_dims, where);
  return c;
}

Id create_dataset(const DatasetShape& source, const Creation& creation, hid_t parent, const std::string& name,
                  const Location& where) {
  return Id(H5Dcreate2(parent, name.c_str(), source.type.get(), creation.space.get(), H5P_DEFAULT,
                       creation.dcpl.get(), H5P_DEFAULT),
            where, "cannot create the dataset");
}

Id create_dataset_like(const DatasetShape& source, hid_t parent, const std::string& name, const Shape& dims,
                       std::optional<int> resized_axis, const Location& where) {
  return create_dataset(source, prepare_creation(source, dims, resized_axis, where), parent, name, where);
}

Id create_dataset_like(hid_t source, hid_t parent, const std::string& name, const Shape& dims,
                       std::optional<int> resized_axis, const Location& where) {
  return create_dataset_like(describe_dataset(source, where), parent, name, dims, resized_axis, where);
}

// Whether `count` elements at `from` of an array of shape `mem_shape` are one
// run of memory (rows cut along the first axis), and the run fills all of
// `dims` from its origin: then no selection is needed on either side.
bool whole_rows(const Shape& mem_shape, const Placement& from, const Placement& to, const Shape& count,
                const Shape& dims) {
  if (count != dims) return false;
  for (std::size_t d = 0; d < count.size(); ++d) {
    if (to.start[d] != 0 || (!to.stride.empty() && to.stride[d] != 1 && count[d] > 1)) return false;
    if (!from.stride.empty() && from.stride[d] != 1 && count[d] > 1) return false;
    if (d > 0 && (from.start[d] != 0 || count[d] != mem_shape[d])) return false;
  }
  return true;
}

void write_from_memory(hid_t dst, hid_t mem_type, const void* data, const Shape& mem_shape, const Placement& from,
                       const Placement& to, const Shape& count, const Location& where) {
  if (product(count) == 0) return;
  Id file_space(H5Dget_space(dst), where, "cannot read the dataspace");
  if (whole_rows(mem_shape, from, to, count, space_info(file_space.get(), where).dims)) {
    const std::uint64_t skipped = count.empty() ? 0 : from.start[0] * (product(mem_shape) / mem_shape[0]);
    const auto* first = static_cast<const unsigned char*>(data) + skipped * H5Tget_size(mem_type);
    check(H5Dwrite(dst, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, first), where, "cannot write data");
    return;
  }
  Id mem_space = make_space(mem_shape, where);
  select_box(mem_space.get(), from.start, count, from.stride, where);
  select_box(file_space.get(), to.start, count, to.stride, where);
  check(H5Dwrite(dst, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), where, "cannot write data");
}

void read_to_memory(hid_t src, hid_t mem_type, void* data, const Shape& mem_shape, const Placement& from,
                    const Placement& to, const Shape& count, const Location& where) {
  if (product(count) == 0) return;
  io::note_activity(where.file, where.path);
  Id file_space(H5Dget_space(src), where, "cannot read the dataspace");
  select_box(file_space.get(), from.start, count, from.stride, where);
  Id mem_space = make_space(mem_shape, where);
  select_box(mem_space.get(), to.start, count, to.stride, where);
  check(H5Dread(src, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), where, "cannot read data");
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
  check_fits_in_file(object, value.shape.elements() * H5Tget_size(value.type.get()), at);
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

Attributes read_attributes(hid_t object, const Location& where) {
  Attributes out;
  for (auto& name : attribute_names(object, where)) {
    AttributeValue value = read_attribute(object, name, where);
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

void write_attributes(hid_t object, const Attributes& attributes, const Location& where) {
  for (const auto& [name, value] : attributes) write_attribute(object, name, value, where);
}

Id open_object(hid_t file, const std::string& path, const Location& where) {
  return Id(H5Oopen(file, path.c_str(), H5P_DEFAULT), where, "cannot open");
}

namespace {

struct ChunkLayout {
  Shape chunk;                              // empty when not chunked
  std::vector<std::pair<H5Z_filter_t, std::vector<unsigned>>> filters;
};

ChunkLayout chunk_layout(hid_t dataset, std::size_t rank, const Location& where) {
  ChunkLayout out;
  Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) return out;
  std::vector<hsize_t> chunk(rank);
  check(H5Pget_chunk(dcpl.get(), static_cast<int>(rank), chunk.data()), where, "cannot read the chunk shape");
  out.chunk.assign(chunk.begin(), chunk.end());
  const int n = check(H5Pget_nfilters(dcpl.get()), where, "cannot read the filters");
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t n_values = 16;
    std::vector<unsigned> values(16);
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n_values, values.data(), 0, nullptr, &config);
    values.resize(std::min<std::size_t>(n_values, 16));
    out.filters.emplace_back(id, values);
  }
  return out;
}

// MICROBATCH_NO_RAW_COPY forces the slab path (the tests compare both).
bool raw_copy_allowed() {
  static const bool allowed = std::getenv("MICROBATCH_NO_RAW_COPY") == nullptr;
  return allowed;
}

// Contiguous to contiguous with the same datatype: for each index over the
// axes before `axis`, the rows are one run of bytes in either file, moved by
// the kernel. Declines (false) whatever does not qualify, and runs too short
// to be worth a system call each.
bool copy_rows_as_bytes(hid_t src, const Location& src_where, const SpaceInfo& s, std::uint64_t src_begin, hid_t dst,
                        const Location& dst_where, const SpaceInfo& d, std::uint64_t dst_begin, std::uint64_t count,
                        std::size_t axis, std::size_t buffer_bytes) {
  constexpr std::uint64_t kShortestRun = 64u << 10;
  Id dst_type(H5Dget_type(dst), dst_where, "cannot read the datatype");
  const std::uint64_t element = H5Tget_size(dst_type.get());
  if (!raw_copy_allowed() || s.null_space || d.elements() * element < kFileBytesMin) return false;
  std::uint64_t outer = 1, row = element;
  for (std::size_t k = 0; k < axis; ++k) outer *= s.dims[k];
  for (std::size_t k = axis + 1; k < s.dims.size(); ++k) row *= s.dims[k];
  if (outer > 1 && count * row < kShortestRun) return false;
  Id src_type(H5Dget_type(src), src_where, "cannot read the datatype");
  if (H5Tequal(src_type.get(), dst_type.get()) <= 0) return false;
  const auto to = stored_bytes(dst, dst_where);
  const auto from = to ? stored_bytes(src, src_where) : std::nullopt;
  if (!from) return false;
  for (std::uint64_t o = 0; o < outer; ++o)
    copy_file_bytes(*from, (o * s.dims[axis] + src_begin) * row, src_where, *to, (o * d.dims[axis] + dst_begin) * row,
                    dst_where, count * row, buffer_bytes);
  spdlog::debug("{}: {} rows copied as file bytes", dst_where.describe(), count);
  return true;
}

}  // namespace

std::uint64_t copy_rows(hid_t src, const Location& src_where, std::uint64_t src_begin, hid_t dst,
                        const Location& dst_where, std::uint64_t dst_begin, std::uint64_t count, std::size_t axis,
                        std::size_t buffer_bytes) {
  Id src_space(H5Dget_space(src), src_where, "cannot read the dataspace");
  Id dst_space(H5Dget_space(dst), dst_where, "cannot read the dataspace");
  const SpaceInfo s = space_info(src_space.get(), src_where);
  const SpaceInfo d = space_info(dst_space.get(), dst_where);
  Shape box = s.dims;
  box.at(axis) = count;
  auto slab = [&](std::uint64_t from, std::uint64_t rows) {
    if (rows == 0) return;
    Shape part = box;
    part[axis] = rows;
    copy_box(src, src_where, Placement::on_axis(box.size(), axis, src_begin + from), dst, dst_where,
             Placement::on_axis(box.size(), axis, dst_begin + from), part, buffer_bytes);
  };

  if (count == 0) return 0;
  if (copy_rows_as_bytes(src, src_where, s, src_begin, dst, dst_where, d, dst_begin, count, axis, buffer_bytes))
    return 0;
  const ChunkLayout sl = chunk_layout(src, box.size(), src_where);
  const ChunkLayout dl = chunk_layout(dst, box.size(), dst_where);
  // Stored chunks of variable-length data hold addresses in their own file's heap: never copied as bytes.
  Id type(H5Dget_type(src), src_where, "cannot read the datatype");
  const bool alike = raw_copy_allowed() && !sl.chunk.empty() && sl.chunk == dl.chunk && sl.filters == dl.filters &&
                     copyable_as_bytes(type.get());
  const std::uint64_t c = alike ? sl.chunk[axis] : 1;
  if (!alike || src_begin % c != 0 || dst_begin % c != 0) {
    slab(0, count);
    return 0;
  }
  // Whole chunks; a partial last chunk too when it ends both datasets' extents
  // (it is an edge chunk in both, stored at full size).
  std::uint64_t raw_rows = count / c * c;
  if (src_begin + count == s.dims[axis] && dst_begin + count == d.dims[axis]) raw_rows = count;

  // Chunk grid of the raw region: along `axis` its chunk rows, elsewhere every chunk.
  Shape grid(box.size());
  for (std::size_t k = 0; k < box.size(); ++k)
    grid[k] = k == axis ? (raw_rows + c - 1) / c : (box[k] + sl.chunk[k] - 1) / sl.chunk[k];
  std::uint64_t moved = 0;
  std::vector<unsigned char> bytes;
  for_each_block(grid, 1, [&](const Shape& at, const Shape&) {
    io::throw_if_interrupted();
    std::vector<hsize_t> from(box.size()), to(box.size());
    for (std::size_t k = 0; k < box.size(); ++k) {
      from[k] = at[k] * sl.chunk[k] + (k == axis ? src_begin : 0);
      to[k] = at[k] * sl.chunk[k] + (k == axis ? dst_begin : 0);
    }
    hsize_t size = 0;
    if (H5Dget_chunk_storage_size(src, from.data(), &size) < 0 || size == 0) {
      H5Eclear2(H5E_DEFAULT);  // never written: the destination keeps its fill value too
      return;
    }
    bytes.resize(size);
    std::uint32_t mask = 0;
    check(H5Dread_chunk(src, H5P_DEFAULT, from.data(), &mask, bytes.data()), src_where, "cannot read a chunk");
    check(H5Dwrite_chunk(dst, H5P_DEFAULT, mask, to.data(), size, bytes.data()), dst_where, "cannot write a chunk");
    ++moved;
  });
  slab(raw_rows, count - raw_rows);
  if (moved > 0) spdlog::debug("{}: {} chunks copied as stored bytes", dst_where.describe(), moved);
  return moved;
}

}  // namespace mb::h5
