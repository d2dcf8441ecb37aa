#include "io/guard.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace mb::io {
namespace {

// How long a stop request waits for the copy loop to unwind cleanly.
constexpr unsigned kGraceSeconds = 3;

volatile std::sig_atomic_t g_signal = 0;
std::atomic<std::uint64_t> g_progress{0};
char g_activity[1024] = "";

// The registry is changed by the main thread under the mutex and read by the
// watchdog under it; the signal handlers read it without locking, which is
// safe because they run while the main thread is stopped in a library call.
std::mutex g_temps_mutex;
std::vector<std::string>& temps() {
  static std::vector<std::string> list;
  return list;
}

void write_all(const char* text) {
  std::size_t len = std::strlen(text);
  while (len > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, len);
    if (n <= 0) return;
    text += n;
    len -= static_cast<std::size_t>(n);
  }
}

// Async-signal-safe: unlink, write, _exit.
[[noreturn]] void remove_temporaries_and_exit(const char* what, int status) {
  for (const auto& t : temps()) ::unlink(t.c_str());
  write_all("microbatch: error: ");
  write_all(g_activity[0] ? g_activity : "(starting)");
  write_all(": ");
  write_all(what);
  write_all("; partial outputs removed\n");
  ::_exit(status);
}

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  alarm(kGraceSeconds);
}

extern "C" void on_grace_expired(int) {
  remove_temporaries_and_exit("interrupted, and the current read did not return in time", 130);
}

extern "C" void on_crash(int sig) {
  const char* what = "the HDF5 library crashed reading this (SIGABRT); the file is probably corrupt";
  if (sig == SIGSEGV) what = "the HDF5 library crashed reading this (SIGSEGV); the file is probably corrupt";
  if (sig == SIGBUS) what = "the HDF5 library crashed reading this (SIGBUS); the file is probably corrupt";
  if (sig == SIGFPE) what = "the HDF5 library crashed reading this (SIGFPE); the file is probably corrupt";
  if (sig == SIGILL) what = "the HDF5 library crashed reading this (SIGILL); the file is probably corrupt";
  remove_temporaries_and_exit(what, 1);
}

void set_handler(int sig, void (*handler)(int), int flags = 0) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) set_handler(sig, on_stop_signal);
  set_handler(SIGALRM, on_grace_expired);
}

void throw_if_interrupted() {
  if (g_signal != 0)
    throw Error(std::string("interrupted by signal ") + std::to_string(g_signal) + " (" + strsignal(g_signal) +
                    "); partial outputs removed",
                ErrorKind::Interrupted);
}

bool interrupted() { return g_signal != 0; }

void install_crash_guard() {
  // SA_RESETHAND: a fault inside the handler itself ends the process.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) set_handler(sig, on_crash, SA_RESETHAND);
  std::signal(SIGXFSZ, SIG_IGN);
}

void start_stall_watchdog(unsigned seconds) {
  if (seconds == 0) return;
  std::thread([seconds] {
    std::uint64_t last = g_progress.load();
    auto since = std::chrono::steady_clock::now();
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const std::uint64_t now = g_progress.load();
      if (now != last) {
        last = now;
        since = std::chrono::steady_clock::now();
      } else if (std::chrono::steady_clock::now() - since > std::chrono::seconds(seconds)) {
        std::lock_guard<std::mutex> lock(g_temps_mutex);
        remove_temporaries_and_exit("no progress within --stall-timeout; the HDF5 library seems stuck (is the "
                                    "file corrupt?)",
                                    1);
      }
    }
  }).detach();
}

void note_activity(const std::string& file, const std::string& path) {
  std::snprintf(g_activity, sizeof g_activity, "%s: %s", file.c_str(), path.c_str());
  g_progress.fetch_add(1, std::memory_order_relaxed);
}

void note_progress() { g_progress.fetch_add(1, std::memory_order_relaxed); }

void register_temporary(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_temps_mutex);
  temps().push_back(path);
}

void unregister_temporary(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_temps_mutex);
  auto& list = temps();
  list.erase(std::remove(list.begin(), list.end(), path), list.end());
}

}  // namespace mb::io
