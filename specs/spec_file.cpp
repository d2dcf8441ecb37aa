#include "specs/parse.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"

namespace mb::specs {

namespace {

// Why a spec file could not be opened, as the messages say it.
std::string open_failure(int error) {
  if (error == ENOENT) return "no such file";
  if (error == EACCES) return "permission denied";
  if (error == ENOTDIR) return "a component of the path is not a directory";
  return std::strerror(error);
}

// A spec is read from a regular file or a pipe (a FIFO, `-s <(jq ...)`, a
// pipe on standard input); a read from a directory fails and one from a
// device may never end (a terminal waits, /dev/zero has no end), so those
// are refused by what they are. "" when fine.
std::string refusal(const struct stat& st, bool terminal) {
  if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "it is a directory";
  if (terminal) return "it is a terminal; pipe or redirect the spec into it";
  if (S_ISCHR(st.st_mode)) return "it is a character device, not a file or a pipe";
  if (S_ISBLK(st.st_mode)) return "it is a block device, not a file or a pipe";
  return "not a regular file or a pipe";
}

[[noreturn]] void cannot_read(const std::string& name, const std::string& why) {
  throw Error(fmt::format("{}: cannot read the spec: {}", name, why));
}

// Reads to the end, at most kMaxSpecBytes: a pipe has no size to check first.
std::string read_all(int fd, const std::string& name) {
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) cannot_read(name, std::strerror(errno));
    if (n == 0) return text;
    if (text.size() + static_cast<std::size_t>(n) > kMaxSpecBytes)
      cannot_read(name, fmt::format("it is larger than {} MiB (no spec needs that much)", kMaxSpecBytes >> 20));
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

// Closes the descriptor it holds (standard input is borrowed, not held).
struct Descriptor {
  int fd = -1;
  bool owned = true;
  ~Descriptor() {
    if (owned && fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string spec_file_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string read_spec_file(const std::string& path) {
  const std::string name = spec_file_name(path);
  const bool standard_input = path == "-";
  struct stat st {};
  // Looked at before it is opened: opening a device can itself do something (a tape rewinds).
  if (!standard_input && ::stat(path.c_str(), &st) != 0) cannot_read(name, open_failure(errno));
  if (!standard_input && !refusal(st, false).empty()) cannot_read(name, refusal(st, false));
  // Blocks on a FIFO until it has a writer, as `cat` does (`<(jq ...)` has one).
  const Descriptor in{standard_input ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC), !standard_input};
  if (in.fd < 0) cannot_read(name, open_failure(errno));
  if (::fstat(in.fd, &st) != 0) cannot_read(name, std::strerror(errno));
  if (const std::string why = refusal(st, ::isatty(in.fd) == 1); !why.empty()) cannot_read(name, why);
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > kMaxSpecBytes)
    cannot_read(name, fmt::format("it is larger than {} MiB (no spec needs that much)", kMaxSpecBytes >> 20));
  return read_all(in.fd, name);
}

SpecNode load_spec_file(const std::string& path) { return parse_spec(read_spec_file(path), spec_file_name(path)); }

}  // namespace mb::specs
