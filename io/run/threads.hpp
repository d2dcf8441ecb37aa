#pragma once
// Threads of ours besides the main one (the stall watchdog, the hasher,
// the digest pool) never run the stop handlers. Those handlers read the
// temporaries' registry without a lock (a handler may not take one), which
// is safe only on the thread that changes the registry: the main thread.
// A signal sent to the process goes to any thread that does not block it,
// so every other thread blocks SIGINT, SIGTERM, SIGHUP and SIGALRM from its
// first instruction: it inherits its creator's mask, and the creator blocks
// them while it creates it.
#include <signal.h>

#include <thread>
#include <utility>

namespace mb::io::run {

// Blocks the stop signals and SIGALRM on this thread while it lives; a
// signal that comes meanwhile waits, and runs when the mask is restored.
class StopSignalsBlocked {
 public:
  StopSignalsBlocked();
  ~StopSignalsBlocked();
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

// A thread that never takes the stop signals.
template <class Body>
std::thread background_thread(Body&& body) {
  const StopSignalsBlocked blocked;
  return std::thread(std::forward<Body>(body));
}

}  // namespace mb::io::run
