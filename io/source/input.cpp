#include "io/source/input.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/remote/driver.hpp"
#include "io/run/fd.hpp"
#include "io/run/identity.hpp"

namespace mb::io::source {
namespace {

constexpr std::size_t kWindow = 1u << 20;  // a file's bytes read at a time

struct stat stat_of(const Source& input) {
  struct stat st {};
  if (::stat(input.name().c_str(), &st) != 0)
    throw Error(fmt::format("{}: cannot stat the input: {}", input.shown(), std::strerror(errno)), kind_of_errno(errno));
  return st;
}

std::uint64_t read_file(const Source& input, const std::function<void(const char*, std::size_t)>& sink) {
  const run::Fd fd(::open(input.name().c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid())
    throw Error(fmt::format("{}: cannot open: {}", input.shown(), std::strerror(errno)), kind_of_errno(errno));
  std::vector<char> window(kWindow);
  std::uint64_t total = 0;
  while (true) {
    const ssize_t n = run::retry_on_eintr([&] { return ::read(fd.get(), window.data(), window.size()); });
    if (n < 0) throw Error(fmt::format("{}: cannot read: {}", input.shown(), std::strerror(errno)), kind_of_errno(errno));
    if (n == 0) return total;
    sink(window.data(), static_cast<std::size_t>(n));
    total += static_cast<std::uint64_t>(n);
  }
}

}  // namespace

h5::Id open(const Source& input, h5::Cache cache) {
  if (!input.is_remote()) return h5::open_local(input.name(), cache);
  return h5::open_by_driver(input.name(), remote::file_access(input.address()), cache, {input.shown(), ""});
}

std::optional<std::string> local_path(const Source& input) {
  if (input.is_remote()) return std::nullopt;
  return input.name();
}

Version version(const Source& input) {
  if (input.is_remote()) {  // from the request that opening it would make; never its query
    const remote::Version v = remote::describe(input.address());
    return {v.size, v.modified * 1'000'000'000LL, v.etag};
  }
  const struct stat st = stat_of(input);
  return {static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec, ""};
}

std::uint64_t size(const Source& input) {
  if (input.is_remote()) return remote::describe(input.address()).size;
  return static_cast<std::uint64_t>(stat_of(input).st_size);
}

std::uint64_t read_all(const Source& input, const std::function<void(const char*, std::size_t)>& sink) {
  return input.is_remote() ? remote::read_all(input.address(), sink) : read_file(input, sink);
}

void watch(const Source& input) {
  if (!input.is_remote()) run::watch_input(input);
}

}  // namespace mb::io::source
