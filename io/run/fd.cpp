#include "io/run/fd.hpp"

#include <fcntl.h>
#include <unistd.h>

namespace mb::io::run {

bool Fd::close() noexcept {
  const int fd = release();
  return fd < 0 || ::close(fd) == 0;
}

void Fd::reset() noexcept {
  const int saved = errno;  // a destructor on an error path must not change the errno being reported
  if (const int fd = release(); fd >= 0) ::close(fd);
  errno = saved;
}

Fd open_fd(const std::string& path, int flags, unsigned mode) {
  return Fd(retry_on_eintr([&] { return ::open(path.c_str(), flags, static_cast<mode_t>(mode)); }));
}

}  // namespace mb::io::run
