#include "io/run/workers.hpp"

#include <fmt/core.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "io/run/exit.hpp"
#include "io/run/fd.hpp"
#include "io/run/fork.hpp"
#include "io/run/guard.hpp"

namespace mb::io::run {
namespace {

// A worker process. It reports an error as one line through a pipe and
// exits without unwinding the parent's frames (whose destructors would
// remove every worker's outputs).
struct Worker {
  pid_t pid = -1;
  Fd pipe;  // the read end of its error pipe
};

Worker start_worker(const std::function<void()>& work, unsigned stall_seconds) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(std::string("cannot create a pipe for a worker: ") + std::strerror(errno));
  Fd read_end(fds[0]), write_end(fds[1]);
  const pid_t parent = ::getpid();
  // A worker handles stop signals as the run does, for its own temporaries;
  // it keeps what it inherited: its work may use what this process opened
  // for it. It becomes a worker before it takes a signal.
  const auto become_worker = [&] {
    // The child ends in _exit: no destructor runs there, so it closes only what it closes itself.
    read_end.reset();
    // A worker must not outlive this process: killed with SIGKILL (scancel
    // --batch --signal=KILL, the OOM killer), it cannot stop the workers, and
    // an orphan would go on writing and holding the output's lock after the
    // run is seen to have ended, so that a rerun is refused. So it dies as
    // its parent did, at once, and its temporaries stay for the next run to
    // remove, as the parent's do. (run_workers runs on the main thread, whose
    // end is the process's.)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) exit_now(128 + SIGKILL);  // it died before prctl
    enter_worker(write_end.get());  // a forced exit tells this process, which reports once
  };
  const pid_t pid = fork_helper({.stops = Helper::Stops::handled,
                                 .close_others = false,
                                 .prepare = become_worker,
                                 .what = "a worker process"});
  if (pid == 0) {
    start_stall_watchdog(stall_seconds);  // threads do not survive fork()
    int status = 0;
    std::string message;
    try {
      work();
    } catch (const Error& e) {
      message = e.what();
      status = e.exit_code();
    } catch (const std::bad_alloc&) {
      message = out_of_memory_message();
      status = 1;
    } catch (const std::exception& e) {
      message = fmt::format("internal error: {}", e.what());
      status = 1;
    } catch (...) {
      // Escaping would end in std::terminate, and the crash guard would then
      // report a crash (SIGABRT) on a second line.
      message = "internal error: an exception of unknown type";
      status = 1;
    }
    if (!message.empty()) (void)!::write(write_end.get(), message.data(), message.size());
    exit_now(status);
  }
  write_end.reset();  // the worker holds it: its end is the pipe's end of file
  register_worker(pid);
  return {pid, std::move(read_end)};
}

// How a worker ended: its error message ("" when it succeeded) and the
// kind its exit status says.
struct Outcome {
  std::string message;
  ErrorKind kind = ErrorKind::Data;
};

// Waits for a worker, calling `waiting` every 200 ms.
Outcome finish_worker(Worker& w, const std::function<void()>& waiting) {
  std::string message;
  char buf[4096];
  bool told = false;
  while (true) {
    pollfd pfd{w.pipe.get(), POLLIN, 0};
    const int ready = ::poll(&pfd, 1, waiting ? 200 : 1000);
    note_progress();  // waiting is not stalling; the worker has its own watchdog
    if (waiting) waiting();
    if (interrupted() && !told) told = ::kill(w.pid, SIGTERM) == 0;  // pass a stop request on, once
    // Not retried at once: a signal that interrupts the wait may be a stop request, passed on above.
    if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    const ssize_t n = retry_on_eintr([&] { return ::read(w.pipe.get(), buf, sizeof buf); });
    if (n <= 0) break;
    message.append(buf, static_cast<std::size_t>(n));
  }
  w.pipe.reset();
  // Unregistered while it is a zombie, before it is reaped: a forced exit
  // in between kills nothing (its pid cannot have been reused yet).
  siginfo_t ended{};
  retry_on_eintr([&] { return ::waitid(P_PID, static_cast<id_t>(w.pid), &ended, WEXITED | WNOWAIT); });
  unregister_worker(w.pid);
  int status = 0;
  retry_on_eintr([&] { return ::waitpid(w.pid, &status, 0); });
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (message.empty())
    message = WIFSIGNALED(status) ? fmt::format("a worker process died of signal {}", WTERMSIG(status))
                                  : "a worker process failed";
  // The worker's own status, where it says more than "failed": a retry may
  // help, or the worker crashed in microbatch's code (a defect to report).
  ErrorKind kind = ErrorKind::Data;
  for (const ErrorKind kept : {ErrorKind::Environment, ErrorKind::Defect})
    if (WIFEXITED(status) && WEXITSTATUS(status) == static_cast<int>(kept)) kind = kept;
  return {message, kind};
}

void stop_workers(const std::vector<Worker>& started) {
  for (const auto& w : started) ::kill(w.pid, SIGTERM);
}

}  // namespace

void run_workers(std::uint64_t workers, const std::function<void(std::uint64_t)>& work, unsigned stall_seconds,
                 const std::function<void()>& waiting) {
  // Checked before any fork: a worker started past the bound could not be registered, nor stopped.
  if (workers > kMaxWorkers) throw Error(fmt::format("internal: {} worker processes, more than {}", workers, kMaxWorkers));
  std::vector<Worker> started;
  if (workers > 1) started.reserve(workers - 1);  // push_back cannot then throw after a fork
  // Whatever this process throws (worker 0, or starting the others): any
  // type, std::bad_alloc as well as mb::Error. The workers already started
  // are stopped and reaped before it is rethrown unchanged, so that its
  // exit status is kept and no worker outlives the run.
  std::exception_ptr own_failure;
  try {
    for (std::uint64_t w = 1; w < workers; ++w) started.push_back(start_worker([&, w] { work(w); }, stall_seconds));
    work(0);
  } catch (...) {
    own_failure = std::current_exception();
    stop_workers(started);
  }
  Outcome failure;
  for (auto& w : started) {
    Outcome outcome = finish_worker(w, waiting);
    if (failure.message.empty() && !outcome.message.empty()) failure = std::move(outcome);
  }
  throw_if_interrupted();
  if (own_failure) std::rethrow_exception(own_failure);
  if (!failure.message.empty()) throw Error(failure.message, failure.kind);
}

}  // namespace mb::io::run
