#pragma once
// One end of a copy, as every transfer path takes it.
#include <hdf5.h>

#include <utility>

#include "core/selection.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/handle.hpp"

namespace mb::io::transfer {

// One side of a copy: a dataset, or a whole array in memory of `shape`
// whose elements are `buffer`'s (the buffer's type is the memory type).
struct Side {
  hid_t dataset = H5I_INVALID_HID;
  h5::Buffer* memory = nullptr;
  Shape shape;  // memory only
  h5::Location where;

  static Side of(hid_t dataset, h5::Location where) { return {dataset, nullptr, {}, std::move(where)}; }
  static Side in_memory(h5::Buffer& buffer, Shape shape, h5::Location where) {
    return {H5I_INVALID_HID, &buffer, std::move(shape), std::move(where)};
  }
};

}  // namespace mb::io::transfer
