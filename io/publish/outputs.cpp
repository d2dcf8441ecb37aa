#include "io/publish/outputs.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "io/publish/discard.hpp"
#include "io/run/fd.hpp"
#include "io/run/guard.hpp"
#include "specs/journal.hpp"
#include "specs/manifest.hpp"

namespace mb::io::publish {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// `what` failed with the current errno: its text, and whether a retry may cure it (no space, an I/O error).
Error system_error(const std::string& what) { return Error(what + ": " + errno_text(), kind_of_errno(errno)); }

}  // namespace

namespace {

// What stands at `path`, not following a symbolic link: "" for nothing.
std::string what_is_at(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";  // absent (or unreachable: creating it fails with the reason)
  if (S_ISREG(st.st_mode)) return "a regular file";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "a special file";
}

// Replacing a FIFO, a device node or a symbolic link by a regular file
// would destroy something that is not an earlier output (as root,
// `-o /dev/null --force` would replace /dev/null itself).
}  // namespace

void refuse_unless_regular(const std::string& path) {
  const std::string what = what_is_at(path);
  if (!what.empty() && what != "a regular file")
    throw Error(fmt::format("{}: exists and is {}, not a regular file; refusing to replace it", path, what));
}

namespace {

[[noreturn]] void appeared(const std::string& path) {
  throw Error(path + ": appeared while this run was writing it (another run writing the same output?); it was "
              "not replaced");
}

// rename(2) that fails instead of replacing an existing name: renameat2's
// RENAME_NOREPLACE where the filesystem has it, else link(2) + unlink(2),
// which is just as atomic (and what NFS offers).
void rename_exclusive(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
  if (errno == EEXIST) appeared(to);
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    throw system_error(to + ": cannot rename the finished output into place");
  if (::link(from.c_str(), to.c_str()) == 0) {
    ::unlink(from.c_str());
    return;
  }
  if (errno == EEXIST) appeared(to);
  if (errno != EPERM && errno != EOPNOTSUPP)
    throw system_error(to + ": cannot rename the finished output into place");
  // No hard links either (FAT-like filesystems): check, then rename.
  if (!what_is_at(to).empty()) appeared(to);
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw system_error(to + ": cannot rename the finished output into place");
}

void publish_one(const std::string& from, const std::string& to, const std::optional<run::FileIdentity>& replaces) {
  if (!replaces || what_is_at(to).empty()) return rename_exclusive(from, to);
  refuse_unless_regular(to);  // again: it may have changed since the job started
  if (run::identity_of(to) != replaces)
    throw Error(to + ": was replaced while this run was writing it (another run writing the same output?); it was "
                "not replaced again");
  // Held across the rename, so that the replaced file is freed in the background, not in the rename.
  run::Fd replaced = run::open_fd(to, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw system_error(to + ": cannot rename the finished output into place");
  release_in_background(std::move(replaced));
}

bool same_file(int fd, const std::string& path) {
  struct stat held {}, named {};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
         held.st_ino == named.st_ino;
}

}  // namespace

std::string temporary_name(const std::string& final_path) {
  const fs::path p(final_path);
  return (p.parent_path() / specs::temporary_name(p.filename().string(), getpid())).string();
}

std::string AtomicOutputs::add(const std::string& final_path, std::optional<run::FileIdentity> replaces) {
  entries_.push_back({temporary_name(final_path), final_path, replaces, false});
  run::register_temporary(entries_.back().temp);
  return entries_.back().temp;
}

void AtomicOutputs::publish() {
  run::throw_if_interrupted();  // a stop signal that came after the last copy: an interrupted run publishes nothing
  run::check_inputs_unchanged();
  for (auto& e : entries_) {
    if (e.published) continue;
    publish_one(e.temp, e.final_path, e.replaces);
    e.published = true;
  }
}

void AtomicOutputs::publish(std::size_t k) {
  run::throw_if_interrupted();
  run::check_inputs_unchanged();
  Entry& e = entries_.at(k);
  publish_one(e.temp, e.final_path, e.replaces);
  e.published = true;
}

void AtomicOutputs::stands(std::size_t k) {
  Entry& e = entries_.at(k);
  e.published = true;
  e.kept = true;
}

ScratchFile::ScratchFile(std::string path) : path_(std::move(path)) {
  refuse_unless_regular(path_);
  std::error_code ec;
  if (std::filesystem::exists(path_, ec))
    throw Error(fmt::format("{}: exists: another run is using this output, or one was killed (remove it)", path_));
  run::register_temporary(path_);
}

ScratchFile::~ScratchFile() {
  run::unregister_temporary(path_);
  std::remove(path_.c_str());
}

AtomicOutputs::~AtomicOutputs() {
  for (auto e = entries_.rbegin(); e != entries_.rend(); ++e) run::unregister_temporary(e->temp);  // from the back
  if (kept_) return;
  for (const auto& e : entries_) {
    if (e.kept || (e.published && keep_published_)) continue;
    std::remove((e.published ? e.final_path : e.temp).c_str());
  }
}

OutputLock::OutputLock(const std::string& lock_path, const std::string& output) : path_(lock_path) {
  // A run that finishes removes its lock file; one that opened the file just
  // before would then hold a lock on a removed file while a third run locks
  // a new one. So the locked file must still be the one under the name.
  for (int attempt = 0; attempt < 8; ++attempt) {
    run::Fd fd = run::open_fd(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (!fd.valid()) throw system_error(fmt::format("{}: cannot create the lock file {}", output, lock_path));
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      if (error == EWOULDBLOCK)
        throw environment_error(fmt::format("{}: another microbatch run is writing this output (it holds {}); wait "
                                            "for it to finish or choose another output",
                                            output, lock_path));
      throw Error(fmt::format("{}: cannot lock {}: {}", output, lock_path, std::strerror(error)));
    }
    if (same_file(fd.get(), lock_path)) {
      fd_ = std::move(fd);
      run::register_temporary(path_);  // removed on a forced exit too
      return;
    }
  }
  throw Error(fmt::format("{}: cannot lock {}: other runs keep replacing it", output, lock_path));
}

OutputLock::OutputLock(OutputLock&& other) noexcept : fd_(std::move(other.fd_)), path_(other.path_) {}

OutputLock::~OutputLock() {
  if (!fd_.valid()) return;
  run::unregister_temporary(path_);
  ::unlink(path_.c_str());  // while still held: a run waiting on this file then sees it replaced
  fd_.reset();
}

void write_text_atomically(const std::string& path, const std::string& text, Sync sync) {
  const std::string temp = temporary_name(path);
  // O_EXCL | O_NOFOLLOW: never write through something planted under the temporary name.
  run::Fd fd = run::open_fd(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (!fd.valid()) throw system_error(path + ": cannot write");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = run::retry_on_eintr([&] { return ::write(fd.get(), text.data() + done, text.size() - done); });
    if (n <= 0) {
      const Error failed = system_error(path + ": cannot write");
      fd.reset();
      std::remove(temp.c_str());
      throw failed;
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = sync == Sync::No || ::fsync(fd.get()) == 0;
  const bool closed = fd.close();
  if (!synced || !closed) {
    const Error failed = system_error(path + ": cannot write");
    std::remove(temp.c_str());
    throw failed;
  }
  try {
    run::throw_if_interrupted();
    run::check_inputs_unchanged();
    rename_exclusive(temp, path);
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
}

CreatedDirectories::CreatedDirectories(const std::string& dir) {
  // The missing directories from `dir` up to the first that exists.
  fs::path p(dir);
  while (!p.has_filename() && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();  // "mb/" is "mb"
  std::vector<std::string> missing;
  std::error_code ec;
  for (; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) missing.push_back(p.string());
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0777) == 0) {
      paths_.push_back(*it);
      run::register_temporary(*it);  // io/run/guard rmdirs it on a forced exit
    } else if (errno != EEXIST) {  // one that appeared meanwhile is not ours to remove
      throw system_error(dir + ": cannot create the output directory");
    }
  }
}

CreatedDirectories::CreatedDirectories(CreatedDirectories&& other) noexcept
    : paths_(std::exchange(other.paths_, {})), kept_(other.kept_) {}

CreatedDirectories::~CreatedDirectories() {
  for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) {
    run::unregister_temporary(*it);
    if (!kept_) ::rmdir(it->c_str());  // fails, leaving it, if anything else is in it
  }
}

void check_directory_unchanged(const std::string& dir, const std::vector<std::string>& ours) {
  std::set<std::string> own;
  for (const auto& p : ours) own.insert(fs::path(p).filename().string());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    // This run's own: its temporaries, journal entries, and the earlier split's files it set aside.
    if (specs::aside_of(name, getpid())) continue;
    if (specs::is_split_name(name) && !specs::is_journal_name(name) && !own.contains(name))
      throw Error(fmt::format("{}: {} appeared while this split was writing (another run in the same directory?); "
                              "nothing was published",
                              dir, name));
  }
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
}

std::optional<run::FileIdentity> prepare_output_file(const std::string& output, bool force) {
  std::error_code ec;
  if (fs::is_directory(output, ec)) throw Error(output + ": the output path is a directory");
  if (what_is_at(output).empty()) return std::nullopt;
  refuse_unless_regular(output);
  if (!force) throw Error(output + ": the output exists; use --force to replace it");
  return run::identity_of(output);
}

}  // namespace mb::io::publish
