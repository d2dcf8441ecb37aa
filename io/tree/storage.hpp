#pragma once
// How a dataset is stored, as inspect shows it: layout, chunk shape, max
// dims and filters; a filter the library cannot load is refused here.
#include <hdf5.h>

#include "core/tree.hpp"
#include "io/h5/handle.hpp"
#include "io/h5/space.hpp"

namespace mb::io::tree {

StorageInfo read_storage(const h5::Id& dcpl, const h5::SpaceInfo& space, const h5::Location& where);

}  // namespace mb::io::tree
