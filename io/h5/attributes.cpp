#include "io/h5/attributes.hpp"

#include "io/run/guard.hpp"
#include "io/h5/file.hpp"
#include "io/h5/scales.hpp"
#include "io/h5/types.hpp"

namespace mb::io::h5 {
namespace {

herr_t collect_name(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->push_back(name);
  return 0;
}

}  // namespace

std::vector<std::string> attribute_names(hid_t object, const Location& where) {
  std::vector<std::string> names;
  check(H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect_name, &names), where,
        "cannot list attributes");
  return names;
}

bool too_large_for_a_header_message(hid_t attr, hid_t type, const std::string& name, std::size_t rank,
                                    std::uint64_t copies) {
  constexpr std::uint64_t kMessageMax = 65535;  // a message's size field has 16 bits
  constexpr std::uint64_t kMargin = 64;         // newer message versions, a charset byte, ...
  std::size_t type_bytes = 0;
  if (H5Tencode(type, nullptr, &type_bytes) < 0) {  // not worth refusing the file for: take it as large
    forget_error();
    type_bytes = kMessageMax;
  }
  // The stored values (variable-length values count their heap ids).
  const std::uint64_t stored = H5Aget_storage_size(attr);
  if (stored > 0 && copies > kMessageMax / stored) return true;
  const std::uint64_t data = stored * copies;
  if (data >= kMessageMax || name.size() >= kMessageMax || type_bytes >= kMessageMax || rank > 32) return true;
  const auto aligned = [](std::uint64_t n) { return (n + 7) / 8 * 8; };
  // The message's parts, each 8-byte aligned: its header, name, datatype,
  // dataspace (dims and max dims) and the values.
  const std::uint64_t message = 8 + aligned(name.size() + 1) + aligned(type_bytes) + aligned(8 + 16 * rank) + data;
  return message + kMargin > kMessageMax;
}

AttributeValue read_attribute(hid_t object, const std::string& name, const Location& where) {
  const Location at = where.attribute(name);
  run::note_activity(at.file, at.path);
  Id attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), at, "cannot open the attribute");
  AttributeValue value(Id(H5Aget_type(attr.get()), at, "cannot read the attribute's type"));
  value.space = Id(H5Aget_space(attr.get()), at, "cannot read the attribute's dataspace");
  value.shape = space_info(value.space.get(), at);
  check_fits_in_file(object, value.shape.elements() * size_of(value.type.get(), at), at);
  value.data.prepare(value.shape.elements());
  if (!value.shape.null_space)
    check(H5Aread(attr.get(), value.type.get(), value.data.data()), at, "cannot read the attribute");
  return value;
}

void write_attribute(hid_t object, const std::string& name, const AttributeValue& value, const Location& where) {
  const Location at = where.attribute(name);
  Id attr(H5Acreate2(object, name.c_str(), value.type.get(), value.space.get(), H5P_DEFAULT, H5P_DEFAULT), at,
          "cannot create the attribute");
  if (!value.shape.null_space)
    check(H5Awrite(attr.get(), value.type.get(), value.data.data()), at, "cannot write the attribute");
}

Id create_attribute(hid_t object, const std::string& name, hid_t type, hid_t space, const Location& where) {
  return Id(H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), where.attribute(name),
            "cannot create the attribute");
}

Attributes read_attributes(hid_t object, const Location& where) {
  return read_attributes(object, where, attribute_names(object, where));
}

Attributes read_attributes(hid_t object, const Location& where, std::vector<std::string> names) {
  Attributes out;
  for (auto& name : names) {
    if (name == "DIMENSION_LIST" || name == "REFERENCE_LIST") {  // rebuilt by attach_scales, not copied
      Id attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), where.attribute(name), "cannot open the attribute");
      Id type(H5Aget_type(attr.get()), where.attribute(name), "cannot read the attribute's type");
      if (is_dimension_scale_attribute(name, type.get())) continue;
    }
    AttributeValue value = read_attribute(object, name, where);
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

void write_attributes(hid_t object, const Attributes& attributes, const Location& where) {
  for (const auto& [name, value] : attributes) write_attribute(object, name, value, where);
}

}  // namespace mb::io::h5
