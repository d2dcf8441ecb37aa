#pragma once
// Virtual datasets: how HDF5 names their sources, how it finds the files,
// and the check that reading one gives its sources' data. HDF5 reads what it
// cannot find as fill values and reports success: a source file it does not
// find, a dataset missing from it, the part of a mapping past the end of a
// shorter source (past a contiguous source's end it even reads the bytes
// that follow it in the file).
#include <string>

#include "io/h5/dataset.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// A literal source file or dataset name as H5Pset_virtual takes it: HDF5
// reads these names printf-style ("%b" is a block number, "%%" a percent
// sign), so every '%' is doubled.
std::string virtual_source_name(const std::string& literal);

// One mapping of a virtual dataset: the selection of the virtual dataspace
// `virtual_space` reads the selection `space` of the dataset `dataset`
// (names as H5Pset_virtual takes them: see virtual_source_name) of `file`.
struct VirtualSource {
  std::string file;
  std::string dataset;
  hid_t space;  // not owned
};
void add_mapping(hid_t dcpl, hid_t virtual_space, const VirtualSource& source, const Location& where);
// A virtual dataset of `type` whose mappings `extent.dcpl` holds.
Id create_virtual_dataset(hid_t parent, const std::string& name, hid_t type, const Extent& extent,
                          const Location& where);

// Does nothing unless `dataset` is virtual. Else refuses (one mb::Error
// naming the dataset and the source) anything its read would fill in
// instead of reading: a source file not found where HDF5 looks for it (the
// name as recorded; for a relative name, or an absolute one that is missing,
// its last component under each HDF5_VDS_PREFIX entry, the virtual file's
// directory, the current directory, and the directory of the file a
// symbolic link to the virtual file leads to, in HDF5 1.10's order), a
// source dataset missing from the file HDF5 opens, one of another datatype
// (HDF5 would convert) or rank, one smaller than its mapping, printf-style
// names (one pattern maps to any number of files), and the same for a
// source that is itself virtual.
void check_virtual_sources(hid_t dataset, const Location& where);

}  // namespace mb::io::h5
