// Shared datasets: the large compressed split datasets of a merge whose
// chunks do not line up with the microbatches, so that merging re-encodes
// them, the costly part of a merge; a team merge shares them out by bands,
// so that compression runs on every rank. Each rank (rank 0 too) writes its
// bands through libhdf5 into a scratch file of its own, whose datasets are
// created exactly as the output's (same shape, type and creation
// properties): each chunk there is the chunk the output needs. Once every
// other dataset is written, rank 0 moves them as stored (H5Dread_chunk /
// H5Dwrite_chunk) into the output, dataset by dataset and each in row-major
// order of its chunks, whoever encoded them: the output's bytes are then
// the same whatever the number of ranks, one process included (it is a
// team of one), for content-addressed caches and digests. No parallel
// HDF5: creating datasets through it is 20-150x slower here
// (../shared/CLUSTER.md), and a serial writer per file needs none.
#include "io/merge/team.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>

#include "core/error.hpp"
#include "core/shards.hpp"
#include "io/h5/buffer.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/source/input.hpp"
#include "specs/file_names.hpp"

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

std::uint64_t team_size(const MergeJob& job) { return job.team ? job.team->size : 1; }
std::uint64_t team_rank(const MergeJob& job) { return job.team ? job.team->rank : 0; }

// Rank `rank`'s rows of a dataset `length` rows long in bands of `band`:
// its share of the bands, the last one cut at the end.
Segment band_rows(std::uint64_t length, std::uint64_t band, std::uint64_t size, std::uint64_t rank) {
  const FileRange bands = share_of((length + band - 1) / band, size, rank);
  const std::uint64_t begin = std::min(length, bands.begin * band), end = std::min(length, bands.end * band);
  return {begin, end - begin, 1};
}

// Where this rank writes the shared dataset `dst`: for rank 0, a copy of it
// in its scratch file (made with the first); the other ranks' output is
// their scratch file.
h5::Id own_copy(const Context& ctx, TeamState& state, const std::string& path, hid_t dst) {
  if (!leads(ctx.job)) return h5::Id();
  const std::string name = state.place.path(0);
  if (!state.own) {
    state.own.emplace(name);
    state.file = h5::create_file(name, name);
  }
  return h5::create_like(dst, state.file.get(), path, {name, path});
}

Share to_share(const SharedLeaf& leaf, hid_t dst) {
  return {leaf.rows, leaf.scratch.valid() ? leaf.scratch.get() : dst};
}

}  // namespace

bool leads(const MergeJob& job) { return team_rank(job) == 0; }

std::optional<Share> team_share(const Context& ctx, TeamState& state, const std::string& path, const MergedLeaf& leaf,
                                hid_t dst) {
  if (!ctx.first()) {
    const auto it = state.shared.find(path);
    if (it == state.shared.end()) return std::nullopt;
    return to_share(it->second, dst);
  }
  const LeafRule& rule = ctx.resolution.dataset_rule(path);
  // Positions along a sequence axis, and packed documents under CP, move in
  // pieces too small to share out.
  if (leaf.sequence_axis || (rule.mode == LeafRule::Mode::Packed && ctx.plan.grid.cp > 1)) return std::nullopt;
  const h5::Location at = ctx.out_where(path);
  const h5::Id type = h5::type_of(dst, at);
  if (!h5::copyable_as_bytes(type.get())) return std::nullopt;  // its stored bytes are addresses in its own file
  if (element_count(leaf.dims) * h5::size_of(type.get(), at) < kSharedBytes) return std::nullopt;
  const auto chunk = compressed_chunk(dst, at);
  if (!chunk || leaf.dims[leaf.axis] <= (*chunk)[leaf.axis]) return std::nullopt;
  // Chunks that move as stored are not re-encoded: nothing to share out,
  // and a round trip through scratch would only add I/O. (Predicted from
  // the plan and the output's chunks, which are the model's; an input
  // chunked otherwise is re-encoded by rank 0, as exactly.)
  if (moves_as_stored(leaf.maps, (*chunk)[leaf.axis], leaf.dims[leaf.axis])) return std::nullopt;
  const std::uint64_t size = team_size(ctx.job), rank = team_rank(ctx.job);
  const Segment rows = band_rows(leaf.dims[leaf.axis], (*chunk)[leaf.axis], size, rank);
  const SharedLeaf& added = state.shared[path] =
      SharedLeaf{leaf.axis, leaf.dims, *chunk, rows, own_copy(ctx, state, path, dst)};
  spdlog::debug("{}: rank {} of {} writes rows [{}, {})", at.describe(), rank, size, rows.begin,
                rows.begin + rows.count);
  return to_share(added, dst);
}

std::vector<SegmentPlace> clip_places(const std::vector<SegmentPlace>& places, std::size_t axis, const Segment& rows) {
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

std::string ScratchPlace::path(std::uint64_t rank) const {
  return (std::filesystem::path(dir) / specs::scratch_name(name, rank, size)).string();
}

ScratchPlace scratch_place(const MergeJob& job, const std::string& written) {
  std::string beside = written;
  if (!leads(job)) {
    const std::optional<std::string> path = source::local_path(job.place->source(job.output_name));
    if (!path) throw Error(fmt::format("internal: a team merge onto {}, not a local file", job.output));
    beside = *path;
  }
  // A bare name's directory is "" (the current one): its scratch files are named bare too.
  return {std::filesystem::path(beside).parent_path().string(), job.output_name, team_size(job)};
}

void close_own_scratch(TeamState& state) {
  if (!state.own) return;
  for (auto& [path, leaf] : state.shared) leaf.scratch.close({state.own->path(), path});
  state.file.close({state.own->path(), ""});
}

namespace {

// Calls `fn(offset)` for every chunk of a dataset of `dims` in chunks of
// `chunk`, in row-major order of their offsets.
template <typename Fn>
void for_each_chunk(const Shape& dims, const Shape& chunk, Fn&& fn) {
  const std::size_t n = dims.size();
  for (std::size_t d = 0; d < n; ++d)
    if (dims[d] == 0) return;
  std::vector<hsize_t> at(n, 0);
  for (;;) {
    fn(at);
    std::size_t d = n;
    for (;;) {  // the next offset, as an odometer whose digits step by the chunk's dims
      if (d == 0) return;
      --d;
      at[d] += chunk[d];
      if (at[d] < dims[d]) break;
      at[d] = 0;
    }
  }
}

// The rank whose band holds the chunk row starting at `row`.
std::uint64_t owner(const SharedLeaf& leaf, std::uint64_t row, std::uint64_t size) {
  for (std::uint64_t q = 0; q + 1 < size; ++q) {
    const Segment rows = band_rows(leaf.dims[leaf.axis], leaf.chunk[leaf.axis], size, q);
    if (row < rows.begin + rows.count) return q;
  }
  return size - 1;
}

// The scratch files of every rank, open for reading.
struct Scratches {
  std::vector<std::string> names;
  std::vector<h5::Id> files;
};

void move_chunks(const Context& ctx, const Scratches& from, const std::string& path, const SharedLeaf& leaf,
                 hid_t out) {
  const h5::Location to = ctx.out_where(path);
  const std::uint64_t size = from.files.size();
  std::vector<h5::Id> sources;
  for (std::uint64_t q = 0; q < size; ++q)
    sources.push_back(h5::open_object(from.files[q].get(), path, {from.names[q], path}));
  h5::Id dst = h5::open_object(out, path, to);
  h5::RawChunk chunk;
  for_each_chunk(leaf.dims, leaf.chunk, [&](const std::vector<hsize_t>& offset) {
    const std::uint64_t q = owner(leaf, offset[leaf.axis], size);
    const h5::Location where{from.names[q], path};
    if (!h5::read_chunk(sources[q].get(), offset.data(), chunk, where))
      throw Error(fmt::format("{}: a chunk of the rank's share is missing", where.describe()));
    h5::write_chunk(dst.get(), offset.data(), chunk, to);
  });
}

}  // namespace

void gather_shared_chunks(const Context& ctx, const TeamState& state, hid_t out) {
  if (state.shared.empty()) return;
  Scratches scratches;
  const std::uint64_t size = team_size(ctx.job);
  for (std::uint64_t q = 0; q < size; ++q) {
    scratches.names.push_back(state.place.path(q));
    scratches.files.push_back(h5::open_local(scratches.names.back(), h5::Cache::Evict));
  }
  for (const auto& [path, leaf] : state.shared) move_chunks(ctx, scratches, path, leaf, out);
  for (std::uint64_t q = 0; q < size; ++q) scratches.files[q].close({scratches.names[q], ""});
}

}  // namespace mb::io::merge
