// microbatch merge: glue microbatch files back into one batch.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/summary.hpp"
#include "core/error.hpp"
#include "core/remote.hpp"
#include "io/merge/inputs.hpp"
#include "io/merge/merge.hpp"
#include "io/store/store.hpp"
#include "io/tree/prepare.hpp"
#include "io/run/team.hpp"
#include "specs/emit.hpp"
#include "specs/manifest.hpp"
#include "specs/parse.hpp"

namespace mb::cli {
namespace {

struct MergeCommand {
  std::vector<std::string> inputs;
  SpecSource spec;
  std::string preset = "auto";
  std::string output;
  bool force = false;
  bool virtual_datasets = false;
  bool no_verify = false;
  bool allow_unfinished = false;
  DataParallel dp;
  FileLayout layout = FileLayout::PerMicrobatch;
  std::uint64_t cp_degree = 1;
  bool cp_pad = false;
  bool dp_given = false;  // --dp-degree, --align, --layout, --cp-degree or --cp-pad on the command line
  io::transfer::Policy policy;
  bool json = false;
};

std::vector<io::merge::MergeInput> labelled(const std::vector<Source>& files) {
  std::vector<io::merge::MergeInput> out;
  for (std::size_t i = 0; i < files.size(); ++i)
    out.push_back({files[i], fmt::format("microbatch {} ({})", i, files[i].shown())});
  return out;
}

// Layout flags given beside a manifest must be its split's: with others the
// files would be put back in the wrong places.
void require_split_layout(const MergeCommand& cmd, const SplitOptions& split, const std::string& manifest) {
  const auto differs = [&](const char* flag, const std::string& given, const std::string& recorded) {
    if (given != recorded)
      throw usage_error(fmt::format("{} {} is not how these files were split ({} says {}): leave it out, or give "
                                    "the split's",
                                    flag, given, manifest, recorded));
  };
  differs("--dp-degree", std::to_string(cmd.dp.degree), std::to_string(split.dp.degree));
  differs("--align", cmd.dp.align ? "on" : "off", split.dp.align ? "on" : "off");
  differs("--layout", cmd.layout == FileLayout::PerRank ? "per-rank" : "per-microbatch",
          split.layout == FileLayout::PerRank ? "per-rank" : "per-microbatch");
  differs("--cp-degree", std::to_string(cmd.cp_degree), std::to_string(split.cp_degree));
  differs("--cp-pad", cmd.cp_pad ? "on" : "off", split.cp_pad ? "on" : "off");
}

io::merge::MergeJob merge_job(const MergeCommand& cmd, const io::merge::MergeSources& sources) {
  io::merge::MergeJob job;
  job.dp = cmd.dp;
  job.layout = cmd.layout;
  job.cp_degree = cmd.cp_degree;
  job.cp_pad = cmd.cp_pad;
  if (sources.manifest) {
    job.manifest = &*sources.manifest;
    if (cmd.dp_given) require_split_layout(cmd, sources.manifest->options, sources.manifest_path);
    if (!cmd.dp_given) {
      job.dp = sources.manifest->options.dp;
      job.layout = sources.manifest->options.layout;
      job.cp_degree = sources.manifest->options.cp_degree;
      job.cp_pad = sources.manifest->options.cp_pad;
    }
  }
  job.inputs = labelled(sources.files);
  job.read_besides = sources.read_besides;
  job.output = cmd.output;  // as given: messages name it so
  job.force = cmd.force;
  job.virtual_datasets = cmd.virtual_datasets;
  job.verify = !cmd.no_verify;
  job.policy = cmd.policy;
  return job;
}

// The spec request, with the manifest's spec (the one its split used) for a
// split directory when no spec is given.
io::tree::SpecRequest merge_spec(const MergeCommand& cmd, const io::merge::MergeSources& sources) {
  io::tree::SpecRequest request = spec_request(cmd.spec, cmd.preset);
  if (sources.manifest && !request.given) {
    request.recorded_name = sources.manifest_path + " (spec)";
    request.recorded = specs::parse_spec(sources.manifest->spec.dump(), request.recorded_name);
  }
  return request;
}

// What needs the output to be a local file: virtual datasets refer to the
// inputs by path, and a team's ranks write scratch files beside it.
void require_local_output(const MergeCommand& cmd, bool team) {
  if (!is_remote(cmd.output)) return;
  if (cmd.virtual_datasets)
    throw usage_error("merge --virtual: the output refers to the microbatch files by path; it cannot be an s3:// "
                      "object");
  if (team) throw usage_error("merge: an MPI launch writes a shared file, not an s3:// object");
}

// Merges; under a team (`team` set), as its rank. Reports on rank 0 only.
void merge_once(const MergeCommand& cmd, std::optional<io::merge::MergeTeam> team) {
  const bool lead = !team || team->rank == 0;
  Summary summary{"merge", {}, {}, 0, 0, 0, {}, std::chrono::steady_clock::now()};
  std::optional<WarningCapture> capture;
  if (cmd.json && lead) capture.emplace();
  std::vector<Source> inputs;
  for (const auto& name : cmd.inputs) inputs.push_back(input_source(manifest_of_prefix(name)));
  if (cmd.virtual_datasets)
    for (const auto& in : inputs)
      if (in.is_remote())
        throw usage_error(fmt::format("merge --virtual: {} is a URL; virtual datasets can only refer to local files",
                                      in.shown()));
  const io::merge::MergeSources sources = io::merge::find_sources(
      inputs, cmd.allow_unfinished ? io::merge::Unfinished::Allow : io::merge::Unfinished::Refuse);
  require_local_output(cmd, team.has_value());
  const io::store::WritableMember output = io::store::open_writable_member(cmd.output, process_settings());
  io::merge::refuse_reading(*output.store, output.name, sources);
  io::merge::MergeJob job = merge_job(cmd, sources);
  job.place = output.store.get();
  job.output_name = output.name;
  job.team = std::move(team);
  const io::tree::SpecRequest spec = merge_spec(cmd, sources);
  ProgressLine progress("merge");
  if (lead) job.progress = progress.callback();
  const io::merge::MergeResult result = io::merge::execute(job, spec);
  summary.sizes = {result.output_bytes};
  progress.erase();
  if (!lead) return;
  io::tree::log_preset(sources.files.front().shown(), result.preset);
  if (capture) {
    summary.files = {shown_name(cmd.output)};
    summary.data_bytes = result.data_bytes;
    summary.datasets = result.datasets;
    summary.microbatches = sources.files.size();
    summary.warnings = capture->warnings();
    auto shown = nlohmann::ordered_json::array();
    for (const auto& f : sources.files) shown.push_back(specs::printable_text(f.shown()));
    print_summary(
        summary_json(summary, {{"inputs", shown}, {"output", specs::printable_text(shown_name(cmd.output))}}));
  }
  spdlog::info("merged {} files into {}{}", sources.files.size(), shown_name(cmd.output),
               job.team ? fmt::format(" as {} ranks", job.team->size) : "");
}

// Under mpirun or srun: the ranks share out the compression of the large
// compressed datasets; rank 0 writes the output (io/merge/merge.hpp).
void merge_with_team(const MergeCommand& cmd, const Launch& launch, const CLI::App& sub) {
  require_local_output(cmd, true);
  if (cmd.virtual_datasets)
    throw usage_error("merge: --virtual writes no data, nothing to share out: run it as one process");
  io::run::Team team(launch);
  std::vector<std::string> files = cmd.inputs;
  if (cmd.spec.path) files.push_back(*cmd.spec.path);
  agree_on_command(team, sub, files);
  io::run::Consensus votes(team);
  try {
    merge_once(cmd, io::merge::MergeTeam{team.rank(), team.size(), [&] { votes.agree(); }});
  } catch (...) {
    votes.abandon();
    throw;
  }
}

void run_merge(const MergeCommand& cmd, const CLI::App& sub) {
  if (const auto launch = team_launch("merge")) return merge_with_team(cmd, *launch, sub);
  merge_once(cmd, std::nullopt);
}

}  // namespace

void setup_merge(CLI::App& app) {
  auto cmd = std::make_shared<MergeCommand>();
  CLI::App* sub = app.add_subcommand("merge", "Concatenate, check and reduce microbatch files back into one batch");
  sub->footer(
      "Examples:\n"
      "  microbatch merge mb/ -o merged.h5               # order, files and spec from mb/manifest.json\n"
      "  microbatch merge out-*.h5 -s out_spec.json -o merged.h5\n"
      "  microbatch merge out-*.h5 -o merged.h5 --spec-json \\\n"
      "    '{\"loss\": {\"reduce\": \"mean\", \"weight\": \"/num_tokens\"}, \"num_tokens\": {\"reduce\": \"sum\"},\n"
      "      \"grad_norm\": {\"reduce\": \"stack\"}, \"*\": null}'\n"
      "                          # loss: mean weighted by each file's /num_tokens; grad_norm: shape [N]\n"
      "Reducers (spec leaves, merge only): {\"reduce\": \"sum\"|\"mean\"|\"min\"|\"max\"} element-wise;\n"
      "{\"reduce\": \"mean\", \"weight\": \"/path\"} (or \"/path@attribute\"): sum(w_i*x_i)/sum(w_i), w_i the\n"
      "rank-0 number at that path in input i (finite, >= 0, not all 0); {\"reduce\": \"stack\"}: the inputs'\n"
      "values along a new leading axis of length N, in input order, any dtype.");
  sub->add_option("inputs", cmd->inputs, "a split's output directory, or microbatch files in order")->required();
  add_spec_options(*sub, cmd->spec,
                   "chunk-spec JSON: concatenate, check equal, or reduce (sum, mean, min, max, mean weighted by a "
                   "per-input number, stack: see below) each leaf (default: the manifest's spec for a directory, "
                   "else a detected preset's, else the default spec)");
  add_preset_option(*sub, cmd->preset);
  sub->add_option("-o,--output", cmd->output,
                  "merged HDF5 file, or s3://BUCKET/KEY.h5: written locally under $TMPDIR, then uploaded (the object "
                  "appears only whole)")
      ->required()
      ->check(local_output("-o/--output", true));
  sub->add_flag("--force", cmd->force, "replace an existing output file (or object)");
  sub->add_flag("--virtual", cmd->virtual_datasets,
                "split leaves become HDF5 virtual datasets over the microbatch files (recorded by absolute path; "
                "they must stay there); nothing is copied; replicated leaves are still checked");
  sub->add_flag("--no-verify", cmd->no_verify,
                "do not check each file's content digest against its split's manifest; its size, its name's place in "
                "the manifest and its rows still are (two files swapped on disk with equal sizes are then not caught)");
  sub->add_flag("--allow-unfinished", cmd->allow_unfinished,
                "merge the files given although their directory (or prefix) holds an unfinished split (split "
                "--resume stopped: journal entries beside them, no manifest.json); without it, such files are "
                "refused, since they may be only part of the batch");
  // As given to split; a manifest records them.
  add_data_parallel_options(*sub, cmd->dp, cmd->layout, cmd->cp_degree);
  add_cp_pad_option(*sub, cmd->cp_pad);
  add_copy_policy_options(*sub, cmd->policy);
  sub->add_flag("--json", cmd->json,
                "print a summary object on stdout: the file written with its size, bytes, datasets, microbatches, "
                "warnings, seconds");
  add_common_options(*sub);
  sub->callback([cmd, sub] {
    apply_common_options();
    cmd->dp_given = sub->count("--dp-degree") > 0 || sub->count("--align") > 0 || sub->count("--layout") > 0 ||
                    sub->count("--cp-degree") > 0 || sub->count("--cp-pad") > 0;
    run_merge(*cmd, *sub);
  });
}

}  // namespace mb::cli
