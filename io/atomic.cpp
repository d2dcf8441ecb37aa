#include "io/atomic.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/guard.hpp"

namespace mb::io {
namespace {

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::string temporary_name(const std::string& final_path) {
  const std::filesystem::path p(final_path);
  const std::string name = "." + p.filename().string() + ".tmp-" + std::to_string(getpid());
  return (p.parent_path() / name).string();
}

std::string AtomicOutputs::add(const std::string& final_path) {
  entries_.push_back({temporary_name(final_path), final_path, false});
  register_temporary(entries_.back().temp);
  return entries_.back().temp;
}

void AtomicOutputs::publish() {
  for (auto& e : entries_) {
    if (std::rename(e.temp.c_str(), e.final_path.c_str()) != 0)
      throw Error(e.final_path + ": cannot rename the finished output into place: " + errno_text());
    e.published = true;
  }
}

AtomicOutputs::~AtomicOutputs() {
  for (const auto& e : entries_) unregister_temporary(e.temp);
  if (kept_) return;
  for (const auto& e : entries_) std::remove((e.published ? e.final_path : e.temp).c_str());
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string temp = temporary_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": cannot write: " + errno_text());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      std::remove(temp.c_str());
      throw Error(path + ": cannot write: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const bool closed = ::close(fd) == 0;
  if (!synced || !closed) {
    const std::string why = errno_text();
    std::remove(temp.c_str());
    throw Error(path + ": cannot write: " + why);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    std::remove(temp.c_str());
    throw Error(path + ": cannot rename into place: " + why);
  }
}

}  // namespace mb::io
