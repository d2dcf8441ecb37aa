#pragma once
// The copy engine: creating datasets like their source, moving elements in
// bounded blocks, reading, writing and comparing attributes.
#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/h5.hpp"

namespace mb::h5 {

inline constexpr std::size_t kDefaultBufferBytes = 64u << 20;

// Unfiltered data up to this size is handled whole in memory: split reads
// such a dataset once for all its microbatches, merge assembles such a result
// before writing it once. Tens of thousands of small datasets then cost few
// library calls each; larger data is copied piece by piece.
inline constexpr std::uint64_t kWholeInMemory = 1u << 20;

// A transfer buffer for `type` elements. Variable-length elements read into
// it own heap memory that HDF5 allocated; it is reclaimed on reuse and at
// destruction.
class Buffer {
 public:
  explicit Buffer(hid_t type);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) = delete;

  // Room for `elements` zeroed elements (the old content is released).
  void* prepare(std::uint64_t elements);
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  std::uint64_t elements() const { return elements_; }

 private:
  void reclaim();
  hid_t type_;  // not owned
  std::size_t element_size_;
  bool variable_;
  std::uint64_t elements_ = 0;
  std::vector<unsigned char> bytes_;
};

// What creating copies of a dataset needs from it: read once, used for
// every copy.
struct DatasetShape {
  Id type;
  SpaceInfo space;
  Id dcpl;
};
DatasetShape describe_dataset(hid_t dataset, const Location& where);

// Creates `name` in `parent` with the source's datatype and creation
// properties (layout, filters, fill value), resized to `dims`. On the
// resized axis a fixed maximum follows the new length and an unlimited one
// stays unlimited; chunk dimensions are clamped to fixed extents.
Id create_dataset_like(const DatasetShape& source, hid_t parent, const std::string& name, const Shape& dims,
                       std::optional<int> resized_axis, const Location& where);

// The same in two steps, for many copies of one source: what creating a copy
// of extent `dims` needs (adapted creation properties and the dataspace) is
// prepared once and shared by every copy of that extent.
struct Creation {
  Shape dims;
  Id dcpl;
  Id space;
};
Creation prepare_creation(const DatasetShape& source, const Shape& dims, std::optional<int> resized_axis,
                          const Location& where);
Id create_dataset(const DatasetShape& source, const Creation& creation, hid_t parent, const std::string& name,
                  const Location& where);
Id create_dataset_like(hid_t source, hid_t parent, const std::string& name, const Shape& dims,
                       std::optional<int> resized_axis, const Location& where);

// Where a box of elements sits in a dataset: its first element and the step
// between elements per dimension (empty stride: 1 everywhere).
struct Placement {
  Shape start;
  Shape stride;
  static Placement origin(std::size_t rank) { return {Shape(rank, 0), {}}; }
  // At `begin` with `step` on `axis`, 0 and 1 elsewhere.
  static Placement on_axis(std::size_t rank, std::size_t axis, std::uint64_t begin, std::uint64_t step = 1);
};

// Copies `count` elements per dimension from `src` at `from` to `dst` at
// `to`, through blocks of at most `buffer_bytes`.
void copy_box(hid_t src, const Location& src_where, const Placement& from, hid_t dst, const Location& dst_where,
              const Placement& to, const Shape& count, std::size_t buffer_bytes);

// Reads the box of `dataset` into `buffer` as `mem_type` elements.
void read_box(hid_t dataset, hid_t mem_type, const Shape& start, const Shape& count, Buffer& buffer,
              const Location& where, const Shape& stride = {});
void write_box(hid_t dataset, hid_t mem_type, const Shape& start, const Shape& count, const void* data,
               const Location& where, const Shape& stride = {});

// An attribute's value in memory, with its own type and dataspace.
struct AttributeValue {
  Id type;
  Id space;
  SpaceInfo shape;
  Buffer data;
  explicit AttributeValue(Id t) : type(std::move(t)), data(type.get()) {}
};

std::vector<std::string> attribute_names(hid_t object, const Location& where);

// Every attribute of an object, read once to be written to many copies.
using Attributes = std::vector<std::pair<std::string, AttributeValue>>;
Attributes read_attributes(hid_t object, const Location& where);
void write_attributes(hid_t object, const Attributes& attributes, const Location& where);

// Writes `count` elements of an in-memory array of shape `mem_shape`, taken
// at `from`, to `dst` at `to`.
void write_from_memory(hid_t dst, hid_t mem_type, const void* data, const Shape& mem_shape, const Placement& from,
                       const Placement& to, const Shape& count, const Location& where);
// The reverse: reads `count` elements of `src` at `from` into an in-memory
// array of shape `mem_shape` at `to`.
void read_to_memory(hid_t src, hid_t mem_type, void* data, const Shape& mem_shape, const Placement& from,
                    const Placement& to, const Shape& count, const Location& where);
AttributeValue read_attribute(hid_t object, const std::string& name, const Location& where);
void write_attribute(hid_t object, const std::string& name, const AttributeValue& value, const Location& where);


// Opens the group or dataset at `path` below `file`.
Id open_object(hid_t file, const std::string& path, const Location& where);


// Copies rows [src_begin, src_begin + count) along `axis` of `src` (whole
// along every other axis, which both datasets share) to rows starting at
// `dst_begin` of `dst`. Where both are chunked alike with the same filters
// and the rows line up with chunk boundaries, whole chunks move as stored
// bytes (H5Dread_chunk / H5Dwrite_chunk): compressed data is not
// decompressed. The rest goes through copy_box. Returns the number of
// chunks moved raw.
std::uint64_t copy_rows(hid_t src, const Location& src_where, std::uint64_t src_begin, hid_t dst,
                        const Location& dst_where, std::uint64_t dst_begin, std::uint64_t count, std::size_t axis,
                        std::size_t buffer_bytes);

}  // namespace mb::h5
