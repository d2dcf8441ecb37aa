#include "core/selection.hpp"

namespace mb {

Selection Selection::all(const Shape& dims) { return {Shape(dims.size(), 0), dims, {}}; }

Selection Selection::rows(const Shape& dims, std::size_t axis, const Segment& rows) {
  Selection s{Shape(dims.size(), 0), dims, Shape(dims.size(), 1)};
  s.start.at(axis) = rows.begin;
  s.count.at(axis) = rows.count;
  s.stride.at(axis) = rows.stride;
  return s;
}

bool Selection::unit_stride() const {
  for (auto step : stride)
    if (step != 1) return false;
  return true;
}

Selection Selection::part(const Shape& offset, const Shape& part_count) const {
  Selection out{start, part_count, stride};
  for (std::size_t d = 0; d < out.start.size(); ++d) out.start[d] += offset[d] * (stride.empty() ? 1 : stride[d]);
  return out;
}

std::uint64_t flat_index(const Shape& shape, const Shape& at) {
  std::uint64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + at[d];
  return flat;
}

std::vector<SegmentPlace> place_segments(const RowMap& map, std::size_t axis, const Shape& batch_dims,
                                         const Shape& piece_dims) {
  std::vector<SegmentPlace> places;
  places.reserve(map.size());
  std::uint64_t at = 0;  // each segment lands right after the previous one in the piece
  for (const Segment& seg : map) {
    places.push_back({Selection::rows(batch_dims, axis, seg), Selection::rows(piece_dims, axis, {at, seg.count, 1})});
    at += seg.count;
  }
  return places;
}

std::vector<SegmentPlace> place_positions(const std::vector<SegmentPlace>& places, const RowMap& positions,
                                          std::size_t axis) {
  std::vector<SegmentPlace> out;
  out.reserve(places.size() * positions.size());
  for (const SegmentPlace& place : places) {
    std::uint64_t at = 0;
    for (const Segment& seg : positions) {
      SegmentPlace cut = place;
      for (Selection* s : {&cut.batch, &cut.piece})
        if (s->stride.empty()) s->stride.assign(s->start.size(), 1);
      cut.batch.start.at(axis) = seg.begin;
      cut.batch.count.at(axis) = seg.count;
      cut.batch.stride.at(axis) = seg.stride;
      cut.piece.start.at(axis) = at;
      cut.piece.count.at(axis) = seg.count;
      cut.piece.stride.at(axis) = 1;
      out.push_back(std::move(cut));
      at += seg.count;
    }
  }
  return out;
}

}  // namespace mb
