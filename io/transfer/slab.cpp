#include "io/transfer/slab.hpp"

#include <algorithm>

#include "core/partition.hpp"
#include "io/run/guard.hpp"
#include "io/h5/dataset.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"
#include "io/transfer/strings.hpp"

namespace mb::io::transfer {
namespace {

// Whether `from` is one run of the in-memory array (rows cut along the
// first axis) and `to` fills all of `dims` from its origin: then no
// selection is needed on either side.
bool whole_rows(const Shape& memory_shape, const Selection& from, const Selection& to, const Shape& dims) {
  if (to.count != dims) return false;
  const auto unit = [](const Selection& s, std::size_t d) { return s.stride.empty() || s.stride[d] == 1; };
  for (std::size_t d = 0; d < to.count.size(); ++d) {
    const bool single = to.count[d] <= 1;
    if (to.start[d] != 0 || (!unit(to, d) && !single) || (!unit(from, d) && !single)) return false;
    if (d > 0 && (from.start[d] != 0 || to.count[d] != memory_shape[d])) return false;
  }
  return true;
}

}  // namespace

void copy_slab(const Side& from_side, const Selection& from, const Side& to_side, const Selection& to,
               const Policy& policy) {
  const hid_t src = from_side.dataset, dst = to_side.dataset;
  const h5::Location &src_where = from_side.where, &dst_where = to_side.where;
  const h5::Id type = h5::type_of(src, src_where);
  if (h5::dataset_space(src, src_where).null_space) return;  // no elements to copy
  if (copy_heap_strings(src, src_where, from, dst, dst_where, to, policy)) return;
  h5::Buffer buffer(type.get());
  const std::size_t element = std::max<std::size_t>(h5::size_of(type.get(), src_where), 1);
  for_each_block(from.count, policy.buffer_bytes / element, [&](const Shape& offset, const Shape& block) {
    run::throw_if_interrupted();
    h5::read(src, from.part(offset, block), buffer, src_where);
    h5::write(dst, to.part(offset, block), type.get(), buffer.data(), dst_where);
    run::count_bytes(policy.meter, element_count(block) * element);
  });
}

void read_slab(hid_t src, const h5::Location& where, const Selection& from, h5::Buffer& memory,
               const Shape& memory_shape, const Selection& to) {
  if (from.elements() == 0) return;
  run::note_activity(where.file, where.path);
  const h5::Id file_space = h5::space_of(src, where);
  h5::select(file_space.get(), from, where);
  h5::Id mem_space = h5::make_space(memory_shape, where);
  h5::select(mem_space.get(), to, where);
  h5::read_selection(src, memory.type(), mem_space.get(), file_space.get(), memory.data(), where);
}

void write_slab(const h5::Buffer& memory, const Shape& memory_shape, const Selection& from, hid_t dst,
                const h5::Location& where, const Selection& to) {
  if (from.elements() == 0) return;
  const h5::Id file_space = h5::space_of(dst, where);
  if (whole_rows(memory_shape, from, to, h5::space_info(file_space.get(), where).dims)) {
    const std::uint64_t row = from.count.empty() ? 0 : element_count(memory_shape) / memory_shape[0];
    const std::uint64_t skipped = from.count.empty() ? 0 : from.start[0] * row;
    const auto* first = static_cast<const unsigned char*>(memory.data()) +
                        skipped * h5::size_of(memory.type(), where);
    h5::write_all(dst, memory.type(), first, where);
    return;
  }
  h5::Id mem_space = h5::make_space(memory_shape, where);
  h5::select(mem_space.get(), from, where);
  h5::select(file_space.get(), to, where);
  h5::write_selection(dst, memory.type(), mem_space.get(), file_space.get(), memory.data(), where);
}

}  // namespace mb::io::transfer
