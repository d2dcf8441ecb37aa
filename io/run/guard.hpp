#pragma once
// What keeps a run from leaving half-written outputs behind, whatever stops
// it: interrupting signals, crashes inside libhdf5, and library calls that
// never return. Every temporary output is registered here while it exists.
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace mb::io::run {

// SIGINT, SIGTERM and SIGHUP set a flag that the copy loops notice (see
// throw_if_interrupted), so that the normal error path removes outputs. If
// the loop does not unwind within a few seconds (it is stuck in a library
// call), the temporaries are removed and the process exits 130 anyway.
void install_interrupt_handlers();

// Throws mb::Error (exit 130) when a signal asked us to stop.
void throw_if_interrupted();
// The error throw_if_interrupted would throw, if any, without throwing.
std::optional<Error> interruption();
bool interrupted();

// Crash containment. libhdf5 1.10.8 can crash on corrupt metadata (its
// global-heap reader on a damaged variable-length string, for one). On
// SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT the guard removes every
// registered temporary and prints one line naming the object being read:
// a fault of libhdf5's (fault.hpp says how it is told) says that the file
// is probably corrupt, exit 1; any other is a defect of microbatch, named
// with `version` (microbatch's) and "please report it", exit 4
// (ErrorKind::Defect). SIGXFSZ is ignored, so a file-size limit fails the
// write (a clean error) instead of killing the process.
void install_crash_guard(std::string_view version);

// Test-only (MICROBATCH_TEST_FAULT, read by cli/): our own code faults when
// note_activity names the HDF5 object `path`, so that the tests see what a
// defect of microbatch is told as.
void arm_test_fault(const std::string& path);

// The same for a library call that never returns (libhdf5 can loop forever
// on a corrupt heap): with no progress for `seconds`, exit 1 the same way.
// Time the process is stopped (SIGSTOP, a suspend) does not count. 0 turns
// the watchdog off.
void start_stall_watchdog(unsigned seconds);

// The watchdog's count of time without progress, tick by tick. A tick that
// took far longer than asked means the process did not run (SIGSTOP, a
// shell's Ctrl-Z, a batch system's suspend): it counts as two ticks, since
// time stopped is not time stuck.
class StallClock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  explicit StallClock(Duration tick) : tick_(tick) {}
  // One tick that took `slept`; `moved`: progress was made meanwhile.
  void tick(Duration slept, bool moved) { stalled_ = moved ? Duration{0} : stalled_ + std::min(slept, 2 * tick_); }
  Duration stalled() const { return stalled_; }

 private:
  Duration tick_;
  Duration stalled_{0};
};

// While one lives, the watchdog does not count: the run waits on something
// that is not the library (a spec read from the user's pipe, -s <(jq ...)).
class NotStalled {
 public:
  NotStalled();
  ~NotStalled();
  NotStalled(const NotStalled&) = delete;
  NotStalled& operator=(const NotStalled&) = delete;
};

// Records what is being read: progress for the watchdog, and the object the
// messages name. Cheap; called per object and per block.
void note_activity(const std::string& file, const std::string& path);

// The one line for std::bad_alloc, naming what was being read when memory
// ran out and what to change.
std::string out_of_memory_message();

// Counts as progress without changing what is being read (a parent waiting
// for worker processes, which have watchdogs of their own).
void note_progress();

// Temporaries to remove on a forced exit, last registered first: files (an
// output's lock among them), and directories a run created (removed only
// when empty by then). A stop signal removes the files at once, before the
// run unwinds: a stopped run never publishes what it wrote.
void register_temporary(const std::string& path);
void unregister_temporary(const std::string& path);

// Worker processes of this one (run_workers). A forced exit kills and reaps
// them before it removes the temporaries and exits, so that no process of
// the run outlives it. A run has at most kMaxWorkers processes, itself
// included (split's -j bound), so there is always a free slot.
inline constexpr std::size_t kMaxWorkers = 256;
void register_worker(pid_t pid);
void unregister_worker(pid_t pid);

// Called in a new worker process: it forgets the temporaries and workers it
// inherited (they are its parent's to remove and stop) and takes a grace
// shorter than its parent's. With `report_fd` (its error pipe), a forced
// exit writes its message there, without the "microbatch: error: " prefix
// and newline, for the parent to report; else on stderr.
void enter_worker(int report_fd = -1);

}  // namespace mb::io::run
