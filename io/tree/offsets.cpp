#include "io/tree/offsets.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/space.hpp"
#include "io/h5/types.hpp"

namespace mb::io::tree {

hid_t offsets_memory_type(hid_t type, const h5::Location& where) {
  if (h5::class_of(type, where) != H5T_INTEGER)
    throw Error(where.describe() + ": offsets must be integers, not " + h5::dtype_name(type));
  const std::size_t precision = h5::precision_of(type, where);
  if (precision > 64)
    throw Error(fmt::format("{}: offsets of {} bits are not supported (at most 64)", where.describe(), precision));
  return h5::is_unsigned(type, where) ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
}

std::uint64_t largest_offset(hid_t type, const h5::Location& where) {
  offsets_memory_type(type, where);  // refuses wider types
  const std::size_t precision = h5::precision_of(type, where);
  const bool is_signed = !h5::is_unsigned(type, where);
  const std::size_t bits = precision - (is_signed ? 1 : 0);
  return bits >= 64 ? UINT64_MAX : (std::uint64_t{1} << bits) - 1;
}

RawOffsets read_offsets(hid_t dataset, const h5::Location& where) {
  const h5::Id type = h5::type_of(dataset, where);
  const hid_t memory = offsets_memory_type(type.get(), where);
  const h5::SpaceInfo info = h5::dataset_space(dataset, where);
  h5::check_fits_in_file(dataset, info.elements() * h5::size_of(type.get(), where), where);
  // The memory type holds every value of the dataset's: the conversion is exact.
  const auto read = [&](auto values) -> RawOffsets {
    if (!values.empty()) h5::read_all(dataset, memory, values.data(), where);
    return values;
  };
  if (memory == H5T_NATIVE_UINT64) return read(std::vector<std::uint64_t>(info.elements()));
  return read(std::vector<std::int64_t>(info.elements()));
}

OffsetsValues read_offsets_values(hid_t file, const std::string& file_name, const NodeInfo& tree,
                                  const Resolution& resolution) {
  OffsetsValues out;
  for_each_node(tree, [&](const NodeInfo& n) {
    if (n.is_group() || resolution.dataset_rule(n.path).mode != LeafRule::Mode::Offsets) return;
    const h5::Location where{file_name, n.path};
    h5::Id ds = open_object(file, n.path, where);
    out[n.path] = read_offsets(ds.get(), where);
  });
  return out;
}

}  // namespace mb::io::tree
