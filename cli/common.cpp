#include "cli/common.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "io/guard.hpp"
#include "specs/parse.hpp"

namespace mb::cli {
namespace {
struct CommonFlags {
  bool quiet = false;
  bool verbose = false;
  std::string level;
  unsigned stall_seconds = 600;
};
CommonFlags g_flags;
}  // namespace

// CLI11 reads an unsigned option with strtoull, which takes "-3" for
// 2^64 - 3 and "010" for 8: accept decimal digits only, leading zeros dropped.
// A usage error naming the option as the help spells it ("-n/--chunks").
CLI::Validator whole_number(const std::string& option) {
  return CLI::Validator(
      [option](std::string& value) -> std::string {
        const bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        if (!digits && !value.empty() && value[0] == '-')
          throw usage_error(fmt::format("{}: {} is negative; give a whole number (see --help)", option, value));
        if (!digits)
          throw usage_error(fmt::format("{}: '{}' is not a whole number (see --help)", option, value));
        value.erase(0, std::min(value.find_first_not_of('0'), value.size() - 1));
        return {};
      },
      "");
}

void add_common_options(CLI::App& app) {
  app.add_flag("-q,--quiet", g_flags.quiet, "only print errors");
  app.add_flag("-v,--verbose", g_flags.verbose, "print debug details, HDF5's error stack included");
  app.add_option("--log-level", g_flags.level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--stall-timeout", g_flags.stall_seconds,
                 "give up (exit 1, outputs removed) when no data moves for this many seconds; a corrupt file can "
                 "make the HDF5 library loop forever (default 600, 0 = never)")
      ->transform(whole_number("--stall-timeout"));
}

unsigned stall_timeout_seconds() { return g_flags.stall_seconds; }

void apply_common_options() {
  spdlog::level::level_enum level = spdlog::level::info;
  if (g_flags.quiet) level = spdlog::level::err;
  if (g_flags.verbose) level = spdlog::level::debug;
  if (!g_flags.level.empty()) level = spdlog::level::from_str(g_flags.level);
  spdlog::set_level(level);
  io::start_stall_watchdog(g_flags.stall_seconds);
}

void add_partition_options(CLI::App& app, SplitOptions& options) {
  auto* n = app.add_option("-n,--chunks", options.count, "number of microbatches (numpy.array_split sizes)")
                ->transform(whole_number("-n/--chunks"));
  auto* m = app.add_option("--micro-batch-size", options.micro_batch_size,
                           "rows per microbatch, the last one shorter (torch.split)")
                ->transform(whole_number("--micro-batch-size"));
  n->excludes(m);
  app.add_option_function<std::string>(
         "--on-short",
         [&options](const std::string& v) {
           options.on_short = v == "downsize" ? OnShort::Downsize : v == "empty" ? OnShort::Empty : OnShort::Error;
         },
         "when a split axis is shorter than N: error (default), downsize or empty")
      ->check(CLI::IsMember({"error", "downsize", "empty"}));
  app.add_option_function<std::string>(
         "--balance",
         [&options](const std::string& v) { options.balance = v == "sequences" ? Balance::Sequences : Balance::Tokens; },
         "packed sequences: fewest tokens in the largest microbatch (tokens, default) or array_split of the "
         "sequence count (sequences)")
      ->check(CLI::IsMember({"tokens", "sequences"}));
  add_data_parallel_options(app, options.dp, options.layout, options.cp_degree);
}

void add_data_parallel_options(CLI::App& app, DataParallel& dp, FileLayout& layout, std::uint64_t& cp_degree) {
  app.add_option("--dp-degree", dp.degree,
                 "the split axis holds D contiguous data-parallel shards; each shard is cut, and microbatch i joins "
                 "piece i of every shard")
      ->transform(whole_number("--dp-degree"))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_flag("--align", dp.align, "PaddlePaddle's align mode: shard s is the rows s, s+D, s+2D, ...");
  app.add_option_function<std::string>(
         "--layout",
         [&layout](const std::string& v) {
           layout = v == "per-rank" ? FileLayout::PerRank : FileLayout::PerMicrobatch;
         },
         "per-microbatch (default): one file per microbatch; per-rank: one file per (data-parallel rank, "
         "microbatch), rank-major")
      ->check(CLI::IsMember({"per-microbatch", "per-rank"}));
  app.add_option("--cp-degree", cp_degree,
                 "context parallelism: every sequence axis the spec marks, and every packed document, is cut into "
                 "2C chunks; CP rank r holds chunks r and 2C-1-r (zigzag); one file per CP rank")
      ->transform(whole_number("--cp-degree"))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
}

void add_copy_policy_options(CLI::App& app, transfer::Policy& policy) {
  policy.byte_paths = std::getenv("MICROBATCH_NO_RAW_COPY") == nullptr;
  app.add_option_function<std::size_t>(
         "--buffer-size", [&policy](std::size_t mib) { policy.buffer_bytes = mib << 20; },
         "MiB of data moved per read/write; bounds memory (default 64)")
      ->transform(whole_number("--buffer-size"))
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
}

io::Progress terminal_progress(const std::string& verb) {
  if (!isatty(STDERR_FILENO) || !spdlog::should_log(spdlog::level::info)) return {};
  return [verb](std::uint64_t done, std::uint64_t total) {
    std::fprintf(stderr, "\r%s: %llu/%llu", verb.c_str(), static_cast<unsigned long long>(done),
                 static_cast<unsigned long long>(total));
    if (done == total) std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  };
}

void add_spec_options(CLI::App& app, SpecSource& source, const std::string& help) {
  app.add_option_function<std::string>(
      "-s,--spec", [&source](const std::string& path) { source.path = path; },
      help + "; a file, a pipe (-s <(jq ...)) or - for standard input");
  app.add_option_function<std::string>(
      "--spec-json", [&source](const std::string& text) { source.json = text; },
      "the spec as JSON text on the command line, instead of -s: --spec-json '{\"*\": 0}'");
}

SpecNode load_spec_or_default(const SpecSource& source, std::string& spec_name) {
  if (source.path && source.json)
    throw usage_error("give the spec once: -s/--spec or --spec-json, not both");
  if (source.json) {
    spec_name = "--spec-json";
    return specs::parse_spec(*source.json, spec_name);
  }
  if (!source.path) {
    spec_name = "default spec";
    return SpecNode::make_default();
  }
  spec_name = specs::spec_file_name(*source.path);
  return specs::load_spec_file(*source.path);
}

}  // namespace mb::cli
