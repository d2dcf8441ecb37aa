#pragma once
// What the subcommands share: logging flags, progress on a terminal, spec
// loading, the buffer-size option.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/spec.hpp"
#include "io/progress.hpp"
#include "io/transfer/policy.hpp"

namespace mb::cli {

// -q / -v / --log-level / --stall-timeout, on the app and every subcommand;
// apply sets the log level and starts the stall watchdog.
void add_common_options(CLI::App& app);
void apply_common_options();
unsigned stall_timeout_seconds();

// Checks an unsigned option's text before CLI11 converts it: decimal digits
// only; a negative number (which CLI11 would wrap around to 2^64 - k) or any
// other text is a usage error naming `option` ("-n/--chunks").
CLI::Validator whole_number(const std::string& option);

// -n/--chunks, --micro-batch-size (exclusive) and --on-short, shared by split
// and inspect.
void add_partition_options(CLI::App& app, SplitOptions& options);

// --dp-degree D, --align and --layout (split, inspect and merge).
void add_data_parallel_options(CLI::App& app, DataParallel& dp, FileLayout& layout, std::uint64_t& cp_degree);

// Adds --buffer-size (MiB) bound to the policy's buffer; the byte paths
// are on unless MICROBATCH_NO_RAW_COPY is set (the tests compare both).
void add_copy_policy_options(CLI::App& app, transfer::Policy& policy);

// A progress callback that redraws one line on stderr when it is a terminal
// and logging is not quieted; otherwise nothing.
io::Progress terminal_progress(const std::string& verb);

// Where the spec comes from: -s FILE (a file, a pipe such as <(jq ...), or
// "-" for standard input) or --spec-json TEXT; neither: the default spec.
struct SpecSource {
  std::optional<std::string> path;  // -s
  std::optional<std::string> json;  // --spec-json
  bool given() const { return path || json; }
};

// Adds -s/--spec (with `help`) and --spec-json.
void add_spec_options(CLI::App& app, SpecSource& source, const std::string& help);

// The spec given, else the default spec ("null"). `spec_name` is what
// messages call it: the file, "<stdin>", "--spec-json" or "default spec".
// Both -s and --spec-json: a usage error.
SpecNode load_spec_or_default(const SpecSource& source, std::string& spec_name);

}  // namespace mb::cli
