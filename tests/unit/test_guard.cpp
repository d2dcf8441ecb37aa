// The one line a forced exit prints names what was being read, exactly as
// "microbatch: error: FILE: /path: what; partial outputs removed", and the
// registered temporaries are gone. A crash says whose code faulted: the
// HDF5 library's (a damaged input, exit 1) or microbatch's own (a defect,
// exit 4). Each case runs in a forked child, since the guard ends the
// process.
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

#include <hdf5.h>

#include "io/run/fault.hpp"
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

constexpr const char* kVersion = "9.8.7-test";

#if defined(__has_feature)
#define MB_TEST_HAS_ASAN __has_feature(address_sanitizer)
#else
#define MB_TEST_HAS_ASAN 0
#endif

// What a crash of our own code prints after the object's name.
std::string defect(const char* signal) {
  return std::string("microbatch 9.8.7-test crashed (") + signal +
         ") in its own code: a defect of microbatch, not of the input; please report it; partial outputs removed\n";
}

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

TEST_CASE("a crash of our own code names the activity, the version, and asks for a report") {
  const std::string temp = make_temporary();
  Outcome out = run_in_child([&] {
    mb::io::run::install_crash_guard(kVersion);
    mb::io::run::register_temporary(temp);
    mb::io::run::note_activity("in.h5", "/a@units");
    std::raise(SIGSEGV);  // from this file's code: ours
  });
  CHECK(out.status == 4);
  CHECK(out.err == "microbatch: error: in.h5: /a@units: " + defect("SIGSEGV"));
  CHECK_FALSE(exists(temp));
  if (exists(temp)) ::unlink(temp.c_str());

  out = run_in_child([] {
    mb::io::run::install_crash_guard(kVersion);
    std::raise(SIGBUS);
  });
  CHECK(out.status == 4);
  CHECK(out.err == "microbatch: error: (starting): " + defect("SIGBUS"));
}

TEST_CASE("the test-only fault is a real fault in our own code, at the object armed") {
  const std::string temp = make_temporary();
  const Outcome out = run_in_child([&] {
    mb::io::run::install_crash_guard(kVersion);
    mb::io::run::register_temporary(temp);
    mb::io::run::arm_test_fault("/g/x");
    mb::io::run::note_activity("in.h5", "/g/w");  // not this one
    mb::io::run::note_activity("in.h5", "/g/x");
  });
  CHECK(out.status == 4);
  CHECK(out.err == "microbatch: error: in.h5: /g/x: " + defect("SIGSEGV"));
  CHECK_FALSE(exists(temp));
  if (exists(temp)) ::unlink(temp.c_str());
}

TEST_CASE("a crash inside libhdf5 says the file is probably corrupt") {
  const std::string temp = make_temporary();
  // The faulting instruction in libhdf5's own code: a type conversion of a buffer at a wild address.
  Outcome out = run_in_child([&] {
    mb::io::run::install_crash_guard(kVersion);
    mb::io::run::register_temporary(temp);
    mb::io::run::note_activity("in.h5", "/a@units");
    H5Tconvert(H5T_NATIVE_INT, H5T_NATIVE_DOUBLE, 1024, reinterpret_cast<void*>(64), nullptr, H5P_DEFAULT);
  });
  CHECK(out.status == 1);
  CHECK(out.err ==
        "microbatch: error: in.h5: /a@units: the HDF5 library crashed reading this (SIGSEGV); the file is probably "
        "corrupt; partial outputs removed\n");
  CHECK_FALSE(exists(temp));
  if (exists(temp)) ::unlink(temp.c_str());

  // In the C library, called by libhdf5 (its memcpy of an enum member's value to a wild address): the library's
  // too. (Under AddressSanitizer, its interceptor of memcpy reports the overrun itself, before any fault.)
#if !defined(__SANITIZE_ADDRESS__) && !MB_TEST_HAS_ASAN
  out = run_in_child([] {
    mb::io::run::install_crash_guard(kVersion);
    mb::io::run::note_activity("in.h5", "/mask");
    const hid_t type = H5Tenum_create(H5T_NATIVE_INT8);
    signed char zero = 0;
    H5Tenum_insert(type, "FALSE", &zero);
    H5Tenum_valueof(type, "FALSE", reinterpret_cast<void*>(64));
  });
  CHECK(out.status == 1);
  CHECK(out.err ==
        "microbatch: error: in.h5: /mask: the HDF5 library crashed reading this (SIGSEGV); the file is probably "
        "corrupt; partial outputs removed\n");
#endif
}

TEST_CASE("a fatal signal another process sent is neither a crash of the library nor a defect") {
  const std::string temp = make_temporary();
  const Outcome out = run_in_child([&] {
    mb::io::run::install_crash_guard(kVersion);
    mb::io::run::register_temporary(temp);
    mb::io::run::note_activity("in.h5", "/x");
    const pid_t sender = ::fork();
    if (sender == 0) {
      ::kill(::getppid(), SIGSEGV);
      ::_exit(0);
    }
    for (;;) ::pause();
  });
  CHECK(out.status == 1);
  const std::string head = "microbatch: error: in.h5: /x: stopped by SIGSEGV sent by process ";
  const std::string tail = " (not a crash); partial outputs removed\n";
  REQUIRE(out.err.size() > head.size() + tail.size());
  CHECK(out.err.substr(0, head.size()) == head);
  CHECK(out.err.substr(out.err.size() - tail.size()) == tail);
  const std::string pid = out.err.substr(head.size(), out.err.size() - head.size() - tail.size());
  CHECK(pid.find_first_not_of("0123456789") == std::string::npos);
  CHECK_FALSE(exists(temp));
  if (exists(temp)) ::unlink(temp.c_str());
}

TEST_CASE("a second thread crashing meanwhile waits: the first handler removes the temporaries and says why") {
  std::vector<std::string> temps;
  for (int i = 0; i < 200; ++i) temps.push_back(make_temporary());  // a handler that takes a while
  for (int round = 0; round < 5; ++round) {
    const Outcome out = run_in_child([&] {
      mb::io::run::install_crash_guard(kVersion);
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
    CHECK(out.status == 4);  // never killed by the second fault
    CHECK(out.err == "microbatch: error: (starting): " + defect("SIGSEGV"));
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
    mb::io::run::install_crash_guard(kVersion);
    mb::io::run::note_activity("in.h5", path);
    std::raise(SIGABRT);
  });
  CHECK(out.status == 4);
  const std::string named = ("in.h5: " + path).substr(0, 1023);
  CHECK(out.err == "microbatch: error: " + named + ": " + defect("SIGABRT"));
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

namespace {

using mb::io::run::Blame;
using mb::io::run::CodeMap;
using mb::io::run::CodeOwner;
using mb::io::run::FaultSite;

// Made-up code: ours at 0x1000, libhdf5 at 0x2000, the C library at 0x3000 (each 0x1000 long); a plugin
// loaded later at 0x5000 is in no range.
CodeMap made_up_code() {
  CodeMap code;
  code.add({0x1000, 0x2000, CodeOwner::Ours});
  code.add({0x2000, 0x3000, CodeOwner::Library});
  code.add({0x3000, 0x4000, CodeOwner::Other});
  return code;
}

// A fault at `pc` whose backtrace is the handler's two frames (ours), `pc`, then `callers`.
Blame blame(std::uintptr_t pc, std::vector<std::uintptr_t> callers, std::uintptr_t return_address = 0,
            bool intercepted = false) {
  std::vector<std::uintptr_t> frames{0x1100, 0x1200, pc};
  frames.insert(frames.end(), callers.begin(), callers.end());
  const CodeMap code = made_up_code();
  return mb::io::run::blame_fault(code, {pc, return_address, frames.data(), frames.size(), intercepted});
}

}  // namespace

TEST_CASE("whose fault: the first frame outwards that is libhdf5's or ours") {
  CHECK(blame(0x2010, {0x1300}) == Blame::Library);  // in libhdf5, called by us
  CHECK(blame(0x1010, {0x2300, 0x1300}) == Blame::Ours);  // our callback, called by libhdf5
  // In the C library: its caller decides, the runtimes between skipped.
  CHECK(blame(0x3010, {0x3020, 0x2300, 0x1300}) == Blame::Library);  // libhdf5's strdup of a damaged name
  CHECK(blame(0x3010, {0x3020, 0x1300, 0x2300}) == Blame::Ours);     // our memcpy of a bad pointer
  // A plugin loaded after the map was made: in no range, skipped up to libhdf5, which called the filter.
  CHECK(blame(0x5010, {0x5020, 0x3030, 0x2300, 0x1300}) == Blame::Library);
  // A return address that is the first byte after its caller's code still counts as the caller's.
  CHECK(blame(0x3010, {0x3000}) == Blame::Library);
  CHECK(blame(0x3010, {0x2000}) == Blame::Ours);
}

TEST_CASE("whose fault: with nothing to unwind, the return address, and with nothing at all, ours") {
  // A jump to a wild address: no object holds pc, nothing unwinds from it; the call's return address decides.
  CHECK(blame(0x9000, {}, 0x2400) == Blame::Library);
  CHECK(blame(0x9000, {}, 0x1400) == Blame::Ours);
  // The return address is only a guess where pc is in an object: not read there.
  CHECK(blame(0x3010, {}, 0x2400) == Blame::Ours);
  // Neither frame nor return address says: ours (the handler's own frames before pc never count).
  CHECK(blame(0x3010, {0x3020}) == Blame::Ours);
  CHECK(blame(0x9000, {}) == Blame::Ours);
  // pc missing from the backtrace (the unwinder did not get through the signal frame): its frames are the
  // handler's, not the fault's callers.
  const CodeMap code = made_up_code();
  const std::uintptr_t frames[] = {0x1100, 0x2200};
  CHECK(mb::io::run::blame_fault(code, {0x3010, 0, frames, 2, false}) == Blame::Ours);
}

TEST_CASE("whose fault: under a sanitizer's interceptors, any libhdf5 frame on the stack") {
  // The interceptor of strdup is in the executable: what libhdf5 called faults in "our" code.
  CHECK(blame(0x1010, {0x2300, 0x1300}, 0, true) == Blame::Library);
  CHECK(blame(0x1010, {0x1300}, 0, true) == Blame::Ours);
  CHECK(blame(0x2010, {0x1300}, 0, true) == Blame::Library);
}

TEST_CASE("the map of loaded code: the executable is ours, libhdf5 the library, the C library neither") {
  CodeMap code;
  mb::io::run::map_loaded_code(code);
  const auto at = [](auto* function) { return reinterpret_cast<std::uintptr_t>(function); };
  CHECK(code.owner_of(at(&made_up_code)) == CodeOwner::Ours);
  CHECK(code.owner_of(at(&H5Tconvert)) == CodeOwner::Library);
  CHECK(code.owner_of(at(&::getpid)) == CodeOwner::Other);
  CHECK(code.owner_of(0) == std::nullopt);
}
