#include "core/selection.hpp"

#include <cstring>

#include "core/error.hpp"

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

bool moves_as_stored(const std::vector<RowMap>& maps, std::uint64_t chunk, std::uint64_t length) {
  if (chunk == 0) return false;
  for (const RowMap& map : maps) {
    const std::uint64_t piece = rows_in(map);
    std::uint64_t at = 0;  // in the piece
    for (const Segment& seg : map) {
      if (seg.count == 0) continue;
      if ((seg.stride != 1 && seg.count > 1) || seg.begin % chunk != 0 || at % chunk != 0) return false;
      const bool edge = seg.begin + seg.count == length && at + seg.count == piece;
      if (seg.count % chunk != 0 && !edge) return false;
      at += seg.count;
    }
  }
  return true;
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

namespace {

std::uint64_t step_of(const Selection& s, std::size_t d) { return s.stride.empty() ? 1 : s.stride[d]; }

// Bytes between elements one apart along each axis of a row-major tensor.
// Whether every element `s` selects lies inside `dims` (`s` not empty).
bool inside(const Selection& s, const Shape& dims) {
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (s.start[d] + (s.count[d] - 1) * step_of(s, d) >= dims[d]) return false;
  return true;
}

std::vector<std::uint64_t> pitches(const Shape& dims, std::size_t element) {
  std::vector<std::uint64_t> out(dims.size());
  std::uint64_t pitch = element;
  for (std::size_t d = dims.size(); d-- > 0;) out[d] = pitch, pitch *= dims[d];
  return out;
}

}  // namespace

void copy_selected(ConstTensor from, const Selection& a, Tensor to, const Selection& b, std::size_t element) {
  const std::size_t rank = a.count.size();
  if (a.count != b.count || from.dims.size() != rank || to.dims.size() != rank)
    throw Error("internal: copy_selected between selections of different shapes");
  if (a.elements() == 0) return;
  if (!inside(a, from.dims) || !inside(b, to.dims)) throw Error("internal: copy_selected outside its tensors");
  if (rank == 0) {
    std::memcpy(to.bytes, from.bytes, element);
    return;
  }
  const auto from_pitch = pitches(from.dims, element), to_pitch = pitches(to.dims, element);
  const std::size_t last = rank - 1;
  // The innermost axis moves as one run when both sides take it with unit stride.
  const bool run = step_of(a, last) == 1 && step_of(b, last) == 1;
  const std::uint64_t run_elements = run ? a.count[last] : 1;
  Shape at(rank, 0);  // index into the selection, innermost axis fastest (in runs)
  for (;;) {
    std::uint64_t src = 0, dst = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      src += (a.start[d] + at[d] * step_of(a, d)) * from_pitch[d];
      dst += (b.start[d] + at[d] * step_of(b, d)) * to_pitch[d];
    }
    std::memcpy(to.bytes + dst, from.bytes + src, run_elements * element);
    std::size_t d = last;
    at[d] += run_elements;
    while (at[d] == a.count[d]) {
      if (d == 0) return;
      at[d] = 0;
      ++at[--d];
    }
  }
}

}  // namespace mb
