#pragma once
// Many short segments of rows along one axis (a CP rank's two chunks of
// every one of thousands of packed documents): a copy per segment costs an
// HDF5 call each. Instead the segments are moved a window at a time, the
// batch side selected as a union of hyperslabs: HDF5 walks a union in
// row-major order, which is the map's order when its segments rise without
// interleaving, so the rows land packed one after the other as the map
// says. Long segments still go through copy() and its byte paths. Only for
// packed documents under CP: other many-segment maps (many data-parallel
// slices) have segments that whole chunks and file bytes serve better.
#include "core/layout.hpp"
#include "io/transfer/copy.hpp"

namespace mb::io::transfer {

struct Gather {
  const RowMap& map;      // rows of the batch side, in the piece's order
  std::size_t axis;       // the axis they are rows of; whole along the others
  bool into_batch;        // merge: piece -> batch; split: batch -> piece
  // The piece's rows, segment k paired with the map's segment k (--cp-pad:
  // pads between them); none: the map's rows packed from 0.
  const RowMap* piece_rows = nullptr;
};

// Whether copy_gathered takes this map: many segments, rising.
bool gathers(const RowMap& map);

// Copies the map's rows between `batch` and `piece` (whose rows along the
// axis are the map's, packed from 0, or gather.piece_rows).
void copy_gathered(const Side& batch, const Side& piece, const Gather& gather, const Policy& policy);

// Writes `element` (one element of the dataset's own type) into every
// element of `rows` (rising) along `axis` of `piece`, a window at a time:
// --cp-pad's pads.
void fill_rows(const Side& piece, const RowMap& rows, std::size_t axis, const std::vector<unsigned char>& element,
               const Policy& policy);

}  // namespace mb::io::transfer
