// Merge's concatenation: each input's rows go back where the split took
// them from, through the row maps the split used.
#include <optional>

#include <fmt/format.h>

#include "core/packed.hpp"
#include "core/selection.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/merge/concat.hpp"
#include "io/merge/copies.hpp"
#include "io/merge/state.hpp"
#include "io/merge/team.hpp"
#include "io/tree/prepare.hpp"
#include "io/transfer/copy.hpp"
#include "io/transfer/gather.hpp"
#include "io/tree/offsets.hpp"
#include "io/tree/reader.hpp"

namespace mb::io::merge {

namespace {

// Notes where an assembled result allocated at creation lies in the
// output, if its elements are their file bytes (variable-length strings
// are allocated early too, but their elements are pointers in memory).
void place(const Context& ctx, ConcatState& state, const DatasetPair& in, hid_t dst, hid_t dcpl) {
  const std::string& path = in.node.path;
  const h5::Location at = ctx.out_where(path);
  if (!ctx.job.policy.byte_paths || !h5::allocated_early(dcpl, at) || !h5::copyable_as_bytes(in.model.type)) return;
  const std::optional<h5::Placement> placement = h5::placement(dst, at);  // contiguous, allocated
  if (!placement) return;
  if (state.output_fd < 0) {
    const std::optional<int> fd = h5::descriptor_of(dst, at);
    if (!fd) return;
    state.output_fd = *fd;
  }
  state.placed[path] = placement->address;
}

// A small unfiltered result is assembled in memory across the inputs, one
// read per input and one write at the last, rather than copied piece by
// piece: tens of thousands of tiny datasets then cost few library calls
// each. Decided at input 0, while the carried budget allows.
h5::Buffer* assembly(const Context& ctx, MergeState& state, const DatasetPair& in, const MergedLeaf& leaf,
                     hid_t dst) {
  const std::string& path = in.node.path;
  std::map<std::string, h5::Buffer>& assembled = state.concat.assembled;
  if (!ctx.first()) {
    const auto it = assembled.find(path);
    return it == assembled.end() ? nullptr : &it->second;
  }
  const h5::Location at = ctx.out_where(path);
  const std::uint64_t bytes = element_count(leaf.dims) * h5::size_of(in.model.type, at);
  const h5::Id dcpl = h5::creation_of(dst, at);
  if (!transfer::held_whole(dcpl.get(), bytes, at) || !state.carried.take(bytes)) return nullptr;
  h5::Buffer& whole = assembled.emplace(path, h5::Buffer(in.model.type)).first->second;
  whole.prepare(element_count(leaf.dims));
  place(ctx, state.concat, in, dst, dcpl.get());
  return &whole;
}

}  // namespace

void concatenate(const Context& ctx, MergeState& state, const DatasetPair& in, const MergedLeaf& leaf, hid_t dst) {
  const std::string& path = in.node.path;
  // This rank's share of a shared dataset, into its scratch file; rank 0 writes the others whole.
  const std::optional<Share> share = team_share(ctx, state.team, path, leaf, dst);
  if (share) dst = share->target;
  if (!share && !leads(ctx.job)) return;
  const h5::Location out_where = ctx.out_where(path);
  h5::Buffer* whole = assembly(ctx, state, in, leaf, dst);
  if (ctx.first()) note_model_data(ctx, state.copies, in, whole);
  const transfer::Side to = whole ? transfer::Side::in_memory(*whole, leaf.dims, out_where)
                                  : transfer::Side::of(dst, out_where);
  const transfer::Side from = transfer::Side::of(in.object, ctx.where(path));
  const RowMap& map = leaf.maps[ctx.input];
  // --cp-pad: the input's rows that hold tokens, the pads between left out.
  if (!leaf.placed.empty()) {
    transfer::copy_gathered(to, from, {map, leaf.axis, true, &leaf.placed[ctx.input]}, ctx.job.policy);
    if (whole) write_assembled(ctx, state, path, leaf, dst);
    return;
  }
  // Packed data under CP: two short chunks of every document, moved in
  // windows (other row maps keep copy()'s byte paths, segment by segment).
  const bool per_document = ctx.resolution.dataset_rule(path).mode == LeafRule::Mode::Packed && ctx.plan.grid.cp > 1;
  if (per_document && transfer::gathers(map)) {
    transfer::copy_gathered(to, from, {map, leaf.axis, true}, ctx.job.policy);
    if (whole) write_assembled(ctx, state, path, leaf, dst);
    return;
  }
  auto places = place_segments(leaf.maps[ctx.input], leaf.axis, leaf.dims, in.space.dims);
  if (leaf.sequence_axis) places = place_positions(places, leaf.positions[ctx.input], *leaf.sequence_axis);
  if (share) places = clip_places(places, leaf.axis, share->rows);
  for (const auto& place : places) transfer::copy(from, place.piece, to, place.batch, ctx.job.policy);
  if (whole) write_assembled(ctx, state, path, leaf, dst);
}

void allocate_assembly(const Context& ctx, const std::string& path, const MergedLeaf& leaf, h5::Prototype& prototype) {
  const h5::Location at = ctx.out_where(path);
  if (!leads(ctx.job) || prototype.space.null_space) return;  // the other ranks' output is scratch
  const hid_t dcpl = prototype.dcpl.get();
  const std::uint64_t bytes = element_count(leaf.dims) * h5::size_of(prototype.type.get(), at);
  if (bytes == 0 || bytes > transfer::kWholeInMemory || !h5::contiguous_in_file(dcpl, at) ||
      !h5::copyable_as_bytes(prototype.type.get()))
    return;
  h5::allocate_early(dcpl, at);
}

bool placed(const ConcatState& state, const std::string& path) { return state.placed.count(path) != 0; }

void write_assembled(const Context& ctx, MergeState& state, const std::string& path, const MergedLeaf& leaf,
                     hid_t dst) {
  ConcatState& concat = state.concat;
  const auto it = concat.assembled.find(path);
  if (!ctx.last() || it == concat.assembled.end()) return;
  const h5::Buffer& whole = it->second;
  const h5::Location out_where = ctx.out_where(path);
  const std::uint64_t bytes = element_count(leaf.dims) * h5::size_of(whole.type(), out_where);
  // A read into the dataset's own type converts nothing: the buffer holds
  // the very bytes H5Dwrite would store.
  if (const auto at = concat.placed.find(path); at != concat.placed.end()) {
    h5::write_bytes(concat.output_fd, whole.data(), bytes, at->second, out_where);
    concat.placed.erase(at);
    ++concat.placed_written;
  } else if (bytes > 0) {
    h5::write_all(dst, whole.type(), whole.data(), out_where);
  }
  state.carried.give_back(bytes);
  concat.assembled.erase(it);
}

namespace {

__extension__ typedef unsigned __int128 Wide;  // holds any sum of two 64-bit offsets

// The input's offsets shifted past the previous inputs' tokens, its leading
// 0 dropped but for input 0, in exact arithmetic; a value the dataset's type
// cannot hold is refused (HDF5 would saturate it).
Offsets shifted_offsets(const Context& ctx, const std::string& path, const Offsets& offsets, std::uint64_t base,
                        hid_t type) {
  const std::uint64_t largest = tree::largest_offset(type, ctx.where(path));
  Offsets out;
  for (std::size_t k = ctx.first() ? 0 : 1; k < offsets.size(); ++k) {
    const Wide value = static_cast<Wide>(base) + offsets[k];
    if (value > largest)
      throw Error(fmt::format("{}: shifted past the {} tokens of the inputs before it, offset {} becomes {}, "
                              "more than {} holds (at most {})",
                              ctx.where(path).describe(), base, offsets[k], value, h5::dtype_name(type), largest));
    out.push_back(static_cast<std::uint64_t>(value));
  }
  return out;
}

}  // namespace

InputOffsets read_input_offsets(const Context& ctx, hid_t file) {
  InputOffsets out;
  for (const auto& [path, rule] : ctx.resolution.datasets) {
    if (rule.mode != LeafRule::Mode::Offsets) continue;
    const h5::Location where = ctx.where(path);
    h5::Id dataset = h5::open_object(file, path, where);
    out[path] = check_offsets(tree::read_offsets(dataset.get(), where), where.describe());
    if (!ctx.job.cp_pad) continue;
    // --cp-pad: token-level lengths are those of the padded documents.
    const std::string padded = padded_offsets_name(path);
    h5::Id twin = h5::open_object(file, padded, ctx.where(padded));
    out[padded] = check_offsets(tree::read_offsets(twin.get(), ctx.where(padded)), ctx.where(padded).describe());
  }
  // Several offsets datasets of one input describe the same sequences.
  if (out.size() > 1) {
    const auto& first = *out.begin();  // (no structured bindings: clang 14 cannot capture them)
    for (const auto& other : out)
      tree::about_file(ctx.file(), [&] { check_same_sequences(first.first, first.second, other.first, other.second); });
  }
  return out;
}

void check_sequence_lengths(const Context& ctx, const DatasetPair& in, const LeafRule& rule) {
  if (rule.mode != LeafRule::Mode::Packed && rule.mode != LeafRule::Mode::PerSequence) return;
  const bool padded = rule.mode == LeafRule::Mode::Packed && ctx.job.cp_pad;
  const Offsets& offsets = ctx.offsets->at(padded ? padded_offsets_name(rule.offsets) : rule.offsets);
  const SequenceLeaf leaf{in.node.path, rule.axis, in.space.dims[static_cast<std::size_t>(rule.axis)], rule.offsets};
  tree::about_file(ctx.file(), [&] {
    if (rule.mode == LeafRule::Mode::Packed) {
      check_packed_length(leaf, offsets);
    } else {
      check_per_sequence_length(leaf, offsets);
    }
  });
}

namespace {

// Offsets whose merged values the plan holds (sequences placed out of input
// order): the input writes its rows of them, each checked to fit the
// dataset's type (HDF5 would saturate a value that does not).
void write_placed_offsets(const Context& ctx, const DatasetPair& in, const MergedLeaf& leaf, hid_t dst) {
  const std::string& path = in.node.path;
  const std::uint64_t largest = tree::largest_offset(in.model.type, ctx.out_where(path));
  for (const Segment& seg : leaf.maps[ctx.input]) {
    const Offsets values(leaf.values.begin() + static_cast<std::ptrdiff_t>(seg.begin),
                         leaf.values.begin() + static_cast<std::ptrdiff_t>(seg.stop()));
    if (values.back() > largest)
      throw Error(fmt::format("{}: merged, offset {} is more than {} holds (at most {})",
                              ctx.out_where(path).describe(), values.back(), h5::dtype_name(in.model.type), largest));
    h5::write(dst, Selection::rows(leaf.dims, 0, seg), H5T_NATIVE_UINT64, values.data(), ctx.out_where(path));
  }
}

}  // namespace

void concatenate_offsets(const Context& ctx, ConcatState& state, const DatasetPair& in, const MergedLeaf& leaf,
                         hid_t dst) {
  const std::string& path = in.node.path;
  if (!leaf.values.empty()) {
    write_placed_offsets(ctx, in, leaf, dst);
    return;
  }
  std::uint64_t& tokens = state.tokens[path];
  // Context parallelism: each CP rank's offsets describe its share, L/C
  // tokens of every document.
  Offsets whole = ctx.offsets->at(path);
  for (auto& value : whole) {
    if (value > UINT64_MAX / ctx.plan.grid.cp)
      throw Error(fmt::format("{}: offset {} times --cp-degree {} does not fit 64 bits", ctx.where(path).describe(),
                              value, ctx.plan.grid.cp));
    value *= ctx.plan.grid.cp;
  }
  const Offsets out = shifted_offsets(ctx, path, whole, tokens, in.model.type);
  if (out.empty()) return;  // no sequences after the leading 0
  tokens = out.back();
  h5::write(dst, Selection::rows(leaf.dims, 0, leaf.maps[ctx.input].at(0)), H5T_NATIVE_UINT64, out.data(),
            ctx.out_where(path));
}

}  // namespace mb::io::merge
