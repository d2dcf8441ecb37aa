#include "io/transfer/file_bytes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "io/run/fd.hpp"
#include "io/run/guard.hpp"
#include "io/h5/file.hpp"
#include "io/h5/object.hpp"
#include "io/h5/types.hpp"

namespace mb::io::transfer {
namespace {

// Runs shorter than this are not worth a system call each.
constexpr std::uint64_t kShortestRun = 64u << 10;

// Contiguous, allocated, byte-copyable, in a file of the POSIX driver.
std::optional<StoredBytes> stored_bytes(hid_t dataset, const h5::Location& where) {
  if (!h5::copyable_as_bytes(h5::type_of(dataset, where).get())) return std::nullopt;
  const std::optional<h5::Placement> placed = h5::placement(dataset, where);
  if (!placed) return std::nullopt;  // another layout, or never written (its elements are the fill value)
  const std::optional<int> fd = h5::descriptor_of(dataset, where);
  if (!fd) return std::nullopt;
  return StoredBytes{*fd, placed->address};
}

// The kernel cannot copy between these two files (different filesystems,
// or a filesystem without support); bytes then go through a buffer.
bool kernel_copy_unsupported(int error) {
  return error == EXDEV || error == EINVAL || error == ENOSYS || error == EOPNOTSUPP;
}

[[noreturn]] void fail_io(const h5::Location& where, const char* action, int error) {
  throw Error(fmt::format("{}: {} ({})", where.describe(), action, std::strerror(error)), kind_of_errno(error),
              {where.file, where.path});
}

[[noreturn]] void fail_short(const h5::Location& where) {
  throw Error(where.describe() + ": the file ends before the dataset's data (truncated or corrupt)");
}

// One step through a buffer; returns the bytes moved (> 0).
std::size_t copy_through_buffer(const ByteRange& r, std::uint64_t done, std::size_t n,
                                std::vector<unsigned char>& buffer) {
  buffer.resize(std::max(buffer.size(), n));
  const auto in = static_cast<off_t>(r.from.offset + r.from_offset + done);
  const auto out = static_cast<off_t>(r.to.offset + r.to_offset + done);
  const std::int64_t got = h5::read_at(r.from.fd, buffer.data(), n, static_cast<std::uint64_t>(in));
  if (got < 0) fail_io(r.src_where, "cannot read data", errno);
  if (static_cast<std::size_t>(got) < n) fail_short(r.src_where);
  h5::write_bytes(r.to.fd, buffer.data(), n, static_cast<std::uint64_t>(out), r.dst_where);
  return n;
}

}  // namespace

void copy_range(const ByteRange& r, std::size_t step, run::ByteMeter* meter, CopyTap* tap) {
  step = std::max<std::size_t>(step, 1u << 16);
  std::vector<unsigned char> buffer;  // only when the kernel cannot copy
  bool kernel = true;
  const auto landed = [&](std::uint64_t before, std::uint64_t done) {
    run::count_bytes(meter, done - before);
    if (tap) tap->copied({r.to.fd, r.to.offset + r.to_offset, before, done});
  };
  for (std::uint64_t done = 0; done < r.length;) {
    run::throw_if_interrupted();
    run::note_activity(r.src_where.file, r.src_where.path);
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(r.length - done, step));
    if (!kernel) {
      const std::uint64_t before = done;
      done += copy_through_buffer(r, done, n, buffer);
      landed(before, done);
      continue;
    }
    auto in = static_cast<off64_t>(r.from.offset + r.from_offset + done);
    auto out = static_cast<off64_t>(r.to.offset + r.to_offset + done);
    const ssize_t k = copy_file_range(r.from.fd, &in, r.to.fd, &out, n, 0);
    if (k < 0 && errno == EINTR) continue;  // back through the stop check at the loop's head
    if (k < 0 && kernel_copy_unsupported(errno)) {
      kernel = false;
      continue;
    }
    // Which side failed is not reported; ENOSPC, EFBIG and EDQUOT are the output's.
    const bool output_full = errno == ENOSPC || errno == EFBIG || errno == EDQUOT;
    if (k < 0) fail_io(output_full ? r.dst_where : r.src_where, "cannot copy data", errno);
    if (k == 0) fail_short(r.src_where);
    done += static_cast<std::uint64_t>(k);
    landed(done - static_cast<std::uint64_t>(k), done);
  }
}

bool copy_file_bytes(const RowCopy& c, const Policy& policy) {
  const h5::Id dst_type = h5::type_of(c.dst, c.dst_where);
  const std::uint64_t element = h5::size_of(dst_type.get(), c.dst_where);
  if (!policy.byte_paths || c.src_space.null_space || c.dst_space.elements() * element < kFileBytesMin) return false;
  // For each index over the axes before `axis`, the rows are one run of bytes in either file.
  std::uint64_t outer = 1, row_bytes = element;
  for (std::size_t k = 0; k < c.axis; ++k) outer *= c.src_space.dims[k];
  for (std::size_t k = c.axis + 1; k < c.src_space.dims.size(); ++k) row_bytes *= c.src_space.dims[k];
  if (outer > 1 && c.count * row_bytes < kShortestRun) return false;
  if (!h5::same_type(h5::type_of(c.src, c.src_where).get(), dst_type.get(), c.src_where)) return false;
  const auto to = stored_bytes(c.dst, c.dst_where);
  const auto from = to ? stored_bytes(c.src, c.src_where) : std::nullopt;
  if (!from) return false;
  for (std::uint64_t index = 0; index < outer; ++index) {
    const std::uint64_t src_row = index * c.src_space.dims[c.axis] + c.src_begin;
    const std::uint64_t dst_row = index * c.dst_space.dims[c.axis] + c.dst_begin;
    copy_range({*from, src_row * row_bytes, c.src_where, *to, dst_row * row_bytes, c.dst_where, c.count * row_bytes},
               policy.buffer_bytes, policy.meter, policy.tap);
  }
  spdlog::debug("{}: {} rows copied as file bytes", c.dst_where.describe(), c.count);
  return true;
}

}  // namespace mb::io::transfer
