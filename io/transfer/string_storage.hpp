#pragma once
// Where a dataset's variable-length strings are stored, for reading or
// writing them past libhdf5 (strings.hpp): the file, the element records,
// and the space for new heap collections. Each answer is none unless every
// detail is known.
#include <cstdint>
#include <optional>

#include "core/global_heap.hpp"
#include "core/selection.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::transfer {

// Where a qualifying dataset's element records are.
struct Records {
  int fd = -1;
  std::uint64_t offset = 0;
  heap::Sizes sizes;
  Shape dims;
};

// A source read with pread: a contiguous, allocated dataset of the
// variable-length string type `type`, in a file opened read-only with the
// POSIX driver and no user block, of 2-, 4- or 8-byte addresses and
// lengths, whose storage is one element record per element.
std::optional<Records> source_of(hid_t dataset, hid_t type, const h5::Location& where);

// An output dataset whose strings are written past libhdf5: its records in
// place, its collections at the end of its file, in space reserved with
// h5::increment_filesize (libhdf5 never allocates below its end of
// allocation, so nothing else is ever put there, and the superblock records
// the new end when the file is closed). Only a dataset of the very type of
// the strings, in a file of 8-byte addresses and lengths (as outputs are
// created), without a fill value of its own: libhdf5 writes that into the
// heap for every element when it allocates the dataset, and H5Dwrite frees
// what it overwrites, which records written past it would not.
struct Target {
  Records records;
  h5::Id file;
};
std::optional<Target> target_of(hid_t dataset, hid_t type, const h5::Location& where);

// `bytes` at the end of the target's file, reserved: their address.
std::uint64_t reserve(const Target& target, std::uint64_t bytes, const h5::Location& where);

// The first element of `s` if it is one run of the dataset's elements in
// storage order (whole along every axis after its first non-single one),
// else none.
std::optional<std::uint64_t> run_start(const Selection& s, const Shape& dims);

}  // namespace mb::io::transfer
