#include "io/transfer/chunks.hpp"

#include <spdlog/spdlog.h>

#include <vector>

#include "core/partition.hpp"
#include "io/run/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"

namespace mb::io::transfer {
namespace {

// Rows of the copy that whole chunks cover, given chunk rows `step`.
std::uint64_t chunk_rows(const RowCopy& c, std::uint64_t step) {
  if (c.src_begin % step != 0 || c.dst_begin % step != 0) return 0;
  const bool ends_both = c.src_begin + c.count == c.src_space.dims[c.axis] &&
                         c.dst_begin + c.count == c.dst_space.dims[c.axis];
  return ends_both ? c.count : c.count / step * step;
}

// Moves the stored chunk at grid position `cell` (in chunks, relative to
// the copy's first row); a chunk never written is skipped, since the
// destination then keeps its fill value too. Returns whether one moved.
bool move_chunk(const RowCopy& c, const Shape& chunk, const Shape& cell, h5::RawChunk& stored) {
  std::vector<hsize_t> from(chunk.size()), to(chunk.size());
  for (std::size_t k = 0; k < chunk.size(); ++k) {
    from[k] = cell[k] * chunk[k] + (k == c.axis ? c.src_begin : 0);
    to[k] = cell[k] * chunk[k] + (k == c.axis ? c.dst_begin : 0);
  }
  if (!h5::read_chunk(c.src, from.data(), stored, c.src_where)) return false;
  h5::write_chunk(c.dst, to.data(), stored, c.dst_where);
  return true;
}

}  // namespace

std::uint64_t copy_raw_chunks(const RowCopy& c, const Policy& policy) {
  if (!policy.byte_paths) return 0;
  const h5::ChunkLayout layout = h5::chunk_layout(c.src, c.src_where);
  if (layout.chunk.empty() || !(layout == h5::chunk_layout(c.dst, c.dst_where))) return 0;
  const h5::Id type = h5::type_of(c.src, c.src_where);
  if (!h5::copyable_as_bytes(type.get())) return 0;
  const std::uint64_t rows = chunk_rows(c, layout.chunk[c.axis]);
  if (rows == 0) return 0;
  // The chunk grid of those rows: along `axis` their chunk rows, elsewhere every chunk.
  const Shape& dims = c.src_space.dims;
  Shape grid(dims.size());
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const std::uint64_t extent = k == c.axis ? rows : dims[k];
    grid[k] = (extent + layout.chunk[k] - 1) / layout.chunk[k];
  }
  std::uint64_t moved = 0;
  h5::RawChunk stored;  // its bytes reused from chunk to chunk
  // Counted as the elements of a whole chunk (the meter caps an edge chunk's excess).
  const std::uint64_t chunk_bytes = element_count(layout.chunk) * h5::size_of(type.get(), c.src_where);
  for_each_block(grid, 1, [&](const Shape& cell, const Shape&) {
    run::throw_if_interrupted();
    moved += move_chunk(c, layout.chunk, cell, stored) ? 1 : 0;
    run::count_bytes(policy.meter, chunk_bytes);
  });
  if (moved > 0) spdlog::debug("{}: {} chunks copied as stored bytes", c.dst_where.describe(), moved);
  return rows;
}

}  // namespace mb::io::transfer
