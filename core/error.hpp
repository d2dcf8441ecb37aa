#pragma once
// The one exception type of microbatch. Its category picks the exit status:
// the data or the spec is wrong -> 1, the command line is wrong -> 2, a stop
// signal (SIGINT, SIGTERM, SIGHUP) -> 130. Messages are one line and name the
// file and HDF5 path.
#include <stdexcept>
#include <string>
#include <utility>

namespace mb {

enum class ErrorKind { Data = 1, Usage = 2, Interrupted = 130 };

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::Data)
      : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

inline Error usage_error(std::string message) { return Error(std::move(message), ErrorKind::Usage); }

}  // namespace mb
