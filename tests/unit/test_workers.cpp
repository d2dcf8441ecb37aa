// run_workers: whatever fails, in this process or in a worker, no worker
// process outlives the call and the failure reaches the caller.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <new>
#include <stdexcept>

#include "core/error.hpp"
#include "io/run/guard.hpp"
#include "io/run/workers.hpp"

namespace {

// Worker 1 sends its pid through a pipe, then sleeps far longer than any
// test; worker 0 waits for the pid (so the worker surely runs), then fails.
struct SleepingWorker {
  int fds[2] = {-1, -1};
  pid_t pid = -1;

  SleepingWorker() { REQUIRE(::pipe(fds) == 0); }
  ~SleepingWorker() {
    // A worker that outlived run_workers (what these tests look for) is killed here: none is left behind.
    if (pid > 0 && ::kill(pid, 0) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ::close(fds[0]);
    ::close(fds[1]);
  }

  [[noreturn]] void sleep_in_worker() const {
    std::signal(SIGTERM, SIG_DFL);  // doctest's handler would report a "crash" from the worker
    const pid_t self = ::getpid();
    (void)!::write(fds[1], &self, sizeof self);
    ::sleep(600);
    ::_exit(0);
  }

  void wait_for_worker() {
    REQUIRE(::read(fds[0], &pid, sizeof pid) == static_cast<ssize_t>(sizeof pid));
    REQUIRE(pid > 0);
  }

  // Reaped, not just killed: a zombie still answers kill(pid, 0).
  bool gone() const { return ::kill(pid, 0) == -1 && errno == ESRCH; }
};

}  // namespace

TEST_CASE("an exception of any type in this process stops and reaps the workers, and is rethrown as it was") {
  SleepingWorker sleeper;
  auto work = [&](std::uint64_t w) {
    if (w == 1) sleeper.sleep_in_worker();
    sleeper.wait_for_worker();
    throw std::bad_alloc();
  };
  CHECK_THROWS_AS(mb::io::run::run_workers(2, work, 0), std::bad_alloc);
  CHECK(sleeper.gone());
}

TEST_CASE("an mb::Error in this process keeps its exit status and reaps the workers") {
  SleepingWorker sleeper;
  auto work = [&](std::uint64_t w) {
    if (w == 1) sleeper.sleep_in_worker();
    sleeper.wait_for_worker();
    throw mb::usage_error("bad option in worker 0");
  };
  try {
    mb::io::run::run_workers(2, work, 0);
    FAIL("run_workers did not throw");
  } catch (const mb::Error& e) {
    CHECK(std::string(e.what()) == "bad option in worker 0");
    CHECK(e.exit_code() == 2);
  }
  CHECK(sleeper.gone());
}

TEST_CASE("a worker's failure is rethrown as mb::Error with its message") {
  auto fails_in = [](std::uint64_t failing, auto thrower) {
    return [=](std::uint64_t w) {
      if (w == failing) thrower();
    };
  };
  CHECK_THROWS_WITH_AS(
      mb::io::run::run_workers(3, fails_in(2, [] { throw mb::Error("f.h5: /x: cannot write"); }), 0),
      "f.h5: /x: cannot write", mb::Error);
  CHECK_THROWS_WITH_AS(mb::io::run::run_workers(2, fails_in(1, [] { throw std::runtime_error("boom"); }), 0),
                       "internal error: boom", mb::Error);
  CHECK_THROWS_WITH_AS(mb::io::run::run_workers(2, fails_in(1, [] { throw 42; }), 0),
                       "internal error: an exception of unknown type", mb::Error);
  CHECK_NOTHROW(mb::io::run::run_workers(3, [](std::uint64_t) {}, 0));
}

TEST_CASE("a worker's exit status 3 keeps its kind: a retry may help") {
  using mb::ErrorKind;
  CHECK(mb::kind_of_errno(ENOSPC) == ErrorKind::Environment);
  CHECK(mb::kind_of_errno(EIO) == ErrorKind::Environment);
  CHECK(mb::kind_of_errno(EAGAIN) == ErrorKind::Environment);
  CHECK(mb::kind_of_errno(ENOENT) == ErrorKind::Data);
  CHECK(mb::kind_of_errno(EFBIG) == ErrorKind::Data);  // a file-size limit: a retry meets it again
  CHECK(mb::kind_of_errno(EACCES) == ErrorKind::Data);
  try {
    mb::io::run::run_workers(
        2,
        [](std::uint64_t w) {
          if (w == 1) throw mb::environment_error("no space");
        },
        0, {});
    FAIL("the worker's failure did not reach the caller");
  } catch (const mb::Error& e) {
    CHECK(e.kind() == ErrorKind::Environment);
    CHECK(std::string(e.what()).find("no space") != std::string::npos);
  }
}

TEST_CASE("more processes than the registry holds are refused before any fork") {
  bool ran = false;
  CHECK_THROWS_WITH_AS(
      mb::io::run::run_workers(mb::io::run::kMaxWorkers + 1, [&](std::uint64_t) { ran = true; }, 0, {}),
      doctest::Contains("more than 256"), mb::Error);
  CHECK_FALSE(ran);
  errno = 0;
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);  // no child was started
  CHECK(errno == ECHILD);
}
