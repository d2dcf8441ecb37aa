#pragma once
// Reads an HDF5 file's tree into a NodeInfo description, checking on the way
// everything microbatch must refuse before writing a byte: unsupported link
// kinds and datatypes, unavailable filters.
#include <hdf5.h>

#include <string>

#include "core/tree.hpp"

namespace mb::h5 {

NodeInfo read_tree(hid_t file, const std::string& file_name);

}  // namespace mb::h5

namespace mb::h5 {

// A short text of an attribute's value ("1200", "'tiny-llm'", "[1, 2, …]").
std::string attribute_preview(hid_t file, const std::string& file_name, const std::string& object_path,
                              const std::string& name);

}  // namespace mb::h5
