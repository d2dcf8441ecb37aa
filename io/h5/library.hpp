#pragma once
// The HDF5 library's process-wide state, for main: no HDF5 types here, so
// that cli/ compiles without <hdf5.h>.
#include <cstddef>
#include <string>

namespace mb::io::h5 {

// Turns off HDF5's automatic error printing and its atexit teardown. Call
// once at start-up. (Every output is closed, checked, before it is
// published; the teardown would only re-close what failed to close, and
// libhdf5 1.10.8 can crash doing that after a failed write.)
void init_library();

// Closes that HDF5 refused (after a failed write, say); such handles are
// expected to be left open at exit.
std::size_t failed_closes();

// The version of the HDF5 library this process runs with ("1.10.8"), which
// may differ from the headers it was built with.
std::string hdf5_version();

// HDF5 objects (files, groups, datasets, ...) still open in this process.
std::size_t open_object_count();

}  // namespace mb::io::h5
