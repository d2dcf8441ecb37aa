#pragma once
// How elements move: the one dispatcher. A copy takes a selection of one
// side (a dataset, or an array in memory) to an equal-sized selection of
// the other. Between datasets it picks the cheapest exact path:
//   1. file bytes: contiguous data of the same datatype, copied by the
//      kernel (file_bytes.hpp);
//   2. raw chunks: chunks whole inside the copy, chunked and filtered alike
//      on both sides, moved as stored bytes without decompressing
//      (chunks.hpp);
//   3. slabs: HDF5 hyperslabs through a bounded buffer (slab.hpp),
//      for everything else and for what the byte paths leave.
#include "core/selection.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/handle.hpp"
#include "io/transfer/policy.hpp"
#include "io/transfer/side.hpp"

namespace mb::io::transfer {

// Whether data of `bytes` stored with creation properties `dcpl` is
// handled whole in memory (read once, or assembled and written once):
// unfiltered, since filtered data is left to copy(), which moves aligned
// chunks without recompressing, and at most kWholeInMemory.
bool held_whole(hid_t dcpl, std::uint64_t bytes, const h5::Location& where);

// Copies `from_selection` of `from` to `to_selection` of `to` (equal counts).
void copy(const Side& from, const Selection& from_selection, const Side& to, const Selection& to_selection,
          const Policy& policy);

}  // namespace mb::io::transfer
