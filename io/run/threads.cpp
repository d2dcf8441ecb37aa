#include "io/run/threads.hpp"

#include <pthread.h>

namespace mb::io::run {

StopSignalsBlocked::StopSignalsBlocked() {
  sigset_t block;
  sigemptyset(&block);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGALRM}) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &previous_);
}

StopSignalsBlocked::~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

}  // namespace mb::io::run
