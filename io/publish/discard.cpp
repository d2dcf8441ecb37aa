#include "io/publish/discard.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "io/run/exit.hpp"
#include "io/run/fork.hpp"
#include "io/run/fd.hpp"
#include "specs/file_names.hpp"

namespace mb::io::publish {
namespace {

// The removing process: unlinks each name it reads (a name that cannot be
// removed stays a leftover for the next run) until the socket closes. It
// stops when the run does not: stop signals are the parent's to act on
// (run::fork_helper leaves them ignored). System calls only.
[[noreturn]] void remove_names(int fd) {
  char buffer[8192];
  std::size_t held = 0;
  for (;;) {
    const ssize_t n = run::retry_on_eintr([&] { return ::read(fd, buffer + held, sizeof buffer - held); });
    if (n <= 0) run::exit_now(0);
    held += static_cast<std::size_t>(n);
    std::size_t start = 0;
    for (std::size_t i = 0; i < held; ++i) {
      if (buffer[i] != '\n') continue;
      buffer[i] = '\0';
      ::unlink(buffer + start);
      start = i + 1;
    }
    std::memmove(buffer, buffer + start, held - start);
    held -= start;
    if (held == sizeof buffer) run::exit_now(1);  // no name is that long (PATH_MAX is 4096)
  }
}

// The releasing process, holding no descriptor but `held` and the gate (and
// the standard streams): waits until the run has dropped its own copy of
// `held` (the gate's end of file: the run closes its end after that copy),
// then drops `held`, the last reference. System calls only, no allocation,
// no lock: it was forked from a run that may have other threads.
[[noreturn]] void release(int held, int gate) {
  char byte = 0;
  while (::syscall(SYS_read, gate, &byte, 1) != 0 && errno == EINTR) {
  }
  ::syscall(SYS_close, held);
  ::syscall(SYS_exit_group, 0);
  __builtin_unreachable();
}

}  // namespace

void release_in_background(run::Fd held) {
  if (!held.valid()) return;
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return;
  run::Fd gate_out(gate[0]), gate_in(gate[1]);
  // Both processes keep every signal blocked (run::fork_helper): a Ctrl-C
  // meant for the run never runs the run's handlers in them.
  pid_t child = -1;
  try {
    child = run::fork_helper({.kind = run::Helper::Kind::system_calls,
                              .keep = {held.get(), gate_out.get()},
                              .what = "a process to release the replaced file"});
  } catch (const Error&) {
    return;  // the run frees the file itself, as it closes it
  }
  if (child == 0) {  // forks the releasing process and ends, so that it is no child of the run's
    if (::syscall(SYS_fork) == 0) release(held.get(), gate_out.get());
    ::syscall(SYS_exit_group, 0);
  }
  int status = 0;
  run::retry_on_eintr([&] { return ::waitpid(child, &status, 0); });
  held.reset();  // before the gate's end: the releasing process keeps the last reference
  gate_in.reset();
}

std::string aside_name(const std::string& path) {
  const std::filesystem::path p(path);
  return (p.parent_path() / specs::aside_name(p.filename().string(), ::getpid())).string();
}

void Discards::start() {
  int fds[2];  // a socket, not a pipe: a write to a process that is gone fails instead of raising SIGPIPE
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw Error(fmt::format("cannot create a socket: {}", std::strerror(errno)));
  run::Fd ours(fds[0]), theirs(fds[1]);
  pid_ = run::fork_helper({.kind = run::Helper::Kind::system_calls,
                           .keep = {theirs.get()},
                           .what = "a process to remove files"});
  if (pid_ == 0) remove_names(theirs.get());
  pipe_ = std::move(ours);
}

void Discards::discard(const std::string& path) {
  const std::string aside = aside_name(path);
  if (std::rename(path.c_str(), aside.c_str()) != 0) {
    if (errno == ENOENT) return;
    throw Error(fmt::format("{}: cannot remove: {}", path, std::strerror(errno)), kind_of_errno(errno));
  }
  if (pid_ < 0) start();
  const std::string line = aside + "\n";
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = run::retry_on_eintr(
        [&] { return ::send(pipe_.get(), line.data() + done, line.size() - done, MSG_NOSIGNAL); });
    if (n <= 0) {  // the process is gone: remove it here
      ::unlink(aside.c_str());
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

Discards::~Discards() {
  if (pid_ < 0) return;
  pipe_.reset();  // the end of the names
  int status = 0;
  run::retry_on_eintr([&] { return ::waitpid(pid_, &status, 0); });
}

}  // namespace mb::io::publish
