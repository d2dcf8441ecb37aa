// The one line a forced exit prints names what was being read, exactly as
// "microbatch: error: FILE: /path: what; partial outputs removed", and the
// registered temporaries are gone. Each case runs in a forked child, since
// the guard ends the process.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "io/run/guard.hpp"

namespace {

struct Outcome {
  int status = -1;  // exit status, or -1 when the child did not exit
  std::string err;
};

// Runs body in a child with stderr into a pipe; body is expected to end the process.
Outcome run_in_child(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    body();
    ::_exit(99);  // the guard did not end it
  }
  ::close(fds[1]);
  Outcome out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.err.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) out.status = WEXITSTATUS(status);
  return out;
}

std::string make_temporary() {
  char name[] = "/tmp/mb-guard-test-XXXXXX";
  const int fd = ::mkstemp(name);
  REQUIRE(fd >= 0);
  ::close(fd);
  return name;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST_CASE("the stall watchdog names the last activity and removes the temporaries") {
  const std::string temp = make_temporary();
  const Outcome out = run_in_child([&] {
    mb::io::run::register_temporary(temp);
    mb::io::run::note_activity("other.h5", "/first");
    mb::io::run::note_activity("in.h5", "/g/x");
    mb::io::run::start_stall_watchdog(1);
    ::sleep(30);
  });
  CHECK(out.status == 1);
  CHECK(out.err ==
        "microbatch: error: in.h5: /g/x: no progress within --stall-timeout; the HDF5 library seems stuck (is the "
        "file corrupt?); partial outputs removed\n");
  CHECK_FALSE(exists(temp));
  if (exists(temp)) ::unlink(temp.c_str());
}

TEST_CASE("a crash names the activity, or says that reading had not started") {
  const std::string temp = make_temporary();
  Outcome out = run_in_child([&] {
    mb::io::run::install_crash_guard();
    mb::io::run::register_temporary(temp);
    mb::io::run::note_activity("in.h5", "/a@units");
    std::raise(SIGSEGV);
  });
  CHECK(out.status == 1);
  CHECK(out.err ==
        "microbatch: error: in.h5: /a@units: the HDF5 library crashed reading this (SIGSEGV); the file is probably "
        "corrupt; partial outputs removed\n");
  CHECK_FALSE(exists(temp));
  if (exists(temp)) ::unlink(temp.c_str());

  out = run_in_child([] {
    mb::io::run::install_crash_guard();
    std::raise(SIGBUS);
  });
  CHECK(out.status == 1);
  CHECK(out.err ==
        "microbatch: error: (starting): the HDF5 library crashed reading this (SIGBUS); the file is probably "
        "corrupt; partial outputs removed\n");
}

TEST_CASE("a second thread crashing meanwhile waits: the first handler removes the temporaries and says why") {
  std::vector<std::string> temps;
  for (int i = 0; i < 200; ++i) temps.push_back(make_temporary());  // a handler that takes a while
  for (int round = 0; round < 5; ++round) {
    const Outcome out = run_in_child([&] {
      mb::io::run::install_crash_guard();
      for (const auto& t : temps) mb::io::run::register_temporary(t);
      std::atomic<bool> go{false};
      std::thread other([&] {
        while (!go.load()) {
        }
        ::pthread_kill(::pthread_self(), SIGSEGV);
      });
      go.store(true);
      std::raise(SIGSEGV);
      other.join();
    });
    CHECK(out.status == 1);  // never killed by the second fault
    CHECK(out.err.find("crashed reading this (SIGSEGV)") != std::string::npos);
    for (const auto& t : temps) CHECK_FALSE(exists(t));
    for (auto& t : temps) {  // again for the next round
      if (exists(t)) ::unlink(t.c_str());
      const int fd = ::open(t.c_str(), O_CREAT | O_WRONLY, 0600);
      ::close(fd);
    }
  }
  for (const auto& t : temps) ::unlink(t.c_str());
}

TEST_CASE("a long name is cut at 1023 characters") {
  const std::string path = "/" + std::string(2000, 'n');
  const Outcome out = run_in_child([&] {
    mb::io::run::install_crash_guard();
    mb::io::run::note_activity("in.h5", path);
    std::raise(SIGABRT);
  });
  CHECK(out.status == 1);
  const std::string named = ("in.h5: " + path).substr(0, 1023);
  CHECK(out.err == "microbatch: error: " + named + ": the HDF5 library crashed reading this (SIGABRT); the file is "
                   "probably corrupt; partial outputs removed\n");
}

TEST_CASE("an unregistered temporary is left alone, each registration is undone once") {
  const std::string kept = make_temporary(), first = make_temporary(), middle = make_temporary(),
                    twice = make_temporary();
  const Outcome out = run_in_child([&] {
    for (const auto* path : {&first, &middle, &twice, &kept, &twice}) mb::io::run::register_temporary(*path);
    mb::io::run::unregister_temporary(middle);  // from anywhere in the list, not only its end
    mb::io::run::unregister_temporary(first);
    mb::io::run::unregister_temporary(twice);   // registered twice: still one owner left
    mb::io::run::note_activity("in.h5", "/x");
    mb::io::run::start_stall_watchdog(1);
    ::sleep(30);
  });
  CHECK(out.status == 1);
  CHECK_FALSE(exists(kept));
  CHECK_FALSE(exists(twice));
  CHECK(exists(first));
  CHECK(exists(middle));
  for (const auto* path : {&kept, &first, &middle, &twice})
    if (exists(*path)) ::unlink(path->c_str());
}

TEST_CASE("stall clock: time stopped counts as two ticks, progress resets it") {
  using std::chrono::milliseconds;
  mb::io::run::StallClock clock(milliseconds(200));
  for (int i = 0; i < 4; ++i) clock.tick(milliseconds(200), false);
  CHECK(clock.stalled() == milliseconds(800));
  clock.tick(std::chrono::seconds(30), false);  // SIGSTOP for 30 s, then SIGCONT
  CHECK(clock.stalled() == milliseconds(1200));
  clock.tick(milliseconds(250), false);  // a late tick on a busy machine counts as it is
  CHECK(clock.stalled() == milliseconds(1450));
  clock.tick(milliseconds(200), true);
  CHECK(clock.stalled() == milliseconds(0));
}
