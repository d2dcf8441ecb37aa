#include "io/run/guard.hpp"

#include <fmt/core.h>
#include <execinfo.h>
#include <pthread.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <iterator>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "io/run/exit.hpp"
#include "io/run/fault.hpp"
#include "io/run/fd.hpp"
#include "io/run/identity.hpp"
#include "io/run/threads.hpp"

namespace mb::io::run {
namespace {

// How long a stop request waits for the copy loop to unwind cleanly. A
// worker's grace is shorter than its parent's, so that a worker stuck in a
// library call still removes its own temporaries before the parent, at the
// end of its grace, kills it (a team ends only when all of it has ended).
constexpr unsigned kGraceSeconds = 3;
constexpr unsigned kWorkerGraceSeconds = 2;
constinit std::atomic<unsigned> g_grace{kGraceSeconds};

// Set by the stop-signal handler, read by the copy loops. A lock-free atomic
// is async-signal-safe and, unlike a volatile sig_atomic_t, stays correct
// whichever thread the handler runs on.
constinit std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
constinit std::atomic<std::uint64_t> g_progress{0};
constinit std::atomic<int> g_not_stalled{0};  // NotStalled objects alive

// What is being read ("file: /path"), for the one-line message of a forced
// exit. The main thread writes it per block; the watchdog thread and the
// signal handlers read it, so it has to be safe against both a concurrent
// writer and a writer interrupted halfway by the handler that reads it: no
// locks, no allocation, and never a torn mix of two names.
//
// It is a latch (two copies and a sequence counter, as Linux's
// seqcount_latch): the writer bumps the counter to odd and rewrites copy 0,
// then to even and rewrites copy 1. A reader takes the copy the writer is not
// in (copy 1 while the counter is odd, copy 0 while it is even) and retries
// if the counter moved meanwhile. A handler that interrupted the writer sees
// the counter stand still and the other copy complete, so it never waits on
// the writer; a reader on another thread retries at most while notes keep
// arriving during its read of a few hundred bytes.
//
// Why a reader never accepts a torn copy: every character is stored with
// release and loaded with acquire, and every counter store is a release.
// Loading a character written by a later rewrite of the copy therefore makes
// the counter store that began that rewrite visible to the reader's second
// counter load, which then differs from the first: retry. And the first
// counter load (acquire) makes the last complete rewrite of its copy visible.
// On x86 these orderings are plain moves, so the per-block cost stays that of
// copying the text twice.
class Activity {
 public:
  static constexpr std::size_t kSize = 1024;  // longer texts are cut

  // One writer only: the main thread of this process (workers are processes).
  void store(std::string_view file, std::string_view path) {
    const std::uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_release);  // odd: readers take copy 1
    write_copy(copies_[0], file, path);
    seq_.store(s + 2, std::memory_order_release);  // even: readers take copy 0, now complete
    write_copy(copies_[1], file, path);
  }

  // Copies the text into out (NUL-terminated); async-signal-safe.
  void load(char (&out)[kSize]) const {
    // Far more attempts than a reader on another thread can lose in practice;
    // the bound only keeps an exit path from ever spinning (it would then
    // print "(busy)" instead of a name).
    for (int attempt = 0; attempt < 100000; ++attempt) {
      const std::uint64_t s = seq_.load(std::memory_order_acquire);
      const auto& copy = copies_[s & 1];
      std::size_t i = 0;
      for (; i + 1 < kSize; ++i)
        if ((out[i] = copy[i].load(std::memory_order_acquire)) == '\0') break;
      out[i] = '\0';
      if (seq_.load(std::memory_order_relaxed) == s) return;
    }
    std::strcpy(out, "(busy)");
  }

 private:
  using Copy = std::array<std::atomic<char>, kSize>;
  static_assert(std::atomic<char>::is_always_lock_free);

  // Writes "file: path" and the terminating NUL, cut to kSize - 1 characters.
  static void write_copy(Copy& copy, std::string_view file, std::string_view path) {
    std::size_t at = 0;
    for (std::string_view part : {file, std::string_view(": "), path}) {
      const std::size_t n = std::min(part.size(), kSize - 1 - at);
      for (std::size_t i = 0; i < n; ++i) copy[at + i].store(part[i], std::memory_order_release);
      at += n;
    }
    copy[at].store('\0', std::memory_order_release);
  }

  std::atomic<std::uint64_t> seq_{0};
  Copy copies_[2]{};
};
constinit Activity g_activity;

// This process's live workers (run_workers), killed and reaped by a forced
// exit: a worker left running would go on holding the output's lock after
// the run is seen to have ended (by a shell, by Slurm), and a rerun would be
// refused. Atomics: the handlers and the watchdog's exit read them.
constinit std::array<std::atomic<pid_t>, kMaxWorkers> g_workers{};
static_assert(std::atomic<pid_t>::is_always_lock_free);

// Returns whether any was still running: one that had ended by itself (a
// worker's own forced exit, at the end of its shorter grace) removed its
// temporaries.
bool kill_workers() {
  bool any = false;
  for (auto& slot : g_workers) {
    const pid_t pid = slot.load();
    if (pid <= 0) continue;
    ::kill(pid, SIGKILL);
    int status = 0;
    retry_on_eintr([&] { return ::waitpid(pid, &status, 0); });  // no allocation: safe in a signal handler
    slot.store(0);
    any = any || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  return any;
}

// The registry is changed by the main thread under the mutex and read by the
// watchdog under it. A signal handler cannot take a mutex, and may have
// interrupted the main thread halfway through a change: every change also
// holds `g_temps_busy`, which a handler only tries to take (Registry), so it
// never reads a list being changed; a handler that finds it taken leaves the
// temporaries to the run's unwinding, or to the next run's cleaner.
std::mutex g_temps_mutex;
constinit std::atomic<bool> g_temps_busy{false};
static_assert(std::atomic<bool>::is_always_lock_free);
std::vector<std::string>& temps() {
  static std::vector<std::string> list;
  return list;
}

// Holds `g_temps_busy`: a change waits (a handler on another thread holds it
// for a few system calls); a handler tries once (the std::nothrow form) and
// reads the list only if it got it.
class Registry {
 public:
  Registry() {
    while (g_temps_busy.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
    held_ = true;
  }
  explicit Registry(std::nothrow_t) : held_(!g_temps_busy.exchange(true, std::memory_order_acquire)) {}
  ~Registry() {
    if (held_) g_temps_busy.store(false, std::memory_order_release);
  }
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  bool held() const { return held_; }

 private:
  bool held_ = false;
};

// A stopped run publishes nothing (each publication looks at the stop
// first), so its temporary files and its lock can go as the stop arrives,
// before a launcher's SIGKILL (mpirun's, a second after its SIGTERM, while
// the ranks wait in a collective) keeps them from going at all; the
// directories it created go when the run has ended. Async-signal-safe.
void unlink_at_stop() {
  const Registry registry(std::nothrow);
  if (!registry.held()) return;
  for (const auto& path : temps()) ::unlink(path.c_str());  // a directory stays: EISDIR
}

// A worker's forced exit tells its parent, through the pipe run_workers
// reads, not the terminal: the parent then says in one line why the run
// ended (a Ctrl-C reaches both, and each would say it). -1: stderr.
constinit std::atomic<int> g_report_fd{-1};

void write_all(int fd, const char* text) {
  std::size_t len = std::strlen(text);
  while (len > 0) {
    const ssize_t n = ::write(fd, text, len);
    if (n <= 0) return;
    text += n;
    len -= static_cast<std::size_t>(n);
  }
}

// Async-signal-safe: unlink, rmdir, write, _exit (and atomic loads). Last
// registered first: files go before the directory a split created for them.
[[noreturn]] void remove_temporaries_and_exit(const char* what, int status) {
  const bool killed = kill_workers();  // first: their writes end before the lock is released
  if (const Registry registry(std::nothrow); registry.held()) {
    const auto& list = temps();
    for (auto it = list.rbegin(); it != list.rend(); ++it)
      if (::unlink(it->c_str()) != 0) ::rmdir(it->c_str());
  }
  char activity[Activity::kSize];
  g_activity.load(activity);
  const int parent = g_report_fd.load();
  const int fd = parent >= 0 ? parent : STDERR_FILENO;
  if (parent < 0) write_all(fd, "microbatch: error: ");  // the parent's line has the prefix
  write_all(fd, activity[0] ? activity : "(starting)");
  write_all(fd, ": ");
  write_all(fd, what);
  write_all(fd, "; partial outputs removed");
  // A worker still running now had its own, shorter grace to remove its
  // temporaries; killed, it could not: the next run into the output does.
  if (killed) write_all(fd, ", but for those of workers that did not stop in time (the next run removes them)");
  if (parent < 0) write_all(fd, "\n");
  run::exit_now(status);
}

// The grace runs from the first stop request: repeating the signal (a parent
// passing it on, a user pressing Ctrl-C again) does not extend it.
extern "C" void on_stop_signal(int sig) {
  if (g_signal.exchange(sig, std::memory_order_relaxed) != 0) return;
  unlink_at_stop();
  alarm(g_grace.load(std::memory_order_relaxed));
}

extern "C" void on_grace_expired(int) {
  remove_temporaries_and_exit("interrupted, and the current read did not return in time", 130);
}

// Set by the first thread to crash. The heap a corrupt file made libhdf5
// damage is every thread's: the hasher thread can fault on it a moment
// later, and must not end the process before the first thread's handler has
// removed the temporaries and said why.
constinit std::atomic<bool> g_crashed{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// What the crash handler reads, made before it is installed: whose code is
// where, and the version a defect report names.
CodeMap g_code;
constinit char g_version[64] = "";
// The test-only fault (arm_test_fault): the HDF5 path at whose activity
// our own code faults; empty: never. Set before any work, read by the main thread.
std::string& test_fault_path() {
  static std::string path;
  return path;
}

// ASan and TSan put their interceptors of the C library into the executable (fault.hpp).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kIntercepted = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kIntercepted = true;
#else
constexpr bool kIntercepted = false;
#endif
#else
constexpr bool kIntercepted = false;
#endif

// The faulting instruction and the return address a call would have left
// (fault.hpp's FaultSite), from the signal's saved registers. The word at
// the stack pointer belongs to the faulted frame (its redzone, to
// AddressSanitizer): read on purpose, so not instrumented.
[[gnu::no_sanitize_address]] void registers_of(const void* context, FaultSite& site) {
  if (context == nullptr) return;
  const auto& regs = static_cast<const ucontext_t*>(context)->uc_mcontext;
#if defined(__x86_64__)
  site.pc = static_cast<std::uintptr_t>(regs.gregs[REG_RIP]);
  site.return_address = *reinterpret_cast<const std::uintptr_t*>(regs.gregs[REG_RSP]);
#elif defined(__aarch64__)
  site.pc = regs.pc;
  site.return_address = regs.regs[30];
#else
  (void)regs;  // no registers known: the backtrace alone decides
#endif
}

// Whose the fault is. backtrace() was called once at install, so that its
// first call's loading of the unwinder (which allocates) is not here.
Blame blame_this_fault(const void* context) {
  static void* raw[128];
  static std::uintptr_t frames[128];
  FaultSite site;
  registers_of(context, site);
  const int n = ::backtrace(raw, 128);
  for (int i = 0; i < n; ++i) frames[i] = reinterpret_cast<std::uintptr_t>(raw[i]);
  site.frames = frames;
  site.frame_count = n > 0 ? static_cast<std::size_t>(n) : 0;
  site.intercepted = kIntercepted;
  return blame_fault(g_code, site);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "a fatal signal";
  }
}

// A message assembled without allocation, cut at its size.
class Text {
 public:
  Text& operator<<(const char* part) {
    for (; *part != '\0' && n_ + 1 < sizeof data_; ++part) data_[n_++] = *part;
    data_[n_] = '\0';
    return *this;
  }
  const char* c_str() const { return data_; }

 private:
  char data_[512] = "";
  std::size_t n_ = 0;
};

constinit Text g_crash_text;  // the crash handler's line (only the first crashing thread writes it)

// Writes `n` in decimal (a pid), without allocation.
Text& operator<<(Text& text, long n) {
  char digits[24];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && k < 23);
  char out[24];
  for (int i = 0; i < k; ++i) out[i] = digits[k - 1 - i];
  out[k] = '\0';
  return text << static_cast<const char*>(out);
}

// A fatal signal that another process sent (kill -SEGV): no code of this
// one faulted, so neither the library nor microbatch is to blame.
bool sent_by_another_process(const siginfo_t* info) {
  return info != nullptr && info->si_code <= 0 && info->si_pid != ::getpid();
}

extern "C" void on_crash(int sig, siginfo_t* info, void* context) {
  if (g_crashed.exchange(true)) {
    for (;;) ::pause();  // another thread's handler ends the process
  }
  Text& what = g_crash_text;
  if (sent_by_another_process(info)) {
    what << "stopped by " << signal_name(sig) << " sent by process " << static_cast<long>(info->si_pid)
         << " (not a crash)";
    remove_temporaries_and_exit(what.c_str(), static_cast<int>(ErrorKind::Data));
  }
  if (blame_this_fault(context) == Blame::Library) {
    if (const ChangedInput changed = changed_input_in_handler(); changed.shown != nullptr) {
      what << "the HDF5 library crashed (" << signal_name(sig) << ") on " << changed.shown
           << ", which changed while it was read (" << changed.how << "); nothing was published";
      remove_temporaries_and_exit(what.c_str(), static_cast<int>(ErrorKind::Environment));
    }
    what << "the HDF5 library crashed reading this (" << signal_name(sig) << "); the file is probably corrupt";
    remove_temporaries_and_exit(what.c_str(), static_cast<int>(ErrorKind::Data));
  }
  what << "microbatch " << (g_version[0] ? g_version : "(unknown version)") << " crashed (" << signal_name(sig)
       << ") in its own code: a defect of microbatch, not of the input; please report it";
  remove_temporaries_and_exit(what.c_str(), static_cast<int>(ErrorKind::Defect));
}

// Our own code faulting, for the tests (arm_test_fault): a volatile write
// (never left out) through a null pointer the compiler cannot see is null.
[[gnu::noinline]] void fault_in_own_code() {
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
}

void set_handler(int sig, void (*handler)(int), int flags = 0) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = flags;
  sigaction(sig, &sa, nullptr);
}

void set_crash_handler(int sig) {
  struct sigaction sa {};
  sa.sa_sigaction = on_crash;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) set_handler(sig, on_stop_signal);
  set_handler(SIGALRM, on_grace_expired);
}

std::optional<Error> interruption() {
  const int sig = g_signal.load(std::memory_order_relaxed);
  if (sig == 0) return std::nullopt;
  return Error(fmt::format("interrupted by signal {} ({}); partial outputs removed", sig, strsignal(sig)),
               ErrorKind::Interrupted);
}

void throw_if_interrupted() {
  if (std::optional<Error> stop = interruption()) throw *stop;
}

bool interrupted() { return g_signal.load(std::memory_order_relaxed) != 0; }

void install_crash_guard(std::string_view version) {
  const std::size_t n = std::min(version.size(), sizeof g_version - 1);
  std::memcpy(g_version, version.data(), n);
  g_version[n] = '\0';
  g_code = CodeMap();
  map_loaded_code(g_code);  // libhdf5 is linked in, hence loaded by now
  void* warm[1];
  ::backtrace(warm, 1);
  // A fault inside the handler itself finds its signal blocked on that thread: the kernel ends the process.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) set_crash_handler(sig);
  std::signal(SIGXFSZ, SIG_IGN);
}

void arm_test_fault(const std::string& path) { test_fault_path() = path; }

namespace {

// The watchdog's exit: a read of an input changed meanwhile can loop in
// libhdf5 as a damaged file does, and is then the change's fault. This
// thread may lock (the main thread is stuck in the library, not holding
// the watch).
[[noreturn]] void stop_stalled_run() {
  const std::optional<Error> changed = input_change();
  std::lock_guard<std::mutex> lock(g_temps_mutex);
  if (changed) {
    const std::string what = fmt::format("no progress within --stall-timeout, on {}", changed->what());
    remove_temporaries_and_exit(what.c_str(), static_cast<int>(ErrorKind::Environment));
  }
  remove_temporaries_and_exit("no progress within --stall-timeout; the HDF5 library seems stuck (is the file corrupt?)",
                              static_cast<int>(ErrorKind::Data));
}

}  // namespace

void start_stall_watchdog(unsigned seconds) {
  if (seconds == 0) return;
  const StopSignalsBlocked blocked;  // its handlers run on the main thread (threads.hpp)
  // Returns only once the thread runs its own code: split -j forks workers
  // soon after, and a thread still being set up by the C library or a
  // sanitizer runtime can hold their locks (thread list, allocator) at the
  // fork; a child would then wait on them forever. Once in its loop it holds
  // none: it sleeps and reads atomics.
  std::promise<void> running;
  std::future<void> started = running.get_future();
  std::thread([seconds, running = std::move(running)]() mutable {
    running.set_value();
    using Clock = std::chrono::steady_clock;
    constexpr auto kTick = std::chrono::milliseconds(200);
    std::uint64_t last = g_progress.load();
    StallClock clock(kTick);
    while (true) {
      const auto asleep = Clock::now();
      std::this_thread::sleep_for(kTick);
      const std::uint64_t now = g_progress.load();
      clock.tick(Clock::now() - asleep, now != last || g_not_stalled.load() > 0);
      last = now;
      if (clock.stalled() > std::chrono::seconds(seconds)) stop_stalled_run();
    }
  }).detach();
  started.wait();
}

void note_activity(const std::string& file, const std::string& path) {
  g_activity.store(file, path);
  g_progress.fetch_add(1, std::memory_order_relaxed);
  if (!test_fault_path().empty() && path == test_fault_path()) fault_in_own_code();
}

void note_progress() { g_progress.fetch_add(1, std::memory_order_relaxed); }

std::string out_of_memory_message() {
  char activity[Activity::kSize];
  g_activity.load(activity);
  return fmt::format("{}: out of memory; give a smaller --buffer-size (the bytes one copy holds at a time), fewer "
                     "-j workers, or more memory",
                     activity[0] ? activity : "(starting)");
}

NotStalled::NotStalled() { g_not_stalled.fetch_add(1); }
NotStalled::~NotStalled() {
  note_progress();  // the wait ends now: the time since it began is not counted either
  g_not_stalled.fetch_sub(1);
}

void register_worker(pid_t pid) {
  for (auto& slot : g_workers) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void unregister_worker(pid_t pid) {
  for (auto& slot : g_workers) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

void enter_worker(int report_fd) {
  {
    std::lock_guard<std::mutex> lock(g_temps_mutex);
    const Registry registry;
    temps().clear();  // the parent's (its lock among them): a worker's forced exit must not remove them
  }
  for (auto& slot : g_workers) slot.store(0);  // its siblings are the parent's to stop
  g_grace.store(kWorkerGraceSeconds);
  g_report_fd.store(report_fd);
}

void register_temporary(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_temps_mutex);
  const Registry registry;
  temps().push_back(path);
}

void unregister_temporary(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_temps_mutex);
  const Registry registry;
  // Searched from the end: outputs are unregistered in the reverse order of
  // their registration (AtomicOutputs), so a split of 64,000 files removes
  // each from the back instead of scanning them all (quadratic).
  auto& list = temps();
  const auto it = std::find(list.rbegin(), list.rend(), path);
  if (it != list.rend()) list.erase(std::next(it).base());
}

}  // namespace mb::io::run
