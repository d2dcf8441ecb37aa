#include "io/run/identity.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include "core/error.hpp"
#include "specs/manifest.hpp"

namespace mb::io::run {
namespace {

std::int64_t nanoseconds(const timespec& t) { return t.tv_sec * 1'000'000'000LL + t.tv_nsec; }

FileIdentity identity(const struct stat& st) {
  return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
          static_cast<std::uint64_t>(st.st_size), nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

// An input as it is read: through a symbolic link, the file it names.
std::optional<FileIdentity> followed_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return identity(st);
}

// How `now` differs from `before`, in words that need no allocation; null
// when it does not.
const char* change_of(const FileIdentity& before, const FileIdentity& now) {
  if (before.device != now.device || before.inode != now.inode) return "another file now has its name";
  if (before.size != now.size) return "its size changed";
  if (before.mtime_ns != now.mtime_ns) return "it was written to";
  if (before.ctime_ns != now.ctime_ns) return "it was written to, or its times or permissions were set";
  return nullptr;
}

struct Watched {
  std::string shown;
  std::optional<FileIdentity> found;  // none: it could not be stat'ed (opening it fails with the reason)
};

class Watch {
 public:
  void add(const Source& input) {
    const std::lock_guard<std::mutex> hold(mutex_);
    if (!inputs_.contains(input.name())) inputs_.emplace(input.name(), Watched{input.shown(), followed_identity(input.name())});
  }
  std::optional<Error> change() {
    const std::lock_guard<std::mutex> hold(mutex_);
    for (const auto& [path, w] : inputs_) {
      if (!w.found) continue;
      const std::optional<FileIdentity> now = followed_identity(path);
      const std::string d = now ? difference(*w.found, *now) : "it is no longer there";
      if (!d.empty())
        return Error(fmt::format("{}: changed while it was read ({}); nothing was published", w.shown, d),
                     ErrorKind::Environment, Where{w.shown, ""});
    }
    return std::nullopt;
  }
  // change() for a signal handler: no lock (see changed_input_in_handler), no allocation.
  ChangedInput change_in_handler() const {
    for (const auto& [path, w] : inputs_) {
      if (!w.found) continue;
      struct stat st {};
      const char* how = ::stat(path.c_str(), &st) != 0 ? "it is no longer there" : change_of(*w.found, identity(st));
      if (how != nullptr) return {w.shown.c_str(), how};
    }
    return {};
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Watched> inputs_;
};

// The thread that added the watch's first input (0: none yet). A signal
// handler reads the watch only on that thread (stopped in a library call,
// not adding to it) and never before it exists (its static's first use
// would run its initialisation inside the handler).
constinit std::atomic<pthread_t> g_watcher{0};

Watch& watch() {
  static Watch w;
  return w;
}

}  // namespace

std::optional<FileIdentity> identity_of(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return identity(st);
}

std::string difference(const FileIdentity& before, const FileIdentity& now) {
  if (before.device == now.device && before.inode == now.inode && before.size != now.size)
    return fmt::format("{} bytes, now {}", before.size, now.size);
  const char* how = change_of(before, now);
  return how != nullptr ? how : "";
}

std::string identity_term(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "(missing)";
  if (S_ISDIR(st.st_mode)) {
    const std::string manifest = (std::filesystem::path(path) / specs::kManifestName).string();
    if (::stat(manifest.c_str(), &st) != 0) return "(a directory without manifest.json)";
  }
  if (!S_ISREG(st.st_mode)) return "(not a regular file)";
  return fmt::format("{} bytes, modified at {} ns", st.st_size, nanoseconds(st.st_mtim));
}

void watch_input(const Source& input) {
  watch().add(input);
  pthread_t none{};
  g_watcher.compare_exchange_strong(none, pthread_self());
}

void check_inputs_unchanged() {
  if (std::optional<Error> changed = watch().change()) throw *changed;
}

std::optional<Error> input_change() { return watch().change(); }

ChangedInput changed_input_in_handler() {
  const pthread_t watcher = g_watcher.load();
  if (watcher == pthread_t{} || !pthread_equal(watcher, pthread_self())) return {};
  return watch().change_in_handler();
}

}  // namespace mb::io::run
