#pragma once
// Opening inputs and creating outputs, with the access properties each needs.
#include <cstdint>
#include <string>

#include "io/h5/handle.hpp"

namespace mb::h5 {

// Opens an input read-only, with evict-on-close; refuses what is not an
// existing regular HDF5 file before HDF5 sees it.
Id open_read_only(const std::string& path);

// Creates `path` (which must not exist); messages name `shown_as` (the
// final name of a temporary). No sieve buffer: see file_bytes.hpp.
Id create_file(const std::string& path, const std::string& shown_as);

// Refuses to allocate `bytes` (over 1 MiB) for a value read whole from
// `object`'s file when the file is smaller: a corrupt dataspace can claim
// any size.
void check_fits_in_file(hid_t object, std::uint64_t bytes, const Location& where);

}  // namespace mb::h5
