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

namespace mb::io::remote {
namespace {

std::string temporary_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

// An unnamed file in `dir`; where the filesystem cannot make one, a named
// one removed at once.
int open_unnamed(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR)) return fd;
  std::string name = dir + "/.microbatch-download-XXXXXX";
  const int named = ::mkostemp(name.data(), O_CLOEXEC);
  if (named >= 0) ::unlink(name.c_str());
  return named;
}

}  // namespace

LocalCopy::LocalCopy(std::string shown)
    : shown_(std::move(shown)),
      directory_(temporary_directory()),
      where_{fmt::format("{} (its temporary copy in {}; TMPDIR)", shown_, directory_), ""} {
  fd_ = open_unnamed(directory_);
  if (fd_ < 0)
    throw Error(fmt::format("{}: cannot make a temporary file in {} ({}; set TMPDIR)", shown_, directory_,
                            std::strerror(errno)),
                kind_of_errno(errno));
}

LocalCopy::~LocalCopy() { ::close(fd_); }

void LocalCopy::append(const char* bytes, std::size_t n) {
  h5::write_bytes(fd_, bytes, n, size_, where_);
  size_ += n;
}

void LocalCopy::read(std::uint64_t offset, std::uint64_t n, char* out) const {
  const std::int64_t got = h5::read_at(fd_, out, n, offset);
  if (got < 0 || static_cast<std::uint64_t>(got) != n)
    throw Error(fmt::format("{}: cannot read its temporary copy in {} ({})", shown_, directory_,
                            got < 0 ? std::strerror(errno) : "it is shorter than written"),
                ErrorKind::Environment);
}

}  // namespace mb::io::remote
