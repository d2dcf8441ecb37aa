#include "io/h5/file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/run/fd.hpp"

namespace mb::io::h5 {

namespace {

// Not for written files: there each close would flush.
void evict_on_close(hid_t fapl, Cache cache, const Location& where) {
  if (cache == Cache::Evict) check(H5Pset_evict_on_close(fapl, 1), where, "cannot set evict on close");
}

}  // namespace

Id open_by_driver(const std::string& name, Id fapl, Cache cache, const Location& where) {
  evict_on_close(fapl.get(), cache, where);
  Id file(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get()));
  if (file.valid()) return file;
  if (!driver_failed() && stack_says_not_hdf5()) {  // the bytes came, and hold no HDF5 file
    forget_error();
    throw Error(where.file + ": not an HDF5 file", ErrorKind::Data, {where.file, ""});
  }
  fail(where, "cannot open the file read-only");
}

Id open_local(const std::string& path, Cache cache) {
  const Location where{path, ""};
  // Checked first: opening a FIFO would block, a directory gives an obscure error.
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(path + ": no such file", ErrorKind::Data, {path, ""});
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(path + ": not a regular file", ErrorKind::Data, {path, ""});
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    forget_error();
    throw Error(path + ": not an HDF5 file, or not readable", ErrorKind::Data, {path, ""});
  }
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), where, "cannot create file access properties");
  evict_on_close(fapl.get(), cache, where);
  return Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), where, "cannot open the file read-only");
}

hid_t register_driver(const H5FD_class_t& driver, const char* shown) {
  const hid_t id = H5FDregister(&driver);
  if (id < 0) fail({"", ""}, std::string("cannot register ") + shown);
  return id;
}

Id access_through(hid_t driver, const void* info, const char* shown, const Location& where) {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), where, "cannot create file access properties");
  if (H5Pset_driver(fapl.get(), driver, info) < 0) fail(where, std::string("cannot select ") + shown);
  return fapl;
}

const void* driver_info(hid_t fapl) { return H5Pget_driver_info(fapl); }

namespace detail {

void set_low_format_bound(hid_t location, bool v18, const Location& where) {
  Id file(H5Iget_file_id(location), where, "cannot find the file of");
  check(H5Fset_libver_bounds(file.get(), v18 ? H5F_LIBVER_V18 : H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST), where,
        "cannot set the file's format bounds");
}

}  // namespace detail

Id create_file(const std::string& path, const std::string& shown_as, OutputFormat format) {
  const Location where{shown_as, ""};
  // Without a sieve buffer HDF5 writes raw data through at once and keeps no
  // copy of it, so bytes written past the library (file_bytes.hpp) stay.
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), where, "cannot create file access properties");
  check(H5Pset_sieve_buf_size(fapl.get(), 0), where, "cannot set the sieve buffer size");
  if (format.large_root_attributes)
    check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), where, "cannot set format bounds");
  // The root group is created with the file: its creation properties are the file's.
  Id fcpl(H5Pcreate(H5P_FILE_CREATE), where, "cannot create file creation properties");
  check(H5Pset_obj_track_times(fcpl.get(), 0), where, "cannot turn off object times");
  Id file(H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get()), where, "cannot create the file");
  if (format.large_root_attributes) detail::set_low_format_bound(file.get(), false, where);
  return file;
}

Id create_group(hid_t parent, const std::string& name, bool large_attributes, const Location& where) {
  Id gcpl(H5Pcreate(H5P_GROUP_CREATE), where, "cannot create group creation properties");
  check(H5Pset_obj_track_times(gcpl.get(), 0), where, "cannot turn off object times");
  return with_newer_object_header(parent, large_attributes, where, [&] {
    return Id(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), where,
              "cannot create the group");
  });
}

void create_hard_link(hid_t parent, const std::string& name, const std::string& target, const Location& where) {
  check(H5Lcreate_hard(parent, target.c_str(), parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT), where,
        "cannot create the hard link");
}

std::optional<int> descriptor_of(hid_t object, const Location& where) {
  Id file(H5Iget_file_id(object), where, "cannot find the file of");
  Id fapl(H5Fget_access_plist(file.get()), where, "cannot read the file access properties");
  if (H5Pget_driver(fapl.get()) != H5FD_SEC2) return std::nullopt;
  void* handle = nullptr;
  check(H5Fget_vfd_handle(file.get(), fapl.get(), &handle), where, "cannot find the file descriptor");
  return *static_cast<int*>(handle);
}

unsigned intent_of(hid_t file, const Location& where) {
  unsigned intent = 0;
  check(H5Fget_intent(file, &intent), where, "cannot read the file's access mode");
  return intent;
}

Addressing addressing_of(hid_t file, const Location& where) {
  Id fcpl(H5Fget_create_plist(file), where, "cannot read the file creation properties");
  hsize_t userblock = 0;
  Addressing out;
  check(H5Pget_userblock(fcpl.get(), &userblock), where, "cannot read the user block size");
  check(H5Pget_sizes(fcpl.get(), &out.address, &out.length), where, "cannot read the file's address sizes");
  out.userblock = userblock;
  return out;
}

std::int64_t read_at(int fd, void* into, std::size_t n, std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(into);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t k = run::retry_on_eintr([&] { return ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got)); });
    if (k < 0) return -1;
    if (k == 0) break;  // the end of the file
    got += static_cast<std::size_t>(k);
  }
  return static_cast<std::int64_t>(got);
}

void write_bytes(int fd, const void* bytes, std::size_t n, std::uint64_t offset, const Location& where) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t put = 0; put < n;) {
    const ssize_t k =
        run::retry_on_eintr([&] { return ::pwrite(fd, p + put, n - put, static_cast<off_t>(offset + put)); });
    // k == 0: never for a regular file; reported as EIO, not looped on forever.
    const int error = k < 0 ? errno : k == 0 ? EIO : 0;
    if (error != 0)
      throw Error(fmt::format("{}: cannot write data ({})", where.describe(), std::strerror(error)),
                  kind_of_errno(error), {where.file, where.path});
    put += static_cast<std::size_t>(k);
  }
}

void increment_filesize(hid_t file, std::uint64_t bytes, const Location& where) {
  check(H5Fincrement_filesize(file, bytes), where, "cannot reserve space in the file");
}

haddr_t end_of_allocation(hid_t file, const Location& where) {
  haddr_t end = HADDR_UNDEF;
  check(H5Fget_eoa(file, &end), where, "cannot read the file's end of allocation");
  return end;
}

void check_fits_in_file(hid_t object, std::uint64_t bytes, const Location& where) {
  constexpr std::uint64_t kAlwaysAffordable = 1u << 20;  // checking costs more than allocating this
  if (bytes <= kAlwaysAffordable) return;
  Id file(H5Iget_file_id(object), where, "cannot find the file of");
  hsize_t size = 0;
  check(H5Fget_filesize(file.get(), &size), where, "cannot read the file size");
  if (bytes > size)
    throw Error(fmt::format("{}: claims {} bytes of data in a file of {} bytes (corrupt, or sparse); refusing to read "
                            "it whole",
                            where.describe(), bytes, size));
}

}  // namespace mb::io::h5
