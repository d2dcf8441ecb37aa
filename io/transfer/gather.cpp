#include "io/transfer/gather.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "io/run/guard.hpp"
#include "io/run/progress.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"

namespace mb::io::transfer {
namespace {

// Fewer segments than this are copied one by one (through the byte paths).
constexpr std::size_t kFewSegments = 16;
// libhdf5 1.10 builds a union of hyperslabs in time quadratic in their
// number: windows take at most this many segments.
constexpr std::size_t kWindowSegments = 128;

Shape dims_of(const Side& side) {
  return side.memory ? side.shape : h5::dataset_space(side.dataset, side.where).dims;
}

// Segments [first, end) of the map: `rows` rows in all, at piece row `at`.
struct Window {
  std::size_t first = 0, end = 0;
  std::uint64_t rows = 0, at = 0;
};

// What every window of one copy shares.
struct Copy {
  const Side& batch;
  const Side& piece;
  const Gather& gather;
  Shape batch_dims, piece_dims;
  hid_t type;  // the elements' memory type
};

h5::Id space_of(const Side& side, const Shape& dims) {
  return side.memory ? h5::make_space(dims, side.where) : h5::space_of(side.dataset, side.where);
}

void move(hid_t dataset, bool read, hid_t type, hid_t memory, hid_t file, void* data, const h5::Location& where) {
  if (read) {
    h5::read_selection(dataset, type, memory, file, data, where);
  } else {
    h5::write_selection(dataset, type, memory, file, data, where);
  }
}

// One window: a batch held in memory moves in one call straight from or
// into it; between datasets the rows go through `staging`.
void move_window(const Copy& c, const Window& w, h5::Buffer& staging, const Policy& policy) {
  run::throw_if_interrupted();
  std::vector<Selection> parts;
  for (std::size_t k = w.first; k < w.end; ++k)
    parts.push_back(Selection::rows(c.batch_dims, c.gather.axis, c.gather.map[k]));
  h5::Id batch_space = space_of(c.batch, c.batch_dims);
  h5::select_union(batch_space.get(), parts, c.batch.where);
  h5::Id piece_space = space_of(c.piece, c.piece_dims);
  h5::select(piece_space.get(), Selection::rows(c.piece_dims, c.gather.axis, {w.at, w.rows, 1}), c.piece.where);
  const bool into = c.gather.into_batch;
  const std::uint64_t along = std::max<std::uint64_t>(c.piece_dims[c.gather.axis], 1);
  run::count_bytes(policy.meter, w.rows * (element_count(c.piece_dims) / along) * h5::size_of(c.type, c.piece.where));
  if (c.batch.memory) {
    move(c.piece.dataset, into, c.type, batch_space.get(), piece_space.get(), c.batch.memory->data(), c.piece.where);
    return;
  }
  Shape staged = c.piece_dims;
  staged[c.gather.axis] = w.rows;
  h5::Id memory = h5::make_space(staged, c.piece.where);
  staging.prepare(element_count(staged));
  const Side& from = into ? c.piece : c.batch;
  const Side& to = into ? c.batch : c.piece;
  move(from.dataset, true, c.type, memory.get(), (into ? piece_space : batch_space).get(), staging.data(), from.where);
  move(to.dataset, false, c.type, memory.get(), (into ? batch_space : piece_space).get(), staging.data(), to.where);
}

// A segment longer than a window: one copy, which may take a byte path.
void copy_segment(const Copy& c, const Segment& segment, std::uint64_t at, const Policy& policy) {
  const Selection batch = Selection::rows(c.batch_dims, c.gather.axis, segment);
  const Selection piece = Selection::rows(c.piece_dims, c.gather.axis, {at, segment.count, 1});
  if (c.gather.into_batch) {
    copy(c.piece, piece, c.batch, batch, policy);
  } else {
    copy(c.batch, batch, c.piece, piece, policy);
  }
}

}  // namespace

bool gathers(const RowMap& map) {
  if (map.size() < kFewSegments) return false;
  for (std::size_t k = 0; k < map.size(); ++k)
    if (map[k].count == 0 || (k > 0 && map[k - 1].stop() > map[k].begin)) return false;
  return true;
}

void copy_gathered(const Side& batch, const Side& piece, const Gather& gather, const Policy& policy) {
  if (piece.memory) throw Error("internal: a gathered copy into or from a piece in memory");
  h5::Id own;  // the source dataset's type, between datasets (as copy_slab takes it)
  const Side& source = gather.into_batch ? piece : batch;
  if (!batch.memory) own = h5::type_of(source.dataset, source.where);
  const Copy c{batch, piece, gather, dims_of(batch), dims_of(piece), batch.memory ? batch.memory->type() : own.get()};
  const std::uint64_t along = c.piece_dims.at(gather.axis);
  const std::uint64_t row = along ? element_count(c.piece_dims) / along : 0;
  const std::uint64_t row_bytes = std::max<std::uint64_t>(row * h5::size_of(c.type, piece.where), 1);
  const std::uint64_t window_rows = std::max<std::uint64_t>(policy.buffer_bytes / row_bytes, 1);
  h5::Buffer staging(c.type);
  Window w;
  const auto flush = [&](std::size_t next) {
    if (w.end > w.first) move_window(c, w, staging, policy);
    w = {next, next, 0, w.at + w.rows};
  };
  for (std::size_t k = 0; k < gather.map.size(); ++k) {
    const Segment& s = gather.map[k];
    if (s.count > window_rows) {
      flush(k);
      copy_segment(c, s, w.at, policy);
      w = {k + 1, k + 1, 0, w.at + s.count};
      continue;
    }
    if (w.rows + s.count > window_rows || w.end - w.first == kWindowSegments) flush(k);
    w.end = k + 1;
    w.rows += s.count;
  }
  flush(gather.map.size());
}

}  // namespace mb::io::transfer
