// microbatch split: one HDF5 file per microbatch, plus manifest.json.
#include <spdlog/spdlog.h>

#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/resolve.hpp"
#include "io/h5.hpp"
#include "io/split_writer.hpp"
#include "io/tree_reader.hpp"
#include "specs/emit.hpp"

namespace mb::cli {
namespace {

struct SplitCommand {
  std::string input;
  std::string spec;
  std::string output_dir;
  SplitOptions partition;
  bool force = false;
  std::size_t buffer_bytes = h5::kDefaultBufferBytes;
  std::uint64_t jobs = 1;
};

const char* on_short_name(OnShort s) {
  switch (s) {
    case OnShort::Error: return "error";
    case OnShort::Downsize: return "downsize";
    case OnShort::Empty: return "empty";
  }
  return "?";
}

void run_split(const SplitCommand& cmd) {
  const SplitOptions& p = cmd.partition;
  if (p.chunks.has_value() == p.micro_batch_size.has_value())
    throw usage_error("split: give exactly one of -n/--chunks and --micro-batch-size");
  std::string spec_name;
  const SpecNode spec = load_spec_or_default(cmd.spec, spec_name);
  h5::Id file = h5::open_file_read_only(cmd.input);
  const NodeInfo tree = h5::read_tree(file.get(), cmd.input);
  const Resolution resolution = about_file(cmd.input, [&] { return resolve(tree, spec, spec_name); });
  const OffsetsValues offsets = h5::read_offsets_values(file.get(), cmd.input, tree, resolution);
  file.reset();
  const SplitPlan plan = about_file(cmd.input, [&] { return plan_split(tree, resolution, p, offsets); });
  for (const auto& w : plan.warnings) spdlog::warn("{}", w);

  io::SplitJob job;
  job.input = cmd.input;
  job.output_dir = cmd.output_dir;
  job.force = cmd.force;
  job.buffer_bytes = cmd.buffer_bytes;
  job.workers = cmd.jobs;
  job.stall_seconds = stall_timeout_seconds();
  job.spec = specs::resolved_spec_json(tree, resolution);
  job.options = {{"chunks", p.chunks ? nlohmann::ordered_json(*p.chunks) : nullptr},
                 {"micro_batch_size", p.micro_batch_size ? nlohmann::ordered_json(*p.micro_batch_size) : nullptr},
                 {"on_short", on_short_name(p.on_short)},
                 {"dp_degree", p.dp.degree},
                 {"align", p.dp.align},
                 {"balance", p.balance == Balance::Sequences ? "sequences" : "tokens"},
                 {"layout", p.layout == FileLayout::PerRank ? "per-rank" : "per-microbatch"}};
  job.tool_version = MICROBATCH_VERSION;
  job.progress = terminal_progress("split");
  const auto files = io::write_split(job, tree, resolution, plan);
  spdlog::info("split {} into {} microbatches{} in {} ({} split datasets)", cmd.input, plan.count,
               plan.layout == FileLayout::PerRank ? " x " + std::to_string(plan.ranks) + " ranks" : "",
               cmd.output_dir, plan.pieces.size());
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
  sub->add_option("-s,--spec", cmd->spec, "chunk-spec JSON (default: split rank>=1 on axis 0, replicate the rest)");
  add_partition_options(*sub, cmd->partition);
  sub->add_option("-o,--output", cmd->output_dir, "output directory")->required();
  sub->add_flag("--force", cmd->force, "replace the output of an earlier split in the directory");
  add_buffer_option(*sub, cmd->buffer_bytes);
  sub->add_option("-j,--jobs", cmd->jobs,
                  "worker processes, each writing its share of the output files (compression and HDF5's "
                  "per-object work are per file, so they spread over cores; default 1)")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{256}));
  add_common_options(*sub);
  sub->callback([cmd] {
    apply_common_options();
    run_split(*cmd);
  });
}

}  // namespace mb::cli
