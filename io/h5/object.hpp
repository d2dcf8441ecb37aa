#pragma once
// What an open dataset or attribute is made of, each part a checked call
// that returns an owned id: its datatype, dataspace, creation properties
// and file; where a dataset's elements lie in its file; and reading or
// writing all of an object's elements at once.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// Of a dataset or an attribute (told apart by H5Iget_type).
Id type_of(hid_t object, const Location& where);
Id space_of(hid_t object, const Location& where);
// Of a dataset.
Id creation_of(hid_t dataset, const Location& where);
// Of any object: the file it is in (a new id for it, to be closed).
Id file_of(hid_t object, const Location& where);
// What an id is: H5I_GROUP, H5I_DATASET, H5I_DATATYPE (a named datatype), ...
H5I_type_t kind_of(hid_t object, const Location& where);

// Where an object's header lies (one address per object, whatever names
// it) and how many hard links name it.
struct HardLinks {
  haddr_t address = 0;
  unsigned count = 0;
};
HardLinks hard_links(hid_t object, const Location& where);

Id open_attribute(hid_t object, const std::string& name, const Location& where);
bool has_attribute(hid_t object, const std::string& name, const Location& where);
bool has_link(hid_t group, const std::string& name, const Location& where);

// Number of external files a dataset's creation properties name.
int external_count(hid_t dcpl, const Location& where);
// Contiguous and in the file itself (not in external files).
bool contiguous_in_file(hid_t dcpl, const Location& where);

// Where a contiguous dataset's elements lie in its file.
struct Placement {
  haddr_t address = 0;
  std::uint64_t bytes = 0;  // its storage size (H5Dget_storage_size)
};
// Nullopt when they are not in one run of the file: another layout,
// external files, or storage not allocated (never written: its elements
// read as the fill value).
std::optional<Placement> placement(hid_t dataset, const Location& where);

// Every element of a dataset or an attribute, as `mem_type` elements.
void read_all(hid_t object, hid_t mem_type, void* out, const Location& where);
void write_all(hid_t object, hid_t mem_type, const void* data, const Location& where);
// A selection `file_space` of a dataset to or from memory laid out as `mem_space`.
void read_selection(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, void* out,
                    const Location& where);
void write_selection(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, const void* data,
                     const Location& where);

// One chunk of a chunked dataset as stored (filtered bytes and the mask of
// filters skipped), at the chunk's logical offset (element coordinates).
struct RawChunk {
  std::vector<unsigned char> bytes;
  std::uint32_t filters = 0;
};
// False for a chunk never written (it reads as the fill value); `into`'s
// bytes are reused from call to call.
bool read_chunk(hid_t dataset, const hsize_t* offset, RawChunk& into, const Location& where);
void write_chunk(hid_t dataset, const hsize_t* offset, const RawChunk& chunk, const Location& where);

}  // namespace mb::io::h5
