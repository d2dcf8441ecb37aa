#pragma once
// Dimension scales (netCDF-4's dimensions): their attributes hold object
// references, addresses in their own file, so outputs do not copy them but
// attach the same scales again with HDF5's dimension-scale API (libhdf5_hl).
#include <string>

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

// In `file` (named `file_name` in messages), which holds `tree`'s objects:
// attaches to every dataset's axes the scales `tree` says (NodeInfo::scales),
// and gives every phony dimension NAME the length of its scale in `file`.
void attach_scales(hid_t file, const std::string& file_name, const NodeInfo& tree);

}  // namespace mb::io::h5
