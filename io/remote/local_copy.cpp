#include "io/remote/local_copy.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/error.hpp"
#include "io/h5/file.hpp"
#include "io/run/fd.hpp"

namespace mb::io::remote {
namespace {

// An unnamed file in `dir`; where the filesystem cannot make one, a named
// one removed at once.
run::Fd open_unnamed(const std::string& dir) {
  run::Fd fd = run::open_fd(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd.valid() || (errno != EOPNOTSUPP && errno != EISDIR)) return fd;
  std::string name = dir + "/.microbatch-download-XXXXXX";
  run::Fd named(::mkostemp(name.data(), O_CLOEXEC));
  if (named.valid()) ::unlink(name.c_str());
  return named;
}

}  // namespace

LocalCopy::LocalCopy(std::string shown, std::string directory)
    : shown_(std::move(shown)),
      directory_(std::move(directory)),
      where_{fmt::format("{} (its temporary copy in {}; TMPDIR)", shown_, directory_), ""},
      fd_(open_unnamed(directory_)) {
  if (!fd_.valid())
    throw Error(fmt::format("{}: cannot make a temporary file in {} ({}; set TMPDIR)", shown_, directory_,
                            std::strerror(errno)),
                kind_of_errno(errno));
}

void LocalCopy::append(const char* bytes, std::size_t n) {
  h5::write_bytes(fd_.get(), bytes, n, size_, where_);
  size_ += n;
}

void LocalCopy::read(std::uint64_t offset, std::uint64_t n, char* out) const {
  const std::int64_t got = h5::read_at(fd_.get(), out, n, offset);
  if (got < 0 || static_cast<std::uint64_t>(got) != n)
    throw Error(fmt::format("{}: cannot read its temporary copy in {} ({})", shown_, directory_,
                            got < 0 ? std::strerror(errno) : "it is shorter than written"),
                ErrorKind::Environment);
}

}  // namespace mb::io::remote
