#pragma once
// Variable-length strings as HDF5 stores them, decoded without libhdf5 (HDF5
// file format spec, III.E "Global Heap" and the variable-length datatype's
// stored form): each element is (uint32 length, address of a global heap
// collection, uint32 object index), little-endian; a collection ("GCOL") holds
// the objects. Pure byte logic: anything that does not fit the format exactly
// is refused (none), and the caller leaves the data to libhdf5.
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

}  // namespace mb::heap
