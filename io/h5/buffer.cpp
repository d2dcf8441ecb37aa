#include "io/h5/buffer.hpp"

#include <algorithm>
#include <utility>

#include "io/h5/types.hpp"

namespace mb::io::h5 {

Buffer::Buffer(hid_t type)
    : type_(type), element_size_(size_of(type, {"(memory)", ""})), variable_(has_variable_length(type)) {}

Buffer::~Buffer() { reclaim(); }

Buffer::Buffer(Buffer&& other) noexcept
    : type_(other.type_),
      element_size_(other.element_size_),
      variable_(other.variable_),
      elements_(std::exchange(other.elements_, 0)),
      bytes_(std::move(other.bytes_)) {}

void Buffer::reclaim() {
  if (variable_ && elements_ > 0) {
    const hsize_t n = elements_;
    Id space(H5Screate_simple(1, &n, nullptr));
    if (space.valid()) H5Dvlen_reclaim(type_, space.get(), H5P_DEFAULT, bytes_.data());
  }
  elements_ = 0;
}

void* Buffer::prepare(std::uint64_t elements) {
  reclaim();
  bytes_.assign(std::max<std::uint64_t>(elements, 1) * element_size_, 0);
  elements_ = elements;
  return bytes_.data();
}

}  // namespace mb::io::h5
