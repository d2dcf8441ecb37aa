#include "io/publish/discard.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/run/threads.hpp"

namespace mb::io::publish {

std::string aside_name(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / fmt::format(".{}.aside-{}", p.filename().string(), ::getpid())).string();
}

void Discards::discard(const std::string& path) {
  const std::string aside = aside_name(path);
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw Error(fmt::format("{}: cannot remove: {}", path, std::strerror(errno)), kind_of_errno(errno));
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(aside);
  if (!thread_.joinable()) thread_ = run::background_thread([this] { run(); });
  ready_.notify_one();
}

void Discards::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ready_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, and nothing left
    const std::string path = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    ::unlink(path.c_str());  // one that cannot be removed stays a leftover for the next run
    lock.lock();
  }
}

Discards::~Discards() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  ready_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace mb::io::publish
