#include "io/aws/process.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/aws/documents.hpp"
#include "io/run/fd.hpp"

namespace mb::io::aws {
namespace {

// Everything the child writes to the pipe, until it closes it.
std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = run::retry_on_eintr([&] { return ::read(fd, buffer, sizeof buffer); });
    if (n <= 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

Credentials process_credentials_of(const std::string& command, const std::string& source, const Settings& settings) {
  const std::vector<std::string> words = split_command(command);
  if (words.empty()) throw usage_error(fmt::format("{}: credential_process is empty", source));
  std::vector<char*> argv;
  for (const auto& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> assignments = settings.assignments();
  std::vector<char*> envp;
  for (const auto& a : assignments) envp.push_back(const_cast<char*>(a.c_str()));
  envp.push_back(nullptr);
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) throw environment_error(fmt::format("{}: cannot make a pipe", source));
  run::Fd read_end(ends[0]), write_end(ends[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (started != 0)
    throw usage_error(fmt::format("{}: cannot run \"{}\": {}", source, words[0], std::strerror(started)));
  const std::string output = read_all(read_end.get());
  int status = 0;
  run::retry_on_eintr([&] { return ::waitpid(pid, &status, 0); });
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw usage_error(fmt::format("{}: \"{}\" failed ({})", source, words[0],
                                  WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                                    : fmt::format("signal {}", WTERMSIG(status))));
  return process_credentials(output, source);
}

}  // namespace mb::io::aws
