#include "io/h5/space.hpp"

namespace mb::io::h5 {

SpaceInfo space_info(hid_t space, const Location& where) {
  SpaceInfo info;
  // Kept as an int: a corrupt file can hold a class outside the enum (found by fuzz_h5read under UBSan).
  const int space_class = H5Sget_simple_extent_type(space);
  if (space_class == H5S_NULL) {
    info.null_space = true;
    return info;
  }
  if (space_class != H5S_SCALAR && space_class != H5S_SIMPLE) fail(where, "cannot read the dataspace");
  const int rank = check(H5Sget_simple_extent_ndims(space), where, "cannot read the rank");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank)), max(static_cast<std::size_t>(rank));
  check(H5Sget_simple_extent_dims(space, dims.data(), max.data()), where, "cannot read the shape");
  for (std::size_t d = 0; d < dims.size(); ++d) {
    info.dims.push_back(dims[d]);
    info.max_dims.push_back(max[d] == H5S_UNLIMITED ? MaxDim{} : MaxDim{max[d]});
  }
  return info;
}

SpaceInfo dataset_space(hid_t dataset, const Location& where) {
  Id space(H5Dget_space(dataset), where, "cannot read the dataspace");
  return space_info(space.get(), where);
}

Id make_space(const Shape& dims, const std::vector<MaxDim>& max_dims, const Location& where) {
  if (dims.empty()) return Id(H5Screate(H5S_SCALAR), where, "cannot create a scalar dataspace");
  std::vector<hsize_t> extent(dims.begin(), dims.end()), max;
  for (const auto& m : max_dims) max.push_back(m ? *m : H5S_UNLIMITED);
  return Id(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), max.empty() ? nullptr : max.data()),
            where, "cannot create a dataspace");
}

Id make_space(const Shape& dims, const Location& where) { return make_space(dims, {}, where); }

Id make_null_space(const Location& where) { return Id(H5Screate(H5S_NULL), where, "cannot create a null dataspace"); }

Id copy_space(hid_t space, const Location& where) { return Id(H5Scopy(space), where, "cannot copy a dataspace"); }

namespace {

void add_hyperslab(hid_t space, H5S_seloper_t op, const Selection& selection, const Location& where) {
  const std::vector<hsize_t> start(selection.start.begin(), selection.start.end());
  const std::vector<hsize_t> count(selection.count.begin(), selection.count.end());
  const std::vector<hsize_t> stride(selection.stride.begin(), selection.stride.end());
  check(H5Sselect_hyperslab(space, op, start.data(), stride.empty() ? nullptr : stride.data(), count.data(), nullptr),
        where, "cannot select a hyperslab");
}

}  // namespace

void select(hid_t space, const Selection& selection, const Location& where) {
  if (selection.start.empty()) return;
  add_hyperslab(space, H5S_SELECT_SET, selection, where);
}

void select_union(hid_t space, const std::vector<Selection>& parts, const Location& where) {
  check(H5Sselect_none(space), where, "cannot clear a selection");
  for (const Selection& part : parts) add_hyperslab(space, H5S_SELECT_OR, part, where);
}

}  // namespace mb::io::h5
