#include "io/publish/uploader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>

#include "core/error.hpp"
#include "io/remote/upload.hpp"
#include "io/run/exit.hpp"
#include "io/run/fd.hpp"
#include "io/run/fork.hpp"
#include "io/run/guard.hpp"

namespace mb::io::publish {
namespace {

// How long a failed run waits for the uploading process to delete what it created.
constexpr auto kCleanupWait = std::chrono::seconds(120);

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = run::retry_on_eintr([&] { return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL); });
    if (n <= 0) throw environment_error("the uploading process ended unexpectedly (its socket is closed)");
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

// One line of a report: no newline inside it.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

// The uploading process: a queue of file indices, `concurrency` threads
// taking from it, and reports written back to the parent.
class Uploads {
 public:
  Uploads(const UploadPlan& plan, int fd)
      : plan_(plan), fd_(fd), started_(plan.files.size()), confirmed_(plan.files.size()), journals_(plan.files.size()) {}

  int serve() {
    for (unsigned t = 0; t < plan_.concurrency; ++t) threads_.emplace_back([this] { work(); });
    const bool commit = read_commands();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
      if (!commit) cancel_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
    if (commit && !failed_) return finish();
    clean_up();
    return 1;
  }

 private:
  // Reads commands until the manifest arrives (true) or the parent goes (false).
  bool read_commands() {
    std::string buffer;
    char chunk[4096];
    while (true) {
      const auto newline = buffer.find('\n');
      if (newline != std::string::npos && buffer[0] == 'u') {  // "u INDEX LENGTH\n" and the journal entry
        std::size_t index = 0, length = 0;
        std::sscanf(buffer.c_str(), "u %zu %zu", &index, &length);
        if (buffer.size() >= newline + 1 + length) {
          {
            std::lock_guard<std::mutex> lock(mutex_);
            journals_.at(index) = buffer.substr(newline + 1, length);
          }
          push(index);
          buffer.erase(0, newline + 1 + length);
          continue;
        }
      }
      if (newline != std::string::npos && buffer[0] == 'm') {
        const std::size_t length = std::stoull(buffer.substr(2, newline - 2));
        if (buffer.size() >= newline + 1 + length) {
          manifest_ = buffer.substr(newline + 1, length);
          return true;
        }
      }
      const ssize_t n = run::retry_on_eintr([&] { return ::recv(fd_, chunk, sizeof chunk, 0); });
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }

  void push(std::size_t index) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(index);
    }
    ready_.notify_one();
  }

  void report(const std::string& line) {
    std::lock_guard<std::mutex> lock(report_mutex_);
    try {
      write_all(fd_, line + "\n");
    } catch (const Error&) {
      cancel_ = true;  // the parent is gone: what is up gets deleted
    }
  }

  void work() {
    remote::Client client(plan_.settings, &cancel_);
    while (true) {
      std::size_t index;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return cancel_ || !queue_.empty() || closing_; });
        if (cancel_ || queue_.empty()) return;
        index = queue_.front();
        queue_.pop_front();
        started_[index] = 1;
      }
      upload(client, index);
    }
  }

  void upload(remote::Client& client, std::size_t index) {
    const UploadItem& item = plan_.files[index];
    try {
      std::string journal;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        journal = journals_[index];
      }
      // The entry before its file: a kill between the two leaves an entry without its object, which a
      // rerun drops, never an object no entry vouches for.
      if (!journal.empty()) remote::put_text(client, item.journal, journal);
      const remote::Uploaded up = remote::put_file(client, item.address, item.path);
      if (item.remove) ::unlink(item.path.c_str());
      confirmed_[index] = 1;
      report(fmt::format("ok {} {}", index, up.size));
    } catch (const Error& e) {
      fail(e.what(), static_cast<int>(e.kind()));
    } catch (const std::exception& e) {
      fail(fmt::format("internal error: {}", e.what()), 1);
    }
  }

  void fail(const std::string& message, int kind) {
    if (cancel_.exchange(true)) return;  // the first failure is the one to tell
    failed_ = true;
    ready_.notify_all();
    report(fmt::format("fail {} {}", kind, one_line(message)));
  }

  int finish() {
    try {
      plan_.commit(manifest_);
    } catch (const remote::Exists& e) {
      // Another run's commit stands, over files of the same names: they are left as they are (two runs of one
      // command wrote the same bytes), and verify tells whether the split that stands is whole.
      report(fmt::format("fail {} {}; this run's files are left as they stand: check the split with `microbatch "
                         "verify`",
                         static_cast<int>(e.kind()), one_line(e.what())));
      return 1;
    } catch (const Error& e) {  // the commit undone already, where it may have landed
      report(fmt::format("fail {} {}", static_cast<int>(e.kind()), one_line(e.what())));
      clean_up();
      return 1;
    }
    remote::Client client(plan_.settings);
    for (const RemoteAddress& old : plan_.stale) remove(client, old);
    report("committed");
    return 0;
  }

  // Deletes every object an upload was started for (it may have landed
  // although its answer did not), but those confirmed with their journal
  // entries when they are to stay.
  void clean_up() {
    remote::Client client(plan_.settings);
    std::size_t deleted = 0;
    for (std::size_t i = 0; i < started_.size(); ++i) {
      if (!started_[i] || (plan_.keep_confirmed && confirmed_[i])) continue;
      deleted += remove(client, plan_.files[i].address);
      if (!journals_[i].empty()) remove(client, plan_.files[i].journal);
    }
    spdlog::debug("uploads abandoned: {} objects deleted", deleted);
  }

  bool remove(remote::Client& client, const RemoteAddress& address) {
    try {
      remote::delete_object(client, address);
      return true;
    } catch (const std::exception& e) {
      report(fmt::format("left {}\t{}", shown_name(address.name), one_line(e.what())));
      return false;
    }
  }

  const UploadPlan& plan_;
  int fd_;
  std::vector<char> started_;
  std::vector<std::atomic<char>> confirmed_;  // up, with its journal entry
  std::vector<std::string> journals_;         // by index, under mutex_
  std::vector<std::thread> threads_;
  std::mutex mutex_, report_mutex_;
  std::condition_variable ready_;
  std::deque<std::size_t> queue_;
  bool closing_ = false;
  std::atomic<bool> cancel_{false}, failed_{false};
  std::string manifest_;
};

// The parent decides when to stop: a stop signal reaches it (run::fork_helper
// leaves them ignored here), and it closes the socket.
[[noreturn]] void run_uploads(const UploadPlan& plan, int fd, pid_t parent) {
  int status = 1;
  try {
    status = Uploads(plan, fd).serve();
    // A parent killed outright (SIGKILL) removes nothing: its spool goes with its uploads.
    std::error_code ec;
    if (status != 0 && ::getppid() != parent && !plan.spool.empty()) std::filesystem::remove_all(plan.spool, ec);
  } catch (...) {
  }
  run::exit_now(status);
}

}  // namespace

Uploader::Uploader(UploadPlan plan) : plan_(std::move(plan)) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(fmt::format("cannot create a socket for the uploads: {}", std::strerror(errno)));
  run::Fd ours(fds[0]), theirs(fds[1]);
  const pid_t parent = ::getpid();
  pid_ = run::fork_helper({.keep = {theirs.get()},
                           .prepare = [] { run::enter_worker(); },
                           .what = "the uploading process"});
  if (pid_ == 0) run_uploads(plan_, theirs.get(), parent);  // ends in _exit: no destructor runs in the child
  fd_ = std::move(ours);  // `theirs` closes on return: the child holds that end
}

void Uploader::upload(std::size_t index, const std::string& journal) {
  collect(0);
  throw_if_failed();
  write_all(fd_.get(), fmt::format("u {} {}\n", index, journal.size()) + journal);
  ++sent_;
}

void Uploader::handle(const std::string& line) {
  if (line.starts_with("ok ")) {
    ++confirmed_;
    bytes_ += std::stoull(line.substr(line.rfind(' ') + 1));
    if (plan_.confirmed) plan_.confirmed(bytes_);
  } else if (line.starts_with("fail ")) {
    const auto kind = static_cast<ErrorKind>(std::stoi(line.substr(5)));
    if (!failure_) failure_ = Error(line.substr(line.find(' ', 5) + 1), kind);
  } else if (line.starts_with("left ")) {
    left_.push_back(line.substr(5));
  } else if (line == "committed") {
    committed_ = true;
  }
}

void Uploader::collect(int wait_ms) {
  pollfd pfd{fd_.get(), POLLIN, 0};
  const int ready = run::retry_on_eintr([&] { return ::poll(&pfd, 1, wait_ms); });
  if (ready <= 0) return;
  char chunk[4096];
  const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, MSG_DONTWAIT);
  if (n == 0) ended_ = true;
  if (n <= 0) return;
  incoming_.append(chunk, static_cast<std::size_t>(n));
  for (auto newline = incoming_.find('\n'); newline != std::string::npos; newline = incoming_.find('\n')) {
    const std::string line = incoming_.substr(0, newline);
    incoming_.erase(0, newline + 1);
    handle(line);
  }
}

void Uploader::throw_if_failed() const {
  if (failure_) throw *failure_;
  if (ended_) throw environment_error("the uploading process ended unexpectedly");
}

void Uploader::wait_for(std::size_t at_most) {
  collect(0);
  throw_if_failed();
  while (sent_ - confirmed_ > at_most) {
    run::throw_if_interrupted();
    run::note_progress();  // waiting for the network is not the library stalling
    collect(200);
    throw_if_failed();
  }
}

void Uploader::commit(const std::string& manifest_text) {
  wait_for(0);
  write_all(fd_.get(), fmt::format("m {}\n", manifest_text.size()) + manifest_text);
  while (!committed_) {
    run::throw_if_interrupted();
    run::note_progress();
    collect(200);
    if (!committed_) throw_if_failed();
  }
  for (const auto& l : left_) spdlog::warn("an earlier split's object was not deleted: {}", l.substr(l.find('\t') + 1));
}

std::string Uploader::abandon() {
  if (pid_ < 0) return "";
  ::shutdown(fd_.get(), SHUT_WR);  // without the manifest: the process abandons the uploads and deletes what it created
  const auto until = std::chrono::steady_clock::now() + kCleanupWait;
  while (!ended_ && std::chrono::steady_clock::now() < until) collect(200);
  if (!ended_) ::kill(pid_, SIGKILL);
  fd_.reset();
  int status = 0;
  run::retry_on_eintr([&] { return ::waitpid(pid_, &status, 0); });
  pid_ = -1;
  if (committed_ || left_.empty()) return "";
  std::vector<std::string> urls;
  for (const auto& l : left_) urls.push_back(l.substr(0, l.find('\t')));
  return fmt::format(" ({} uploaded objects could not be deleted: {}; {})", left_.size(), fmt::join(urls, ", "),
                     left_.front().substr(left_.front().find('\t') + 1));
}

Uploader::~Uploader() {
  if (const std::string left = abandon(); !left.empty()) spdlog::error("the split failed{}", left);
}

}  // namespace mb::io::publish
