#pragma once
// Variable-length strings as HDF5 stores them, decoded and encoded without
// libhdf5 (HDF5 file format spec, III.E "Global Heap" and the variable-length
// datatype's stored form): each element is (uint32 length, address of a
// global heap collection, uint32 object index), little-endian; a collection
// ("GCOL") holds the objects. Pure byte logic: anything that does not fit the
// format exactly is refused (none), and the caller leaves the data to libhdf5.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace mb::heap {

// The file's sizes of addresses and of lengths (superblock), in bytes.
struct Sizes {
  unsigned address = 8;
  unsigned length = 8;
  // Whether both are sizes this decoder handles (2, 4 or 8 bytes).
  bool supported() const;
  // Bytes of one stored variable-length element.
  std::size_t element() const { return 4 + address + 4; }
};

// One stored element: where its bytes are.
struct Ref {
  std::uint32_t length = 0;   // bytes of the string
  std::uint64_t address = 0;  // of its collection; 0: a null string (no data)
  std::uint32_t index = 0;    // of the object in the collection
};

// The element stored at `bytes` (sizes.element() bytes). None for an
// undefined address (all bits set), which libhdf5 cannot read either.
std::optional<Ref> decode_ref(const unsigned char* bytes, const Sizes& sizes);

// Bytes of a collection's header, and from it (its first header_bytes()
// bytes) the collection's total size; none if it is not a version-1 "GCOL"
// header or the size is smaller than a header.
std::size_t header_bytes(const Sizes& sizes);
std::optional<std::uint64_t> collection_size(std::span<const unsigned char> header, const Sizes& sizes);

// Where an object's data lies in its collection's bytes.
struct Object {
  std::size_t offset = 0;
  std::uint64_t size = 0;
  bool present = false;
};

// The objects of one whole collection, by index (index 0, free space, is
// never present). Parsed as libhdf5 parses it: objects one after the other,
// each padded to 8 bytes, a tail too small for an object header is free
// space, a later object of the same index replaces an earlier one. None if
// the header is wrong, an object runs past the end or would not advance.
std::optional<std::vector<Object>> parse_collection(std::span<const unsigned char> bytes, const Sizes& sizes);

// Strings laid out in collections as libhdf5 lays them out (H5HG.c): one
// object per string, indices from 1, reference count 0, each padded to 8
// bytes; a collection at least 4 KiB (H5HG_MINSIZE: libhdf5 reads that much
// of any collection first) and at most 64 KiB (H5HG_MAXSIZE) unless one
// string alone needs more, the rest of it one free-space object. The
// collections lie one after another from `bytes`' start; each ref's address
// is relative to it. A null string (null pointer) is stored as libhdf5
// stores one: length, address and index all 0, no object.
struct Packed {
  std::vector<unsigned char> bytes;
  std::vector<Ref> refs;
  std::uint64_t free = 0;  // bytes of free space in the collections
};
// Throws for a string of 4 GiB or more, which the element's length cannot hold.
Packed pack(std::span<const char* const> strings, const Sizes& sizes);

// The elements of `refs` (as pack() made them: index 0 is a null string)
// at file address `base` + their address, `sizes.element()` bytes each.
void encode_refs(std::span<const Ref> refs, std::uint64_t base, const Sizes& sizes, unsigned char* out);

}  // namespace mb::heap
