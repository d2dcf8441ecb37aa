// microbatch: wires the subcommands, logs, and maps errors to exit codes
// (0 success, 1 data or spec wrong, 2 command line wrong, 3 a retry may
// help, 4 a crash of microbatch's own code (the crash guard's), 130
// interrupted).
#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cstdlib>

#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/hints.hpp"
#include "cli/summary.hpp"
#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/run/guard.hpp"
#include "io/run/identity.hpp"
#include "io/run/team.hpp"
#include "io/h5/library.hpp"

namespace {

void setup_logging() {
  auto logger = spdlog::stderr_logger_st("microbatch");
  logger->set_pattern("microbatch: %l: %v");
  spdlog::set_default_logger(logger);
}

// Split keeps up to 64 outputs open at once, and a virtual dataset read for a
// check opens its every source: let them use as many descriptors as allowed.
void raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

// The one error line on stderr (a presigned URL's query holds a signature,
// maybe a session token: never shown), and with --json the same as an
// object on stdout; returns the exit status.
//
// A run that failed on its data (exit 1) while one of its inputs changed
// failed because of the change: an input truncated or rewritten under a
// reader reads as a corrupt file, whichever call met it, in whichever
// process (a -j worker's failure comes back here; each rank of a team
// reports its own). The change is then the error, and a retry may help.
struct Failure {
  int argc;
  char** argv;
  int report(const std::string& message, int status, const mb::Where& where = {}) const {
    // A stop removes the run's temporaries as it arrives: a step still under way may then fail on one that
    // is gone. The stop is what ended the run.
    if (const std::optional<mb::Error> stop = mb::io::run::interruption(); stop && status != stop->exit_code()) {
      spdlog::debug("the run failed with: {}", mb::scrub_urls(message));
      return say(stop->what(), stop->exit_code(), {});
    }
    if (status == static_cast<int>(mb::ErrorKind::Data))
      if (const std::optional<mb::Error> changed = mb::io::run::input_change()) {
        spdlog::debug("the run failed with: {}", mb::scrub_urls(message));
        return say(changed->what(), changed->exit_code(), changed->where());
      }
    return say(message, status, where);
  }

 private:
  int say(const std::string& message, int status, const mb::Where& where) const {
    const std::string shown = mb::scrub_urls(message);
    spdlog::error("{}", shown);
    if (mb::cli::failure_json_wanted(argc, argv))
      mb::cli::print_failure(shown, status, {mb::scrub_urls(where.file), where.object});
    return status;
  }
};

}  // namespace

// Every HDF5 handle must be closed by its owner before exit; with
// MICROBATCH_CHECK_HANDLES set (the tests do), a leftover is an error.
int check_handles(int status) {
  const std::size_t open = mb::io::h5::open_object_count();
  if (open > 0 && mb::io::h5::failed_closes() > 0) {
    spdlog::debug("{} HDF5 objects left open after {} failed closes", open, mb::io::h5::failed_closes());
  } else if (open > 0) {
    spdlog::debug("{} HDF5 objects still open at exit", open);
    if (mb::cli::process_settings().has("MICROBATCH_CHECK_HANDLES")) {
      spdlog::error("internal: {} HDF5 objects left open at exit", open);
      return 70;
    }
  }
  return status;
}

int run(int argc, char** argv);

int main(int argc, char** argv) {
  const int status = check_handles(run(argc, argv));
  mb::io::run::Team::leave();  // after the error line: see team.hpp
  return status;
}

int run(int argc, char** argv) {
  setup_logging();
  raise_open_file_limit();
  mb::io::h5::init_library();
  mb::io::run::install_interrupt_handlers();
  mb::io::run::install_crash_guard(MICROBATCH_VERSION);
  // Test-only (docs/testing.md): our own code faults at that HDF5 object.
  if (const char* at = mb::cli::process_settings().get("MICROBATCH_TEST_FAULT")) mb::io::run::arm_test_fault(at);

  // Named, so that usage lines say "microbatch", not argv[0]'s whole path.
  CLI::App app{"microbatch: cut HDF5 batches into microbatches and glue them back", "microbatch"};
  app.set_version_flag("-V,--version", [] {
    return fmt::format("microbatch {} (HDF5 {})", MICROBATCH_VERSION, mb::io::h5::hdf5_version());
  });
  app.require_subcommand(1);
  app.footer(
      "Run 'microbatch COMMAND --help' for a command's options and an example.\n"
      "Exit status: 0 success, 1 data or spec wrong, 2 command line wrong, 3 a retry may help (no space, I/O\n"
      "error, network, output locked by another run, input changed while read), 4 microbatch itself crashed (a\n"
      "defect: please report it), 130 interrupted.");
  mb::cli::add_common_options(app);
  mb::cli::setup_split(app);
  mb::cli::setup_merge(app);
  mb::cli::setup_inspect(app);
  mb::cli::setup_finish(app);
  mb::cli::setup_verify(app);
  mb::cli::setup_diff(app);

  // CLI11 would only say that a subcommand is required; name the typo instead.
  bool known = argc < 2 || argv[1][0] == '-';
  for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
  const Failure failure{argc, argv};
  if (!known) return failure.report(mb::cli::unknown_command_message(app, argv[1]), 2);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A misspelt option also shows as a missing required one or a stray value: name the typo instead.
    const auto typo = mb::cli::misspelt_option(app, argc, argv);
    return failure.report(typo ? *typo : std::string(e.what()) + " (see --help)", 2);
  } catch (const mb::cli::Reported& e) {
    spdlog::error("{}", mb::scrub_urls(e.what()));
    return e.exit_code();
  } catch (const mb::Error& e) {
    return failure.report(e.what(), e.exit_code(), e.where());
  } catch (const std::bad_alloc&) {
    return failure.report(mb::io::run::out_of_memory_message(), 1);
  } catch (const std::exception& e) {
    return failure.report(std::string("internal error: ") + e.what(), 1);
  }
  return 0;
}
