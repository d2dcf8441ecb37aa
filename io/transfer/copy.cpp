#include "io/transfer/copy.hpp"

#include <optional>

#include "core/error.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/chunks.hpp"
#include "io/transfer/file_bytes.hpp"
#include "io/transfer/slab.hpp"

namespace mb::io::transfer {
namespace {

// How a selection takes elements of a tensor of `dims`.
struct RowShape {
  bool rows = false;                 // unit stride, whole along every axis but one at most
  std::optional<std::size_t> axis;   // the axis it cuts; none: the whole tensor
};

RowShape row_shape(const Selection& s, const Shape& dims) {
  if (dims.empty() || !s.unit_stride()) return {};
  RowShape out{true, std::nullopt};
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (s.start[d] == 0 && s.count[d] == dims[d]) continue;
    if (out.axis) return {};
    out.axis = d;
  }
  return out;
}

// The one axis along which both selections take rows (a whole tensor takes
// rows along any axis), if there is one.
std::optional<std::size_t> common_row_axis(const Selection& a, const Shape& a_dims, const Selection& b,
                                           const Shape& b_dims) {
  const RowShape x = row_shape(a, a_dims), y = row_shape(b, b_dims);
  if (!x.rows || !y.rows) return std::nullopt;
  if (x.axis && y.axis && *x.axis != *y.axis) return std::nullopt;
  return x.axis ? x.axis : y.axis.value_or(0);
}

// Dataset to dataset: the byte paths where the selections are rows on one
// axis, slabs for the rest.
void copy_datasets(const Side& from, const Selection& a, const Side& to, const Selection& b, const Policy& policy) {
  const h5::SpaceInfo src_space = h5::dataset_space(from.dataset, from.where);
  const h5::SpaceInfo dst_space = h5::dataset_space(to.dataset, to.where);
  if (a.elements() == 0) return;
  const auto axis = src_space.null_space ? std::nullopt : common_row_axis(a, src_space.dims, b, dst_space.dims);
  if (!axis) {
    copy_slab(from, a, to, b, policy);
    return;
  }
  const RowCopy rows{.src = from.dataset,
                     .src_where = from.where,
                     .src_space = src_space,
                     .src_begin = a.start[*axis],
                     .dst = to.dataset,
                     .dst_where = to.where,
                     .dst_space = dst_space,
                     .dst_begin = b.start[*axis],
                     .count = a.count[*axis],
                     .axis = *axis};
  if (copy_file_bytes(rows, policy)) return;
  const std::uint64_t raw = copy_raw_chunks(rows, policy);
  if (raw == rows.count) return;
  const RowCopy rest = advanced(rows, raw);
  copy_slab(from, Selection::rows(src_space.dims, *axis, {rest.src_begin, rest.count, 1}), to,
            Selection::rows(dst_space.dims, *axis, {rest.dst_begin, rest.count, 1}), policy);
}

}  // namespace

RowCopy advanced(const RowCopy& c, std::uint64_t skipped) {
  RowCopy out = c;
  out.src_begin += skipped;
  out.dst_begin += skipped;
  out.count -= skipped;
  return out;
}

bool held_whole(hid_t dcpl, std::uint64_t bytes, const h5::Location& where) {
  return bytes <= kWholeInMemory && h5::filter_count(dcpl, where) == 0;
}

void copy(const Side& from, const Selection& a, const Side& to, const Selection& b, const Policy& policy) {
  if (from.memory && to.memory) throw Error("internal: a copy from memory to memory");
  if (from.memory) {
    write_slab(*from.memory, from.shape, a, to.dataset, to.where, b);
    run::count_bytes(policy.meter, a.elements() * h5::size_of(from.memory->type(), from.where));
    return;
  }
  if (to.memory) {
    read_slab(from.dataset, from.where, a, *to.memory, to.shape, b);
    run::count_bytes(policy.meter, a.elements() * h5::size_of(to.memory->type(), to.where));
    return;
  }
  copy_datasets(from, a, to, b, policy);
}

}  // namespace mb::io::transfer
