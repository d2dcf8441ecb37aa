#pragma once
// What killed runs leave behind (SIGKILL, a node lost, mpirun ending the
// ranks of a failed team): hidden temporaries and a team merge's scratch
// files. Nothing of it can pass for an output, but it takes space and,
// under a fixed name, would block the next run. A run that holds the lock
// every writer of an output holds knows that whatever such files are there
// belong to no live run, and removes them.
#include <cstddef>
#include <string>

#include "io/publish/outputs.hpp"

namespace mb::io::publish {

// Split's output directory, whose lock (specs::kLockName) the caller
// holds: removes the hidden temporaries of split outputs there, unless a
// shard run (split --shard, which takes its own shard's lock only) holds
// its lock, which is an error naming it. Returns how many of the removed
// files were a killed run's temporaries of output files (.NAME.tmp-PID),
// the work it lost.
std::size_t remove_split_leftovers(const std::string& dir);

// Merge's output, locked for the run (DIR/.NAME.lock: every merge onto
// NAME holds it, rank 0 for a team); then removes what killed merges onto
// it left (DIR/.NAME.tmp-PID, DIR/.NAME.rank-R-of-P.scratch).
[[nodiscard]] OutputLock lock_merge_output(const std::string& output);

}  // namespace mb::io::publish
