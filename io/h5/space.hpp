#pragma once
// Dataspaces: the shape of a dataset or attribute, and selections in it.
#include <vector>

#include "core/selection.hpp"
#include "core/tree.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::h5 {

struct SpaceInfo {
  Shape dims;
  std::vector<MaxDim> max_dims;
  bool null_space = false;  // H5S_NULL: no elements at all
  std::uint64_t elements() const { return null_space ? 0 : element_count(dims); }
};

SpaceInfo space_info(hid_t space, const Location& where);
// The dataspace of a dataset or an attribute.
SpaceInfo dataset_space(hid_t dataset, const Location& where);

Id make_space(const Shape& dims, const std::vector<MaxDim>& max_dims, const Location& where);
Id make_space(const Shape& dims, const Location& where);
Id make_null_space(const Location& where);
// A copy of a dataspace: its extent and its selection.
Id copy_space(hid_t space, const Location& where);

// Selects `selection` in a simple dataspace (a scalar has its one element
// selected already).
void select(hid_t space, const Selection& selection, const Location& where);
// Selects the union of `parts` (HDF5 walks a union in row-major order,
// whatever order the parts were given in).
void select_union(hid_t space, const std::vector<Selection>& parts, const Location& where);

}  // namespace mb::io::h5
