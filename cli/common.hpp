#pragma once
// What the subcommands share: logging flags, progress on a terminal, spec
// loading, the buffer-size option.
#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "cli/settings.hpp"
#include "core/error.hpp"
#include "core/launcher.hpp"
#include "core/source.hpp"
#include "core/plan.hpp"
#include "core/spec.hpp"
#include "io/run/progress.hpp"
#include "io/run/team.hpp"
#include "io/tree/spec_choice.hpp"
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

// A range check for a whole-number option that --help does not spell out
// as "UINT:UINT in [lo - hi]" (the option's help says what it means).
CLI::Validator within(std::uint64_t lo, std::uint64_t hi);

// Outputs are local files (or, with `s3`, s3:// names too): any other URL
// is a usage error naming `option` and saying how to upload instead (or,
// for a scheme microbatch does not take at all, which schemes it takes).
CLI::Validator local_output(const std::string& option, bool s3 = false);

// -n/--chunks, --micro-batch-size (exclusive) and --on-short, shared by split
// and inspect.
void add_partition_options(CLI::App& app, SplitOptions& options);

// --dp-degree D, --align and --layout (split, inspect and merge).
// --cp-pad, for split, inspect and merge.
void add_cp_pad_option(CLI::App& app, bool& cp_pad);
void add_data_parallel_options(CLI::App& app, DataParallel& dp, FileLayout& layout, std::uint64_t& cp_degree);

// Adds --buffer-size (MiB) bound to the policy's buffer; the byte paths
// are on unless MICROBATCH_NO_RAW_COPY is set (the tests compare both).
void add_copy_policy_options(CLI::App& app, io::transfer::Policy& policy);

// The progress line on a terminal: "split: 1.2 GiB / 2.2 GiB  54%  310 MiB/s
// 3 s left" (and "  960 MiB uploaded" for outputs on S3), redrawn at most
// every 200 ms on one line of stderr, when stderr is a terminal and logging
// is not quieted (-q); otherwise nothing. Erased
// (the line left empty) by erase() or when it goes out of scope, so that an
// error or the closing message starts on a clean line.
class ProgressLine {
 public:
  explicit ProgressLine(std::string verb);
  ~ProgressLine() { erase(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The callback a job reports to (empty when nothing is shown). It must not
  // outlive this object.
  io::run::Progress callback();
  void erase();

 private:
  void draw(const io::run::Tally& tally);

  std::string verb_;
  bool active_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

// The progress line's text (without the redraw codes).
std::string progress_text(const std::string& verb, const io::run::Tally& tally, double seconds);

// Where the spec comes from: -s FILE (a file, a pipe such as <(jq ...), or
// "-" for standard input) or --spec-json TEXT; neither: the default spec.
struct SpecSource {
  std::optional<std::string> path;  // -s
  std::optional<std::string> json;  // --spec-json
  bool given() const { return path || json; }
};

// Adds -s/--spec (with `help`) and --spec-json.
void add_spec_options(CLI::App& app, SpecSource& source, const std::string& help);

// --preset NAME: auto (default: detected from the file, when no spec is
// given), none (the default spec) or a preset's name (core/presets).
void add_preset_option(CLI::App& app, std::string& preset);

// What the command line says of the spec: the one given (-s, a pipe, stdin
// or --spec-json, named as messages call it) and --preset. io/tree chooses
// the spec from it (io/tree/spec_choice.hpp). Both -s and --spec-json, or a
// preset named beside either: a usage error.
io::tree::SpecRequest spec_request(const SpecSource& source, const std::string& preset);

// An input named on the command line, resolved once (core/source.hpp)
// with this process's environment.
Source input_source(const std::string& name);
// A split named by URL prefix (ending in "/": s3://bucket/mb/) is named by
// its manifest (s3://bucket/mb/manifest.json), which is what is read; any
// other name as it is.
std::string manifest_of_prefix(const std::string& name);

// The launch that started this process as one of several tasks (mpirun,
// srun), when `command` runs under one; none for a single process. A build
// without MPI refuses it (usage error): P copies would write the same files.
std::optional<Launch> team_launch(const std::string& command);

// Before a team does any work: every rank must have been started with the
// same options of `sub` (output, spec, counts, flags: all but logging) and
// see the same `files` (inputs, spec file: size and modification time).
// Otherwise every rank refuses (usage error), naming what differs.
void agree_on_command(io::run::Team& team, const CLI::App& sub, const std::vector<std::string>& files);

}  // namespace mb::cli
