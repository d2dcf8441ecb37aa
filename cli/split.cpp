// microbatch split: one HDF5 file per microbatch, plus manifest.json.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/summary.hpp"
#include "core/error.hpp"
#include "core/remote.hpp"
#include "core/shards.hpp"
#include "core/units.hpp"
#include "io/tree/prepare.hpp"
#include "io/split/parts.hpp"
#include "io/split/split.hpp"
#include "io/split/team.hpp"
#include "io/store/store.hpp"
#include "io/run/guard.hpp"
#include "io/run/team.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"

namespace mb::cli {
namespace {

struct SplitCommand {
  std::string input;
  SpecSource spec;
  std::string preset = "auto";
  std::string output_dir;
  SplitOptions partition;
  bool force = false;
  bool resume = false;
  io::transfer::Policy policy;
  std::uint64_t jobs = 1;
  std::optional<std::string> shard;  // --shard K/P or auto; none: the whole split
  std::optional<std::string> keep_local;  // -o s3://: keep the files in this directory too
  unsigned uploads = 4;
  bool json = false;
};

// Slurm's job-array variables, for --shard auto.
std::map<std::string, std::string> slurm_array_environment() {
  std::map<std::string, std::string> env;
  for (const char* name : {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"})
    if (const char* value = process_settings().get(name)) env[name] = value;
  return env;
}

std::uint64_t dataset_count(const NodeInfo& tree) {
  std::uint64_t n = 0;
  for_each_node(tree, [&](const NodeInfo& node) { n += !node.is_group() && !node.is_further_name(); });
  return n;
}

void print_split_summary(const SplitCommand& cmd, const io::store::Store& place, const io::tree::Prepared& prepared,
                         const io::split::SplitResult& result, Summary summary) {
  const SplitPlan& plan = *prepared.plan;
  for (const auto& f : result.files) summary.files.push_back(place.shown(f.name));
  // The manifest, or a shard's part record.
  const std::string last = !cmd.shard ? std::string(specs::kManifestName)
                                      : io::split::part_name(parse_shard(*cmd.shard, slurm_array_environment()));
  summary.files.push_back(place.shown(last));
  for (const auto& f : result.files) summary.sizes.push_back(f.size);
  summary.sizes.push_back(result.manifest_bytes);
  summary.data_bytes = result.data_bytes;
  summary.datasets = dataset_count(prepared.tree);
  summary.microbatches = plan.count;
  nlohmann::ordered_json extra{{"input", specs::printable_text(prepared.input.shown())},
                               {"output_dir", specs::printable_text(shown_name(cmd.output_dir))},
                               {"split_datasets", plan.pieces.size()},
                               {"ranks", plan.layout == FileLayout::PerRank ? plan.ranks : 1},
                               {"dropped_rows", plan.dropped},
                               {"kept_files", result.kept_files},
                               {"kept_bytes", result.kept_bytes}};
  print_summary(summary_json(summary, extra));
}

// What one process of a split does, and how it reports.
using SplitRun = io::split::ShareRun;

io::split::SplitJob split_job(const SplitCommand& cmd, const SplitRun& run, const Source& input,
                              io::store::WritableStore& place) {
  io::split::SplitJob job;
  job.input = input;
  job.place = &place;
  job.claimed = run.prepared_directory;  // by a team's rank 0
  job.force = cmd.force && !run.prepared_directory;  // a team's rank 0 cleared the directory
  job.resume = cmd.resume;
  job.options = cmd.partition;
  job.policy = cmd.policy;
  job.workers = cmd.jobs;
  job.shard = run.shard;
  job.before_publish = run.before_publish;
  job.stall_seconds = stall_timeout_seconds();
  job.tool_version = MICROBATCH_VERSION;
  return job;
}

// --resume: what an earlier run had published and this one kept.
void log_resume(const SplitCommand& cmd, const io::split::SplitResult& result) {
  if (!cmd.resume || result.kept_files == 0) return;
  const std::string kept = byte_text(static_cast<double>(result.kept_bytes));
  if (result.kept_files == result.files.size() && result.data_bytes == 0)
    return spdlog::info("resumed: all {} files stand as an earlier run of this command published them ({}, checked "
                        "by digest); nothing written",
                        result.files.size(), kept);
  spdlog::info("resumed: {} of {} files kept as an earlier run published them ({}), {} written", result.kept_files,
               result.files.size(), kept, byte_text(static_cast<double>(result.data_bytes)));
}

void log_split(const SplitCommand& cmd, const io::tree::Prepared& prepared, const io::split::SplitResult& result) {
  const SplitPlan& plan = *prepared.plan;
  log_resume(cmd, result);
  spdlog::info("split {} into {} microbatches{}{} in {} ({} split datasets)", prepared.input.shown(), plan.count,
               plan.layout == FileLayout::PerRank ? fmt::format(" x {} ranks", plan.ranks) : "",
               plan.cp > 1 ? fmt::format(" x {} CP ranks", plan.cp) : "", shown_name(cmd.output_dir),
               plan.pieces.size());
}

// A shard (an array task) says what it wrote, not what the whole split is:
// its log is read alone.
void log_shard(const SplitCommand& cmd, const Shard& shard, const io::tree::Prepared& prepared,
               const io::split::SplitResult& result) {
  log_resume(cmd, result);
  const auto& files = result.files;
  const std::string names = files.empty()        ? std::string("none: more shards than files")
                            : files.size() == 1 ? files.front().name
                                                : fmt::format("{} .. {}", files.front().name, files.back().name);
  spdlog::info("shard {} of {}: {} of {} microbatch files ({}) of {} in {}; "
               "'microbatch finish {}' once all {} are done",
               shard.index, shard.count, files.size(), prepared.plan->files(), names, prepared.input.shown(),
               cmd.output_dir, cmd.output_dir, shard.count);
}

// Plans and writes this process's files; returns what it wrote.
std::pair<io::tree::Prepared, io::split::SplitResult> split_once(const SplitCommand& cmd, const SplitRun& run,
                                                                 io::store::WritableStore& place) {
  const SplitOptions& options = cmd.partition;
  if (options.count.has_value() == options.micro_batch_size.has_value())
    throw usage_error("split: give exactly one of -n/--chunks and --micro-batch-size");
  io::tree::PrepareRequest request{
      .input = input_source(cmd.input), .spec = spec_request(cmd.spec, cmd.preset), .partition = options};
  // Small datasets kept from the tree's walk; not when copies are off, which
  // writes every file the plain way (the tests compare the two).
  if (cmd.policy.clones) request.keep_bytes = cmd.policy.buffer_bytes;
  io::tree::Prepared prepared = io::tree::prepare(request);
  if (run.report) io::tree::log_preset(prepared.input.shown(), prepared.preset);
  if (run.report)
    for (const auto& w : prepared.plan->warnings) spdlog::warn("{}", w);
  io::split::SplitJob job = split_job(cmd, run, prepared.input, place);
  ProgressLine progress("split");
  if (run.report) job.progress = progress.callback();
  io::split::SplitResult result = io::split::execute(job, prepared);
  return {std::move(prepared), std::move(result)};
}

void run_alone(const SplitCommand& cmd, io::store::WritableStore& place) {
  Summary summary{"split", {}, {}, 0, 0, 0, {}, std::chrono::steady_clock::now()};
  std::optional<WarningCapture> capture;
  if (cmd.json) capture.emplace();
  SplitRun run;
  if (cmd.shard) run.shard = parse_shard(*cmd.shard, slurm_array_environment());
  const auto [prepared, result] = split_once(cmd, run, place);
  if (capture) {
    summary.warnings = capture->warnings();
    print_split_summary(cmd, place, prepared, result, std::move(summary));
  }
  if (run.shard)
    log_shard(cmd, *run.shard, prepared, result);
  else
    log_split(cmd, prepared, result);
}

void split_with_team(const SplitCommand& cmd, const Launch& launch, const CLI::App& sub, io::store::WritableStore& place) {
  if (cmd.shard) throw usage_error("split: --shard and an MPI launch: the ranks are the shards already");
  if (cmd.keep_local) throw usage_error("split: --keep-local and an MPI launch: each rank spools its own files");
  Summary summary{"split", {}, {}, 0, 0, 0, {}, std::chrono::steady_clock::now()};
  io::run::Team team(launch);
  std::vector<std::string> files{cmd.input};
  if (cmd.spec.path) files.push_back(*cmd.spec.path);
  agree_on_command(team, sub, files);
  std::optional<WarningCapture> capture;
  if (cmd.json && team.rank() == 0) capture.emplace();
  const auto [prepared, result] =
      io::split::split_as_team(team, {.place = &place, .force = cmd.force, .resume = cmd.resume, .input = input_source(cmd.input)},
                               [&](const SplitRun& run) { return split_once(cmd, run, place); });
  if (team.rank() != 0) return;
  if (capture) {
    summary.warnings = capture->warnings();
    print_split_summary(cmd, place, prepared, result, std::move(summary));
  }
  log_split(cmd, prepared, result);
  spdlog::info("split as {} ranks ({})", team.size(), launch.launcher);
}

void run_split(const SplitCommand& cmd, const CLI::App& sub) {
  if (cmd.resume && cmd.force) throw usage_error("split: give one of --resume (keep an earlier run's files) and --force");
  if (cmd.resume && cmd.keep_local) throw usage_error("split: --resume and --keep-local: give one of them");
  if (cmd.keep_local && !is_remote(cmd.output_dir))
    throw usage_error("split: --keep-local is for an s3:// output (-o s3://BUCKET/PREFIX/)");
  // The output place, opened once: everything below takes it.
  const std::unique_ptr<io::store::WritableStore> place =
      io::store::open_writable(cmd.output_dir, process_settings(), {cmd.keep_local, cmd.uploads});
  if (const auto launch = team_launch("split")) return split_with_team(cmd, *launch, sub, *place);
  run_alone(cmd, *place);
}

}  // namespace

void setup_split(CLI::App& app) {
  auto cmd = std::make_shared<SplitCommand>();
  CLI::App* sub = app.add_subcommand("split", "Cut a batch file into one HDF5 file per microbatch");
  sub->footer(
      "Example:\n"
      "  microbatch split batch.h5 -s spec.json -n 4 -o mb/\n"
      "  writes mb/microbatch-00000.h5 ... mb/microbatch-00003.h5 and mb/manifest.json");
  sub->add_option("input", cmd->input, "batch file (HDF5), opened read-only")->required();
  add_spec_options(*sub, cmd->spec,
                   "chunk-spec JSON (default: a detected preset's, else split rank>=1 on axis 0, replicate the rest)");
  add_preset_option(*sub, cmd->preset);
  add_partition_options(*sub, cmd->partition);
  sub->add_option("-o,--output", cmd->output_dir,
                  "output directory, or s3://BUCKET/PREFIX/: each file is uploaded as soon as it is written, the "
                  "manifest last, once all are confirmed")
      ->required()
      ->check(local_output("-o/--output", true));
  sub->add_option("--keep-local", cmd->keep_local,
                  "with -o s3://: write the files (and the manifest, or with --shard the part record) in this "
                  "directory and keep them; by default they are written to a spool under $TMPDIR and each is "
                  "removed once it is uploaded (not under MPI)")
      ->check(local_output("--keep-local"))
      ->type_name("DIR");
  sub->add_option("--uploads", cmd->uploads, "with -o s3://: files uploaded at once (default 4)")
      ->transform(whole_number("--uploads"))
      ->check(within(1, 64))
      ->type_name("N");
  sub->add_flag("--force", cmd->force,
                "replace the output of an earlier split in the directory (under the prefix: its manifest and part "
                "records are deleted first, its files that the new split does not overwrite once the new manifest "
                "is up; a shard or an MPI team deletes what it replaces before any work)");
  sub->add_flag("--resume", cmd->resume,
                "continue an interrupted run of this same command: each file is published as soon as it is written, "
                "with a journal entry beside it; a rerun keeps the files whose bytes match their entries and writes "
                "the rest. Over this command's finished split: nothing to do (exit 0); over another split: refused");
  add_copy_policy_options(*sub, cmd->policy);
  sub->add_option("-j,--jobs", cmd->jobs,
                  "worker processes, each writing its share of the output files (compression and HDF5's "
                  "per-object work are per file, so they spread over cores; default 1). The local case of "
                  "--shard: worker w of W writes the same contiguous share shard w of W would")
      ->transform(whole_number("-j/--jobs"))
      ->check(within(1, io::run::kMaxWorkers))
      ->type_name("J");
  sub->add_option("--shard", cmd->shard,
                  "K/P: write only shard K's contiguous share of the files (0 <= K < P) and its part record "
                  "part-K-of-P.json, no manifest; run all P shards into one directory (or s3:// prefix), then "
                  "'microbatch finish DIR'. auto: K and P from a Slurm job array (SLURM_ARRAY_TASK_ID - "
                  "SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT). --force then replaces only this shard's files")
      ->type_name("K/P|auto");
  sub->add_flag("--json", cmd->json,
                "print a summary object on stdout: files written with their sizes, bytes, datasets, microbatches, "
                "warnings, seconds");
  add_common_options(*sub);
  sub->callback([cmd, sub] {
    apply_common_options();
    run_split(*cmd, *sub);
  });
}

}  // namespace mb::cli
