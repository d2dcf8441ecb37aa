#include "io/h5/dataset.hpp"

#include <algorithm>

#include "io/run/guard.hpp"
#include "io/h5/types.hpp"

namespace mb::io::h5 {
namespace {

// HDF5 refuses compact datasets of 64 KiB and more; larger ones fall back to contiguous.
constexpr std::size_t kCompactLimit = 64000;

// Only chunked (and virtual) data can be extendible: other layouts get max
// dims equal to their dims.
std::vector<MaxDim> kept_max_dims(const std::vector<MaxDim>& source, const Shape& dims, H5D_layout_t layout) {
  if (layout == H5D_CHUNKED) return max_dims_holding(source, dims);
  return {dims.begin(), dims.end()};
}

// Variable-length strings without a fill value of their own: allocating
// them writes nothing (a user's fill value would be written element by
// element, each one into the global heap).
bool strings_placed_early(hid_t dcpl, hid_t type, const Location& where) {
  if (H5Tget_class(type) != H5T_STRING || check(H5Tis_variable_str(type), where, "cannot read the datatype") <= 0)
    return false;
  return !user_fill_value(dcpl, where);
}

// A copy of the source's creation properties adapted to the new extent.
Id adapted_dcpl(const Prototype& prototype, const Shape& dims, const ExtentOptions& options,
                const Location& where) {
  const std::uint64_t bytes = element_count(dims) * size_of(prototype.type.get(), where);
  Id dcpl(H5Pcopy(prototype.dcpl.get()), where, "cannot copy the creation properties");
  const H5D_layout_t layout = layout_of(dcpl.get(), where);
  // The data of a virtual or external dataset is copied, so the mapping to other files is not.
  const bool mapped =
      layout == H5D_VIRTUAL || check(H5Pget_external_count(dcpl.get()), where, "cannot read external files") > 0;
  if (mapped) dcpl = Id(H5Pcreate(H5P_DATASET_CREATE), where, "cannot create creation properties");
  // Outputs record no object times (create_file).
  check(H5Pset_obj_track_times(dcpl.get(), 0), where, "cannot turn off object times");
  if (mapped) return dcpl;
  if (layout == H5D_COMPACT && bytes >= kCompactLimit)
    check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), where, "cannot set the layout");
  // Large contiguous copies move as file bytes, and variable-length strings
  // are written past libhdf5 (io/transfer/strings.hpp): both need their
  // place in the file now, whichever way they are then written.
  const hid_t type = prototype.type.get();
  const bool early_bytes = copyable_as_bytes(type) && bytes >= options.allocate_early_from;
  if (layout_of(dcpl.get(), where) == H5D_CONTIGUOUS && (early_bytes || strings_placed_early(dcpl.get(), type, where)))
    check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), where, "cannot set the allocation time");
  return dcpl;
}

}  // namespace

bool user_fill_value(hid_t dcpl, const Location& where) {
  H5D_fill_value_t fill = H5D_FILL_VALUE_ERROR;
  check(H5Pfill_value_defined(dcpl, &fill), where, "cannot read the fill value");
  return fill == H5D_FILL_VALUE_USER_DEFINED;
}

bool allocated_early(hid_t dcpl, const Location& where) {
  H5D_alloc_time_t when = H5D_ALLOC_TIME_ERROR;
  check(H5Pget_alloc_time(dcpl, &when), where, "cannot read the allocation time");
  return when == H5D_ALLOC_TIME_EARLY;
}

void allocate_early(hid_t dcpl, const Location& where) {
  check(H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY), where, "cannot set the allocation time");
}

Id creation_without_times(const Location& where) {
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), where, "cannot create creation properties");
  check(H5Pset_obj_track_times(dcpl.get(), 0), where, "cannot turn off object times");
  return dcpl;
}

std::vector<MaxDim> max_dims_holding(const std::vector<MaxDim>& source, const Shape& dims) {
  std::vector<MaxDim> out(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (source.at(d)) out[d] = std::max(*source[d], dims[d]);
  return out;
}

Prototype read_prototype(hid_t dataset, const Location& where) {
  Prototype p;
  p.type = Id(H5Dget_type(dataset), where, "cannot read the datatype");
  p.space = dataset_space(dataset, where);
  p.dcpl = Id(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  return p;
}

Prototype stacked_prototype(Prototype prototype, std::uint64_t count, const Location& where) {
  if (prototype.space.null_space) return prototype;
  prototype.space.dims.insert(prototype.space.dims.begin(), count);
  prototype.space.max_dims.insert(prototype.space.max_dims.begin(), MaxDim{count});
  if (layout_of(prototype.dcpl.get(), where) != H5D_CHUNKED) return prototype;
  const hid_t dcpl = prototype.dcpl.get();
  const int rank = check(H5Pget_chunk(dcpl, 0, nullptr), where, "cannot read the chunk shape");
  std::vector<hsize_t> chunk(static_cast<std::size_t>(rank) + 1, 1);
  check(H5Pget_chunk(dcpl, rank, chunk.data() + 1), where, "cannot read the chunk shape");
  check(H5Pset_chunk(dcpl, rank + 1, chunk.data()), where, "cannot set the chunk shape");
  return prototype;
}

Extent make_extent(const Prototype& prototype, const Shape& dims, const ExtentOptions& options,
                   const Location& where) {
  Extent extent;
  extent.dims = dims;
  extent.dcpl = adapted_dcpl(prototype, dims, options, where);
  extent.space = prototype.space.null_space
                     ? make_null_space(where)
                     : make_space(dims, kept_max_dims(prototype.space.max_dims, dims, layout_of(extent.dcpl.get(), where)),
                                  where);
  return extent;
}

Id create_dataset(const Prototype& prototype, const Extent& extent, hid_t parent, const std::string& name,
                  const Location& where) {
  return Id(H5Dcreate2(parent, name.c_str(), prototype.type.get(), extent.space.get(), H5P_DEFAULT,
                       extent.dcpl.get(), H5P_DEFAULT),
            where, "cannot create the dataset");
}

Id create_dataset(const Prototype& prototype, const Shape& dims, const ExtentOptions& options, hid_t parent,
                  const std::string& name, const Location& where) {
  return create_dataset(prototype, make_extent(prototype, dims, options, where), parent, name, where);
}

Id create_like(hid_t dataset, hid_t file, const std::string& path, const Location& where) {
  const Id type(H5Dget_type(dataset), where, "cannot read the datatype");
  const Id space(H5Dget_space(dataset), where, "cannot read the dataspace");
  const Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  const Id lcpl(H5Pcreate(H5P_LINK_CREATE), where, "cannot create link properties");
  check(H5Pset_create_intermediate_group(lcpl.get(), 1), where, "cannot set link properties");
  return Id(H5Dcreate2(file, path.c_str(), type.get(), space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT), where,
            "cannot create the dataset");
}

H5D_layout_t layout_of(hid_t dcpl, const Location& where) {
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout < 0) fail(where, "cannot read the dataset's layout");
  return layout;
}

int filter_count(hid_t dcpl, const Location& where) {
  return check(H5Pget_nfilters(dcpl), where, "cannot read the dataset's filters");
}

Shape chunk_shape(hid_t dcpl, const Location& where) {
  const int rank = check(H5Pget_chunk(dcpl, 0, nullptr), where, "cannot read the chunk shape");
  std::vector<hsize_t> chunk(static_cast<std::size_t>(rank));
  check(H5Pget_chunk(dcpl, rank, chunk.data()), where, "cannot read the chunk shape");
  return Shape(chunk.begin(), chunk.end());
}

Filter filter_at(hid_t dcpl, unsigned index, const Location& where) {
  Filter out;
  unsigned config = 0;
  std::size_t n_values = 0;
  char reported[256] = {};
  // Asked twice: first for the number of parameters, then for them.
  for (int pass = 0; pass < 2; ++pass) {
    out.values.resize(n_values);
    out.id = H5Pget_filter2(dcpl, index, &out.flags, &n_values, out.values.data(), sizeof reported, reported,
                            &config);
    if (out.id < 0) fail(where, "cannot read the dataset's filters");
  }
  out.reported = reported;
  return out;
}

bool filter_available(H5Z_filter_t id) {
  const htri_t available = H5Zfilter_avail(id);
  if (available <= 0) forget_error();
  return available > 0;
}

ChunkLayout chunk_layout(hid_t dataset, const Location& where) {
  ChunkLayout out;
  Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  if (layout_of(dcpl.get(), where) != H5D_CHUNKED) return out;
  const int rank = check(H5Pget_chunk(dcpl.get(), 0, nullptr), where, "cannot read the chunk shape");
  std::vector<hsize_t> chunk(static_cast<std::size_t>(rank));
  check(H5Pget_chunk(dcpl.get(), rank, chunk.data()), where, "cannot read the chunk shape");
  out.chunk.assign(chunk.begin(), chunk.end());
  const int n = filter_count(dcpl.get(), where);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t n_values = 16;
    std::vector<unsigned> values(16);
    const H5Z_filter_t id =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n_values, values.data(), 0, nullptr, &config);
    if (id < 0) fail(where, "cannot read the dataset's filters");
    values.resize(std::min<std::size_t>(n_values, 16));
    out.filters.emplace_back(id, values);
  }
  return out;
}

void read(hid_t dataset, const Selection& selection, Buffer& buffer, const Location& where) {
  run::note_activity(where.file, where.path);
  Id file_space(H5Dget_space(dataset), where, "cannot read the dataspace");
  select(file_space.get(), selection, where);
  Id mem_space = make_space(selection.count, where);
  buffer.prepare(selection.elements());
  check(H5Dread(dataset, buffer.type(), mem_space.get(), file_space.get(), H5P_DEFAULT, buffer.data()), where,
        "cannot read data");
}

void write(hid_t dataset, const Selection& selection, hid_t mem_type, const void* data, const Location& where) {
  Id file_space(H5Dget_space(dataset), where, "cannot read the dataspace");
  select(file_space.get(), selection, where);
  Id mem_space = make_space(selection.count, where);
  check(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data), where,
        "cannot write data");
}

}  // namespace mb::io::h5
