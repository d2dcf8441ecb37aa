// Merge's concatenation: each input's rows go back where the split took
// them from, through the row maps the split used.
#include <optional>

#include "core/packed.hpp"
#include "core/selection.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/types.hpp"
#include "io/merge/steps.hpp"
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

// Offsets come back by shifting each input's offsets past the previous
// inputs' tokens, dropping every leading 0 but the first.
void concatenate_offsets(const Context& ctx, const DatasetInputs& in, hid_t dst) {
  std::vector<std::int64_t> out{0};
  for (std::size_t i = 0; i < in.objects.size(); ++i) {
    const auto values = h5::read_int64_vector(in.objects[i].get(), ctx.where(i, in.node.path));
    check_offsets(values, ctx.job.inputs[i].path + ": " + in.node.path);
    const std::int64_t base = out.back();
    for (std::size_t k = 1; k < values.size(); ++k) out.push_back(values[k] + base);
  }
  h5::write(dst, Selection::all({out.size()}), H5T_NATIVE_INT64, out.data(), ctx.out_where(in.node.path));
}

}  // namespace mb::io::merging
