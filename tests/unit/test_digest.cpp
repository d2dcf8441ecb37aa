#include <doctest/doctest.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/publish/digest.hpp"

namespace {

std::string write_file(const std::string& name, const std::string& bytes) {
  const std::string path = "/tmp/mb-digest-test-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("digest: XXH3-128 of whole files, window by window") {
  // 40 MiB spans many read windows: the digest is XXH3-128 of the whole
  // file in one call, a byte changed past the first windows changes it, and
  // the empty file has XXH3-128's own.
  std::string bytes(40u << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string a = write_file("a", bytes);
  bytes[(37u << 20) + 5] ^= 1;
  const std::string b = write_file("b", bytes);
  const std::string empty = write_file("empty", "");
  using mb::Source;
  const XXH128_hash_t whole = XXH3_128bits(bytes.data(), bytes.size());  // b's bytes
  const auto d = mb::io::publish::digest_files(
      {Source::local(a), Source::local(b), Source::local(a), Source::local(empty)}, 3);
  CHECK(d[1].digest == fmt::format("{:016x}{:016x}", static_cast<unsigned long long>(whole.high64),
                                   static_cast<unsigned long long>(whole.low64)));
  CHECK(d[0].size == 40u << 20);
  CHECK(d[0].digest == d[2].digest);
  CHECK(d[0].digest != d[1].digest);
  CHECK(d[3].size == 0);
  CHECK(d[3].digest == "99aa06d3014798d86001c324468d497f");
  try {
    mb::io::publish::digest_files({Source::local("/tmp/mb-digest-test-missing", "missing.h5")}, 1);
    FAIL("a missing file was digested");
  } catch (const mb::Error& e) {
    CHECK(std::string(e.what()).rfind("missing.h5: ", 0) == 0);  // named as shown, not by its path
  }
  for (const auto& p : {a, b, empty}) std::remove(p.c_str());
}

TEST_CASE("digest: a Hasher gives each file the digest digest_files gives it, failures at their own file") {
  std::string bytes(20u << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 40503u) >> 7);
  const std::string a = write_file("hasher-a", bytes);
  const std::string empty = write_file("hasher-empty", "");
  using mb::Source;
  const auto expected = mb::io::publish::digest_files({Source::local(a), Source::local(empty)}, 1);
  mb::io::publish::Hasher hasher;
  CHECK(hasher.add(Source::local(a)) == 0);
  CHECK(hasher.add(Source::local("/tmp/mb-digest-test-missing", "missing.h5")) == 1);
  CHECK(hasher.add(Source::local(empty)) == 2);
  // Asked out of order: each waits for its own file, and the missing one fails only when asked for.
  CHECK(hasher.get(2).digest == expected[1].digest);
  CHECK(hasher.get(0).digest == expected[0].digest);
  CHECK(hasher.get(0).size == 20u << 20);
  CHECK_THROWS_WITH_AS(hasher.get(1), doctest::Contains("missing.h5: cannot read"), mb::Error);
  CHECK_THROWS_AS(hasher.get(3), std::logic_error);
  // Files queued after a failure are still hashed.
  CHECK(hasher.get(hasher.add(Source::local(a))).digest == expected[0].digest);
  for (const auto& p : {a, empty}) std::remove(p.c_str());
}

namespace {

std::atomic<bool> g_hup_seen{false};
std::atomic<pthread_t> g_hup_thread{};

void note_hup(int) {
  g_hup_thread = pthread_self();
  g_hup_seen = true;
}

}  // namespace

TEST_CASE("digest: a stop signal sent to the process never runs on the hasher's thread") {
  // The stop handlers read the temporaries' registry without a lock, which
  // is safe only on the main thread. With SIGHUP blocked on this thread, a
  // SIGHUP sent to the process goes to a thread that accepts it: were the
  // hasher's one of them, its handler would run there at once. Else it
  // stays pending until this thread unblocks it, and runs here.
  struct sigaction ours {}, theirs {};
  ours.sa_handler = note_hup;
  sigemptyset(&ours.sa_mask);
  REQUIRE(sigaction(SIGHUP, &ours, &theirs) == 0);
  g_hup_seen = false;
  {
    mb::io::publish::Hasher hasher;
    sigset_t hup, previous;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    REQUIRE(pthread_sigmask(SIG_BLOCK, &hup, &previous) == 0);
    REQUIRE(kill(getpid(), SIGHUP) == 0);
    hasher.get(hasher.add(mb::Source::local(write_file("hup", "bytes"))));  // the hasher's thread has run
    REQUIRE(pthread_sigmask(SIG_SETMASK, &previous, nullptr) == 0);  // a pending SIGHUP runs here, now
  }
  sigaction(SIGHUP, &theirs, nullptr);
  REQUIRE(g_hup_seen);
  CHECK(pthread_equal(g_hup_thread.load(), pthread_self()));
}
