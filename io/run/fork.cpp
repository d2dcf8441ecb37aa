#include "io/run/fork.hpp"

#include <fmt/core.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/error.hpp"

namespace mb::io::run {
namespace {

constinit std::atomic<int> g_fork_unsafe{0};

void set_action(int sig, void (*action)(int)) {
  struct sigaction sa {};
  sa.sa_handler = action;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
}

// Closes every descriptor from `low` to `high` (system calls only).
void close_from_to(unsigned low, unsigned high) {
  if (low > high) return;
  if (::syscall(SYS_close_range, low, high, 0u) == 0) return;
  for (unsigned fd = low; fd <= std::min(high, 65535u); ++fd) ::syscall(SYS_close, fd);  // kernels before 5.9
}

// Closes every descriptor above 2 but `keep` (sorted; no allocation).
void close_all_but(const std::vector<int>& keep) {
  unsigned low = 3;
  for (const int fd : keep) {
    if (fd < static_cast<int>(low)) continue;
    close_from_to(low, static_cast<unsigned>(fd) - 1);
    low = static_cast<unsigned>(fd) + 1;
  }
  close_from_to(low, ~0u);
}

// In the child, signals still blocked: its own dispositions, then what it
// was not given closed.
void enter_child(const Helper& helper, const std::vector<int>& keep) {
  if (helper.stops == Helper::Stops::ignored) {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) set_action(sig, SIG_IGN);
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) set_action(sig, SIG_DFL);
  }
  if (helper.prepare) helper.prepare();
  if (helper.close_others) close_all_but(keep);
}

}  // namespace

ForkUnsafe::ForkUnsafe() { g_fork_unsafe.fetch_add(1); }
ForkUnsafe::~ForkUnsafe() { g_fork_unsafe.fetch_sub(1); }

pid_t fork_helper(const Helper& helper) {
  const bool whole = helper.kind == Helper::Kind::process;
  if (whole && g_fork_unsafe.load() > 0)
    throw Error(fmt::format("internal error: {} would be forked while a hashing thread runs", helper.what));
  // The child may not allocate: what it keeps is sorted before the fork.
  std::vector<int> keep = helper.keep;
  std::sort(keep.begin(), keep.end());
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  const pid_t pid = ::fork();
  if (pid == 0) {
    enter_child(helper, keep);
    // A helper of system calls only keeps every signal blocked: nothing it
    // does waits on one, and the run's handlers are never its.
    if (whole) pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return 0;
  }
  const int error = errno;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) throw Error(fmt::format("cannot start {}: {}", helper.what, std::strerror(error)));
  return pid;
}

}  // namespace mb::io::run
