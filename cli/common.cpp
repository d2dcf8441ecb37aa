#include "cli/common.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "core/presets.hpp"
#include "core/remote.hpp"
#include "core/units.hpp"
#include "io/run/identity.hpp"
#include "io/run/guard.hpp"
#include "io/run/team.hpp"
#include "specs/manifest.hpp"
#include "specs/parse.hpp"

namespace mb::cli {
namespace {
struct CommonFlags {
  bool quiet = false;
  bool verbose = false;
  std::string level;
  unsigned stall_seconds = 600;
  bool no_sign_request = false;
  S3Options s3;
  std::string request_payer;
};
CommonFlags g_flags;
}  // namespace

// [lo, hi], checked as CLI::Range does, but not shown in --help: the help
// text says what the number means; a value out of range still names it.
CLI::Validator within(std::uint64_t lo, std::uint64_t hi) { return CLI::Range(lo, hi).description(""); }

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

std::string manifest_of_prefix(const std::string& name) {
  return is_remote(name) && name.ends_with("/") ? name + specs::kManifestName : name;
}

CLI::Validator local_output(const std::string& option, bool s3) {
  return CLI::Validator(
      [option, s3](std::string& value) -> std::string {
        check_place(value, option);
        if (s3 && is_remote(value) && !is_s3(value))
          throw usage_error(fmt::format("{}: {} is an HTTP(S) URL; outputs are local files or s3:// objects", option,
                                        shown_name(value)));
        if (!s3 && is_remote(value))
          throw usage_error(fmt::format("{}: {} is a URL, but outputs are local files (remote inputs are read-only); "
                                        "write locally, then upload (aws s3 cp --recursive, curl -T)",
                                        option, shown_name(value)));
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
      ->transform(whole_number("--stall-timeout"))
      ->type_name("SECONDS");
  app.add_flag("--no-sign-request", g_flags.no_sign_request,
               "send s3:// requests unsigned, for public buckets (else credentials are looked up as the AWS CLI "
               "does, and none found is an error)");
  app.add_option("--sse", g_flags.s3.sse,
                 "encrypt the objects written to S3 with AES256 or aws:kms (default: the bucket's encryption)")
      ->check(CLI::IsMember({"AES256", "aws:kms"}))
      ->type_name("ALGORITHM");
  app.add_option("--sse-kms-key-id", g_flags.s3.kms_key_id,
                 "with --sse aws:kms: the KMS key (default: the account's AWS managed key)")
      ->type_name("KEY");
  app.add_option("--request-payer", g_flags.request_payer,
                 "requester: pay for the requests to a Requester Pays bucket")
      ->check(CLI::IsMember({"requester"}))
      ->type_name("WHO");
}

unsigned stall_timeout_seconds() { return g_flags.stall_seconds; }

void apply_common_options() {
  spdlog::level::level_enum level = spdlog::level::info;
  if (g_flags.quiet) level = spdlog::level::err;
  if (g_flags.verbose) level = spdlog::level::debug;
  if (!g_flags.level.empty()) level = spdlog::level::from_str(g_flags.level);
  spdlog::set_level(level);
  if (!g_flags.s3.kms_key_id.empty() && g_flags.s3.sse != "aws:kms")
    throw usage_error("--sse-kms-key-id: give it with --sse aws:kms");
  g_flags.s3.requester_pays = g_flags.request_payer == "requester";
  install_remote(g_flags.no_sign_request, g_flags.s3);
  io::run::start_stall_watchdog(g_flags.stall_seconds);
}

void add_partition_options(CLI::App& app, SplitOptions& options) {
  auto* n = app.add_option("-n,--chunks", options.count, "number of microbatches (numpy.array_split sizes)")
                ->transform(whole_number("-n/--chunks"))
                ->type_name("N");
  auto* m = app.add_option("--micro-batch-size", options.micro_batch_size,
                           "rows per microbatch, the last one shorter (torch.split) unless --drop-last")
                ->transform(whole_number("--micro-batch-size"))
                ->type_name("M");
  n->excludes(m);
  app.add_flag("--drop-last", options.drop_last,
               "with --micro-batch-size: leave out the rows after the last whole microbatch (DataLoader's drop_last)")
      ->needs(m);
  app.add_flag("--allow-copies", options.allow_copies,
               "allow a spec that splits no dataset: every file a whole copy of the input");
  app.add_option_function<std::string>(
         "--on-short",
         [&options](const std::string& v) {
           options.on_short = v == "downsize" ? OnShort::Downsize : v == "empty" ? OnShort::Empty : OnShort::Error;
         },
         "when a split axis is shorter than N: error (default), downsize or empty")
      ->check(CLI::IsMember({"error", "downsize", "empty"}));
  app.add_option_function<std::string>(
         "--balance",
         [&options](const std::string& v) {
           options.balance = v == "sequences"   ? Balance::Sequences
                             : v == "attention" ? Balance::Attention
                                                : Balance::Tokens;
         },
         "packed sequences: fewest tokens in the largest cell (tokens, default), array_split of the sequence "
         "count (sequences), or least causal attention work, sum of L*(L+1)/2, in the largest cell (attention)")
      ->check(CLI::IsMember({"tokens", "sequences", "attention"}));
  add_data_parallel_options(app, options.dp, options.layout, options.cp_degree);
  add_cp_pad_option(app, options.cp_pad);
}

void add_cp_pad_option(CLI::App& app, bool& cp_pad) {
  app.add_flag("--cp-pad", cp_pad,
               "with --cp-degree C and packed data: pad each document at its end to a multiple of 2C (Transformer "
               "Engine's THD format; the pad value from the spec leaf's \"pad\", else 0); beside each offsets "
               "dataset NAME, NAME_padded holds the padded documents' offsets");
}

void add_data_parallel_options(CLI::App& app, DataParallel& dp, FileLayout& layout, std::uint64_t& cp_degree) {
  app.add_option("--dp-degree", dp.degree,
                 "data-parallel ranks (default 1): the split axis holds D contiguous slices, one per rank; each slice "
                 "is cut, and microbatch i joins piece i of every slice")
      ->transform(whole_number("--dp-degree"))
      ->check(within(1, std::uint64_t{1} << 32))
      ->type_name("D");
  app.add_flag("--align", dp.align, "PaddlePaddle's align mode: slice s is the rows s, s+D, s+2D, ...");
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
                 "2C stripes; CP rank r holds stripes r and 2C-1-r (zigzag); one file per CP rank (default 1)")
      ->transform(whole_number("--cp-degree"))
      ->check(within(1, std::uint64_t{1} << 20))
      ->type_name("C");
}

void add_copy_policy_options(CLI::App& app, io::transfer::Policy& policy) {
  policy.byte_paths = !process_settings().has("MICROBATCH_NO_RAW_COPY");
  policy.clones = !process_settings().has("MICROBATCH_NO_CLONES");
  app.add_option_function<std::size_t>(
         "--buffer-size", [&policy](std::size_t mib) { policy.buffer_bytes = mib << 20; },
         "MiB of data moved per read/write; bounds memory (default 64)")
      ->transform(whole_number("--buffer-size"))
      ->check(within(1, std::uint64_t{1} << 20))
      ->type_name("MiB");
}

std::string progress_text(const std::string& verb, const io::run::Tally& tally, double seconds) {
  const auto done = static_cast<double>(tally.done), total = static_cast<double>(tally.total);
  const double percent = tally.total == 0 ? 100.0 : 100.0 * done / total;
  const double rate = seconds > 0 ? done / seconds : 0;
  std::string text = fmt::format("{}: {} / {}  {:3.0f}%  {}/s  {} left", verb, byte_text(done), byte_text(total),
                                 percent, byte_text(rate), time_left_text(total - done, rate));
  if (tally.uploaded) text += fmt::format("  {} uploaded", byte_text(static_cast<double>(*tally.uploaded)));
  return text;
}

ProgressLine::ProgressLine(std::string verb)
    : verb_(std::move(verb)),
      active_(isatty(STDERR_FILENO) && spdlog::should_log(spdlog::level::info)),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

io::run::Progress ProgressLine::callback() {
  if (!active_) return {};
  return [this](const io::run::Tally& tally) { draw(tally); };
}

// Nothing in the first 200 ms, so that a short job leaves no flicker; then
// at most five redraws a second.
void ProgressLine::draw(const io::run::Tally& tally) {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r\033[K%s", progress_text(verb_, tally, seconds).c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::erase() {
  if (!drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

void add_spec_options(CLI::App& app, SpecSource& source, const std::string& help) {
  app.add_option_function<std::string>(
      "-s,--spec", [&source](const std::string& path) { source.path = path; },
      help + "; a file, a pipe (-s <(jq ...)) or - for standard input");
  app.add_option_function<std::string>(
      "--spec-json", [&source](const std::string& text) { source.json = text; },
      "the spec as JSON text on the command line, instead of -s: --spec-json '{\"*\": 0}'");
}

void add_preset_option(CLI::App& app, std::string& preset) {
  std::string names = "auto,none";
  for (const auto& p : presets()) names += "," + p.name;
  app.add_option("--preset", preset,
                 "without -s/--spec-json: auto (default) uses the spec of the kind of file detected (" +
                     preset_names() + "), none the default spec; or name one")
      ->check([](const std::string& name) {
        check_preset_name(name);
        return std::string();
      })
      // The choices, shown as CLI11 shows a closed set: the man page and completions are checked against them.
      ->type_name("NAME:{" + names + "}");
}

io::tree::SpecRequest spec_request(const SpecSource& source, const std::string& preset) {
  if (source.path && source.json) throw usage_error("give the spec once: -s/--spec or --spec-json, not both");
  if (source.given() && preset != "auto")
    throw usage_error(fmt::format("--preset {} and -s/--spec-json both give the spec: give one", preset));
  io::tree::SpecRequest request;
  request.preset = preset;
  if (source.json) {
    request.given_name = "--spec-json";
    request.given = specs::parse_spec(*source.json, request.given_name);
  } else if (source.path) {
    check_place(*source.path, "-s/--spec");
    if (url_scheme(*source.path))
      throw usage_error(fmt::format("-s/--spec: {} is a URL, but the spec is read from a local file: give a file, a "
                                    "pipe (-s <(curl -s URL)) or - for standard input",
                                    shown_name(*source.path)));
    request.given_name = specs::spec_file_name(*source.path);
    const io::run::NotStalled waiting;  // a pipe's writer takes the time it takes
    request.given = specs::load_spec_file(*source.path);
  }
  return request;
}

Source input_source(const std::string& name) { return Source::resolve(name, process_settings()); }

std::optional<Launch> team_launch(const std::string& command) {
  auto launch = detect_launch(process_settings().environment());
  if (!launch || launch->tasks < 2) return std::nullopt;
  if (!io::run::Team::supported())
    throw usage_error(fmt::format(
        "{}: started as task {} of {} by {}, but microbatch cannot cooperate with the other tasks (it has no MPI), "
        "and {} copies would write the same files; launch microbatch-mpi instead (package microbatch-mpi), or run "
        "one process, or one per shard with --shard K/P",
        command, launch->rank, launch->tasks, launch->launcher, launch->tasks));
  return launch;
}

void agree_on_command(io::run::Team& team, const CLI::App& sub, const std::vector<std::string>& files) {
  // How much a rank logs is its own affair.
  static const std::vector<std::string> own{"--help", "--quiet", "--verbose", "--log-level"};
  std::vector<io::run::Term> terms{{"the subcommand", sub.get_name()}};
  for (const CLI::Option* opt : sub.get_options()) {
    const std::string name = opt->get_name();
    if (std::find(own.begin(), own.end(), name) != own.end()) continue;
    std::string value;
    for (const auto& r : opt->results()) value += (value.empty() ? "" : " ") + r;
    terms.push_back({name, value});
  }
  std::string seen;  // one term, whatever the number of files: the names are compared as options
  for (const auto& f : files) seen += fmt::format("{}{}: {}", seen.empty() ? "" : "; ", f, io::run::identity_term(f));
  terms.push_back({"the named files' sizes and times", seen});
  io::run::agree_on(team, terms);
}

}  // namespace mb::cli
