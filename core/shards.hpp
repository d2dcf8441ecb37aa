#pragma once
// Shards of a split: which contiguous share of the output files each of P
// writers writes. One partition for all: split -j's worker processes on one
// machine and split --shard K/P's processes (Slurm array tasks) anywhere.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mb {

// Output files [begin, end).
struct FileRange {
  std::uint64_t begin = 0, end = 0;
  std::uint64_t size() const { return end - begin; }
  friend bool operator==(const FileRange&, const FileRange&) = default;
};

// Share `part` of `parts` of `files` files: [part*F/P, (part+1)*F/P).
// Shares differ by at most one file; with more parts than files some are empty.
FileRange share_of(std::uint64_t files, std::uint64_t parts, std::uint64_t part);

// The same partition applied inside a range (split -j within a shard).
FileRange share_of(const FileRange& range, std::uint64_t parts, std::uint64_t part);

// A run's files `mine` handed on (to be published) a round at a time, each
// once: the rounds, and which files are handed on already or stand (an
// earlier run's, never handed on). One bookkeeping for every kind of place.
class Handing {
 public:
  // `files` is the split's file count; `round` the files of a round (0:
  // one round of them all).
  Handing(FileRange mine, std::uint64_t round, std::uint64_t files);
  std::vector<FileRange> rounds() const;
  // The files of `done` not handed on yet, in order, marked handed now.
  std::vector<std::uint64_t> take(FileRange done);
  void stands(std::uint64_t index) { handed_.at(index) = true; }

 private:
  FileRange mine_;
  std::uint64_t round_;
  std::vector<bool> handed_;
};

// split --shard: this process writes shard `index` of `count`.
struct Shard {
  std::uint64_t index = 0, count = 1;
};

// "K/P" (0 <= K < P, P >= 1) or "auto": K and P from Slurm's array variables
// in `env` (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT).
// Anything else, or "auto" without them: mb::Error of kind Usage.
Shard parse_shard(const std::string& text, const std::map<std::string, std::string>& env);

}  // namespace mb
