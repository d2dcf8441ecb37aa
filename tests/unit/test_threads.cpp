#include <doctest/doctest.h>
#include <pthread.h>
#include <signal.h>

#include "io/run/threads.hpp"

namespace {

sigset_t mask_of_this_thread() {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return mask;
}

}  // namespace

TEST_CASE("threads: a background thread blocks the stop signals and SIGALRM, its creator keeps its own mask") {
  const sigset_t before = mask_of_this_thread();
  REQUIRE_FALSE(sigismember(&before, SIGTERM));  // else the test proves nothing
  sigset_t seen;
  mb::io::run::background_thread([&seen] { seen = mask_of_this_thread(); }).join();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGALRM}) CHECK(sigismember(&seen, sig) == 1);
  CHECK(sigismember(&seen, SIGSEGV) == 0);  // the crash guard runs on the thread that faults
  const sigset_t after = mask_of_this_thread();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGALRM}) CHECK(sigismember(&after, sig) == sigismember(&before, sig));
}
