#pragma once
// Files removed on a thread of their own (split --force's earlier split):
// removing a large file costs the kernel time in proportion to its size
// (its blocks freed, its cached pages dropped), which need not hold up the
// run. Each file is first renamed to a hidden name beside it
// (.NAME.aside-PID), at once, so that it is gone from its place; the bytes
// go on the thread. What a killed run leaves under such a name is a split
// leftover that the next run onto the place removes (io/publish/leftovers).
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace mb::io::publish {

class Discards {
 public:
  Discards() = default;
  ~Discards();  // waits until every file handed over is removed
  Discards(const Discards&) = delete;
  Discards& operator=(const Discards&) = delete;

  // Renames `path` aside (mb::Error if that fails; a file that is not there
  // is no error) and removes it on the thread.
  void discard(const std::string& path);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> queue_;
  bool closing_ = false;
  std::thread thread_;  // started with the first file
};

// .NAME.aside-PID beside `path`.
std::string aside_name(const std::string& path);

}  // namespace mb::io::publish
