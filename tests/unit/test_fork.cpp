// run::fork_helper: a helper starts with its own signal dispositions (stop
// signals ignored, crash signals default; or a worker's, the run's), runs
// `prepare` before it takes a signal, keeps only the descriptors it was
// given, and no whole process is forked while a ForkUnsafe lives.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

#include "core/error.hpp"
#include "io/run/exit.hpp"
#include "io/run/fd.hpp"
#include "io/run/fork.hpp"

using mb::io::run::ForkUnsafe;
using mb::io::run::Helper;
using mb::io::run::fork_helper;

namespace {

extern "C" void on_test_signal(int) {}

// What the child saw, as letters: one per question, 'y' or 'n'.
char yes(bool b) { return b ? 'y' : 'n'; }

bool handled_by(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  ::sigaction(sig, nullptr, &sa);
  return sa.sa_handler == handler;
}

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

// Runs `helper` with `child` as the child's work; returns what it wrote to the pipe.
template <class Child>
std::string observe(Helper helper, Child child) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  mb::io::run::Fd read_end(fds[0]), write_end(fds[1]);
  helper.keep.push_back(write_end.get());
  const pid_t pid = fork_helper(helper);
  if (pid == 0) {
    const std::string seen = child();
    (void)!::write(write_end.get(), seen.data(), seen.size());
    mb::io::run::exit_now(0);
  }
  write_end.reset();
  std::string seen;
  char buffer[64];
  for (ssize_t n; (n = ::read(read_end.get(), buffer, sizeof buffer)) > 0;) seen.append(buffer, static_cast<std::size_t>(n));
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  return seen;
}

}  // namespace

TEST_CASE("fork_helper: a helper ignores stop signals, keeps crash defaults and only what it was given") {
  std::signal(SIGTERM, on_test_signal);  // as the run's stop handler
  std::signal(SIGSEGV, on_test_signal);  // as the run's crash handler
  const mb::io::run::Fd given(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const mb::io::run::Fd other(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const std::string seen = observe({.keep = {given.get()}, .what = "a test helper"}, [&] {
    return std::string{yes(handled_by(SIGTERM, SIG_IGN)), yes(handled_by(SIGINT, SIG_IGN)),
                       yes(handled_by(SIGSEGV, SIG_DFL)), yes(is_open(given.get())), yes(is_open(other.get())),
                       yes(is_open(STDERR_FILENO))};
  });
  CHECK(seen == "yyyyny");
  CHECK(handled_by(SIGTERM, on_test_signal));  // this process's own are as they were
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGSEGV, SIG_DFL);
}

TEST_CASE("fork_helper: a worker keeps the run's handlers and descriptors, and prepares before any signal") {
  std::signal(SIGTERM, on_test_signal);
  const mb::io::run::Fd other(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  static char blocked_in_prepare = '?';
  const Helper worker{.stops = Helper::Stops::handled,
                      .close_others = false,
                      .prepare = [] {
                        sigset_t now;
                        ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
                        blocked_in_prepare = yes(sigismember(&now, SIGTERM) == 1 && sigismember(&now, SIGINT) == 1);
                      },
                      .what = "a test worker"};
  const std::string seen = observe(worker, [&] {
    sigset_t now;
    ::pthread_sigmask(SIG_SETMASK, nullptr, &now);
    return std::string{blocked_in_prepare, yes(sigismember(&now, SIGTERM) == 0), yes(handled_by(SIGTERM, on_test_signal)),
                       yes(is_open(other.get()))};
  });
  CHECK(seen == "yyyy");
  std::signal(SIGTERM, SIG_DFL);
}

TEST_CASE("fork_helper: no whole process while a ForkUnsafe lives, a helper of system calls may") {
  const ForkUnsafe hashing;
  CHECK_THROWS_WITH_AS(fork_helper({.what = "a test process"}),
                       "internal error: a test process would be forked while a hashing thread runs", mb::Error);
  const std::string seen =
      observe({.kind = Helper::Kind::system_calls, .what = "a test helper"}, [] { return std::string("y"); });
  CHECK(seen == "y");
}
