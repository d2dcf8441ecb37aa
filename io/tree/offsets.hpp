#pragma once
// The values of offsets datasets (packed sequences' cu_seqlens), read whole
// and exactly, for planning and for checking what a file holds.
#include <hdf5.h>

#include <string>

#include "core/packed.hpp"
#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "core/tree.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::tree {

// Reads an offsets dataset (1-D integers, S+1 values) whole and exactly:
// signed integers as int64, unsigned as uint64, whatever their width and
// byte order; integers of more than 64 bits are refused.
RawOffsets read_offsets(hid_t dataset, const h5::Location& where);

// The native type offsets of `type`'s signedness are read and written in
// (int64 or uint64: both hold every value of a type of at most 64 bits).
hid_t offsets_memory_type(hid_t type, const h5::Location& where);

// The largest value an offsets dataset of `type` holds (an integer type of
// at most 64 bits): offsets computed in exact arithmetic are checked
// against it before they are written, since HDF5 would saturate them.
std::uint64_t largest_offset(hid_t type, const h5::Location& where);

// Reads every dataset whose rule is "offsets".
OffsetsValues read_offsets_values(hid_t file, const std::string& file_name, const NodeInfo& tree,
                                  const Resolution& resolution);

}  // namespace mb::io::tree
