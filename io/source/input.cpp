#include "io/source/input.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "io/remote/driver.hpp"
#include "io/run/identity.hpp"

namespace mb::io::source {
namespace {

struct stat stat_of(const Source& input) {
  struct stat st {};
  if (::stat(input.name().c_str(), &st) != 0)
    throw Error(fmt::format("{}: cannot stat the input: {}", input.shown(), std::strerror(errno)), kind_of_errno(errno));
  return st;
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
  if (!input.is_remote())
    throw Error(fmt::format("internal: {} streamed as an object; a file is read by its local_path", input.shown()));
  return remote::read_all(input.address(), sink);
}

void watch(const Source& input) {
  if (!input.is_remote()) run::watch_input(input);
}

}  // namespace mb::io::source
