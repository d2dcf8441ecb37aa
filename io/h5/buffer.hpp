#pragma once
// A transfer buffer for elements of one HDF5 datatype.
#include <cstdint>
#include <vector>

#include "io/h5/handle.hpp"

namespace mb::io::h5 {

// Variable-length elements read into it own heap memory that HDF5
// allocated; it is reclaimed on reuse and at destruction.
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
  hid_t type() const { return type_; }
  // The elements are now described by `equal`, a datatype equal to the
  // buffer's (equal_types) that outlives it: the buffer's own may be closed.
  void retype(hid_t equal) { type_ = equal; }

 private:
  void reclaim();
  hid_t type_;  // not owned
  std::size_t element_size_;
  bool variable_;
  std::uint64_t elements_ = 0;
  std::vector<unsigned char> bytes_;
};

}  // namespace mb::io::h5
