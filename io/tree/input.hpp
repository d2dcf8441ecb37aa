#pragma once
// Opening an input, local or remote, read-only: the one place where a
// Source becomes an open HDF5 file.
#include "core/source.hpp"
#include "io/h5/file.hpp"

namespace mb::io::tree {

// A remote input is read through io/remote's driver, which requests the
// address the Source resolved; a local one is checked first (io/h5/file.hpp).
h5::Id open_input(const Source& input, h5::Cache cache = h5::Cache::Evict);

}  // namespace mb::io::tree
