#pragma once
// Contiguous datasets moved as file bytes. A contiguous, fixed-size dataset
// is one run of bytes in its file, in the file's element order and byte
// order; a copy with the same datatype holds the very same bytes. Rows cut
// along an axis are then a few byte ranges, which the kernel copies from
// file to file (copy_file_range, as `cp` does) without passing through
// HDF5's type conversion or our buffers.
//
// Only outputs created by this process are written this way, and only after
// their storage is allocated (create_dataset_like allocates early those that
// qualify); output files are created without HDF5's sieve buffer, so HDF5
// never holds stale copies of the bytes written here.
#include <hdf5.h>

#include <cstdint>
#include <optional>

#include "io/h5.hpp"

namespace mb::h5 {

// Datasets from this many bytes are allocated early and copied as bytes;
// smaller ones are cheaper through HDF5's own small-data path.
inline constexpr std::uint64_t kFileBytesMin = 64u << 10;

// Whether elements of `type` mean the same in any file, so that their
// stored bytes (contiguous here, or raw chunks) can be copied: variable-length
// data and references hold addresses in their own file.
bool copyable_as_bytes(hid_t type);

// Where a dataset's elements start in an open file descriptor, when the
// dataset is contiguous, allocated, of a byte-copyable type, in a file
// opened with the default (POSIX) driver; otherwise nothing.
struct StoredBytes {
  int fd = -1;
  std::uint64_t offset = 0;
};
std::optional<StoredBytes> stored_bytes(hid_t dataset, const Location& where);

// Copies `length` bytes from `from` + `from_offset` to `to` + `to_offset`,
// in steps of at most `step` bytes (checking for stop signals between them).
// Uses copy_file_range, and pread/pwrite where the kernel cannot (files on
// different filesystems).
void copy_file_bytes(const StoredBytes& from, std::uint64_t from_offset, const Location& src_where,
                     const StoredBytes& to, std::uint64_t to_offset, const Location& dst_where, std::uint64_t length,
                     std::size_t step);

}  // namespace mb::h5
