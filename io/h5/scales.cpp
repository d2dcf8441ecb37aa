#include "io/h5/scales.hpp"

#include <hdf5_hl.h>

#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/presets.hpp"
#include "io/h5/space.hpp"

namespace mb::io::h5 {
namespace {

constexpr std::string_view kPhonyPrefix = "This is a netCDF dimension but not a netCDF variable";

// The phony NAME with `length` in place of the length it states, in the
// same width (netCDF-C writes "%10d").
std::string phony_name(const std::string& old_name, std::uint64_t length) {
  std::size_t digits = old_name.size();
  while (digits > 0 && old_name[digits - 1] >= '0' && old_name[digits - 1] <= '9') --digits;
  std::size_t start = digits;
  while (start > 0 && old_name[start - 1] == ' ') --start;
  if (digits == old_name.size()) return old_name;  // states no length
  const std::size_t width = old_name.size() - start;
  return old_name.substr(0, start) + fmt::format("{:>{}}", length, width);
}

// Rewrites a string attribute's value in its own type (fixed-size: padded
// with NULs, never longer than the type holds; variable-length: as is).
void rewrite_text(hid_t object, const std::string& name, const std::string& text, const Location& where) {
  const Location at = where.attribute(name);
  Id attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), at, "cannot open the attribute");
  Id type(H5Aget_type(attr.get()), at, "cannot read the attribute's type");
  if (H5Tis_variable_str(type.get()) > 0) {
    const char* value = text.c_str();
    check(H5Awrite(attr.get(), type.get(), &value), at, "cannot write the attribute");
    return;
  }
  std::string value(H5Tget_size(type.get()), '\0');
  if (text.size() > value.size())
    throw Error(fmt::format("{}: the dimension's length does not fit its NAME ({} bytes)", at.describe(), value.size()));
  value.replace(0, text.size(), text);
  check(H5Awrite(attr.get(), type.get(), value.data()), at, "cannot write the attribute");
}

std::uint64_t length_of(hid_t dataset, const Location& where) {
  Id space(H5Dget_space(dataset), where, "cannot read the dataspace");
  const SpaceInfo s = space_info(space.get(), where);
  return s.dims.empty() ? 1 : s.dims[0];
}

void attach(hid_t file, const std::string& file_name, const NodeInfo& ds) {
  const Location where{file_name, ds.path};
  Id dataset(H5Dopen2(file, ds.path.c_str(), H5P_DEFAULT), where, "cannot open");
  for (std::size_t axis = 0; axis < ds.scales.size(); ++axis)
    for (const auto& path : ds.scales[axis]) {
      Id scale(H5Dopen2(file, path.c_str(), H5P_DEFAULT), {file_name, path}, "cannot open the dimension scale");
      if (H5DSattach_scale(dataset.get(), scale.get(), static_cast<unsigned>(axis)) < 0)
        fail(where, fmt::format("cannot attach dimension scale {} to axis {}", path, axis));
    }
}

herr_t collect_scale(hid_t, unsigned, hid_t scale, void* data) {
  char name[4096] = {};
  if (H5Iget_name(scale, name, sizeof name) <= 0) return -1;
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

}  // namespace

bool is_dimension_scale_attribute(const std::string& name, hid_t type) {
  return (name == "DIMENSION_LIST" || name == "REFERENCE_LIST") && H5Tdetect_class(type, H5T_REFERENCE) > 0;
}

bool is_phony_dimension_name(const NodeInfo& node, const std::string& attribute) {
  if (!node.is_scale || attribute != "NAME") return false;
  const std::string* text = attribute_text(node, "NAME");
  return text && text->compare(0, kPhonyPrefix.size(), kPhonyPrefix) == 0;
}

bool is_scale(hid_t dataset, const Location& where) {
  return check(H5DSis_scale(dataset), where, "cannot tell whether the dataset is a dimension scale") > 0;
}

std::vector<std::string> attached_scales(hid_t dataset, unsigned axis, const Location& where) {
  std::vector<std::string> paths;
  if (H5DSget_num_scales(dataset, axis) <= 0) {
    forget_error();
    return paths;
  }
  int index = 0;
  if (H5DSiterate_scales(dataset, axis, &index, collect_scale, &paths) < 0)
    fail(where, fmt::format("cannot read the dimension scales of axis {} (DIMENSION_LIST)", axis));
  return paths;
}

void attach_scales(hid_t file, const std::string& file_name, const NodeInfo& tree) {
  for_each_node(tree, [&](const NodeInfo& n) {
    if (n.is_group() || n.is_further_name()) return;
    if (!n.scales.empty()) attach(file, file_name, n);
    if (!is_phony_dimension_name(n, "NAME")) return;
    const Location where{file_name, n.path};
    Id dataset(H5Dopen2(file, n.path.c_str(), H5P_DEFAULT), where, "cannot open");
    rewrite_text(dataset.get(), "NAME", phony_name(*attribute_text(n, "NAME"), length_of(dataset.get(), where)),
                 where);
  });
}

}  // namespace mb::io::h5
