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

namespace mb::io::transfer {

// Where a dataset's elements (or a file's bytes) start in an open file descriptor.
struct StoredBytes {
  int fd = -1;
  std::uint64_t offset = 0;
};

// One range of bytes from one file to another.
struct ByteRange {
  StoredBytes from;
  std::uint64_t from_offset;
  const h5::Location& src_where;
  StoredBytes to;
  std::uint64_t to_offset;
  const h5::Location& dst_where;
  std::uint64_t length;
};

// Copies the range in steps of at most `step` bytes (checking for stop
// signals between them, each counted on `meter` and told to `tap`), by the
// kernel where it can, through a buffer where it cannot.
void copy_range(const ByteRange& range, std::size_t step, run::ByteMeter* meter, CopyTap* tap = nullptr);

// Copies the rows as file bytes, when both datasets are contiguous,
// allocated, of the same byte-copyable datatype, in files of the default
// (POSIX) driver, and the runs are long enough to be worth a system call
// each. Returns false, having done nothing, otherwise.
bool copy_file_bytes(const RowCopy& copy, const Policy& policy);

}  // namespace mb::io::transfer
