#include <doctest/doctest.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
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

std::string hex(XXH128_hash_t h) {
  return fmt::format("{:016x}{:016x}", static_cast<unsigned long long>(h.high64),
                     static_cast<unsigned long long>(h.low64));
}

// The block digest, computed here from its definition: XXH3-128 over the
// canonical XXH3-128 of each 1 MiB block, then the size, little-endian.
std::string blocks_digest(const std::string& bytes) {
  std::string outer;
  for (std::size_t at = 0; at < bytes.size(); at += 1u << 20) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(bytes.data() + at, std::min<std::size_t>(1u << 20, bytes.size() - at)));
    outer.append(reinterpret_cast<const char*>(c.digest), sizeof c.digest);
  }
  for (int i = 0; i < 8; ++i) outer.push_back(static_cast<char>(static_cast<std::uint64_t>(bytes.size()) >> (8 * i)));
  return hex(XXH3_128bits(outer.data(), outer.size()));
}

std::string pattern(std::size_t size, std::uint32_t seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(((i + seed) * 2654435761u) >> 13);
  return bytes;
}

}  // namespace

TEST_CASE("digest: XXH3-128 of whole files (version 2 manifests), window by window") {
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
      {Source::local(a), Source::local(b), Source::local(a), Source::local(empty)}, 3,
      mb::io::publish::DigestKind::whole_file);
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

TEST_CASE("digest: blocks of 1 MiB, each hashed, then the size (version 3 manifests)") {
  // Sizes around the block: none, less than one, exactly one, one and a
  // byte, many and a partial one; a byte changed in the last block changes it.
  using mb::Source;
  for (const std::size_t size : {std::size_t{0}, std::size_t{1000}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1,
                                 (std::size_t{37} << 20) + 4097}) {
    std::string bytes = pattern(size, 7);
    const std::string path = write_file("blocks", bytes);
    const auto d = mb::io::publish::digest_files({Source::local(path)}, 1);
    CHECK(d[0].size == size);
    CHECK(d[0].digest == blocks_digest(bytes));
    if (size > 0) {
      bytes.back() ^= 1;
      CHECK(blocks_digest(bytes) != d[0].digest);
    }
    std::remove(path.c_str());
  }
}

TEST_CASE("digest: a Hasher hashes blocks as copies make them whole, and reads the rest at the close") {
  // A file made of a header written directly and runs copied from another
  // file by the kernel, told to the Hasher (unaligned offsets, steps
  // smaller than a block, a run that covers no whole block), then bytes
  // written where no run copied: the digest is the file's as read, and the
  // same as digest_files gives.
  using mb::Source;
  const std::string source_bytes = pattern(20u << 20, 3);
  const std::string source = write_file("tap-source", source_bytes);
  const std::string target = "/tmp/mb-digest-test-tap-target";
  std::remove(target.c_str());
  {
    mb::io::publish::Hasher hasher;
    const int from = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
    const int to = ::open(target.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    REQUIRE((from >= 0 && to >= 0));
    REQUIRE(::pwrite(to, "header", 6, 0) == 6);
    // As transfer::copy_range copies and tells its tap: step by step.
    const auto copy = [&](std::uint64_t from_offset, std::uint64_t to_offset, std::uint64_t length, std::size_t step) {
      for (std::uint64_t done = 0; done < length;) {
        auto in = static_cast<off64_t>(from_offset + done), out = static_cast<off64_t>(to_offset + done);
        const ssize_t k = ::copy_file_range(from, &in, to, &out, std::min<std::uint64_t>(step, length - done), 0);
        REQUIRE(k > 0);
        hasher.copied({to, to_offset, done, done + static_cast<std::uint64_t>(k)});
        done += static_cast<std::uint64_t>(k);
      }
    };
    copy(2048, 4096, 9u << 20, 300u << 10);       // steps of 300 KiB over several blocks
    copy(12345, (9u << 20) + 4096, 5000, 1u << 16);  // no whole block
    copy(1u << 20, 10u << 20, 6u << 20, 64u << 20);   // aligned, one step
    REQUIRE(::pwrite(to, "gap", 3, (9u << 20) + 9200) == 3);  // after the copies, where none copied
    ::close(from);
    ::close(to);
    std::ifstream in(target, std::ios::binary);
    const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto got = hasher.get(hasher.add(Source::local(target)));
    CHECK(got.size == written.size());
    CHECK(got.digest == mb::io::publish::digest_files({Source::local(target)}, 1)[0].digest);
    CHECK(got.digest == blocks_digest(written));
  }
  for (const auto& p : {source, target}) std::remove(p.c_str());
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
