// microbatch merge: glue microbatch files back into one batch.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "io/merge/merge.hpp"
#include "specs/manifest.hpp"
#include "specs/parse.hpp"

namespace mb::cli {
namespace {
namespace fs = std::filesystem;

struct MergeCommand {
  std::vector<std::string> inputs;
  std::string spec;
  std::string output;
  bool force = false;
  bool virtual_datasets = false;
  DataParallel dp;
  FileLayout layout = FileLayout::PerMicrobatch;
  bool dp_given = false;  // --dp-degree, --align or --layout on the command line
  transfer::Policy policy;
};

std::vector<io::MergeInput> labelled(const std::vector<std::string>& paths) {
  std::vector<io::MergeInput> out;
  for (std::size_t i = 0; i < paths.size(); ++i)
    out.push_back({paths[i], fmt::format("microbatch {} ({})", i, paths[i])});
  return out;
}

void run_merge(const MergeCommand& cmd) {
  std::error_code ec;
  const bool from_directory = cmd.inputs.size() == 1 && fs::is_directory(cmd.inputs[0], ec);
  for (const auto& in : cmd.inputs)
    if (!from_directory && fs::is_directory(in, ec))
      throw usage_error("merge: give one directory (with manifest.json) or microbatch files, not both: " + in);

  std::vector<std::string> paths = cmd.inputs;
  std::string spec_name;
  SpecNode spec;
  DataParallel dp = cmd.dp;
  FileLayout layout = cmd.layout;
  if (from_directory) {
    const specs::Manifest manifest = specs::read_manifest(cmd.inputs[0]);
    if (!cmd.dp_given) {
      dp = manifest.options.dp;
      layout = manifest.options.layout;
    }
    paths.clear();
    for (const auto& f : manifest.files) paths.push_back((fs::path(cmd.inputs[0]) / f).string());
    if (cmd.spec.empty()) {
      spec_name = (fs::path(cmd.inputs[0]) / specs::kManifestName).string() + " (spec)";
      spec = specs::parse_spec(manifest.spec.dump(), spec_name);
    }
  }
  if (!from_directory || !cmd.spec.empty()) spec = load_spec_or_default(cmd.spec, spec_name);

  io::MergeJob job;
  job.inputs = labelled(paths);
  job.output = cmd.output;
  job.force = cmd.force;
  job.virtual_datasets = cmd.virtual_datasets;
  job.dp = dp;
  job.layout = layout;
  job.policy = cmd.policy;
  job.progress = terminal_progress("merge");
  io::merge(job, spec, spec_name);
  spdlog::info("merged {} files into {}", paths.size(), cmd.output);
}

}  // namespace

void setup_merge(CLI::App& app) {
  auto cmd = std::make_shared<MergeCommand>();
  CLI::App* sub = app.add_subcommand("merge", "Concatenate, check and reduce microbatch files back into one batch");
  sub->footer(
      "Examples:\n"
      "  microbatch merge mb/ -o batch.h5                # order, files and spec from mb/manifest.json\n"
      "  microbatch merge out-*.h5 -s out_spec.json -o merged.h5");
  sub->add_option("inputs", cmd->inputs, "a split's output directory, or microbatch files in order")->required();
  sub->add_option("-s,--spec", cmd->spec,
                  "chunk-spec JSON (default: the manifest's spec for a directory, else the default spec)");
  sub->add_option("-o,--output", cmd->output, "merged HDF5 file")->required();
  sub->add_flag("--force", cmd->force, "replace an existing output file");
  sub->add_flag("--virtual", cmd->virtual_datasets,
                "split leaves become HDF5 virtual datasets over the microbatch files (recorded by absolute path; "
                "they must stay there); nothing is copied; replicated leaves are still checked");
  add_data_parallel_options(*sub, cmd->dp, cmd->layout);  // as given to split; a manifest records them
  add_copy_policy_options(*sub, cmd->policy);
  add_common_options(*sub);
  sub->callback([cmd, sub] {
    apply_common_options();
    cmd->dp_given = sub->count("--dp-degree") > 0 || sub->count("--align") > 0 || sub->count("--layout") > 0;
    run_merge(*cmd);
  });
}

}  // namespace mb::cli
