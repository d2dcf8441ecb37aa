#pragma once
// A file descriptor with one owner, and the one EINTR retry loop. No HDF5
// here: every io room may include it.
#include <cerrno>
#include <string>
#include <utility>

namespace mb::io::run {

// Calls `call` until it does not fail with EINTR: a system call interrupted
// by a signal before it did anything is made again. For calls that return -1
// and set errno on failure (read, write, pread, pwrite, send, recv, open,
// poll, waitpid, ...), never for close(2), which must not be retried (see
// Fd::close). No allocation, no lock: safe in a signal handler.
template <class Call>
auto retry_on_eintr(Call&& call) -> decltype(call()) {
  decltype(call()) result;
  do result = call();
  while (result == -1 && errno == EINTR);
  return result;
}

// Owns a descriptor: closes it when it goes, moves but never copies (two
// owners would close it twice, the second time perhaps someone else's). A
// forked child that leaves with _exit(2) runs no destructor, so it closes
// only what it closes itself.
class Fd {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  // Gives the descriptor up without closing it: the caller owns it now.
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes it now, for a caller whose outcome depends on the close (an
  // output just written: NFS and full disks report write errors here). False
  // with errno set when close(2) failed, EINTR included (whether the data
  // reached the file is then unknown). Not retried: Linux frees the number
  // even when close fails, and it may already be another thread's. Nothing to
  // close is success.
  [[nodiscard]] bool close() noexcept;
  // Closes it now, its errors ignored (nobody could act on them: a file only
  // read, a lock, one end of a pipe).
  void reset() noexcept;

 private:
  int fd_ = -1;
};

// open(2), retried on EINTR: an invalid Fd with errno set when it fails.
Fd open_fd(const std::string& path, int flags, unsigned mode = 0);

}  // namespace mb::io::run
