// run::Fd owns a descriptor: closed when it goes, moved not copied, given up
// by release(); retry_on_eintr makes a call again only while it fails with
// EINTR.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <type_traits>

#include "io/run/fd.hpp"

using mb::io::run::Fd;
using mb::io::run::open_fd;
using mb::io::run::retry_on_eintr;

namespace {

// Whether `fd` is an open descriptor of this process.
bool is_open(int fd) {
  errno = 0;
  const bool open = ::fcntl(fd, F_GETFD) != -1;
  if (!open) CHECK(errno == EBADF);
  return open;
}

// A descriptor of this process, unowned.
int new_descriptor() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  return fd;
}

}  // namespace

TEST_CASE("Fd: closes its descriptor when it goes") {
  const int raw = new_descriptor();
  {
    const Fd fd(raw);
    CHECK(fd.get() == raw);
    CHECK(fd.valid());
    CHECK(is_open(raw));
  }
  CHECK_FALSE(is_open(raw));
}

TEST_CASE("Fd: is moved, never copied, and the moved-to owner closes it") {
  static_assert(!std::is_copy_constructible_v<Fd> && !std::is_copy_assignable_v<Fd>);
  static_assert(std::is_nothrow_move_constructible_v<Fd> && std::is_nothrow_move_assignable_v<Fd>);
  const int raw = new_descriptor();
  Fd from(raw);
  {
    const Fd to(std::move(from));
    CHECK(to.get() == raw);
    CHECK(from.get() == -1);
    CHECK_FALSE(from.valid());
  }
  CHECK_FALSE(is_open(raw));
}

TEST_CASE("Fd: move assignment closes what the target held") {
  const int first = new_descriptor(), second = new_descriptor();
  Fd target(first), source(second);
  target = std::move(source);
  CHECK_FALSE(is_open(first));
  CHECK(target.get() == second);
  CHECK(source.get() == -1);
  CHECK(is_open(second));
}

TEST_CASE("Fd: release gives the descriptor up without closing it") {
  const int raw = new_descriptor();
  int released = -1;
  {
    Fd fd(raw);
    released = fd.release();
    CHECK(fd.get() == -1);
  }
  CHECK(released == raw);
  CHECK(is_open(raw));
  CHECK(::close(raw) == 0);
}

TEST_CASE("Fd: close reports success once, then holds nothing") {
  const int raw = new_descriptor();
  Fd fd(raw);
  CHECK(fd.close());
  CHECK(fd.get() == -1);
  CHECK_FALSE(is_open(raw));
  CHECK(fd.close());  // nothing to close
}

TEST_CASE("Fd: close reports a failed close(2) with its errno") {
  const int raw = new_descriptor();
  CHECK(::close(raw) == 0);  // closed behind its owner's back: close(2) fails with EBADF
  Fd fd(raw);
  errno = 0;
  CHECK_FALSE(fd.close());
  CHECK(errno == EBADF);
  CHECK(fd.get() == -1);
}

TEST_CASE("Fd: reset keeps errno as it was") {
  Fd fd(new_descriptor());
  errno = ENOSPC;
  fd.reset();
  CHECK(errno == ENOSPC);
  CHECK_FALSE(fd.valid());
}

TEST_CASE("open_fd: a descriptor, or an invalid Fd with errno set") {
  Fd opened = open_fd("/dev/null", O_RDONLY | O_CLOEXEC);
  CHECK(opened.valid());
  CHECK(is_open(opened.get()));
  errno = 0;
  const Fd missing = open_fd("/nonexistent/microbatch-test", O_RDONLY | O_CLOEXEC);
  CHECK_FALSE(missing.valid());
  CHECK(errno == ENOENT);
}

TEST_CASE("retry_on_eintr: called again while it fails with EINTR") {
  int calls = 0;
  const auto interrupted_twice = [&]() -> long {
    ++calls;
    if (calls <= 2) {
      errno = EINTR;
      return -1;
    }
    return 42;
  };
  CHECK(retry_on_eintr(interrupted_twice) == 42);
  CHECK(calls == 3);
}

TEST_CASE("retry_on_eintr: any other failure is returned at once, errno kept") {
  int calls = 0;
  const auto fails = [&] {
    ++calls;
    errno = EIO;
    return -1;
  };
  CHECK(retry_on_eintr(fails) == -1);
  CHECK(errno == EIO);
  CHECK(calls == 1);
}

TEST_CASE("retry_on_eintr: a result other than -1 is kept, whatever errno says") {
  int calls = 0;
  const auto succeeds = [&] {
    ++calls;
    errno = EINTR;  // left over from an earlier call: not this call's failure
    return 0;
  };
  CHECK(retry_on_eintr(succeeds) == 0);
  CHECK(calls == 1);
}
