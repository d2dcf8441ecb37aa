#pragma once
// Files removed in the background (split --force's earlier split): removing
// a large file costs the kernel time in proportion to its size (its blocks
// freed, its cached pages dropped), which need not hold up the run. Each
// file is first renamed to a hidden name beside it (.NAME.aside-PID), at
// once, so that it is gone from its place; the bytes go in a small process
// of their own, forked with the first file, which reads the names from a
// socket. Not a thread: split -j forks its workers meanwhile, and a child
// forked while another thread allocates can inherit a held allocator lock
// (clang's sanitizer allocators deadlock on it). What a killed run leaves under such a
// name is a split leftover that the next run onto the place removes
// (io/publish/leftovers).
#include <sys/types.h>

#include <string>

#include "io/run/fd.hpp"

namespace mb::io::publish {

class Discards {
 public:
  Discards() = default;
  ~Discards();  // waits until every file handed over is removed
  Discards(const Discards&) = delete;
  Discards& operator=(const Discards&) = delete;

  // Renames `path` aside (mb::Error if that fails; a file that is not there
  // is no error) and has it removed in the background.
  void discard(const std::string& path);

 private:
  void start();

  pid_t pid_ = -1;
  run::Fd pipe_;  // a socket: the names, one per line, to the removing process
};

// Drops `held`, the last reference to a file that has just lost its last
// name (replaced by a rename), in a process of its own, so that the kernel
// frees the file's blocks and cached pages there, in time proportional to
// its size, instead of in the run. That process holds nothing else open (a
// caller reading the run's output sees its end at once) and ends on its
// own once the file is freed, after the run if need be; it is forked as a
// grandchild, so nothing of the run has to reap it. Safe while other
// threads of the run are alive: what is forked makes system calls only.
// Where a process cannot be made, `held` is dropped here, as if not asked.
void release_in_background(run::Fd held);

// Where this process sets `path` aside: specs::aside_name beside it.
std::string aside_name(const std::string& path);

}  // namespace mb::io::publish
