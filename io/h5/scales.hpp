#pragma once
// Dimension scales (netCDF-4's dimensions): their attributes hold object
// references, addresses in their own file, so outputs do not copy them but
// attach the same scales again with HDF5's dimension-scale API (libhdf5_hl).
#include <string>
#include <vector>

#include "core/tree.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// DIMENSION_LIST or REFERENCE_LIST holding references (an attribute of
// type `type` called `name`): not copied, rebuilt by attach_scales.
bool is_dimension_scale_attribute(const std::string& name, hid_t type);

// netCDF's NAME of a dimension without a coordinate variable ("This is a
// netCDF dimension but not a netCDF variable.         10"): it states the
// dimension's length, so each file's is written with its own.
bool is_phony_dimension_name(const NodeInfo& node, const std::string& attribute);

// Whether `dataset` is a dimension scale (H5DSis_scale). libhdf5 1.10.8's
// H5DSis_scale leaks two ids (the CLASS attribute and its type) for a CLASS
// that is not DIMENSION_SCALE (PyTables' "TABLE", "EARRAY"...): ask only
// about datasets whose CLASS says so.
bool is_scale(hid_t dataset, const Location& where);

// The paths of the scales attached to `axis` of `dataset` (DIMENSION_LIST),
// in their order; none when the axis has none or their count cannot be
// read (the tree then records none for it).
std::vector<std::string> attached_scales(hid_t dataset, unsigned axis, const Location& where);

// In `file` (named `file_name` in messages), which holds `tree`'s objects:
// attaches to every dataset's axes the scales `tree` says (NodeInfo::scales),
// and gives every phony dimension NAME the length of its scale in `file`.
void attach_scales(hid_t file, const std::string& file_name, const NodeInfo& tree);

}  // namespace mb::io::h5
