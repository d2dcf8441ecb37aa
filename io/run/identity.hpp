#pragma once
// What a file is, as stat(2) tells it, and the run's inputs as they were
// before it read them. A file rewritten in place (same inode), truncated and
// written again, or replaced by a rename moves at least one of these: its
// change time moves on any write, and no program can set it back. So a run
// that finds every input as it found it at the start read one version of
// each; publishing checks that first, and refuses to publish otherwise.
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/source.hpp"

namespace mb::io::run {

struct FileIdentity {
  std::uint64_t device = 0, inode = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileIdentity&) const = default;
};

// The regular file at `path` (a symbolic link is not followed), or none.
std::optional<FileIdentity> identity_of(const std::string& path);

// How `now` differs from `before`, in words ("" when it does not).
std::string difference(const FileIdentity& before, const FileIdentity& now);

// What a team's ranks compare of a file named on the command line (its size
// and modification time: device and inode numbers differ between the nodes
// of one shared filesystem); for a directory, its manifest.json's.
std::string identity_term(const std::string& path);

// Records the identity of an input file on this machine's disk the first
// time it is given (io/source/input.hpp watch: an object's version is
// held by io/remote). Process-wide: a job records its
// inputs before it reads them, and io/publish checks them all before it
// publishes anything.
void watch_input(const Source& input);

// Throws mb::Error naming the first watched input that changed, or that is
// no longer there, since it was recorded.
void check_inputs_unchanged();

// The error check_inputs_unchanged would throw, if any, without throwing:
// for a run that failed already, whose failure a change explains (cli/main).
std::optional<Error> input_change();

// The first watched input that changed, for a fatal-signal handler: a read
// of changed bytes can crash libhdf5, and the change, not the file, is then
// the cause. Async-signal-safe (stat(2), no allocation, no lock): it looks
// only from the thread that adds to the watch, stopped in a library call;
// on any other thread, or before any input is watched, it finds none
// (`shown` is null).
struct ChangedInput {
  const char* shown = nullptr;  // the input as the user named it
  const char* how = nullptr;    // "it was written to", ...
};
ChangedInput changed_input_in_handler();

}  // namespace mb::io::run
