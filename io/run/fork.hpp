#pragma once
// The one way this process starts a helper process (split -j's workers,
// the uploader, the remover of an earlier split's files, the releaser of a
// replaced file). fork(2) runs with every signal blocked, so that a Ctrl-C
// landing in between never runs the run's handlers in the child (they
// would remove the run's temporaries, or stop its workers); the child then
// sets its own signal dispositions, runs `prepare`, closes what it was not
// given, and only then takes signals.
#include <sys/types.h>

#include <functional>
#include <vector>

namespace mb::io::run {

struct Helper {
  // A helper of system calls only (no allocation, no lock: it may be forked
  // beside threads that hold locks) or a whole process (it allocates, runs
  // threads; forked only while no ForkUnsafe lives).
  enum class Kind { system_calls, process } kind = Kind::process;
  // Stop signals (SIGINT, SIGTERM, SIGHUP): ignored (the run decides when
  // its helper ends, by closing the socket it reads) or handled as a
  // worker's (it removes its own temporaries: see guard.hpp). Crash
  // signals and the grace alarm get their default actions in a helper whose
  // stops are ignored: the run's crash handler speaks for the run.
  enum class Stops { ignored, handled } stops = Stops::ignored;
  // Descriptors the child keeps besides stdin, stdout and stderr; with
  // `close_others`, it closes every other one it inherited.
  std::vector<int> keep{};
  bool close_others = true;
  // Run in the child before it takes signals (a whole process's only).
  std::function<void()> prepare{};
  // For the error if the fork fails: "cannot start WHAT: ...".
  const char* what = "a helper process";
};

// Returns the child's pid in this process and 0 in the child; throws
// mb::Error if the fork fails, or, for a whole process, while a ForkUnsafe
// lives (an internal error: its thread's locks would be the child's).
pid_t fork_helper(const Helper& helper);

// Held by an object whose threads take locks (a Hasher): while one lives,
// no whole process may be forked.
class ForkUnsafe {
 public:
  ForkUnsafe();
  ~ForkUnsafe();
  ForkUnsafe(const ForkUnsafe&) = delete;
  ForkUnsafe& operator=(const ForkUnsafe&) = delete;
};

}  // namespace mb::io::run
