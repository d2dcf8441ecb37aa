#pragma once
// Content digests of files (XXH3-128, from Debian's libxxhash): the
// manifest records one per microbatch file, and merge checks them, so that
// a file changed or replaced after the split is refused.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/source.hpp"

namespace mb::io::publish {

struct FileDigest {
  std::uint64_t size = 0;
  std::string digest;  // 32 hex digits
};

// Digests of `files`, hashed by up to `threads` threads; a file that cannot
// be read is an error naming it as shown (a temporary by its final name).
std::vector<FileDigest> digest_files(const std::vector<Source>& files, unsigned threads);

// Files hashed one after the other, in the order they are added, on a
// thread of its own: the hashing of one file overlaps the work that comes
// after it (split writes the next file while the last one is hashed, merge
// merges one input while the next is hashed). On a machine of one core
// nothing is gained, nothing lost.
//
// No process may fork while a Hasher lives (a forked child would inherit
// its locks, not its thread): split uses one only when it forks no workers.
class Hasher {
 public:
  Hasher();
  ~Hasher();  // a local file being hashed is given up within a window; what is queued is dropped
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  // Queues `file`; its number, counted from 0, is what get() takes.
  std::size_t add(Source file);
  // Waits for file `k`'s digest; what failed hashing it is thrown here.
  FileDigest get(std::size_t k);

 private:
  struct Result {
    FileDigest digest;
    std::exception_ptr failure;
  };
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Source> files_;
  std::vector<Result> done_;  // by number
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: started once the rest exists
};

// The size of a file, local or remote (one small request).
std::uint64_t size_of(const Source& file);

// Digest of a text (the split id is the digest of what defines a split).
std::string digest_text(const std::string& text);

}  // namespace mb::io::publish
