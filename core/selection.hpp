#pragma once
// Which elements of a tensor a copy touches, and the row-map walk that
// split, merge and virtual datasets share.
//
// Words used for "which rows" across the code, one per idea:
//   Range     a half-open interval [begin, end) of one axis (partition math)
//   Segment   rows begin, begin+stride, ... along one axis (count of them)
//   RowMap    the segments that make up one output file, in order
//   Selection an n-d box of elements: start, count and stride per dimension
#include <cstdint>
#include <vector>

#include "core/layout.hpp"
#include "core/tree.hpp"

namespace mb {

struct Selection {
  Shape start;
  Shape count;
  Shape stride;  // empty: 1 in every dimension

  // Every element of a tensor of shape `dims`.
  static Selection all(const Shape& dims);
  // `rows` along `axis`, whole along the other axes of `dims`.
  static Selection rows(const Shape& dims, std::size_t axis, const Segment& rows);

  std::uint64_t elements() const { return element_count(count); }
  bool unit_stride() const;
  // The sub-box of `count` elements starting `offset` steps into this one.
  Selection part(const Shape& offset, const Shape& count) const;
  friend bool operator==(const Selection&, const Selection&) = default;
};

// Row-major flat index of the element at multi-index `at` of `shape`.
std::uint64_t flat_index(const Shape& shape, const Shape& at);

// Where one segment of a row map sits on either side of a cut: `batch`
// selects its rows in the whole (input of split, output of merge), `piece`
// the same rows packed one after the other in the microbatch file.
struct SegmentPlace {
  Selection batch;
  Selection piece;
};

// The one row-map walk: the place of every segment of `map`, in order.
// `batch_dims` and `piece_dims` are the two tensors' shapes; they agree
// on every axis but `axis`.
std::vector<SegmentPlace> place_segments(const RowMap& map, std::size_t axis, const Shape& batch_dims,
                                         const Shape& piece_dims);

// Whether every row of a merge moves as stored chunks (io/transfer/chunks):
// each segment of every input's map (`maps`, its rows packed one after the
// other in its piece) is unit-stride, starts on a boundary of `chunk` rows
// on both sides, and spans whole chunks, but for a short last one that ends
// both the batch (`length` rows) and its piece (an edge chunk in both).
bool moves_as_stored(const std::vector<RowMap>& maps, std::uint64_t chunk, std::uint64_t length);

// The same places cut again along a second axis (context parallelism's
// sequence axis): `positions` of the batch, one after the other in the
// piece.
std::vector<SegmentPlace> place_positions(const std::vector<SegmentPlace>& places, const RowMap& positions,
                                          std::size_t axis);

// Arrays in memory: elements of `element` bytes, row-major, of `dims`.
struct ConstTensor {
  const unsigned char* bytes;
  const Shape& dims;
};
struct Tensor {
  unsigned char* bytes;
  const Shape& dims;
};

// Copies the elements `a` selects of `from` to those `b` selects of `to`,
// in row-major order of the selections (both of the same count per axis),
// as bytes: memory to memory, what HDF5 would do without conversion.
void copy_selected(ConstTensor from, const Selection& a, Tensor to, const Selection& b, std::size_t element);

}  // namespace mb
