#include "io/h5/object.hpp"

namespace mb::io::h5 {
namespace {

bool is_attribute(hid_t object) { return H5Iget_type(object) == H5I_ATTR; }

}  // namespace

Id type_of(hid_t object, const Location& where) {
  return Id(is_attribute(object) ? H5Aget_type(object) : H5Dget_type(object), where, "cannot read the datatype");
}

Id space_of(hid_t object, const Location& where) {
  return Id(is_attribute(object) ? H5Aget_space(object) : H5Dget_space(object), where,
            "cannot read the dataspace");
}

Id creation_of(hid_t dataset, const Location& where) {
  return Id(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
}

Id file_of(hid_t object, const Location& where) {
  return Id(H5Iget_file_id(object), where, "cannot find the file of");
}

H5I_type_t kind_of(hid_t object, const Location& where) {
  const H5I_type_t kind = H5Iget_type(object);
  if (kind == H5I_BADID) fail(where, "cannot tell what the object is");
  return kind;
}

HardLinks hard_links(hid_t object, const Location& where) {
  H5O_info_t info;
  check(H5Oget_info2(object, &info, H5O_INFO_BASIC), where, "cannot read the object's header");
  return {info.addr, info.rc};
}

Id open_attribute(hid_t object, const std::string& name, const Location& where) {
  return Id(H5Aopen(object, name.c_str(), H5P_DEFAULT), where.attribute(name), "cannot open the attribute");
}

bool has_attribute(hid_t object, const std::string& name, const Location& where) {
  return check(H5Aexists(object, name.c_str()), where.attribute(name), "cannot look for the attribute") > 0;
}

bool has_link(hid_t group, const std::string& name, const Location& where) {
  return check(H5Lexists(group, name.c_str(), H5P_DEFAULT), where.child(name), "cannot look for the link") > 0;
}

int external_count(hid_t dcpl, const Location& where) {
  return check(H5Pget_external_count(dcpl), where, "cannot read external files");
}

bool contiguous_in_file(hid_t dcpl, const Location& where) {
  const H5D_layout_t layout = check(H5Pget_layout(dcpl), where, "cannot read the layout");
  return layout == H5D_CONTIGUOUS && external_count(dcpl, where) == 0;
}

std::optional<Placement> placement(hid_t dataset, const Location& where) {
  const Id dcpl = creation_of(dataset, where);
  if (!contiguous_in_file(dcpl.get(), where)) return std::nullopt;
  const haddr_t address = H5Dget_offset(dataset);
  if (address == HADDR_UNDEF) {
    forget_error();  // not allocated: an expected answer, not a failure
    return std::nullopt;
  }
  return Placement{address, H5Dget_storage_size(dataset)};
}

void read_all(hid_t object, hid_t mem_type, void* out, const Location& where) {
  if (is_attribute(object))
    check(H5Aread(object, mem_type, out), where, "cannot read the attribute");
  else
    check(H5Dread(object, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), where, "cannot read data");
}

void write_all(hid_t object, hid_t mem_type, const void* data, const Location& where) {
  if (is_attribute(object))
    check(H5Awrite(object, mem_type, data), where, "cannot write the attribute");
  else
    check(H5Dwrite(object, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), where, "cannot write data");
}

void read_selection(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, void* out,
                    const Location& where) {
  check(H5Dread(dataset, mem_type, mem_space, file_space, H5P_DEFAULT, out), where, "cannot read data");
}

void write_selection(hid_t dataset, hid_t mem_type, hid_t mem_space, hid_t file_space, const void* data,
                     const Location& where) {
  check(H5Dwrite(dataset, mem_type, mem_space, file_space, H5P_DEFAULT, data), where, "cannot write data");
}

bool read_chunk(hid_t dataset, const hsize_t* offset, RawChunk& into, const Location& where) {
  hsize_t size = 0;
  // libhdf5 1.10 fails for a chunk that was never allocated, or answers 0.
  if (H5Dget_chunk_storage_size(dataset, offset, &size) < 0 || size == 0) {
    forget_error();
    return false;
  }
  into.bytes.resize(size);
  check(H5Dread_chunk(dataset, H5P_DEFAULT, offset, &into.filters, into.bytes.data()), where,
        "cannot read a stored chunk");
  return true;
}

void write_chunk(hid_t dataset, const hsize_t* offset, const RawChunk& chunk, const Location& where) {
  check(H5Dwrite_chunk(dataset, H5P_DEFAULT, chunk.filters, offset, chunk.bytes.size(), chunk.bytes.data()), where,
        "cannot write a stored chunk");
}

}  // namespace mb::io::h5
