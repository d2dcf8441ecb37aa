#pragma once
// What the subcommands share: logging flags, progress on a terminal, spec
// loading, the buffer-size option.
#include <CLI/CLI.hpp>
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

// -n/--chunks, --micro-batch-size (exclusive) and --on-short, shared by split
// and inspect.
void add_partition_options(CLI::App& app, SplitOptions& options);

// --dp-degree D, --align and --layout (split, inspect and merge).
void add_data_parallel_options(CLI::App& app, DataParallel& dp, FileLayout& layout);

// Adds --buffer-size (MiB) bound to the policy's buffer; the byte paths
// are on unless MICROBATCH_NO_RAW_COPY is set (the tests compare both).
void add_copy_policy_options(CLI::App& app, transfer::Policy& policy);

// A progress callback that redraws one line on stderr when it is a terminal
// and logging is not quieted; otherwise nothing.
io::Progress terminal_progress(const std::string& verb);

// The spec file when given, else the default spec ("null").
SpecNode load_spec_or_default(const std::string& path, std::string& spec_name);

}  // namespace mb::cli
