#pragma once
// How a forked helper, a worker or the stop handler ends its process:
// _exit, which runs no destructor and no exit hook (the parent's objects are
// not the child's to tear down, and a signal handler may call nothing else).
// A coverage build (MB_COVERAGE) writes its counters first: the exit hook
// that would have written them does not run.

#include <unistd.h>

#ifdef MB_COVERAGE
extern "C" void __gcov_dump(void);
#endif

namespace mb::io::run {

[[noreturn]] inline void exit_now(int status) noexcept {
#ifdef MB_COVERAGE
  __gcov_dump();
#endif
  ::_exit(status);
}

}  // namespace mb::io::run
