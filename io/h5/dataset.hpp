#pragma once
// Datasets: creating copies like a source (same datatype and creation
// properties, another extent), their storage layout, and reading and
// writing selections.
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/h5/buffer.hpp"
#include "io/h5/space.hpp"

namespace mb::io::h5 {

// Whether creation properties hold a fill value the user set.
bool user_fill_value(hid_t dcpl, const Location& where);
// Storage allocated when the dataset is created (H5D_ALLOC_TIME_EARLY),
// so that its place in the file is known before anything is written.
bool allocated_early(hid_t dcpl, const Location& where);
void allocate_early(hid_t dcpl, const Location& where);
// Default creation properties, but recording no object times (as no
// output does: the same contents give the same bytes).
Id creation_without_times(const Location& where);

// What copies of a dataset are made from: read once, used for every copy.
struct Prototype {
  Id type;
  SpaceInfo space;
  Id dcpl;
};
Prototype read_prototype(hid_t dataset, const Location& where);
// The prototype of `count` copies stacked along a new leading axis: its
// dataspace [count, dims...] (max dims [count, max dims...]), and chunks
// [1, chunk...] where it is chunked. A null dataspace stays null.
Prototype stacked_prototype(Prototype prototype, std::uint64_t count, const Location& where);

// A prototype's creation properties and dataspace adapted to one extent,
// shared by every copy of that extent. Chunked copies keep the source's
// max dims where they hold the extent (a fixed max below it becomes the
// extent) and so its chunk shape; other layouts get max dims equal to the
// extent. No copy records object times.
struct Extent {
  Shape dims;
  Id dcpl;
  Id space;
};
// What the caller will write the copies with.
struct ExtentOptions {
  // Contiguous copies of at least this many bytes, of a datatype that
  // copies as bytes (copyable_as_bytes), are allocated when created rather
  // than when first written, so that their bytes can be written past the
  // library (the caller's threshold for that: io/transfer/file_bytes.hpp).
  // By default none is: each is allocated as its source's properties say.
  std::uint64_t allocate_early_from = std::numeric_limits<std::uint64_t>::max();
};
Extent make_extent(const Prototype& prototype, const Shape& dims, const ExtentOptions& options,
                   const Location& where);

// Max dims for an extent `dims` from a source's: the source's where they hold
// it (a fixed max at least the dim; unlimited stays unlimited), so that
// pieces and the merged file keep the input's, and its chunk shape fits
// them; a fixed max below the dim becomes the dim (merged files that were
// not pieces of one split).
std::vector<MaxDim> max_dims_holding(const std::vector<MaxDim>& source, const Shape& dims);

Id create_dataset(const Prototype& prototype, const Extent& extent, hid_t parent, const std::string& name,
                  const Location& where);
// Both steps, for a single copy.
Id create_dataset(const Prototype& prototype, const Shape& dims, const ExtentOptions& options, hid_t parent,
                  const std::string& name, const Location& where);

// A dataset at `path` of `file` made as `dataset` was (datatype, dataspace,
// creation properties), with the groups on the way: its chunks are then the
// chunks `dataset` stores, byte for byte, for H5Dwrite_chunk to move.
Id create_like(hid_t dataset, hid_t file, const std::string& path, const Location& where);

// Checked creation-property queries (their error values look like answers).
H5D_layout_t layout_of(hid_t dcpl, const Location& where);
int filter_count(hid_t dcpl, const Location& where);
// The chunk shape of chunked creation properties.
Shape chunk_shape(hid_t dcpl, const Location& where);

// Filter `index` of the pipeline creation properties hold.
struct Filter {
  H5Z_filter_t id = H5Z_FILTER_ERROR;
  unsigned flags = 0;            // H5Z_FLAG_OPTIONAL, ...
  std::vector<unsigned> values;  // its parameters (cd_values), all of them
  std::string reported;          // the name it reports (a plugin's: a description, up to 255 bytes)
};
Filter filter_at(hid_t dcpl, unsigned index, const Location& where);
// Whether the library can load filter `id` (a plugin can be missing).
bool filter_available(H5Z_filter_t id);

// How a chunked dataset is stored: chunk shape and filter pipeline (id and
// parameters); an empty chunk shape when it is not chunked.
struct ChunkLayout {
  Shape chunk;
  std::vector<std::pair<H5Z_filter_t, std::vector<unsigned>>> filters;
  friend bool operator==(const ChunkLayout&, const ChunkLayout&) = default;
};
ChunkLayout chunk_layout(hid_t dataset, const Location& where);

// Reads `selection` of `dataset` into `buffer` as `buffer.type()` elements.
void read(hid_t dataset, const Selection& selection, Buffer& buffer, const Location& where);
// Writes `data` (selection.count elements of `mem_type`) to `selection`.
void write(hid_t dataset, const Selection& selection, hid_t mem_type, const void* data, const Location& where);

}  // namespace mb::io::h5
