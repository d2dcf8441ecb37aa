#pragma once
// The one exception type of microbatch. Its category picks the exit status:
// the data or the spec is wrong -> 1, the command line is wrong -> 2, the
// environment failed in a way a retry may cure (no space, an I/O error, the
// network, an output locked by another run, an input changed while read)
// -> 3, a stop signal (SIGINT, SIGTERM, SIGHUP) -> 130; a crash of
// microbatch's own code -> 4. Messages are one line and name the file and
// HDF5 path.
#include <cerrno>
#include <stdexcept>
#include <string>
#include <utility>

namespace mb {

// Defect: microbatch's own code crashed (io/run/guard.hpp); never thrown,
// the crash guard exits with it.
enum class ErrorKind { Data = 1, Usage = 2, Environment = 3, Defect = 4, Interrupted = 130 };

// What a failed system call's errno says of a retry: out of space or quota,
// an I/O error, a lock held, the network: Environment; anything else (a
// missing file, no permission, a file-size limit) wants a fix: Data.
inline ErrorKind kind_of_errno(int error) {
  switch (error) {
    case ENOSPC: case EDQUOT: case EIO: case EAGAIN: case ETIMEDOUT: case ECONNRESET: case ECONNREFUSED:
    case EHOSTUNREACH: case ENETUNREACH: case ESTALE:
      return ErrorKind::Environment;
    default:
      return ErrorKind::Data;
  }
}

// Where a failure happened, when the code that throws knows: a file (or a
// URL, as shown) and an HDF5 object path in it. For --json's failure object;
// the message names them too.
struct Where {
  std::string file;
  std::string object;
};

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::Data, Where where = {})
      : std::runtime_error(std::move(message)), kind_(kind), where_(std::move(where)) {}
  ErrorKind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return static_cast<int>(kind_); }
  const Where& where() const noexcept { return where_; }

 private:
  ErrorKind kind_;
  Where where_;
};

inline Error usage_error(std::string message) { return Error(std::move(message), ErrorKind::Usage); }
inline Error environment_error(std::string message) { return Error(std::move(message), ErrorKind::Environment); }

}  // namespace mb
