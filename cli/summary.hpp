#pragma once
// split --json and merge --json: one summary object on standard output
// (docs/schema/split-summary.schema.json, merge-summary.schema.json).
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace mb::cli {

// Collects every warning logged while it lives, whatever the log level
// (-q keeps them off stderr, not out of the summary); stderr shows what it
// showed before.
class WarningCapture {
 public:
  WarningCapture();
  ~WarningCapture();
  WarningCapture(const WarningCapture&) = delete;
  WarningCapture& operator=(const WarningCapture&) = delete;
  std::vector<std::string> warnings() const;

 private:
  struct Sink;
  std::shared_ptr<Sink> sink_;
  int level_;  // the logger's level before
};

// The summary's common part: "format", "version", and the fields every
// summary has, filled in by the command.
struct Summary {
  std::string command;  // "split" or "merge"
  std::vector<std::string> files;  // paths written, in order
  std::vector<std::uint64_t> sizes;  // theirs, one per file, as published
  std::uint64_t data_bytes = 0;
  std::uint64_t datasets = 0;
  std::uint64_t microbatches = 0;
  std::vector<std::string> warnings;
  std::chrono::steady_clock::time_point start;
};

// The object (the files with their sizes, their sum as "bytes"),
// with `extra` fields after the common ones.
nlohmann::ordered_json summary_json(const Summary& summary, const nlohmann::ordered_json& extra);

// Prints it on standard output, the only thing there.
void print_summary(const nlohmann::ordered_json& summary);

// A failure the command has reported itself (each problem on stderr, and
// with --json its own report on stdout, which says it failed): main logs its
// closing line and exits with its status, without a failure object.
class Reported : public Error {
 public:
  using Error::Error;
};

// Whether a failure prints --json's error object: --json is on the command
// line (read from argv, since a command line that does not parse has no
// options), and this process is the only one or rank 0 of a team (one
// object on a job's standard output).
bool failure_json_wanted(int argc, char** argv);

// The failure as one object on standard output
// (docs/schema/error.schema.json): {"format", "version", "error":
// {"message", "exit_status", "path", "object"}}, the last two where known.
void print_failure(const std::string& message, int exit_status, const Where& where);

}  // namespace mb::cli
