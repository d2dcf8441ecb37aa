#include "io/transfer/string_storage.hpp"

#include "io/h5/dataset.hpp"
#include "io/h5/space.hpp"
#include "io/transfer/file_bytes.hpp"

namespace mb::io::transfer {
namespace {

// The file's side: opened with `intent` (a read-only input has nothing
// unflushed; an output is ours), POSIX driver, no user block (heap
// addresses are then file offsets), sizes this decoder knows.
std::optional<Records> file_side(hid_t file, unsigned intent, const h5::Location& where) {
  unsigned opened = 0;
  h5::check(H5Fget_intent(file, &opened), where, "cannot read the file's access mode");
  if (opened != intent) return std::nullopt;
  h5::Id fcpl(H5Fget_create_plist(file), where, "cannot read the file creation properties");
  hsize_t userblock = 0;
  std::size_t address = 0, length = 0;
  h5::check(H5Pget_userblock(fcpl.get(), &userblock), where, "cannot read the user block size");
  h5::check(H5Pget_sizes(fcpl.get(), &address, &length), where, "cannot read the file's address sizes");
  Records r;
  r.sizes = {static_cast<unsigned>(address), static_cast<unsigned>(length)};
  if (userblock != 0 || !r.sizes.supported()) return std::nullopt;
  const std::optional<int> fd = descriptor_of(file, where);
  if (!fd) return std::nullopt;
  r.fd = *fd;
  return r;
}

// A contiguous, allocated dataset of variable-length strings (creation
// properties `dcpl`), in a file opened with `intent`, whose storage is
// exactly one element record per element.
std::optional<Records> records_of(hid_t dataset, hid_t dcpl, hid_t file, hid_t type, unsigned intent,
                                  const h5::Location& where) {
  if (H5Tget_class(type) != H5T_STRING || H5Tis_variable_str(type) <= 0) return std::nullopt;
  if (h5::layout_of(dcpl, where) != H5D_CONTIGUOUS || h5::filter_count(dcpl, where) != 0 ||
      h5::check(H5Pget_external_count(dcpl), where, "cannot read external files") != 0)
    return std::nullopt;
  const haddr_t address = H5Dget_offset(dataset);
  if (address == HADDR_UNDEF) {
    h5::forget_error();  // never written (an input: libhdf5 gives the fill value), or not allocated yet
    return std::nullopt;
  }
  auto r = file_side(file, intent, where);
  if (!r) return std::nullopt;
  r->offset = address;
  const h5::SpaceInfo space = h5::dataset_space(dataset, where);
  r->dims = space.dims;
  if (space.null_space || H5Dget_storage_size(dataset) != space.elements() * r->sizes.element()) return std::nullopt;
  return r;
}

}  // namespace

std::optional<Records> source_of(hid_t dataset, hid_t type, const h5::Location& where) {
  h5::Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  h5::Id file(H5Iget_file_id(dataset), where, "cannot find the file of");
  return records_of(dataset, dcpl.get(), file.get(), type, H5F_ACC_RDONLY, where);
}

std::optional<Target> target_of(hid_t dataset, hid_t type, const h5::Location& where) {
  h5::Id stored(H5Dget_type(dataset), where, "cannot read the datatype");
  if (h5::check(H5Tequal(stored.get(), type), where, "cannot compare datatypes") <= 0) return std::nullopt;
  h5::Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  if (h5::user_fill_value(dcpl.get(), where)) return std::nullopt;
  Target t{{}, h5::Id(H5Iget_file_id(dataset), where, "cannot find the file of")};
  auto r = records_of(dataset, dcpl.get(), t.file.get(), type, H5F_ACC_RDWR, where);
  if (!r || r->sizes.address != 8 || r->sizes.length != 8) return std::nullopt;
  t.records = *r;
  return t;
}

std::uint64_t reserve(const Target& t, std::uint64_t bytes, const h5::Location& where) {
  h5::check(H5Fincrement_filesize(t.file.get(), bytes), where, "cannot reserve space in the file");
  haddr_t end = HADDR_UNDEF;
  h5::check(H5Fget_eoa(t.file.get(), &end), where, "cannot read the file's end of allocation");
  return end - bytes;
}

std::optional<std::uint64_t> run_start(const Selection& s, const Shape& dims) {
  std::size_t k = 0;
  while (k < s.count.size() && s.count[k] == 1) ++k;
  for (std::size_t d = k; d < s.count.size(); ++d) {
    const bool unit = s.stride.empty() || s.stride[d] == 1;
    if (!unit) return std::nullopt;
    if (d > k && (s.start[d] != 0 || s.count[d] != dims[d])) return std::nullopt;
  }
  return flat_index(dims, s.start);
}

}  // namespace mb::io::transfer
