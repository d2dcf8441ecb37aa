#pragma once
// Work spread over processes (split -j). Each worker opens what it needs
// itself: no HDF5 file may be open across fork().
#include <cstdint>
#include <functional>

namespace mb::io::run {

// Runs work(w) for w in [0, workers): w = 0 in this process, the others in
// forked worker processes. Waits for all and passes a stop signal on to them.
// If this process's own share throws (whatever the type), the workers are
// stopped and reaped and that exception is rethrown unchanged; otherwise the
// first worker failure is rethrown as mb::Error (one line). Workers exit
// without unwinding this process's stack, so outputs registered before the
// call are removed once, by their owner, if anything failed. While this
// process waits for the workers, it calls `waiting` (if any) a few times a
// second: the workers report progress through shared memory, and the
// display must move on after this process's own share is done.
void run_workers(std::uint64_t workers, const std::function<void(std::uint64_t)>& work, unsigned stall_seconds,
                 const std::function<void()>& waiting = {});

}  // namespace mb::io::run
