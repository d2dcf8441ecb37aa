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
  if (c.gather.piece_rows) {
    std::vector<Selection> rows;
    for (std::size_t k = w.first; k < w.end; ++k)
      rows.push_back(Selection::rows(c.piece_dims, c.gather.axis, (*c.gather.piece_rows)[k]));
    h5::select_union(piece_space.get(), rows, c.piece.where);
  } else {
    h5::select(piece_space.get(), Selection::rows(c.piece_dims, c.gather.axis, {w.at, w.rows, 1}), c.piece.where);
  }
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

// Segment k, longer than a window: one copy, which may take a byte path.
void copy_segment(const Copy& c, std::size_t k, std::uint64_t at, const Policy& policy) {
  const Segment& segment = c.gather.map[k];
  const Selection batch = Selection::rows(c.batch_dims, c.gather.axis, segment);
  const Segment rows = c.gather.piece_rows ? (*c.gather.piece_rows)[k] : Segment{at, segment.count, 1};
  const Selection piece = Selection::rows(c.piece_dims, c.gather.axis, rows);
  if (c.gather.into_batch) {
    copy(c.piece, piece, c.batch, batch, policy);
  } else {
    copy(c.batch, batch, c.piece, piece, policy);
  }
}

}  // namespace

void fill_rows(const Side& piece, const RowMap& pads, std::size_t axis, const std::vector<unsigned char>& element,
               const Policy& policy) {
  if (pads.empty()) return;
  const Shape dims = dims_of(piece);
  const std::uint64_t along = std::max<std::uint64_t>(dims.at(axis), 1);
  const std::uint64_t row = element_count(dims) / along;  // elements of one row
  const std::uint64_t row_bytes = std::max<std::uint64_t>(row * element.size(), 1);
  const std::uint64_t window_rows = std::max<std::uint64_t>(policy.buffer_bytes / row_bytes, 1);
  RowMap rows;  // no segment longer than a window: the buffer bounds memory
  for (const Segment& s : pads)
    for (std::uint64_t at = 0; at < s.count; at += window_rows)
      rows.push_back({s.begin + at, std::min(window_rows, s.count - at), 1});
  const h5::Id type = h5::type_of(piece.dataset, piece.where);
  std::vector<unsigned char> values;
  std::size_t k = 0;
  while (k < rows.size()) {
    run::throw_if_interrupted();
    std::vector<Selection> parts;
    std::uint64_t count = 0;
    // A window: up to kWindowSegments segments, at least one, within the buffer while it allows.
    const auto fits = [&] { return parts.empty() || count + rows[k].count <= window_rows; };
    while (k < rows.size() && parts.size() < kWindowSegments && fits()) {
      parts.push_back(Selection::rows(dims, axis, rows[k]));
      count += rows[k++].count;
    }
    if (values.size() < count * row * element.size())
      for (std::uint64_t e = values.size() / element.size(); e < count * row; ++e)
        values.insert(values.end(), element.begin(), element.end());
    h5::Id file = h5::space_of(piece.dataset, piece.where);
    h5::select_union(file.get(), parts, piece.where);
    Shape staged = dims;
    staged[axis] = count;
    h5::Id memory = h5::make_space(staged, piece.where);
    h5::write_selection(piece.dataset, type.get(), memory.get(), file.get(), values.data(), piece.where);
    run::count_bytes(policy.meter, count * row_bytes);
  }
}

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
      copy_segment(c, k, w.at, policy);
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
