#pragma once
// Elements moved through HDF5 hyperslabs: the path every copy can take
// (strided rows, edge chunks, variable-length data, type conversions).
#include "core/selection.hpp"
#include "io/h5/buffer.hpp"
#include "io/transfer/policy.hpp"
#include "io/transfer/side.hpp"

namespace mb::io::transfer {

// Dataset to dataset, in blocks of at most the policy's buffer_bytes, each
// counted on its meter.
void copy_slab(const Side& src, const Selection& from, const Side& dst, const Selection& to, const Policy& policy);

// Dataset to an in-memory array (`memory` holds `memory_shape` elements).
void read_slab(hid_t src, const h5::Location& where, const Selection& from, h5::Buffer& memory,
               const Shape& memory_shape, const Selection& to);

// In-memory array to dataset.
void write_slab(const h5::Buffer& memory, const Shape& memory_shape, const Selection& from, hid_t dst,
                const h5::Location& where, const Selection& to);

}  // namespace mb::io::transfer
