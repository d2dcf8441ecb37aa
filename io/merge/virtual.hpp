#pragma once
// merge --virtual: split leaves become virtual datasets over every input's
// rows (nothing copied; no input is opened).
#include "io/merge/steps.hpp"

namespace mb::io::merge {

h5::Id create_virtual(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t parent);

}  // namespace mb::io::merge
