// Merge's concatenation: each input's rows go back where the split took
// them from, through the row maps the split used.
#include <optional>

#include <fmt/format.h>

#include "core/packed.hpp"
#include "core/selection.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"
#include "io/prepare.hpp"
#include "io/transfer/copy.hpp"
#include "io/tree_reader.hpp"

namespace mb::io::merging {

std::vector<RowMap> row_maps(const Context& ctx, const DatasetInputs& in, std::size_t axis) {
  std::vector<std::uint64_t> lengths;
  for (const auto& s : in.spaces) lengths.push_back(s.dims[axis]);
  return merge_maps(lengths, ctx.job.dp, ctx.job.layout, in.node.path);
}

void concatenate(const Context& ctx, const DatasetInputs& in, std::size_t axis, const std::vector<RowMap>& maps,
                 const Shape& out_dims, hid_t dst) {
  const std::string& path = in.node.path;
  const h5::Location out_where = ctx.out_where(path);
  // A small unfiltered result is assembled in memory, one read per input and
  // one write, rather than copied piece by piece: tens of thousands of tiny
  // datasets then cost few library calls each.
  const hid_t type = in.types[0].get();
  h5::Id dcpl(H5Dget_create_plist(dst), out_where, "cannot read the creation properties");
  std::optional<h5::Buffer> whole;
  if (transfer::held_whole(dcpl.get(), element_count(out_dims) * h5::size_of(type, out_where), out_where)) {
    whole.emplace(type);
    whole->prepare(element_count(out_dims));
  }
  const transfer::Side to = whole ? transfer::Side::in_memory(*whole, out_dims, out_where)
                                  : transfer::Side::of(dst, out_where);
  for (std::size_t i = 0; i < in.objects.size(); ++i) {
    const transfer::Side from = transfer::Side::of(in.objects[i].get(), ctx.where(i, path));
    for (const auto& place : place_segments(maps[i], axis, out_dims, in.spaces[i].dims))
      transfer::copy(from, place.piece, to, place.batch, ctx.job.policy);
  }
  if (whole && element_count(out_dims) > 0)
    h5::check(H5Dwrite(dst, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, whole->data()), out_where, "cannot write data");
}

namespace {

__extension__ typedef unsigned __int128 Wide;  // holds any sum of two 64-bit offsets

// The largest value an integer type of at most 64 bits holds.
std::uint64_t largest_value(hid_t type, const h5::Location& where) {
  h5::offsets_memory_type(type, where);  // refuses wider types
  const std::size_t precision = H5Tget_precision(type);
  const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  const std::size_t bits = precision - (is_signed ? 1 : 0);
  return bits >= 64 ? UINT64_MAX : (std::uint64_t{1} << bits) - 1;
}

// Each input's offsets shifted past the previous inputs' tokens, every
// leading 0 but the first dropped, in exact arithmetic; a value the
// dataset's type cannot hold is refused (HDF5 would saturate it).
Offsets merge_offsets(const Context& ctx, const std::string& path, const std::vector<Offsets>& inputs,
                      std::uint64_t largest, const std::string& dtype) {
  Offsets out{0};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::uint64_t base = out.back();
    for (std::size_t k = 1; k < inputs[i].size(); ++k) {
      const Wide value = static_cast<Wide>(base) + inputs[i][k];
      if (value > largest)
        throw Error(fmt::format("{}: shifted past the {} tokens of the inputs before it, offset {} becomes {}, "
                                "more than {} holds (at most {})",
                                ctx.where(i, path).describe(), base, inputs[i][k], value, dtype, largest));
      out.push_back(static_cast<std::uint64_t>(value));
    }
  }
  return out;
}

}  // namespace

InputOffsets read_input_offsets(const Context& ctx, const std::vector<h5::Id>& files) {
  InputOffsets out;
  for (const auto& [path, rule] : ctx.resolution.datasets) {
    if (rule.mode != LeafRule::Mode::Offsets) continue;
    auto& per_input = out.inputs[path];
    std::uint64_t largest = 0;
    std::string dtype;
    for (std::size_t i = 0; i < files.size(); ++i) {
      const h5::Location where = ctx.where(i, path);
      h5::Id dataset = h5::open_object(files[i].get(), path, where);
      per_input.push_back(check_offsets(h5::read_offsets(dataset.get(), where), where.describe()));
      if (i == 0) {
        h5::Id type(H5Dget_type(dataset.get()), where, "cannot read the datatype");
        largest = largest_value(type.get(), where);
        dtype = h5::dtype_name(type.get());
      }
    }
    out.merged[path] = merge_offsets(ctx, path, per_input, largest, dtype);
  }
  // Several offsets datasets of one input describe the same sequences.
  if (out.inputs.size() > 1)
    for (std::size_t i = 0; i < files.size(); ++i) {
      const auto& first = *out.inputs.begin();  // (no structured bindings: clang 14 cannot capture them)
      for (const auto& other : out.inputs)
        about_file(ctx.job.inputs[i].path,
                   [&] { check_same_sequences(first.first, first.second[i], other.first, other.second[i]); });
    }
  return out;
}

void check_sequence_lengths(const Context& ctx, const DatasetInputs& in, const LeafRule& rule) {
  if (rule.mode != LeafRule::Mode::Packed && rule.mode != LeafRule::Mode::PerSequence) return;
  const auto& offsets = ctx.offsets->inputs.at(rule.offsets);
  for (std::size_t i = 0; i < in.spaces.size(); ++i) {
    const SequenceLeaf leaf{in.node.path, rule.axis, in.spaces[i].dims[static_cast<std::size_t>(rule.axis)],
                            rule.offsets};
    about_file(ctx.job.inputs[i].path, [&] {
      if (rule.mode == LeafRule::Mode::Packed) {
        check_packed_length(leaf, offsets[i]);
      } else {
        check_per_sequence_length(leaf, offsets[i]);
      }
    });
  }
}

// Offsets come back as read_input_offsets merged them.
void concatenate_offsets(const Context& ctx, const DatasetInputs& in, hid_t dst) {
  const Offsets& out = ctx.offsets->merged.at(in.node.path);
  h5::write(dst, Selection::all({out.size()}), H5T_NATIVE_UINT64, out.data(), ctx.out_where(in.node.path));
}

}  // namespace mb::io::merging
