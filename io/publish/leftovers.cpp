#include "io/publish/leftovers.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "io/run/fd.hpp"
#include "specs/file_names.hpp"

namespace mb::io::publish {
namespace fs = std::filesystem;
namespace {

// Someone holds the flock(2) on `path` (a lock file that nobody holds is a
// killed run's, harmless).
bool is_held(const fs::path& path) {
  const run::Fd fd = run::open_fd(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (!fd.valid()) return false;  // gone meanwhile: its run ended
  // Closing `fd` on return releases the lock taken to test it.
  return ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

// .NAME.tmp-PID or .NAME.rank-R-of-P.scratch, for `name` NAME.
bool is_merge_leftover(const std::string& entry, const std::string& name) {
  return specs::temporary_of(entry) == name || specs::scratch_of(entry) == name;
}

void remove_leftover(const fs::path& path) {
  std::error_code ec;
  fs::remove(path, ec);  // false without an error: gone already
  if (ec) throw Error(fmt::format("{}: cannot remove what a killed run left: {}", path.string(), ec.message()));
  spdlog::debug("{}: removed, left by a run that was killed", path.string());
}

}  // namespace

std::size_t remove_split_leftovers(const std::string& dir) {
  std::vector<fs::path> temporaries;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (specs::is_shard_lock_name(name) && is_held(entry.path()))
      throw environment_error(fmt::format("{}: a shard run (split --shard) is writing into it (it holds {}); wait "
                                          "for it to finish or choose another output directory",
                                          dir, name));
    std::error_code type;  // the listing's own error stays in `ec`
    // A journal entry is no temporary: it tells a --resume run what to keep.
    if (name.starts_with(".") && specs::is_split_name(name) && !specs::is_journal_name(name) &&
        entry.is_regular_file(type))
      temporaries.push_back(entry.path());
  }
  if (ec) throw Error(dir + ": cannot list the output directory: " + ec.message());
  std::size_t lost = 0;
  for (const auto& p : temporaries) {
    remove_leftover(p);
    // A file's work: not an .aside (an earlier split's file), a journal entry's or a manifest's temporary.
    const std::optional<std::string> of = specs::temporary_of(p.filename().string());
    lost += of && specs::is_output_file_name(*of);
  }
  return lost;
}

OutputLock lock_merge_output(const std::string& output) {
  const fs::path out(output);
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  const std::string name = out.filename().string();
  OutputLock lock((dir / specs::file_lock_name(name)).string(), output);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::error_code type;  // the listing's own error stays in `ec`
    if (is_merge_leftover(entry.path().filename().string(), name) && entry.is_regular_file(type))
      remove_leftover(entry.path());
  }
  if (ec) throw Error(fmt::format("{}: cannot list its directory: {}", output, ec.message()));
  return lock;
}

}  // namespace mb::io::publish
