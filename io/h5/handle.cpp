#include "io/h5/handle.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>

#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/h5/library.hpp"

namespace mb::io::h5 {
namespace {

std::size_t g_failed_closes = 0;
std::optional<Error> g_driver_error;  // the library is not thread-safe: neither is this

// Collects the HDF5 error stack: the innermost message for the user, the
// whole stack for the debug log.
struct StackText {
  std::string innermost;
  std::string all;
};

// HDF5's messages may span lines (a failed write prints a timestamp with a
// newline); ours are one line.
std::string one_line(const char* text) {
  std::string out;
  bool space = false;
  for (const char* p = text; *p; ++p) {
    const bool blank = *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t';
    if (blank) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += *p;
  }
  return out;
}

herr_t walk_entry(unsigned n, const H5E_error2_t* e, void* data) {
  auto* text = static_cast<StackText*>(data);
  text->all += fmt::format("\n  #{} {}: {}", n, e->func_name ? e->func_name : "?", e->desc ? e->desc : "");
  if (e->desc && *e->desc) text->innermost = one_line(e->desc);  // walking down: the last is the root cause
  return 0;
}

StackText current_stack() {
  StackText text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_entry, &text);
  H5Eclear2(H5E_DEFAULT);
  return text;
}

// A failed system call reads "... errno = 27, error message = 'File too
// large', ...": the errno text is what the user needs.
std::string root_cause(std::string cause) {
  const std::string marker = "error message = '";
  if (auto at = cause.find(marker); at != std::string::npos) {
    const auto from = at + marker.size();
    cause = cause.substr(from, cause.find('\'', from) - from);
  }
  return cause;
}

// The errno a failed system call's message carries ("errno = 28, ..."), or 0:
// no space and I/O errors are worth a retry, not a fix of the input.
int errno_in(const std::string& cause) {
  const std::string marker = "errno = ";
  const auto at = cause.find(marker);
  return at == std::string::npos ? 0 : std::atoi(cause.c_str() + at + marker.size());
}

herr_t find_not_hdf5(unsigned, const H5E_error2_t* e, void* data) {
  if (e->min_num == H5E_NOTHDF5) *static_cast<bool*>(data) = true;
  return 0;
}

}  // namespace

bool stack_says_not_hdf5() {
  bool found = false;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_not_hdf5, &found);
  return found;
}

void fail(const Location& where, const std::string& action) {
  StackText stack = current_stack();
  stack.all = scrub_urls(stack.all);  // the library names the file as it was opened
  if (g_driver_error) {
    spdlog::debug("HDF5 error stack for {} ({}):{}", where.describe(), action, stack.all);
    const Error e = *std::exchange(g_driver_error, std::nullopt);
    throw e;
  }
  spdlog::debug("HDF5 error stack for {} ({}):{}", where.describe(), action, stack.all);
  const std::string cause = root_cause(stack.innermost);
  const ErrorKind kind = kind_of_errno(errno_in(stack.innermost));
  const Where at{where.file, where.path};
  if (cause.empty()) throw Error(fmt::format("{}: {}", where.describe(), action), kind, at);
  throw Error(fmt::format("{}: {} ({})", where.describe(), action, cause), kind, at);
}

void forget_error() {
  H5Eclear2(H5E_DEFAULT);
  g_driver_error.reset();
}

bool driver_failed() { return g_driver_error.has_value(); }

void note_driver_error(const Error& error) {
  if (!g_driver_error) g_driver_error = error;  // the first failure is the cause of the others
}

void Id::reset() {
  if (id_ < 0) return;
  if (H5Iis_valid(id_) > 0 && H5Idec_ref(id_) < 0) {
    ++g_failed_closes;
    H5Eclear2(H5E_DEFAULT);
  }
  id_ = H5I_INVALID_HID;
}

void Id::close(const Location& where) {
  if (id_ < 0) return;
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  herr_t rc;
  switch (H5Iget_type(id)) {
    case H5I_FILE: rc = H5Fclose(id); break;
    case H5I_DATASET: rc = H5Dclose(id); break;
    case H5I_GROUP: rc = H5Gclose(id); break;
    case H5I_ATTR: rc = H5Aclose(id); break;
    default: rc = H5Idec_ref(id) < 0 ? -1 : 0; break;
  }
  if (rc < 0) ++g_failed_closes;
  check(rc, where, "cannot close (data may not have been written)");
}

Id share(hid_t id) {
  if (H5Iinc_ref(id) < 0) {
    forget_error();
    return {};
  }
  return Id(id);
}

Id open_object(hid_t base, const std::string& path, const Location& where) {
  return Id(H5Oopen(base, path.c_str(), H5P_DEFAULT), where, "cannot open");
}


void init_library() {
  H5dont_atexit();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  // libhdf5 keeps freed blocks on its own free lists, without limit by
  // default: memory once used for many objects (a virtual dataset's every
  // mapping, thousands of inputs' metadata) would stay taken. 1 MiB per
  // kind of list is enough for reuse.
  H5set_free_list_limits(1 << 20, 1 << 18, 1 << 20, 1 << 18, 1 << 20, 1 << 18);
}

std::size_t failed_closes() { return h5::g_failed_closes; }

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) < 0) return "unknown";
  return fmt::format("{}.{}.{}", major, minor, release);
}

std::size_t open_object_count() {
  const ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

}  // namespace mb::io::h5
