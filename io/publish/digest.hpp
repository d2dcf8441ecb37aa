#pragma once
// Content digests of files (XXH3-128, from Debian's libxxhash): the
// manifest records one per microbatch file, and merge checks them, so that
// a file changed or replaced after the split is refused.
//
// A file's digest (specs::DigestKind::blocks) is XXH3-128 over the
// XXH3-128 digests of its 1 MiB blocks, in order (each as XXH128's 16-byte
// canonical form), then its size (8 bytes, little-endian). Blocks can be
// hashed in any order: a split hashes each block a copy completes while the
// copy goes on (Hasher, a transfer::CopyTap), from the page cache the copy
// has just filled, and reads only the other blocks once the file is closed.
// Manifests of version 2 recorded XXH3-128 of the whole file
// (DigestKind::whole_file), which is still checked.
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/source.hpp"
#include "io/run/fd.hpp"
#include "io/run/fork.hpp"
#include "io/transfer/policy.hpp"
#include "specs/manifest.hpp"

namespace mb::io::publish {

using specs::DigestKind;

inline constexpr std::uint64_t kDigestBlock = 1u << 20;

struct FileDigest {
  std::uint64_t size = 0;
  std::string digest;  // 32 hex digits
};

// Digests of `files`, hashed by up to `threads` threads; a file that cannot
// be read is an error naming it as shown (a temporary by its final name).
std::vector<FileDigest> digest_files(const std::vector<Source>& files, unsigned threads,
                                     DigestKind kind = DigestKind::blocks);

// Files hashed one after the other, in the order they are added, on a
// thread of its own: the hashing of one file overlaps the work that comes
// after it (split writes the next file while the last one is hashed, merge
// merges one input while the next is hashed). On a machine of one core
// nothing is gained, nothing lost.
//
// As a CopyTap (transfer::Policy::tap), it also hashes the blocks of a file
// being written as soon as a copy has made them whole, while the copy goes
// on; when that file is added (closed), only its other blocks are read.
// What is not hashed so (too many steps queued, a read that failed) is
// read at the close instead. The runs told must be the last bytes written
// at their places: a split writes nothing over the data it has copied (the
// library writes only its metadata, and the data of other datasets,
// elsewhere), so the digest is the file's.
//
// No whole process may be forked while a Hasher lives (a forked child would
// inherit its locks, not its thread): split uses one only when it forks no
// workers, and run::fork_helper refuses otherwise (its ForkUnsafe). A child
// of system calls only takes no lock, and may.
class Hasher final : public transfer::CopyTap {
 public:
  Hasher();
  ~Hasher() override;  // a local file being hashed is given up within a window; what is queued is dropped
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  // Queues `file`; its number, counted from 0, is what get() takes.
  std::size_t add(Source file, DigestKind kind = DigestKind::blocks);
  // Waits for file `k`'s digest; what failed hashing it is thrown here.
  FileDigest get(std::size_t k);

  void copied(const transfer::CopiedRun& run) override;

 private:
  using FileKey = std::pair<std::uint64_t, std::uint64_t>;  // device, inode
  struct Run {  // a step of a copy into a file being written
    run::Fd file;  // the file, held open until its blocks are hashed
    FileKey key;
    transfer::CopiedRun at;
  };
  struct Result {
    FileDigest digest;
    std::exception_ptr failure;
  };
  void run();
  void hash_run(const Run& r);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<Source, DigestKind>> files_;
  std::deque<Run> runs_;  // hashed before any file: a file's own runs were all queued before it
  std::vector<Result> done_;  // by number
  // Blocks hashed as copies made them whole, by file and block number (the hashing thread's alone).
  std::map<FileKey, std::map<std::uint64_t, std::array<unsigned char, 16>>> blocks_;
  std::atomic<bool> stopping_{false};
  run::ForkUnsafe fork_unsafe_;  // its thread takes locks
  std::thread thread_;  // last: started once the rest exists
};

// Digest of a text (the split id is the digest of what defines a split).
std::string digest_text(const std::string& text);

}  // namespace mb::io::publish
