// A team merge (MergeTeam): the large compressed split datasets are shared
// out by chunk bands, so that compression, the costly part of a merge whose
// chunks do not line up with the microbatches, runs on every rank. Each
// rank writes its bands through libhdf5 into its own scratch file, whose
// datasets are created exactly as the output's (same shape, type and
// creation properties): each chunk there is the chunk the output needs, and
// rank 0 moves it as stored (H5Dread_chunk / H5Dwrite_chunk). No parallel
// HDF5: creating datasets through it is 20-150x slower here
// (../shared/CLUSTER.md), and a serial writer per file needs none.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/shards.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/merge/team.hpp"

namespace mb::io::merge {
namespace {

// Below this many bytes a dataset is not worth sharing out: rank 0 writes it.
constexpr std::uint64_t kSharedBytes = 1 << 20;

// The dataset's chunk dims when it is chunked and filtered, else none.
std::optional<Shape> compressed_chunk(hid_t dst, const h5::Location& where) {
  const h5::Id dcpl = h5::creation_of(dst, where);
  if (h5::layout_of(dcpl.get(), where) != H5D_CHUNKED || h5::filter_count(dcpl.get(), where) <= 0) return std::nullopt;
  return h5::chunk_layout(dst, where).chunk;
}

// Rank `rank`'s rows of a dataset `length` rows long in bands of `band`:
// its share of the bands, the last one cut at the end.
Segment band_rows(std::uint64_t length, std::uint64_t band, const MergeTeam& team, std::uint64_t rank) {
  const FileRange bands = share_of((length + band - 1) / band, team.size, rank);
  const std::uint64_t begin = std::min(length, bands.begin * band), end = std::min(length, bands.end * band);
  return {begin, end - begin, 1};
}

}  // namespace

std::optional<Segment> team_rows(const Context& ctx, TeamState& state, const std::string& path, const MergedLeaf& leaf,
                                 hid_t dst) {
  if (!ctx.first()) {
    const auto it = state.shared.find(path);
    if (it == state.shared.end()) return std::nullopt;
    return it->second.rows;
  }
  const LeafRule& rule = ctx.resolution.dataset_rule(path);
  // Positions along a sequence axis, and packed documents under CP, move in
  // pieces too small to share out.
  if (leaf.sequence_axis || (rule.mode == LeafRule::Mode::Packed && ctx.plan.grid.cp > 1)) return std::nullopt;
  const h5::Location at = ctx.out_where(path);
  const h5::Id type = h5::type_of(dst, at);
  if (h5::contains_class(type.get(), H5T_VLEN, at) || h5::class_of(type.get(), at) == H5T_REFERENCE)
    return std::nullopt;
  if (element_count(leaf.dims) * h5::size_of(type.get(), at) < kSharedBytes) return std::nullopt;
  const auto chunk = compressed_chunk(dst, at);
  if (!chunk || leaf.dims[leaf.axis] <= (*chunk)[leaf.axis]) return std::nullopt;
  const MergeTeam& team = *ctx.job.team;
  const Segment rows = band_rows(leaf.dims[leaf.axis], (*chunk)[leaf.axis], team, team.rank);
  state.shared[path] = SharedLeaf{leaf.axis, leaf.dims, *chunk, rows};
  spdlog::debug("{}: rank {} of {} writes rows [{}, {})", at.describe(), team.rank, team.size, rows.begin,
                rows.begin + rows.count);
  return rows;
}

std::vector<SegmentPlace> clip_places(const std::vector<SegmentPlace>& places, std::size_t axis,
                                      const Segment& rows) {
  std::vector<SegmentPlace> out;
  for (const SegmentPlace& place : places) {
    const std::uint64_t begin = place.batch.start[axis], end = begin + place.batch.count[axis];
    const std::uint64_t lo = std::max(begin, rows.begin), hi = std::min(end, rows.begin + rows.count);
    if (lo >= hi) continue;
    SegmentPlace cut = place;
    cut.batch.start[axis] = lo;
    cut.batch.count[axis] = hi - lo;
    cut.piece.start[axis] += lo - begin;
    cut.piece.count[axis] = hi - lo;
    out.push_back(cut);
  }
  return out;
}

std::string scratch_path(const std::string& output, std::uint64_t rank, std::uint64_t size) {
  const std::filesystem::path out(output);
  return (out.parent_path() / fmt::format(".{}.rank-{}-of-{}.scratch", out.filename().string(), rank, size)).string();
}

namespace {

// Calls `fn(offset)` for every chunk whose first row along the axis is
// in `leaf.rows`, in row-major order of their offsets.
template <typename Fn>
void for_each_chunk(const SharedLeaf& leaf, Fn&& fn) {
  const std::size_t n = leaf.dims.size();
  const auto first = [&](std::size_t d) { return d == leaf.axis ? leaf.rows.begin : 0; };
  const auto end = [&](std::size_t d) { return d == leaf.axis ? leaf.rows.begin + leaf.rows.count : leaf.dims[d]; };
  for (std::size_t d = 0; d < n; ++d)
    if (first(d) >= end(d)) return;
  std::vector<hsize_t> at(n);
  for (std::size_t d = 0; d < n; ++d) at[d] = first(d);
  for (;;) {
    fn(at);
    std::size_t d = n;
    for (;;) {  // the next offset, as an odometer whose digits step by the chunk's dims
      if (d == 0) return;
      --d;
      at[d] += leaf.chunk[d];
      if (at[d] < end(d)) break;
      at[d] = first(d);
    }
  }
}

void move_chunks(const Context& ctx, hid_t scratch, const std::string& name, const std::string& path,
                 const SharedLeaf& leaf, hid_t out) {
  const h5::Location from{name, path}, to = ctx.out_where(path);
  h5::Id src = h5::open_object(scratch, path, from);
  h5::Id dst = h5::open_object(out, path, to);
  h5::RawChunk chunk;
  for_each_chunk(leaf, [&](const std::vector<hsize_t>& offset) {
    if (!h5::read_chunk(src.get(), offset.data(), chunk, from))
      throw Error(fmt::format("{}: a chunk of the rank's share is missing", from.describe()));
    h5::write_chunk(dst.get(), offset.data(), chunk, to);
  });
}

}  // namespace

void gather_team_chunks(const Context& ctx, const TeamState& state, hid_t out) {
  const MergeTeam& team = *ctx.job.team;
  for (std::uint64_t q = 1; q < team.size; ++q) {
    const std::string name = scratch_path(ctx.job.output, q, team.size);
    h5::Id scratch = h5::open_local(name, h5::Cache::Evict);
    for (const auto& [path, mine] : state.shared) {
      SharedLeaf theirs = mine;
      theirs.rows = band_rows(mine.dims[mine.axis], mine.chunk[mine.axis], team, q);
      move_chunks(ctx, scratch.get(), name, path, theirs, out);
    }
    scratch.close({name, ""});
  }
}

}  // namespace mb::io::merge
