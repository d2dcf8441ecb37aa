#include "io/file_bytes.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/guard.hpp"
#include "io/types.hpp"

namespace mb::h5 {
namespace {

// The kernel cannot copy between these two files (different filesystems,
// or a filesystem without support); bytes then go through a buffer.
bool kernel_copy_unsupported(int error) {
  return error == EXDEV || error == EINVAL || error == ENOSYS || error == EOPNOTSUPP;
}

[[noreturn]] void fail_io(const Location& where, const char* action, int error) {
  throw Error(where.describe() + ": " + action + " (" + std::strerror(error) + ")");
}

[[noreturn]] void fail_short(const Location& where) {
  throw Error(where.describe() + ": the file ends before the dataset's data (truncated or corrupt)");
}

// One step through a buffer; returns the bytes moved (> 0).
std::size_t copy_through_buffer(int in, std::uint64_t in_off, const Location& src_where, int out,
                                std::uint64_t out_off, const Location& dst_where, std::size_t n,
                                std::vector<unsigned char>& buffer) {
  buffer.resize(std::max(buffer.size(), n));
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = pread(in, buffer.data() + got, n - got, static_cast<off_t>(in_off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail_io(src_where, "cannot read data", errno);
    if (r == 0) fail_short(src_where);
    got += static_cast<std::size_t>(r);
  }
  std::size_t put = 0;
  while (put < n) {
    const ssize_t w = pwrite(out, buffer.data() + put, n - put, static_cast<off_t>(out_off + put));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail_io(dst_where, "cannot write data", errno);
    put += static_cast<std::size_t>(w);
  }
  return n;
}

}  // namespace

bool copyable_as_bytes(hid_t type) {
  return !has_variable_length(type) && H5Tdetect_class(type, H5T_REFERENCE) == 0;
}

std::optional<StoredBytes> stored_bytes(hid_t dataset, const Location& where) {
  Id dcpl(H5Dget_create_plist(dataset), where, "cannot read the creation properties");
  Id type(H5Dget_type(dataset), where, "cannot read the datatype");
  if (H5Pget_layout(dcpl.get()) != H5D_CONTIGUOUS || H5Pget_external_count(dcpl.get()) != 0 ||
      !copyable_as_bytes(type.get()))
    return std::nullopt;
  const haddr_t address = H5Dget_offset(dataset);
  if (address == HADDR_UNDEF) {
    H5Eclear2(H5E_DEFAULT);  // not allocated: never written, its elements are the fill value
    return std::nullopt;
  }
  Id file(H5Iget_file_id(dataset), where, "cannot find the file of");
  Id fapl(H5Fget_access_plist(file.get()), where, "cannot read the file access properties");
  if (H5Pget_driver(fapl.get()) != H5FD_SEC2) return std::nullopt;
  void* handle = nullptr;
  check(H5Fget_vfd_handle(file.get(), fapl.get(), &handle), where, "cannot find the file descriptor");
  return StoredBytes{*static_cast<int*>(handle), address};
}

void copy_file_bytes(const StoredBytes& from, std::uint64_t from_offset, const Location& src_where,
                     const StoredBytes& to, std::uint64_t to_offset, const Location& dst_where, std::uint64_t length,
                     std::size_t step) {
  step = std::max<std::size_t>(step, 1u << 16);
  std::uint64_t in = from.offset + from_offset;
  std::uint64_t out = to.offset + to_offset;
  std::vector<unsigned char> buffer;  // only when the kernel cannot copy
  bool kernel = true;
  while (length > 0) {
    io::throw_if_interrupted();
    io::note_activity(src_where.file, src_where.path);
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(length, step));
    std::size_t moved = 0;
    if (kernel) {
      auto in_off = static_cast<off64_t>(in);
      auto out_off = static_cast<off64_t>(out);
      const ssize_t r = copy_file_range(from.fd, &in_off, to.fd, &out_off, n, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && kernel_copy_unsupported(errno)) {
        kernel = false;
        continue;
      }
      // Which side failed is not reported; ENOSPC, EFBIG and EDQUOT are the output's.
      if (r < 0) fail_io(errno == ENOSPC || errno == EFBIG || errno == EDQUOT ? dst_where : src_where,
                         "cannot copy data", errno);
      if (r == 0) fail_short(src_where);
      moved = static_cast<std::size_t>(r);
    } else {
      moved = copy_through_buffer(from.fd, in, src_where, to.fd, out, dst_where, n, buffer);
    }
    in += moved;
    out += moved;
    length -= moved;
  }
}

}  // namespace mb::h5
