#pragma once
// Contiguous datasets moved as file bytes. A contiguous, fixed-size dataset
// is one run of bytes in its file, in the file's element order and byte
// order; a copy with the same datatype holds the very same bytes. Rows cut
// along an axis are then a few byte ranges, which the kernel copies from
// file to file (copy_file_range, as `cp` does) without passing through
// HDF5's type conversion or our buffers.
//
// Only outputs created by this process are written this way, and only after
// their storage is allocated (h5::make_extent allocates early those that
// qualify); output files are created without HDF5's sieve buffer, so HDF5
// never holds stale copies of the bytes written here.
#include "io/transfer/rows.hpp"

namespace mb::transfer {

// Copies the rows as file bytes, when both datasets are contiguous,
// allocated, of the same byte-copyable datatype, in files of the default
// (POSIX) driver, and the runs are long enough to be worth a system call
// each. Returns false, having done nothing, otherwise.
bool copy_file_bytes(const RowCopy& copy, const Policy& policy);

}  // namespace mb::transfer
