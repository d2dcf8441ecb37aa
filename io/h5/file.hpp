#pragma once
// Opening inputs and creating outputs, with the access properties each needs.
#include <cstdint>
#include <optional>
#include <string>

#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// What an input's metadata cache keeps of a closed object.
enum class Cache {
  // Nothing (evict-on-close): for a merge's many inputs, whose caches would
  // otherwise all grow (20,000 small datasets in 8 inputs: 22.3 s, 220 MB
  // kept; 18.0 s, 147 MB evicted).
  Evict,
  // Everything, up to the cache's own bound: for the one input of a split
  // or inspect, where each close's flush of the evicted entries costs more
  // than the cache (20,000 small datasets split 8 ways: 15.1 s evicted,
  // 10.1 s kept).
  Keep,
};

// Opens a local input read-only; refuses what is not an existing regular
// HDF5 file before HDF5 sees it. (Inputs are opened by io/source/input.hpp.)
Id open_local(const std::string& path, Cache cache);

// Opens `name` read-only through a file driver of ours, selected by
// `fapl`; "not an HDF5 file" when the bytes it read hold none, else what
// the driver or the library said.
Id open_by_driver(const std::string& name, Id fapl, Cache cache, const Location& where);

// A file driver class of ours (io/remote), registered with the library:
// its id, for access properties. `shown` names it in messages ("the
// remote file driver").
hid_t register_driver(const H5FD_class_t& driver, const char* shown);
// New file access properties that open files through the registered
// `driver`, with `info` (copied, as the driver class's fapl_size says) for
// it to read back when it opens a file (driver_info).
Id access_through(hid_t driver, const void* info, const char* shown, const Location& where);

// The driver information set on file access properties (H5Pset_driver):
// what a file driver of ours reads when the library opens a file with them.
const void* driver_info(hid_t fapl);

// What an output file needs of its format.
struct OutputFormat {
  // The root group has an attribute over 64 KiB: it gets a version 2 object
  // header (see with_newer_object_header), which only a file created with
  // HDF5 1.8's format as its low bound (superblock version 2) can give it.
  bool large_root_attributes = false;
};

// Creates `path` (which must not exist); messages name `shown_as` (the
// final name of a temporary). No sieve buffer: see file_bytes.hpp. Objects
// are created in HDF5's default (earliest) format, and no object records
// times, so that the same contents give the same bytes.
Id create_file(const std::string& path, const std::string& shown_as, OutputFormat format = {});

// Runs `create` (which creates one object in the file of `location`) with
// HDF5 1.8's format as the file's low bound when `needed`: the object then
// gets a version 2 object header, which holds attributes over 64 KiB in
// dense attribute storage. Every other object keeps the default format.
template <typename Fn>
auto with_newer_object_header(hid_t location, bool needed, const Location& where, Fn&& create);

// A group without object times, `large_attributes` as above.
Id create_group(hid_t parent, const std::string& name, bool large_attributes, const Location& where);

// Makes `name` in `parent` a further name (a hard link) of the object at
// the absolute path `target` of the same file.
void create_hard_link(hid_t parent, const std::string& name, const std::string& target, const Location& where);

// What writing or reading a file's bytes past the library needs to know.
// The file descriptor of `object`'s file, when it is a file of the default
// (POSIX) driver: valid while the file is open.
std::optional<int> descriptor_of(hid_t object, const Location& where);
// The access the file was opened with (H5F_ACC_RDONLY or H5F_ACC_RDWR).
unsigned intent_of(hid_t file, const Location& where);
// How addresses in the file are stored: from the end of its user block
// (0: they are file offsets), in `address` bytes, lengths in `length` bytes.
struct Addressing {
  std::uint64_t userblock = 0;
  std::size_t address = 0, length = 0;
};
Addressing addressing_of(hid_t file, const Location& where);
// Reads `n` bytes at `offset` of `fd`, or fewer at the end of the file:
// how many, or -1 (errno set) on an error. The one read loop (EINTR).
std::int64_t read_at(int fd, void* into, std::size_t n, std::uint64_t offset);
// Writes `n` bytes at `offset` of `fd` (`where` names it in errors). The
// one write loop (EINTR).
void write_bytes(int fd, const void* bytes, std::size_t n, std::uint64_t offset, const Location& where);
// Moves the file's end of allocation `bytes` further: the library never
// allocates below it, so the bytes between are ours to write.
void increment_filesize(hid_t file, std::uint64_t bytes, const Location& where);
haddr_t end_of_allocation(hid_t file, const Location& where);

namespace detail {
void set_low_format_bound(hid_t location, bool v18, const Location& where);
}

template <typename Fn>
auto with_newer_object_header(hid_t location, bool needed, const Location& where, Fn&& create) {
  if (!needed) return create();
  detail::set_low_format_bound(location, true, where);
  try {
    auto out = create();
    detail::set_low_format_bound(location, false, where);
    return out;
  } catch (...) {
    try {
      detail::set_low_format_bound(location, false, where);
    } catch (...) {  // the first error is the one to report
    }
    throw;
  }
}

// Refuses to allocate `bytes` (over 1 MiB) for a value read whole from
// `object`'s file when the file is smaller: a corrupt dataspace can claim
// any size.
void check_fits_in_file(hid_t object, std::uint64_t bytes, const Location& where);

}  // namespace mb::io::h5
